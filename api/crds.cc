#include "api/crds.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include "api/accelerator_gang.h"
#include "api/node_inventory.h"

namespace xpu::api {
namespace {

using nlohmann::json;

struct Names {
  std::string_view plural;
  std::string_view singular;
  std::string_view kind;
  std::string_view short_name;
};

json PrinterColumn(std::string_view name, std::string_view type, std::string_view path,
                   std::string_view description) {
  return {{"name", name}, {"type", type}, {"jsonPath", path}, {"description", description}};
}

json Crd(const Names& names, std::string_view scope, json schema, json columns) {
  columns.push_back(PrinterColumn("Age", "date", ".metadata.creationTimestamp",
                                  "time since the object was created"));
  json version = {{"name", "v1alpha1"},
                  {"served", true},
                  {"storage", true},
                  {"schema", {{"openAPIV3Schema", std::move(schema)}}},
                  {"subresources", {{"status", json::object()}}},
                  {"additionalPrinterColumns", std::move(columns)}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata",
           {{"name", std::string(names.plural) + "." + std::string(kXpuGroup)},
            {"annotations", {{"xpu.dra.dev/generated-by", "gen-crds (api/crds.cc)"}}}}},
          {"spec",
           {{"group", kXpuGroup},
            {"names",
             {{"plural", names.plural},
              {"singular", names.singular},
              {"kind", names.kind},
              {"listKind", std::string(names.kind) + "List"},
              {"shortNames", {names.short_name}},
              {"categories", {"xpu"}}}},
            {"scope", scope},
            {"versions", json::array({std::move(version)})}}}};
}

// Plain YAML scalars: a letter first, then characters no YAML reader treats specially, and no
// word YAML 1.1 reads as a boolean or null.
bool IsPlain(const std::string& s) {
  if (s.empty() || std::isalpha(static_cast<unsigned char>(s[0])) == 0) return false;
  if (s.back() == ' ' || s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) {
    return false;
  }
  const bool chars_ok = std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view(" _./,()'-").find(c) != std::string_view::npos;
  });
  if (!chars_ok) return false;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  constexpr std::array<std::string_view, 11> kReserved = {
      "true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf"};
  return std::find(kReserved.begin(), kReserved.end(), lower) == kReserved.end();
}

std::string Scalar(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return IsPlain(s) ? s : v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (v.is_object()) return "{}";  // only called for empty containers
  if (v.is_array()) return "[]";
  return v.dump();
}

bool IsInline(const json& v) { return !v.is_structured() || v.empty(); }

void Emit(const json& v, int indent, std::string* out);

// One array item or object value that starts after "- " on the current line.
void EmitItem(const json& item, int indent, std::string* out) {
  if (IsInline(item)) {
    *out += " " + Scalar(item) + "\n";
  } else if (item.is_object()) {
    std::string nested;
    Emit(item, indent + 2, &nested);
    *out += " " + nested.substr(static_cast<size_t>(indent) + 2);
  } else {
    *out += "\n";
    Emit(item, indent + 2, out);
  }
}

void Emit(const json& v, int indent, std::string* out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      *out += pad + Scalar(json(key)) + ":";
      if (IsInline(value)) {
        *out += " " + Scalar(value) + "\n";
      } else if (value.is_object()) {
        *out += "\n";
        Emit(value, indent + 2, out);
      } else {
        *out += "\n";
        Emit(value, indent, out);  // a sequence at the key's indentation, as kubectl writes it
      }
    }
    return;
  }
  for (const json& item : v) {
    *out += pad + "-";
    EmitItem(item, indent, out);
  }
}

}  // namespace

json NodeInventoryCrd() {
  return Crd({"nodeinventories", "nodeinventory", kNodeInventoryKind, "ninv"}, "Cluster",
             NodeInventorySchema(),
             {PrinterColumn("Model", "string", ".status.serverModel", "server model"),
              PrinterColumn("Rule-Set", "string", ".status.ruleSet", "allocation rule set"),
              PrinterColumn("Health", "string", ".status.health", "devices' health summary"),
              PrinterColumn("Boot-ID", "string", ".status.bootID", "boot id of the node")});
}

json AcceleratorGangCrd() {
  return Crd({"acceleratorgangs", "acceleratorgang", kAcceleratorGangKind, "agang"}, "Namespaced",
             AcceleratorGangSchema(),
             {PrinterColumn("Nodes", "integer", ".spec.nodes", "number of nodes"),
              PrinterColumn("Per-Node", "integer", ".spec.devicesPerNode", "devices per node"),
              PrinterColumn("Class", "string", ".spec.capabilityClass", "capability class"),
              PrinterColumn("Phase", "string", ".status.phase", "placement phase"),
              PrinterColumn("Tier", "string", ".status.tier", "fabric tier holding the gang")});
}

std::vector<CrdManifest> Crds() {
  return {{"xpu.dra.dev_nodeinventories.yaml", NodeInventoryCrd()},
          {"xpu.dra.dev_acceleratorgangs.yaml", AcceleratorGangCrd()}};
}

std::string ToYaml(const json& value) {
  if (IsInline(value)) return Scalar(value) + "\n";
  std::string out;
  Emit(value, 0, &out);
  return out;
}

}  // namespace xpu::api
