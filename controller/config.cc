#include "controller/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "api/quantity.h"
#include "api/validation.h"
#include "base/enum_names.h"
#include "base/text.h"
#include "controller/yaml_json.h"

namespace xpu::controller {
namespace {

// Ordered, so that images keep their file order and the first bad member is the first written.
using Json = nlohmann::ordered_json;

constexpr std::string_view kConfigKind = "ControllerConfig";
// A ConfigMap holds at most 1 MiB; anything much larger is not a config file.
constexpr long kMaxFileBytes = 4 << 20;
constexpr int kMinGroupSize = 2;
constexpr int kMaxGroupSize = 64;
// Keeps a capability class' selector far below the 10 KiB CEL limit (see device_classes.cc).
constexpr size_t kMaxFilterValues = 32;

const std::vector<std::string>& Precisions() {
  static const std::vector<std::string> kPrecisions = {"bf16", "fp16", "fp8", "int8"};
  return kPrecisions;
}

const std::vector<std::string>& TaintEffects() {
  static const std::vector<std::string> kEffects = {"NoSchedule", "NoExecute"};
  return kEffects;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

bool Contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

Status FieldError(std::string_view path, std::string_view what) {
  return InvalidArgumentError(path.empty() ? std::string(what)
                                           : std::string(path) + ": " + std::string(what));
}

// ---- Reading the document field by field ----

// "number 5", "string \"x\"", "array": what a value is, for "expected ..., got ..." messages.
std::string Describe(const Json& j) {
  if (j.is_structured()) return j.type_name();
  if (j.is_string()) return "string " + QuoteText(j.get_ref<const std::string&>());
  return std::string(j.is_number() ? "number" : j.type_name()) + " " +
         j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A JSON value and its path ("capabilityClasses[1].vendors"). value is null when the member is
// absent or written as YAML null (`key:` with nothing after it); both mean "not given".
struct Field {
  const Json* value = nullptr;
  std::string path;

  bool absent() const { return value == nullptr || value->is_null(); }
  Status Error(std::string_view what) const { return FieldError(path, what); }
  Status Expected(std::string_view what) const {
    return Error("expected " + std::string(what) + ", got " + Describe(*value));
  }
  Field Member(std::string_view key) const {
    auto it = value->find(key);
    return {it == value->end() ? nullptr : &*it,
            path.empty() ? std::string(key) : path + "." + std::string(key)};
  }
  Field Element(size_t i) const { return {&(*value)[i], path + "[" + std::to_string(i) + "]"}; }
};

// An object with no members but `known`: a misspelt key is an error, not silently ignored.
Status CheckObject(const Field& f, const std::vector<std::string_view>& known) {
  if (!f.value->is_object()) return f.Expected("an object");
  for (const auto& item : f.value->items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return f.Member(item.key()).Error("unknown field; expected one of " + list);
  }
  return OkStatus();
}

StatusOr<std::string> ReadString(const Field& f) {
  if (!f.value->is_string()) return f.Expected("a string");
  return f.value->get<std::string>();
}

StatusOr<std::vector<std::string>> ReadStringList(const Field& f) {
  if (!f.value->is_array()) return f.Expected("a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < f.value->size(); ++i) {
    ASSIGN_OR_RETURN(std::string item, ReadString(f.Element(i)));
    out.push_back(std::move(item));
  }
  return out;
}

Status ReadPublishing(const Field& f, Config& config) {
  RETURN_IF_ERROR(CheckObject(f, {"mode", "groupSizes", "unhealthyEffect"}));
  if (Field m = f.Member("mode"); !m.absent()) {
    ASSIGN_OR_RETURN(std::string name, ReadString(m));
    std::optional<PublishMode> mode = ParsePublishMode(name);
    if (!mode) {
      return m.Error("unknown mode " + QuoteText(name) + "; expected one of attributes, groups");
    }
    config.mode = *mode;
  }
  if (Field sizes = f.Member("groupSizes"); !sizes.absent()) {
    if (!sizes.value->is_array()) return sizes.Expected("a list of integers");
    config.group_sizes.clear();
    for (size_t i = 0; i < sizes.value->size(); ++i) {
      Field e = sizes.Element(i);
      if (!e.value->is_number_integer()) return e.Expected("an integer");
      const int64_t size = e.value->get<int64_t>();
      if (size < kMinGroupSize || size > kMaxGroupSize) {
        return e.Error("group size " + std::to_string(size) + " out of range; expected " +
                       std::to_string(kMinGroupSize) + " to " + std::to_string(kMaxGroupSize));
      }
      config.group_sizes.push_back(static_cast<int>(size));
    }
  }
  if (Field effect = f.Member("unhealthyEffect"); !effect.absent()) {
    ASSIGN_OR_RETURN(config.unhealthy_effect, ReadString(effect));
  }
  return OkStatus();
}

StatusOr<CapabilityClass> ReadCapabilityClass(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "vendors", "minMemory", "precisions", "families",
                                  "models", "images", "extendedResourceName"}));
  CapabilityClass c;
  if (Field m = f.Member("name"); !m.absent()) {
    ASSIGN_OR_RETURN(c.name, ReadString(m));
  }
  if (Field m = f.Member("vendors"); !m.absent()) {
    ASSIGN_OR_RETURN(c.vendors, ReadStringList(m));
  }
  if (Field m = f.Member("minMemory"); !m.absent()) {
    // A bare YAML number ("minMemory: 1024") is a quantity too, as Kubernetes reads it.
    if (m.value->is_number_integer()) {
      c.min_memory = std::to_string(m.value->get<int64_t>());
    } else if (m.value->is_string()) {
      c.min_memory = m.value->get<std::string>();
    } else {
      return m.Expected("a quantity string such as \"64Gi\"");
    }
  }
  if (Field m = f.Member("precisions"); !m.absent()) {
    ASSIGN_OR_RETURN(c.precisions, ReadStringList(m));
  }
  if (Field m = f.Member("families"); !m.absent()) {
    ASSIGN_OR_RETURN(c.families, ReadStringList(m));
  }
  if (Field m = f.Member("models"); !m.absent()) {
    ASSIGN_OR_RETURN(c.models, ReadStringList(m));
  }
  if (Field m = f.Member("images"); !m.absent()) {
    if (!m.value->is_object()) return m.Expected("a map of vendor to image");
    for (const auto& item : m.value->items()) {
      ASSIGN_OR_RETURN(std::string image, ReadString(m.Member(item.key())));
      c.images.emplace_back(item.key(), std::move(image));
    }
  }
  if (Field m = f.Member("extendedResourceName"); !m.absent()) {
    ASSIGN_OR_RETURN(c.extended_resource_name, ReadString(m));
  }
  return c;
}

StatusOr<SupportRule> ReadSupportRule(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"vendor", "family", "model", "driver", "firmware", "toolkit"}));
  SupportRule rule;
  for (auto [key, out] : {std::pair{"vendor", &rule.vendor}, std::pair{"family", &rule.family},
                          std::pair{"model", &rule.model}}) {
    if (Field m = f.Member(key); !m.absent()) {
      ASSIGN_OR_RETURN(*out, ReadString(m));
    }
  }
  for (auto [key, out] : {std::pair{"driver", &rule.driver}, std::pair{"firmware", &rule.firmware},
                          std::pair{"toolkit", &rule.toolkit}}) {
    if (Field m = f.Member(key); !m.absent()) {
      ASSIGN_OR_RETURN(std::string text, ReadString(m));
      *out = VersionRange{std::move(text)};
    }
  }
  return rule;
}

StatusOr<Config> ReadConfig(const Json& root) {
  const Field f{&root, ""};
  RETURN_IF_ERROR(CheckObject(f, {"apiVersion", "kind", "publishing", "vendorClasses",
                                  "capabilityClasses", "supportMatrix"}));
  for (auto [key, want] :
       {std::pair{"apiVersion", api::kXpuApiVersion}, std::pair{"kind", kConfigKind}}) {
    Field m = f.Member(key);
    if (m.absent()) continue;
    if (!m.value->is_string() || m.value->get_ref<const std::string&>() != want) {
      return m.Expected(QuoteText(want));
    }
  }
  Config config;
  config.capability_classes.clear();
  config.support_matrix.clear();
  if (Field m = f.Member("publishing"); !m.absent()) {
    RETURN_IF_ERROR(ReadPublishing(m, config));
  }
  if (Field m = f.Member("vendorClasses"); !m.absent()) {
    if (!m.value->is_boolean()) return m.Expected("true or false");
    config.vendor_classes = m.value->get<bool>();
  }
  if (Field m = f.Member("capabilityClasses"); !m.absent()) {
    if (!m.value->is_array()) return m.Expected("a list");
    for (size_t i = 0; i < m.value->size(); ++i) {
      ASSIGN_OR_RETURN(CapabilityClass c, ReadCapabilityClass(m.Element(i)));
      config.capability_classes.push_back(std::move(c));
    }
  }
  if (Field m = f.Member("supportMatrix"); !m.absent()) {
    if (!m.value->is_array()) return m.Expected("a list");
    for (size_t i = 0; i < m.value->size(); ++i) {
      ASSIGN_OR_RETURN(SupportRule rule, ReadSupportRule(m.Element(i)));
      config.support_matrix.push_back(std::move(rule));
    }
  }
  return config;
}

// ---- Validation helpers ----

// Family and model filters go into CEL string literals and are compared with device attribute
// values (at most 64 bytes); quotes, backslashes and control characters are kept out.
Status CheckFilterValue(std::string_view value, const std::string& path) {
  if (value.empty()) return FieldError(path, "must not be empty");
  if (value.size() > static_cast<size_t>(api::kMaxAttributeValueLength)) {
    return FieldError(path, QuoteText(value) + " is longer than " +
                                std::to_string(api::kMaxAttributeValueLength) + " bytes");
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '\'' || c == '"' || c == '\\') {
      return FieldError(path,
                        QuoteText(value) + " contains a quote, backslash or control character");
    }
  }
  return OkStatus();
}

Status CheckFilterList(const std::vector<std::string>& values, const std::string& path) {
  if (values.size() > kMaxFilterValues) {
    return FieldError(path, "at most " + std::to_string(kMaxFilterValues) + " entries");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string item = path + "[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(CheckFilterValue(values[i], item));
    if (std::find(values.begin(), values.begin() + static_cast<long>(i), values[i]) !=
        values.begin() + static_cast<long>(i)) {
      return FieldError(item, "duplicate " + QuoteText(values[i]));
    }
  }
  return OkStatus();
}

Status CheckVendor(std::string_view vendor, const std::string& path) {
  if (vendor.empty()) return FieldError(path, "required");
  if (!Contains(KnownVendors(), vendor)) {
    return FieldError(
        path, "unknown vendor " + QuoteText(vendor) + "; expected one of " + Join(KnownVendors()));
  }
  return OkStatus();
}

// As the API server checks DeviceClass.spec.extendedResourceName: a domain-prefixed name outside
// kubernetes.io that is a valid label key once prefixed with "requests.".
Status CheckExtendedResourceName(const std::string& name, const std::string& path) {
  const size_t slash = name.find('/');
  const std::string domain = slash == std::string::npos ? "" : name.substr(0, slash);
  const bool native = slash == std::string::npos || domain == "kubernetes.io" ||
                      (domain.size() > 14 && domain.ends_with(".kubernetes.io"));
  if (native || name.starts_with("requests.") ||
      !api::ValidateLabelKey("requests." + name, path).ok()) {
    return FieldError(path, QuoteText(name) +
                                " is not an extended resource name (a domain-prefixed name such "
                                "as example.com/foo, outside kubernetes.io)");
  }
  return OkStatus();
}

Status CheckImage(std::string_view image, const std::string& path) {
  if (image.empty()) return FieldError(path, "must not be empty");
  for (char c : image) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return FieldError(path, QuoteText(image) + " contains white space or a control character");
    }
  }
  return OkStatus();
}

Status ValidateCapabilityClass(const CapabilityClass& c, const std::string& path) {
  RETURN_IF_ERROR(c.name.empty() ? FieldError(path + ".name", "required")
                                 : api::ValidateDnsSubdomain(c.name, path + ".name"));
  for (size_t i = 0; i < c.vendors.size(); ++i) {
    const std::string item = path + ".vendors[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(CheckVendor(c.vendors[i], item));
    if (std::find(c.vendors.begin(), c.vendors.begin() + static_cast<long>(i), c.vendors[i]) !=
        c.vendors.begin() + static_cast<long>(i)) {
      return FieldError(item, "duplicate vendor " + QuoteText(c.vendors[i]));
    }
  }
  if (!c.min_memory.empty()) {
    StatusOr<api::Quantity> q = api::Quantity::Parse(c.min_memory);
    if (!q.ok()) return q.status().WithContext(path + ".minMemory");
    if (q->Sign() < 0) {
      return FieldError(path + ".minMemory", QuoteText(c.min_memory) + " must not be negative");
    }
  }
  for (size_t i = 0; i < c.precisions.size(); ++i) {
    const std::string item = path + ".precisions[" + std::to_string(i) + "]";
    if (!Contains(Precisions(), c.precisions[i])) {
      return FieldError(item, "unknown precision " + QuoteText(c.precisions[i]) +
                                  "; expected one of " + Join(Precisions()));
    }
    if (std::find(c.precisions.begin(), c.precisions.begin() + static_cast<long>(i),
                  c.precisions[i]) != c.precisions.begin() + static_cast<long>(i)) {
      return FieldError(item, "duplicate precision " + QuoteText(c.precisions[i]));
    }
  }
  RETURN_IF_ERROR(CheckFilterList(c.families, path + ".families"));
  RETURN_IF_ERROR(CheckFilterList(c.models, path + ".models"));
  std::set<std::string> image_vendors;
  for (const auto& [vendor, image] : c.images) {
    std::string item = path + ".images.";
    item += vendor;
    if (!Contains(KnownVendors(), vendor)) {
      return FieldError(item, "unknown vendor " + QuoteText(vendor) + "; expected one of " +
                                  Join(KnownVendors()));
    }
    if (!c.vendors.empty() && !Contains(c.vendors, vendor)) {
      return FieldError(item, "vendor " + QuoteText(vendor) +
                                  " is not one of the class' vendors (" + Join(c.vendors) + ")");
    }
    if (!image_vendors.insert(vendor).second) {
      return FieldError(item, "duplicate vendor " + QuoteText(vendor));
    }
    RETURN_IF_ERROR(CheckImage(image, item));
  }
  if (c.extended_resource_name) {
    RETURN_IF_ERROR(
        CheckExtendedResourceName(*c.extended_resource_name, path + ".extendedResourceName"));
  }
  return OkStatus();
}

std::string RuleLabel(const SupportRule& rule) {
  std::string label = rule.vendor;
  if (!rule.family.empty()) label += "/" + rule.family;
  if (!rule.model.empty()) label += "/" + rule.model;
  return label;
}

Status ValidateSupportRule(const SupportRule& rule, const std::string& path) {
  RETURN_IF_ERROR(CheckVendor(rule.vendor, path + ".vendor"));
  if (!rule.family.empty()) RETURN_IF_ERROR(CheckFilterValue(rule.family, path + ".family"));
  if (!rule.model.empty()) RETURN_IF_ERROR(CheckFilterValue(rule.model, path + ".model"));
  if (!rule.driver && !rule.firmware && !rule.toolkit) {
    return FieldError(path, "needs at least one of driver, firmware, toolkit");
  }
  for (auto [key, range] :
       {std::pair{".driver", &rule.driver}, std::pair{".firmware", &rule.firmware},
        std::pair{".toolkit", &rule.toolkit}}) {
    if (*range) RETURN_IF_ERROR(ValidateVersionRange((*range)->text).WithContext(path + key));
  }
  return OkStatus();
}

std::optional<std::string> AttributeString(const api::InventoryDevice& device,
                                           const std::string& name) {
  auto it = device.attributes.find(name);
  if (it == device.attributes.end() || !it->second.string_value) return std::nullopt;
  return *it->second.string_value;
}

std::optional<std::string> AttributeVersion(const api::InventoryDevice& device,
                                            const std::string& name) {
  auto it = device.attributes.find(name);
  if (it == device.attributes.end() || !it->second.version) return std::nullopt;
  return *it->second.version;
}

}  // namespace

std::string_view PublishModeName(PublishMode mode) {
  static constexpr std::string_view kNames[] = {"attributes", "groups"};
  static_assert(NamesCover(kNames, PublishMode::kGroups));
  return NameAt(kNames, mode).value_or("attributes");
}

std::optional<PublishMode> ParsePublishMode(std::string_view name) {
  if (name == "attributes") return PublishMode::kAttributes;
  if (name == "groups") return PublishMode::kGroups;
  return std::nullopt;
}

const std::vector<std::string>& KnownVendors() {
  static const std::vector<std::string> kVendors = {
      "nvidia", "huawei", "hygon", "cambricon", "metax", "biren", "enflame", "mthreads", "amd"};
  return kVendors;
}

Config DefaultConfig() {
  auto make = [](std::string name, std::vector<std::string> vendors, std::string min_memory,
                 std::vector<std::string> precisions) {
    CapabilityClass c;
    c.name = std::move(name);
    c.vendors = std::move(vendors);  // empty: any known vendor
    c.min_memory = std::move(min_memory);
    c.precisions = std::move(precisions);
    return c;
  };
  Config config;
  config.capability_classes = {
      make("training-large-memory", {"nvidia", "huawei", "amd", "hygon"}, "64Gi", {"bf16"}),
      make("training-standard", {}, "32Gi", {"bf16", "fp16"}),
      make("inference", {}, "16Gi", {"fp16", "int8"}),
  };
  return config;
}

Status ValidateConfig(const Config& config) {
  for (size_t i = 0; i < config.group_sizes.size(); ++i) {
    const std::string path = "publishing.groupSizes[" + std::to_string(i) + "]";
    const int size = config.group_sizes[i];
    if (size < kMinGroupSize || size > kMaxGroupSize) {
      return FieldError(path, "group size " + std::to_string(size) + " out of range; expected " +
                                  std::to_string(kMinGroupSize) + " to " +
                                  std::to_string(kMaxGroupSize));
    }
    if (std::find(config.group_sizes.begin(), config.group_sizes.begin() + static_cast<long>(i),
                  size) != config.group_sizes.begin() + static_cast<long>(i)) {
      return FieldError(path, "duplicate group size " + std::to_string(size));
    }
  }
  if (config.mode == PublishMode::kGroups && config.group_sizes.empty()) {
    return FieldError("publishing.groupSizes", "groups mode needs at least one size");
  }
  if (!Contains(TaintEffects(), config.unhealthy_effect)) {
    return FieldError("publishing.unhealthyEffect",
                      "unknown effect " + QuoteText(config.unhealthy_effect) +
                          "; expected one of " + Join(TaintEffects()));
  }

  // Every DeviceClass name the config produces, with who produces it: a capability class must
  // not take a vendor class' name or another class' (or per-vendor class') name.
  std::map<std::string, std::string> owners;
  for (const auto& vendor : KnownVendors()) {
    owners[vendor + "." + std::string(api::kXpuGroup)] = "the vendor class of " + vendor;
  }
  std::map<std::string, std::string> extended_names;
  for (size_t i = 0; i < config.capability_classes.size(); ++i) {
    const CapabilityClass& c = config.capability_classes[i];
    const std::string path = "capabilityClasses[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ValidateCapabilityClass(c, path));
    if (auto it = owners.find(c.name); it != owners.end()) {
      return FieldError(path + ".name", QuoteText(c.name) + " is already " + it->second);
    }
    owners[c.name] = "the name of " + path;
    for (const auto& vendor : c.vendors.empty() ? KnownVendors() : c.vendors) {
      const std::string per_vendor = c.name + "." + vendor;
      if (per_vendor.size() > static_cast<size_t>(api::kMaxDnsSubdomainLength)) {
        return FieldError(path + ".name",
                          "too long: the per-vendor class " + QuoteText(per_vendor) + " exceeds " +
                              std::to_string(api::kMaxDnsSubdomainLength) + " bytes");
      }
      if (auto it = owners.find(per_vendor); it != owners.end()) {
        return FieldError(path + ".name", "its per-vendor class " + QuoteText(per_vendor) +
                                              " is already " + it->second);
      }
      owners[per_vendor] = "the per-vendor class of " + path;
    }
    if (c.extended_resource_name) {
      auto [it, added] = extended_names.emplace(*c.extended_resource_name, path);
      if (!added) {
        return FieldError(path + ".extendedResourceName", QuoteText(*c.extended_resource_name) +
                                                              " is already used by " + it->second);
      }
    }
  }

  std::map<std::string, std::string> rule_keys;
  for (size_t i = 0; i < config.support_matrix.size(); ++i) {
    const SupportRule& rule = config.support_matrix[i];
    const std::string path = "supportMatrix[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ValidateSupportRule(rule, path));
    const std::string key = rule.vendor + '\0' + rule.family + '\0' + rule.model;
    auto [it, added] = rule_keys.emplace(key, path);
    if (!added) {
      return FieldError(path,
                        "duplicate rule for " + RuleLabel(rule) + " (also " + it->second + ")");
    }
  }
  return OkStatus();
}

StatusOr<Config> ParseConfig(std::string_view text) {
  ASSIGN_OR_RETURN(Json root, ParseYamlDocument(text));
  ASSIGN_OR_RETURN(Config config, ReadConfig(root));
  RETURN_IF_ERROR(ValidateConfig(config));
  return config;
}

StatusOr<Config> LoadConfigFile(const std::string& path) {
  const std::string prefix = "read config " + path;
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int err = errno;
    const std::string message = prefix + ": " + std::strerror(err);
    return err == ENOENT ? NotFoundError(message) : UnavailableError(message);
  }
  std::string text;
  char buf[65536];
  size_t n = 0;
  bool too_large = false;
  while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) {
    text.append(buf, n);
    if (text.size() > static_cast<size_t>(kMaxFileBytes)) {
      too_large = true;
      break;
    }
  }
  const bool failed = std::ferror(file) != 0;
  const int err = errno;
  std::fclose(file);
  if (failed) return UnavailableError(prefix + ": " + std::strerror(err));
  if (too_large) {
    return InvalidArgumentError(prefix + ": larger than " + std::to_string(kMaxFileBytes) +
                                " bytes");
  }
  StatusOr<Config> config = ParseConfig(text);
  if (!config.ok()) return config.status().WithContext(prefix);
  return config;
}

SupportVerdict CheckSupport(const Config& config, const api::InventoryDevice& device) {
  const std::optional<std::string> family = AttributeString(device, "family");
  const SupportRule* best = nullptr;
  int best_score = -1;
  for (const SupportRule& rule : config.support_matrix) {
    if (rule.vendor != device.vendor) continue;
    if (!rule.family.empty() && (!family || *family != rule.family)) continue;
    if (!rule.model.empty() && rule.model != device.model) continue;
    // A model beats a family beats the vendor alone; (vendor, family, model) is unique, so the
    // best match is unique too.
    const int score = (rule.model.empty() ? 0 : 2) + (rule.family.empty() ? 0 : 1);
    if (score > best_score) {
      best = &rule;
      best_score = score;
    }
  }
  SupportVerdict verdict;
  if (best == nullptr) return verdict;
  for (auto [attribute, range] :
       {std::pair{"driverVersion", &best->driver}, std::pair{"firmwareVersion", &best->firmware},
        std::pair{"toolkitVersion", &best->toolkit}}) {
    if (!*range) continue;
    const std::optional<std::string> version = AttributeVersion(device, attribute);
    if (!version) continue;  // not reported: not judged
    if (!InRange(**range, *version)) {
      verdict.supported = false;
      verdict.reason = std::string(attribute) + " " + *version + " outside " + (*range)->text +
                       " (" + RuleLabel(*best) + ")";
      return verdict;
    }
  }
  return verdict;
}

}  // namespace xpu::controller
