#include "api/node_description.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "api/quantity.h"

namespace xpu::api {
namespace {

using nlohmann::json;
using topology::DeviceSpec;
using topology::GroupKind;
using topology::GroupSpec;
using topology::LinkSpec;
using topology::LinkType;
using topology::NodeSpec;
using topology::PcieBandwidths;
using topology::RuleSetKind;
using topology::RuleSetSpec;

constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();
constexpr double kMaxBandwidthGBps = 1e6;

// The JSON keys of the PCIe bandwidth overrides, shared by the parser and the writer.
constexpr std::array<std::pair<std::string_view, double PcieBandwidths::*>, 4> kPcieFields = {{
    {"pcieSwitch", &PcieBandwidths::pcie_switch},
    {"hostBridge", &PcieBandwidths::host_bridge},
    {"numa", &PcieBandwidths::numa},
    {"crossNuma", &PcieBandwidths::cross_numa},
}};

// A JSON value and its path for messages ("devices[3].index"); value is null when absent.
struct Field {
  const json* value = nullptr;
  std::string path;

  Status Error(std::string_view what) const {
    return InvalidArgumentError(path.empty() ? std::string(what) : path + ": " + std::string(what));
  }
  // Precondition: value is an object.
  Field Member(std::string_view key) const {
    auto it = value->find(key);
    return {it == value->end() ? nullptr : &*it,
            path.empty() ? std::string(key) : path + "." + std::string(key)};
  }
  // Precondition: value is an array with more than i elements.
  Field Element(size_t i) const { return {&(*value)[i], path + "[" + std::to_string(i) + "]"}; }
};

// "number -1", "string \"x\"", "array": what a value is, for "expected ..., got ..." messages.
std::string Describe(const json& j) {
  if (j.is_structured()) return j.type_name();
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(j.type_name()) + " " + text;
}

Status Expected(const Field& f, std::string_view what) {
  return f.Error("expected " + std::string(what) + ", got " + Describe(*f.value));
}

// Checks that the value is an object with no keys but `known`, so that typos are caught.
Status CheckObject(const Field& f, const std::vector<std::string_view>& known) {
  if (!f.value->is_object()) return Expected(f, "an object");
  for (const auto& item : f.value->items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return f.Member(item.key()).Error("unknown field; expected one of " + list);
  }
  return OkStatus();
}

template <typename T, typename Parse>
Status Required(const Field& f, Parse parse, T* out) {
  if (f.value == nullptr) return f.Error("missing required field");
  ASSIGN_OR_RETURN(*out, parse(f));
  return OkStatus();
}

template <typename T, typename Parse>
Status Optional(const Field& f, Parse parse, T* out) {
  if (f.value == nullptr) return OkStatus();
  ASSIGN_OR_RETURN(*out, parse(f));
  return OkStatus();
}

StatusOr<std::string> AsString(const Field& f) {
  if (!f.value->is_string()) return Expected(f, "a string");
  return f.value->get<std::string>();
}

// An integer >= min.
auto IntAtLeast(int min) {
  return [min](const Field& f) -> StatusOr<int> {
    constexpr int64_t kMax = std::numeric_limits<int>::max();
    const json& j = *f.value;
    std::optional<int64_t> value;
    if (j.is_number_unsigned()) {
      if (j.get<uint64_t>() <= static_cast<uint64_t>(kMax)) value = j.get<int64_t>();
    } else if (j.is_number_integer()) {
      value = j.get<int64_t>();
    }
    if (!value || *value < min || *value > kMax) {
      return Expected(f,
                      min == 0 ? "a non-negative integer" : "an integer >= " + std::to_string(min));
    }
    return static_cast<int>(*value);
  };
}

StatusOr<double> AsBandwidth(const Field& f) {
  const json& j = *f.value;
  if (!j.is_number() || !(j.get<double>() > 0) || j.get<double>() > kMaxBandwidthGBps) {
    return Expected(f, "a bandwidth in GB/s, > 0 and at most 1000000");
  }
  return j.get<double>();
}

StatusOr<int64_t> AsQuantity(const Field& f) {
  if (!f.value->is_string()) return Expected(f, "a quantity string such as \"64Gi\"");
  StatusOr<int64_t> bytes = ParseQuantityBytes(f.value->get_ref<const std::string&>());
  if (!bytes.ok()) return f.Error(bytes.status().message());
  return bytes;
}

// An array of min_size..max_size elements, each read by `parse`.
template <typename T, typename Parse>
StatusOr<std::vector<T>> AsList(const Field& f, size_t min_size, size_t max_size, Parse parse) {
  if (!f.value->is_array()) return Expected(f, "an array");
  const size_t n = f.value->size();
  if (n < min_size || n > max_size) {
    const std::string want = min_size == max_size ? std::to_string(min_size)
                             : max_size == kUnbounded
                                 ? "at least " + std::to_string(min_size)
                                 : std::to_string(min_size) + " to " + std::to_string(max_size);
    return f.Error("expected " + want + " entries, got " + std::to_string(n));
  }
  std::vector<T> out;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(T item, parse(f.Element(i)));
    out.push_back(std::move(item));
  }
  return out;
}

auto StringList(size_t min_size, size_t max_size = kUnbounded) {
  return [=](const Field& f) { return AsList<std::string>(f, min_size, max_size, AsString); };
}

// One of the names of the first `count` enumerators of E (later ones, such as the derived group
// kinds, are not allowed in a description).
template <typename E>
StatusOr<E> AsEnum(const Field& f, std::optional<E> (*parse)(std::string_view),
                   std::string_view (*name)(E), int count, std::string_view what) {
  ASSIGN_OR_RETURN(std::string text, AsString(f));
  std::optional<E> value = parse(text);
  if (value && static_cast<int>(*value) < count) return *value;
  std::string list;
  for (int i = 0; i < count; ++i) {
    list += (i == 0 ? "" : ", ") + std::string(name(static_cast<E>(i)));
  }
  return f.Error("unknown " + std::string(what) + " \"" + text + "\"; expected one of " + list);
}

StatusOr<LinkType> AsLinkType(const Field& f) {
  return AsEnum(f, topology::ParseLinkType, topology::LinkTypeName, topology::kLinkTypeCount,
                "link type");
}
StatusOr<GroupKind> AsGroupKind(const Field& f) {
  return AsEnum(f, topology::ParseGroupKind, topology::GroupKindName,
                static_cast<int>(GroupKind::kCard) + 1, "group kind");
}
StatusOr<RuleSetKind> AsRuleSetKind(const Field& f) {
  return AsEnum(f, topology::ParseRuleSetKind, topology::RuleSetKindName,
                topology::kRuleSetKindCount, "rule set kind");
}

// A valid-set size key: canonical decimal, 1..kMaxDevices.
std::optional<int> ParseSizeKey(std::string_view key) {
  if (key.empty() || key.size() > 2 || key[0] == '0') return std::nullopt;
  int size = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    size = size * 10 + (c - '0');
  }
  if (size > topology::kMaxDevices) return std::nullopt;
  return size;
}

StatusOr<std::map<int, std::vector<std::vector<std::string>>>> AsValidSets(const Field& f) {
  if (!f.value->is_object()) return Expected(f, "an object");
  std::map<int, std::vector<std::vector<std::string>>> out;
  for (const auto& [key, sets] : f.value->items()) {
    const Field field{&sets, f.path + "[" + key + "]"};
    const std::optional<int> size = ParseSizeKey(key);
    if (!size) {
      return field.Error("key must be a set size from 1 to " +
                         std::to_string(topology::kMaxDevices) + " in decimal, e.g. \"2\"");
    }
    const size_t n = static_cast<size_t>(*size);
    ASSIGN_OR_RETURN(out[*size],
                     AsList<std::vector<std::string>>(field, 0, kUnbounded, StringList(n, n)));
  }
  return out;
}

StatusOr<RuleSetSpec> AsRuleSet(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"kind", "validSets"}));
  RuleSetSpec rules;
  RETURN_IF_ERROR(Required(f.Member("kind"), AsRuleSetKind, &rules.kind));
  const Field sets = f.Member("validSets");
  if (rules.kind != RuleSetKind::kRingSets) {
    if (sets.value != nullptr) return sets.Error("only allowed with kind ring-sets");
    return rules;
  }
  RETURN_IF_ERROR(Required(sets, AsValidSets, &rules.valid_sets));
  return rules;
}

StatusOr<DeviceSpec> AsDevice(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "kind", "index", "memory", "numaNode", "pciePath"}));
  DeviceSpec d;
  RETURN_IF_ERROR(Required(f.Member("name"), AsString, &d.name));
  RETURN_IF_ERROR(Required(f.Member("kind"), AsString, &d.kind));
  RETURN_IF_ERROR(Required(f.Member("index"), IntAtLeast(0), &d.index));
  RETURN_IF_ERROR(Optional(f.Member("memory"), AsQuantity, &d.memory_bytes));
  RETURN_IF_ERROR(Optional(f.Member("numaNode"), IntAtLeast(-1), &d.numa_node));
  RETURN_IF_ERROR(Optional(f.Member("pciePath"), StringList(0), &d.pcie_path));
  return d;
}

StatusOr<LinkSpec> AsLink(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"type", "bandwidthGBps", "devices"}));
  LinkSpec l;
  RETURN_IF_ERROR(Required(f.Member("type"), AsLinkType, &l.type));
  RETURN_IF_ERROR(Required(f.Member("bandwidthGBps"), AsBandwidth, &l.bandwidth_gbps));
  RETURN_IF_ERROR(Required(f.Member("devices"), StringList(2), &l.devices));
  return l;
}

StatusOr<GroupSpec> AsGroup(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "kind", "members"}));
  GroupSpec g;
  RETURN_IF_ERROR(Required(f.Member("name"), AsString, &g.name));
  RETURN_IF_ERROR(Required(f.Member("kind"), AsGroupKind, &g.kind));
  RETURN_IF_ERROR(Required(f.Member("members"), StringList(1), &g.members));
  return g;
}

StatusOr<PcieBandwidths> AsPcie(const Field& f) {
  std::vector<std::string_view> keys;
  keys.reserve(kPcieFields.size());
  for (const auto& [key, member] : kPcieFields) keys.push_back(key);
  RETURN_IF_ERROR(CheckObject(f, keys));
  PcieBandwidths pcie;
  for (const auto& [key, member] : kPcieFields) {
    RETURN_IF_ERROR(Optional(f.Member(key), AsBandwidth, &(pcie.*member)));
  }
  return pcie;
}

// Fails unless the field is absent or holds exactly `want`.
Status CheckConstant(const Field& f, std::string_view want) {
  if (f.value == nullptr ||
      (f.value->is_string() && f.value->get_ref<const std::string&>() == want)) {
    return OkStatus();
  }
  return Expected(f, "\"" + std::string(want) + "\"");
}

// Whole numbers as JSON integers, so that 30 GB/s is written "30", not "30.0".
json Number(double value) {
  if (std::trunc(value) == value && std::abs(value) < 9.0e15) return static_cast<int64_t>(value);
  return value;
}

std::string Lower(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

StatusOr<NodeSpec> ParseNodeDescription(const json& doc) {
  const Field root{&doc, ""};
  RETURN_IF_ERROR(CheckObject(root, {"apiVersion", "kind", "name", "model", "ruleSet", "devices",
                                     "links", "groups", "pcieBandwidthGBps"}));
  RETURN_IF_ERROR(CheckConstant(root.Member("apiVersion"), kNodeDescriptionApiVersion));
  RETURN_IF_ERROR(CheckConstant(root.Member("kind"), kNodeDescriptionKind));
  NodeSpec spec;
  RETURN_IF_ERROR(Required(root.Member("name"), AsString, &spec.name));
  RETURN_IF_ERROR(Optional(root.Member("model"), AsString, &spec.model));
  RETURN_IF_ERROR(Required(root.Member("ruleSet"), AsRuleSet, &spec.rule_set));
  RETURN_IF_ERROR(Required(
      root.Member("devices"),
      [](const Field& f) {
        return AsList<DeviceSpec>(f, 1, static_cast<size_t>(topology::kMaxDevices), AsDevice);
      },
      &spec.devices));
  RETURN_IF_ERROR(Optional(
      root.Member("links"),
      [](const Field& f) { return AsList<LinkSpec>(f, 0, kUnbounded, AsLink); }, &spec.links));
  RETURN_IF_ERROR(Optional(
      root.Member("groups"),
      [](const Field& f) { return AsList<GroupSpec>(f, 0, kUnbounded, AsGroup); }, &spec.groups));
  RETURN_IF_ERROR(Optional(root.Member("pcieBandwidthGBps"), AsPcie, &spec.pcie));
  return spec;
}

StatusOr<NodeSpec> ReadNodeDescriptionFile(const std::string& path) {
  const std::string context = "read topology " + path;
  std::string text;
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    return Status(error == ENOENT ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
                  context + ": " + Lower(std::strerror(error)));
  }
  char buffer[65536];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const int read_error = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_error != 0) {
    return InvalidArgumentError(context + ": " + Lower(std::strerror(read_error)));
  }

  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string detail = e.what();
    if (const size_t bracket = detail.find("] "); bracket != std::string::npos) {
      detail.erase(0, bracket + 2);
    }
    return InvalidArgumentError(context + ": invalid JSON at byte " + std::to_string(e.byte) +
                                ": " + detail);
  }
  StatusOr<NodeSpec> spec = ParseNodeDescription(doc);
  if (!spec.ok()) return spec.status().WithContext(context);
  return spec;
}

json NodeDescriptionToJson(const NodeSpec& spec) {
  json doc = {{"apiVersion", std::string(kNodeDescriptionApiVersion)},
              {"kind", std::string(kNodeDescriptionKind)},
              {"name", spec.name}};
  if (!spec.model.empty()) doc["model"] = spec.model;

  json& rules = doc["ruleSet"];
  rules["kind"] = std::string(topology::RuleSetKindName(spec.rule_set.kind));
  if (spec.rule_set.kind == RuleSetKind::kRingSets) {
    json& sets = rules["validSets"] = json::object();
    for (const auto& [size, lists] : spec.rule_set.valid_sets) sets[std::to_string(size)] = lists;
  }

  json& devices = doc["devices"] = json::array();
  for (const DeviceSpec& d : spec.devices) {
    json device = {{"name", d.name}, {"kind", d.kind}, {"index", d.index}};
    if (d.memory_bytes > 0) device["memory"] = FormatQuantityBytes(d.memory_bytes);
    if (d.numa_node >= 0) device["numaNode"] = d.numa_node;
    if (!d.pcie_path.empty()) device["pciePath"] = d.pcie_path;
    devices.push_back(std::move(device));
  }
  for (const LinkSpec& l : spec.links) {
    doc["links"].push_back({{"type", std::string(topology::LinkTypeName(l.type))},
                            {"bandwidthGBps", Number(l.bandwidth_gbps)},
                            {"devices", l.devices}});
  }
  for (const GroupSpec& g : spec.groups) {
    doc["groups"].push_back({{"name", g.name},
                             {"kind", std::string(topology::GroupKindName(g.kind))},
                             {"members", g.members}});
  }
  const PcieBandwidths defaults;
  for (const auto& [key, member] : kPcieFields) {
    if (spec.pcie.*member != defaults.*member) {
      doc["pcieBandwidthGBps"][std::string(key)] = Number(spec.pcie.*member);
    }
  }
  return doc;
}

}  // namespace xpu::api
