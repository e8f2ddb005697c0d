#include "controller/render.h"

#include <algorithm>
#include <set>
#include <utility>

#include "api/accelerator_gang.h"
#include "api/codec/codec.h"
#include "api/resource.h"
#include "base/name_list.h"
#include "base/text.h"
#include "controller/device_classes.h"
#include "controller/render_judge.h"
#include "controller/render_tiers.h"
#include "controller/runtime_class.h"
#include "controller/slices.h"
#include "controller/yaml_json.h"

namespace xpu::controller {
namespace {

namespace codec = api::codec;
using render_internal::Refusal;
using render_internal::VendorVerdict;

constexpr std::string_view kSingleNode = "single-node";
constexpr std::string_view kMultiNode = "multi-node";
constexpr std::string_view kImageAnnotationPrefix = "xpu.dra.dev/image.";
constexpr std::string_view kClassAnnotation = "xpu.dra.dev/capability-class";
constexpr std::string_view kRenderedBy = "xpuctl-render";
// firstAvailable holds at most 8 subrequests (dra-api.md).
constexpr size_t kMaxSubrequests = 8;

// ---- Reading the request ----

struct Accelerator {
  std::string capability_class;
  int64_t count = 0;
  std::string topology;
  std::string precision;
  int64_t devices_per_node = 0;
  std::string max_tier;
};

struct RequestDocument {
  std::string name;
  std::string ns;
  Accelerator accelerator;
  std::map<std::string, std::string> images;
};

template <typename V, codec::FieldsOf<Accelerator> S>
void VisitFields(V& v, S& a) {
  v.Required("class", a.capability_class);
  v.Required("count", a.count);
  v.Optional("topology", a.topology);
  v.Optional("precision", a.precision);
  v.Optional("devicesPerNode", a.devices_per_node);
  v.Optional("maxTier", a.max_tier);
}

template <typename V, codec::FieldsOf<RequestDocument> S>
void VisitFields(V& v, S& doc) {
  v.Required("name", doc.name);
  v.Optional("namespace", doc.ns);
  v.Required("accelerator", doc.accelerator);
  v.Optional("images", doc.images);
}

}  // namespace

StatusOr<CapabilityRequest> ParseCapabilityRequest(std::string_view text) {
  ASSIGN_OR_RETURN(const nlohmann::ordered_json doc, ParseYamlDocument(text));
  ASSIGN_OR_RETURN(RequestDocument read, codec::Decode<RequestDocument>(nlohmann::json(doc)));
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(read.name, "name"));
  CapabilityRequest r;
  r.name = read.name;
  if (!read.ns.empty()) {
    RETURN_IF_ERROR(api::ValidateDnsLabel(read.ns, "namespace"));
    r.ns = read.ns;
  }
  const Accelerator& a = read.accelerator;
  r.capability_class = a.capability_class;
  r.count = a.count;
  if (r.count < 1 || r.count > 4096) {
    return InvalidArgumentError("accelerator.count: " + std::to_string(r.count) +
                                " out of range; expected 1 to 4096");
  }
  r.topology = a.topology.empty() ? std::string(kSingleNode) : a.topology;
  if (r.topology != kSingleNode && r.topology != kMultiNode) {
    return InvalidArgumentError("accelerator.topology: unknown topology " + QuoteText(r.topology) +
                                "; expected single-node or multi-node");
  }
  r.precision = a.precision;
  r.devices_per_node = a.devices_per_node;
  if (r.devices_per_node != 0 && r.topology != kMultiNode) {
    return InvalidArgumentError("accelerator.devicesPerNode: only for topology multi-node");
  }
  if (r.devices_per_node < 0 || r.devices_per_node > 64 ||
      (r.devices_per_node > 0 && r.count % r.devices_per_node != 0)) {
    return InvalidArgumentError(
        "accelerator.devicesPerNode: " + std::to_string(r.devices_per_node) +
        " must be 1 to 64 and divide accelerator.count " + std::to_string(r.count));
  }
  r.max_tier = a.max_tier;
  if (!r.max_tier.empty()) {
    const auto& tiers = api::GangTierNames();
    if (std::find(tiers.begin(), tiers.end(), r.max_tier) == tiers.end()) {
      return InvalidArgumentError("accelerator.maxTier: unknown tier " + QuoteText(r.max_tier));
    }
  }
  const auto& vendors = KnownVendors();
  for (const auto& [vendor, image] : read.images) {
    if (std::find(vendors.begin(), vendors.end(), vendor) == vendors.end()) {
      return InvalidArgumentError("images." + vendor + ": unknown vendor " + QuoteText(vendor));
    }
    if (image.empty() || image.find_first_of(" \t\n") != std::string::npos) {
      return InvalidArgumentError("images." + vendor + ": " + QuoteText(image) +
                                  " is not an image reference");
    }
  }
  r.images = read.images;
  return r;
}

namespace {

// The vendors to consider, in order of preference.
StatusOr<std::vector<std::string>> VendorsOf(const CapabilityClass& c,
                                             const std::vector<std::string>& only) {
  const std::vector<std::string>& allowed = c.vendors.empty() ? KnownVendors() : c.vendors;
  if (only.empty()) return allowed;
  std::vector<std::string> out;
  for (const std::string& vendor : only) {
    if (std::find(allowed.begin(), allowed.end(), vendor) == allowed.end()) {
      return InvalidArgumentError("--vendor: " + QuoteText(vendor) + " is not allowed by class " +
                                  c.name + " (" + JoinNames(allowed, ", ") + ")");
    }
    out.push_back(vendor);
  }
  return out;
}

// The error when no vendor is left: the most telling refusal decides which field it names.
Status NoVendorError(const CapabilityRequest& request, const std::vector<VendorVerdict>& verdicts,
                     const RenderOptions& options, const std::vector<std::string>& vendors,
                     const std::vector<ReferenceServer>& servers) {
  std::string whys;
  bool mode = false;
  bool devices = true;
  for (const VendorVerdict& v : verdicts) {
    whys += "; " + v.why;
    mode = mode || v.refusal == Refusal::kMode;
    devices = devices && v.refusal == Refusal::kNoDevices;
  }
  if (devices && !request.precision.empty()) {
    // Without the precision, would any vendor have devices?
    for (const std::string& vendor : vendors) {
      if (!render_internal::ViewsOf(servers, options.config, options.driver, vendor,
                                    request.capability_class + "." + vendor, "")
               .empty()) {
        return InvalidArgumentError(
            "accelerator.precision: no allowed vendor (" + JoinNames(vendors, ", ") +
            ") of class " + request.capability_class + " supports " + QuoteText(request.precision));
      }
    }
  }
  if (devices) {
    return InvalidArgumentError("accelerator.class: no known server has devices of class " +
                                request.capability_class + " from its vendors (" +
                                JoinNames(vendors, ", ") + ")" + whys);
  }
  return InvalidArgumentError("accelerator.count: " + std::to_string(request.count) +
                              " devices per node: " +
                              (mode ? "the cluster's publishing mode cannot keep the rules"
                                    : "no allowed vendor's rules allow it on any known server") +
                              whys);
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

nlohmann::json Metadata(const std::string& name, const std::string& ns) {
  nlohmann::json meta = {{"name", name},
                         {"labels", {{"app.kubernetes.io/managed-by", std::string(kRenderedBy)}}}};
  if (!ns.empty()) meta["namespace"] = ns;
  return meta;
}

// The metadata of what a request renders to: its name and namespace, our label, the class and
// each vendor's image.
api::ObjectMeta RenderedMeta(const CapabilityRequest& request,
                             const std::map<std::string, std::string>& images) {
  api::ObjectMeta meta;
  meta.name = request.name;
  meta.namespace_name = request.ns;
  meta.labels["app.kubernetes.io/managed-by"] = std::string(kRenderedBy);
  meta.annotations[std::string(kClassAnnotation)] = request.capability_class;
  for (const auto& [vendor, image] : images) {
    meta.annotations[std::string(kImageAnnotationPrefix) + vendor] = image;
  }
  return meta;
}

// The selector of one subrequest: the precision, its models, and in groups mode the kind of
// device (a group of its size, or a single device).
std::string SubrequestSelector(const CapabilityRequest& request, const VendorRender& vendor,
                               const SubrequestRender& sub, const std::string& driver) {
  CelSelector s(driver);
  if (!request.precision.empty()) s.AttributeTrue(request.precision);
  if (!sub.models.empty()) {
    s.AttributeIn("model", sub.models);
  } else if (!vendor.excluded_models.empty()) {
    s.AttributeNotIn("model", vendor.excluded_models);
  }
  if (sub.group_size > 0) s.AttributeIntIs("groupSize", sub.group_size);
  std::string expression = s.Expression();
  if (sub.singles) {
    // A node that fell back to attributes mode publishes its single devices without groupSize.
    const std::string attributes = "device.attributes[" + CelLiteral(driver) + "]";
    expression += " && (!('groupSize' in " + attributes + ") || " + attributes + ".groupSize == 1)";
  }
  return expression;
}

nlohmann::json ClaimTemplate(const CapabilityRequest& request,
                             const std::vector<VendorRender>& parts, const std::string& driver,
                             const std::map<std::string, std::string>& images) {
  api::resource::ResourceClaimTemplate t;
  t.metadata = RenderedMeta(request, images);
  api::resource::DeviceRequest req;
  req.name = "accelerators";
  for (const VendorRender& part : parts) {
    for (const SubrequestRender& sub : part.subrequests) {
      api::resource::DeviceSubRequest out;
      out.name = sub.name;
      out.device_class_name = part.device_class;
      out.count = sub.count;
      std::string expression = SubrequestSelector(request, part, sub, driver);
      if (expression != "device.driver == " + CelLiteral(driver)) {
        api::resource::DeviceSelector selector;
        selector.cel.emplace();
        selector.cel->expression = std::move(expression);
        out.selectors.push_back(std::move(selector));
      }
      req.first_available.push_back(std::move(out));
      // The rule-keeping constraint, then the tier's: a set must share both values.
      for (const std::string* attribute : {&sub.constraint, &sub.tier}) {
        if (attribute->empty() || sub.group_size > 0 || sub.count < 2) continue;
        api::resource::DeviceConstraint c;
        c.requests = {req.name + "/" + sub.name};
        c.match_attribute = render_internal::QualifiedAttribute(*attribute, driver);
        t.spec.spec.devices.constraints.push_back(std::move(c));
      }
    }
  }
  t.spec.spec.devices.requests.push_back(std::move(req));
  return api::resource::ToJson(t);
}

nlohmann::json Gang(const CapabilityRequest& request, int64_t per_node, const std::string& vendor,
                    const std::map<std::string, std::string>& images) {
  api::AcceleratorGang gang;
  gang.metadata = RenderedMeta(request, images);
  gang.spec.nodes = request.count / per_node;
  gang.spec.devices_per_node = per_node;
  if (vendor.empty()) {
    gang.spec.capability_class = request.capability_class;
  } else {
    gang.spec.device_class_name = request.capability_class + "." + vendor;
  }
  gang.spec.max_tier = request.max_tier;
  return api::ToJson(gang);
}

nlohmann::json Flavor(const std::string& vendor) {
  nlohmann::json flavor = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
                           {"kind", "ResourceFlavor"},
                           {"metadata", Metadata("xpu-" + vendor, "")}};
  flavor["spec"]["nodeLabels"] = {
      {"feature.node.kubernetes.io/pci-" + std::string(PciVendorId(vendor)) + ".present", "true"}};
  return flavor;
}

// The legacy-name DeviceClasses of `vendor` whose models the reference servers have.
std::vector<nlohmann::json> LegacyClasses(const std::string& vendor, const std::string& driver,
                                          const std::vector<ReferenceServer>& servers) {
  std::vector<nlohmann::json> out;
  for (const LegacyResource& legacy : LegacyResources()) {
    if (legacy.vendor != vendor) continue;
    const bool present = std::any_of(servers.begin(), servers.end(), [&](const auto& s) {
      return std::any_of(s.inventory.status.devices.begin(), s.inventory.status.devices.end(),
                         [&](const api::InventoryDevice& d) {
                           return d.vendor == vendor && d.model.starts_with(legacy.model_prefix);
                         });
    });
    if (!present) continue;
    const std::string_view resource = legacy.resource;
    api::resource::DeviceClass cls;
    cls.metadata.name = "legacy-" + vendor;
    cls.metadata.name += "-" + Lower(resource.substr(resource.find('/') + 1));
    cls.metadata.name += "." + driver;
    cls.metadata.labels["app.kubernetes.io/managed-by"] = std::string(kRenderedBy);
    CelSelector s(driver);
    s.AttributeIs("vendor", vendor);
    if (!legacy.model_prefix.empty()) s.AttributeStartsWith("model", legacy.model_prefix);
    api::resource::DeviceSelector selector;
    selector.cel.emplace();
    selector.cel->expression = s.Expression();
    cls.spec.selectors.push_back(std::move(selector));
    cls.spec.extended_resource_name = std::string(resource);
    out.push_back(api::resource::ToJson(cls));
  }
  return out;
}

// Over the API's limit of subrequests: first the least preferred tiers go (keeping every vendor
// and the order of its models by bandwidth); where that would drop a vendor, the last vendors
// give up ordering their models by bandwidth (a subrequest per model) instead, and then tiers
// and vendors go as they must. Each drop is a note.
void FitSubrequests(const std::vector<VendorVerdict>& kept, std::vector<VendorRender>& vendors,
                    std::vector<std::string>& notes) {
  std::vector<VendorRender> tiers_dropped = vendors;
  std::vector<std::string> tier_notes;
  render_internal::LimitSubrequests(tiers_dropped, kMaxSubrequests, tier_notes);
  if (tiers_dropped.size() == vendors.size()) {
    vendors = std::move(tiers_dropped);
    notes.insert(notes.end(), tier_notes.begin(), tier_notes.end());
    return;
  }
  const auto total = [&] {
    size_t n = 0;
    for (const VendorRender& r : vendors) n += r.subrequests.size();
    return n;
  };
  for (size_t i = kept.size(); i-- > 0 && total() > kMaxSubrequests;) {
    vendors[i] = render_internal::BuildVendorRender(kept[i], true, false);
  }
  render_internal::LimitSubrequests(vendors, kMaxSubrequests, notes);
}

const CapabilityClass* FindClass(const Config& config, const std::string& name) {
  for (const CapabilityClass& c : config.capability_classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

const std::vector<LegacyResource>& LegacyResources() {
  // The names the vendors' device plugins register (hardware.md): a pod that still asks for one
  // is served through the DeviceClass carrying it as extendedResourceName.
  static const std::vector<LegacyResource> kLegacy = {
      {"nvidia", "nvidia.com/gpu", ""},
      {"huawei", "huawei.com/Ascend910", "Ascend910"},
      {"huawei", "huawei.com/Ascend310P", "Ascend310P"},
      {"hygon", "hygon.com/dcunum", ""},
      {"cambricon", "cambricon.com/mlu", ""},
      {"metax", "metax-tech.com/gpu", ""},
      {"biren", "birentech.com/gpu", ""},
      {"enflame", "enflame.com/gcu", ""},
      {"mthreads", "mthreads.com/gpu", ""},
      {"amd", "amd.com/gpu", ""},
  };
  return kLegacy;
}

std::string_view PciVendorId(std::string_view vendor) {
  static const std::map<std::string_view, std::string_view> kIds = {
      {"nvidia", "10de"},    {"huawei", "19e5"},   {"hygon", "1d94"},
      {"cambricon", "cabc"}, {"metax", "9999"},    {"biren", "1ee0"},
      {"enflame", "1e36"},   {"mthreads", "1ed5"}, {"amd", "1002"}};
  auto it = kIds.find(vendor);
  return it == kIds.end() ? std::string_view() : it->second;
}

StatusOr<Rendered> Render(const CapabilityRequest& request, const RenderOptions& options) {
  const CapabilityClass* c = FindClass(options.config, request.capability_class);
  if (c == nullptr) {
    std::vector<std::string> known;
    for (const CapabilityClass& k : options.config.capability_classes) known.push_back(k.name);
    return InvalidArgumentError("accelerator.class: unknown capability class " +
                                QuoteText(request.capability_class) + "; the config has " +
                                (known.empty() ? "none" : JoinNames(known, ", ")));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> vendors, VendorsOf(*c, options.vendors));
  const std::vector<ReferenceServer>& servers =
      options.servers.empty() ? ReferenceServers() : options.servers;
  const bool multi = request.topology == kMultiNode;

  // Devices per node: the request's; single-node: all of them; multi-node: the largest count a
  // server of the first vendor that can serve one holds and that divides the total.
  int64_t per_node = multi ? request.devices_per_node : request.count;
  if (multi && per_node == 0) {
    for (const std::string& vendor : vendors) {
      for (int64_t k = std::min<int64_t>(request.count, 64); k >= 1 && per_node == 0; --k) {
        if (request.count % k != 0) continue;
        if (render_internal::JudgeVendor(vendor, k, c->name, request.precision, options, servers)
                .refusal == Refusal::kNone) {
          per_node = k;
        }
      }
      if (per_node != 0) break;
    }
  }
  Rendered out;
  std::vector<VendorVerdict> refused;
  std::vector<VendorVerdict> kept;  // in out.vendors' order
  for (const std::string& vendor : vendors) {
    VendorVerdict v = render_internal::JudgeVendor(vendor, per_node == 0 ? request.count : per_node,
                                                   c->name, request.precision, options, servers);
    if (v.refusal != Refusal::kNone) {
      out.notes.push_back("left out " + v.why);
      refused.push_back(std::move(v));
      continue;
    }
    out.notes.insert(out.notes.end(), v.notes.begin(), v.notes.end());
    // Tiers only where a claim lists them: a gang's members take what the gang plan gives.
    out.vendors.push_back(render_internal::BuildVendorRender(v, !multi, !multi));
    kept.push_back(std::move(v));
  }
  if (out.vendors.empty() || per_node == 0) {
    return NoVendorError(request, refused, options, vendors, servers);
  }
  if (!multi) FitSubrequests(kept, out.vendors, out.notes);

  // Images: the request's over the class'. Every vendor rendered needs one once any has one.
  std::map<std::string, std::string> images(c->images.begin(), c->images.end());
  for (const auto& [vendor, image] : request.images) images[vendor] = image;
  std::map<std::string, std::string> used;
  for (VendorRender& v : out.vendors) {
    auto it = images.find(v.vendor);
    if (it != images.end()) {
      v.image = it->second;
      used[v.vendor] = it->second;
    } else if (!images.empty()) {
      return InvalidArgumentError("images." + v.vendor + ": no image for vendor " + v.vendor +
                                  "; set it in the request or in the class " + c->name +
                                  " (capabilityClasses[].images), or leave the vendor out with "
                                  "--vendor");
    }
  }
  for (VendorRender& v : out.vendors) {
    if (!options.driver_files_off.contains(v.vendor)) continue;
    v.runtime_class = std::string(VendorRuntimeClass(v.vendor));
    out.notes.push_back(RuntimeClassNote(v.vendor));
  }
  if (images.empty()) {
    out.notes.emplace_back(
        "no images configured: the pod's image must match the vendor the "
        "scheduler picks (set images, or render one vendor with --vendor)");
  }

  if (multi) {
    out.objects.push_back(
        Gang(request, per_node, options.vendors.size() == 1 ? options.vendors[0] : "", used));
  } else {
    out.objects.push_back(ClaimTemplate(request, out.vendors, options.driver, used));
  }
  for (const VendorRender& v : out.vendors) out.objects.push_back(Flavor(v.vendor));
  for (const VendorRender& v : out.vendors) {
    for (nlohmann::json& cls : LegacyClasses(v.vendor, options.driver, servers)) {
      out.objects.push_back(std::move(cls));
    }
  }
  return out;
}

}  // namespace xpu::controller
