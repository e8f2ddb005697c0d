#include "controller/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "api/codec/codec.h"
#include "api/quantity.h"
#include "api/validation.h"
#include "base/enum_names.h"
#include "base/text.h"
#include "controller/yaml_json.h"

namespace xpu::controller {
namespace {

namespace codec = api::codec;

// The document as written: ordered, so that images keep their file order.
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

bool Contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

Status FieldError(std::string_view path, std::string_view what) {
  return InvalidArgumentError(path.empty() ? std::string(what)
                                           : std::string(path) + ": " + std::string(what));
}

Status CheckGroupSize(int64_t size, std::string_view path) {
  if (size >= kMinGroupSize && size <= kMaxGroupSize) return OkStatus();
  return FieldError(path, "group size " + std::to_string(size) + " out of range; expected " +
                              std::to_string(kMinGroupSize) + " to " +
                              std::to_string(kMaxGroupSize));
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

// ---- Reading: the field lists of the document (api/codec/codec.h) ----

namespace {

// apiVersion and kind: absent, or exactly `want`; always `want` when written.
struct ConfigConstant {
  std::string_view want;
  Status Read(const codec::Field& f, std::string* out) const {
    RETURN_IF_ERROR(codec::CheckConstant(f, want));
    *out = std::string(want);
    return OkStatus();
  }
  nlohmann::json Write(const std::string& /*value*/) const { return std::string(want); }
  bool IsSet(const std::string& /*value*/) const { return true; }
};

// publishing.mode, by name; absent stays unset (the mode then follows the Kubernetes version).
struct ModeByName {
  Status Read(const codec::Field& f, std::optional<PublishMode>* out) const {
    std::string name;
    RETURN_IF_ERROR(codec::Read(f, &name));
    const std::optional<PublishMode> mode = ParsePublishMode(name);
    if (!mode) {
      return f.Error("unknown mode " + QuoteText(name) + "; expected one of attributes, groups");
    }
    *out = *mode;
    return OkStatus();
  }
  nlohmann::json Write(const std::optional<PublishMode>& mode) const {
    return mode ? nlohmann::json(PublishModeName(*mode)) : nlohmann::json();
  }
  bool IsSet(const std::optional<PublishMode>& mode) const { return mode.has_value(); }
};

// publishing.groupSizes: integers in range when read (ValidateConfig checks them again, with
// duplicates, for configs built in code).
struct GroupSizeList {
  Status Read(const codec::Field& f, std::vector<int>* out) const {
    std::vector<int64_t> sizes;
    RETURN_IF_ERROR(codec::Read(f, &sizes));
    out->clear();
    for (size_t i = 0; i < sizes.size(); ++i) {
      RETURN_IF_ERROR(CheckGroupSize(sizes[i], f.Element(i).path));
      out->push_back(static_cast<int>(sizes[i]));
    }
    return OkStatus();
  }
  nlohmann::json Write(const std::vector<int>& sizes) const { return sizes; }
};

// minMemory: a quantity string, or a bare integer ("minMemory: 1024") as Kubernetes reads
// quantities too; ValidateConfig parses it.
struct QuantityText {
  Status Read(const codec::Field& f, std::string* out) const {
    if (f.value->is_number_integer()) {
      *out = f.value->dump();
      return OkStatus();
    }
    if (!f.value->is_string()) return codec::Expected(f, "a quantity string such as \"64Gi\"");
    return codec::Read(f, out);
  }
  nlohmann::json Write(const std::string& text) const { return text; }
};

// images: vendor -> image. Read in key order; ParseConfig puts them back in file order.
struct ImageMap {
  using Images = std::vector<std::pair<std::string, std::string>>;
  Status Read(const codec::Field& f, Images* out) const {
    if (!f.value->is_object()) return codec::Expected(f, "a map of vendor to image");
    std::map<std::string, std::string> images;
    RETURN_IF_ERROR(codec::Read(f, &images));
    out->assign(images.begin(), images.end());
    return OkStatus();
  }
  nlohmann::json Write(const Images& images) const {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [vendor, image] : images) out[vendor] = image;
    return out;
  }
};

// driver, firmware, toolkit: a range as written; ValidateConfig parses it.
struct RangeText {
  Status Read(const codec::Field& f, std::optional<VersionRange>* out) const {
    std::string text;
    RETURN_IF_ERROR(codec::Read(f, &text));
    *out = VersionRange{std::move(text)};
    return OkStatus();
  }
  nlohmann::json Write(const std::optional<VersionRange>& range) const {
    return range ? nlohmann::json(range->text) : nlohmann::json();
  }
  bool IsSet(const std::optional<VersionRange>& range) const { return range.has_value(); }
};

// The members of `publishing`, which are Config's own. Always written: their defaults are not
// zero values; but the mode only when set, as unset is a value of its own.
struct PublishingFields {
  template <typename V, typename S>
  void operator()(V& v, S& config) const {
    v.Optional("mode", config.mode, ModeByName{});
    v.Always("groupSizes", config.group_sizes, GroupSizeList{});
    v.Always("unhealthyEffect", config.unhealthy_effect);
  }
};

// publishing: one object over the Config.
struct Publishing {
  Status Read(const codec::Field& f, Config* out) const {
    return codec::ReadFields(f, out, PublishingFields{});
  }
  nlohmann::json Write(const Config& config) const {
    return codec::WriteFields(config, PublishingFields{});
  }
};

// The whole file: apiVersion and kind, then the config's members.
struct ConfigDocument {
  std::string api_version;
  std::string kind;
  Config config;
};

template <typename V, codec::FieldsOf<ConfigDocument> S>
void VisitFields(V& v, S& doc) {
  v.Optional("apiVersion", doc.api_version, ConfigConstant{api::kXpuApiVersion});
  v.Optional("kind", doc.kind, ConfigConstant{kConfigKind});
  v.Always("publishing", doc.config, Publishing{});
  v.Always("vendorClasses", doc.config.vendor_classes);
  v.Optional("capabilityClasses", doc.config.capability_classes);
  v.Optional("supportMatrix", doc.config.support_matrix);
}

// The document as the codec reads it, without members whose value is null: in a config file
// `key:` with nothing after it (YAML null) means the member is not given. A map of names to
// values (images) keeps them: there a null is a value, and an error. Recursion is bounded by the
// YAML reader's depth limit.
nlohmann::json WithoutNullMembers(const Json& value, bool is_map = false) {
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, member] : value.items()) {
      if (!member.is_null() || is_map) out[key] = WithoutNullMembers(member, key == "images");
    }
    return out;
  }
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const Json& item : value) out.push_back(WithoutNullMembers(item));
    return out;
  }
  return nlohmann::json(value);
}

// Puts each class' images back in the order of the file (the codec reads objects in key order),
// so that ValidateConfig names the first bad one written. `doc` is the document `config` was read
// from.
void KeepImageOrder(const Json& doc, Config* config) {
  const auto classes = doc.find("capabilityClasses");
  if (classes == doc.end() || !classes->is_array() ||
      classes->size() != config->capability_classes.size()) {
    return;
  }
  for (size_t i = 0; i < classes->size(); ++i) {
    const Json& item = (*classes)[i];
    const auto images = item.is_object() ? item.find("images") : item.end();
    if (images == item.end() || !images->is_object()) continue;
    std::vector<std::string> order;
    for (const auto& member : images->items()) order.push_back(member.key());
    const auto rank = [&](const std::pair<std::string, std::string>& image) {
      return std::find(order.begin(), order.end(), image.first) - order.begin();
    };
    auto& list = config->capability_classes[i].images;
    std::stable_sort(list.begin(), list.end(),
                     [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  }
}

}  // namespace

template <typename V, codec::FieldsOf<CapabilityClass> S>
void VisitFields(V& v, S& c) {
  // Each member is optional here; ValidateConfig requires a name (and a rule's vendor).
  v.Optional("name", c.name);
  v.Optional("vendors", c.vendors);
  v.Optional("minMemory", c.min_memory, QuantityText{});
  v.Optional("precisions", c.precisions);
  v.Optional("families", c.families);
  v.Optional("models", c.models);
  v.Optional("images", c.images, ImageMap{});
  v.Optional("extendedResourceName", c.extended_resource_name);
}

template <typename V, codec::FieldsOf<SupportRule> S>
void VisitFields(V& v, S& rule) {
  v.Optional("vendor", rule.vendor);
  v.Optional("family", rule.family);
  v.Optional("model", rule.model);
  v.Optional("driver", rule.driver, RangeText{});
  v.Optional("firmware", rule.firmware, RangeText{});
  v.Optional("toolkit", rule.toolkit, RangeText{});
}

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

namespace {

// "1.MINOR", with an optional "v" before and ".PATCH" after (as /version's gitVersion).
std::optional<int> KubeMinorOf(std::string_view text) {
  if (text.starts_with('v')) text.remove_prefix(1);
  if (!text.starts_with("1.")) return std::nullopt;
  text.remove_prefix(2);
  int minor = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, minor);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  const std::string_view patch(end, static_cast<size_t>(last - end));
  if (patch.empty()) return minor;
  const bool digits =
      patch.size() > 1 && patch.front() == '.' &&
      std::all_of(patch.begin() + 1, patch.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits ? std::optional<int>(minor) : std::nullopt;
}

}  // namespace

StatusOr<int> ParseKubeMinor(std::string_view text, std::string_view flag) {
  const std::optional<int> minor = KubeMinorOf(text);
  if (minor && *minor >= kOldestKubeMinor && *minor <= kNewestKubeMinor) return *minor;
  std::string supported;
  for (int m = kOldestKubeMinor; m <= kNewestKubeMinor; ++m) {
    if (!supported.empty()) supported += m == kNewestKubeMinor ? " or " : ", ";
    supported += "1." + std::to_string(m);
  }
  return InvalidArgumentError(std::string(flag) + ": expected " + supported + ", got " +
                              QuoteText(text));
}

api::KubeVersion KubeShapes(int kube_minor) {
  return kube_minor >= 35 ? api::KubeVersion::k1_35 : api::KubeVersion::k1_34;
}

PublishMode DefaultPublishMode(int kube_minor) {
  return kube_minor >= 36 ? PublishMode::kGroups : PublishMode::kAttributes;
}

PublishMode EffectiveMode(const Config& config, int kube_minor) {
  return config.mode.value_or(DefaultPublishMode(kube_minor));
}

Config WithEffectiveMode(Config config, int kube_minor) {
  config.mode = EffectiveMode(config, kube_minor);
  return config;
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
    RETURN_IF_ERROR(CheckGroupSize(size, path));
    if (std::find(config.group_sizes.begin(), config.group_sizes.begin() + static_cast<long>(i),
                  size) != config.group_sizes.begin() + static_cast<long>(i)) {
      return FieldError(path, "duplicate group size " + std::to_string(size));
    }
  }
  // An unset mode is groups mode on Kubernetes 1.36 and later: it needs sizes too.
  if (config.mode == PublishMode::kGroups && config.group_sizes.empty()) {
    return FieldError("publishing.groupSizes", "groups mode needs at least one size");
  }
  if (!config.mode && config.group_sizes.empty()) {
    return FieldError("publishing.groupSizes",
                      "groups mode, the default from Kubernetes 1.36, needs at least one size; "
                      "set publishing.mode: attributes to publish none");
  }
  if (!Contains(TaintEffects(), config.unhealthy_effect)) {
    return FieldError("publishing.unhealthyEffect",
                      "unknown effect " + QuoteText(config.unhealthy_effect) +
                          "; expected one of " + Join(TaintEffects()));
  }

  // Every DeviceClass name the config produces, with who produces it: a capability class must
  // not take a vendor class' or a partition class' name, or another class' (or per-vendor
  // class') name.
  std::map<std::string, std::string> owners;
  for (const auto& vendor : KnownVendors()) {
    owners[vendor + "." + std::string(api::kXpuGroup)] = "the vendor class of " + vendor;
  }
  for (const auto& kind : api::PartitionKinds()) {
    owners[kind + "." + std::string(api::kXpuGroup)] = "the partition class of " + kind;
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
  ASSIGN_OR_RETURN(const Json doc, ParseYamlDocument(text));
  ASSIGN_OR_RETURN(ConfigDocument read, codec::Decode<ConfigDocument>(
                                            WithoutNullMembers(doc), StatusCode::kInvalidArgument));
  KeepImageOrder(doc, &read.config);
  RETURN_IF_ERROR(ValidateConfig(read.config));
  return std::move(read.config);
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
