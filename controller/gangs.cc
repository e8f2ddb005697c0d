#include "controller/gangs.h"

#include <algorithm>
#include <utility>

#include "controller/device_classes.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;
using api::AcceleratorGang;
using api::resource::DeviceAttribute;
using api::resource::ResourceClaim;
using api::resource::ResourceClaimTemplate;
using api::resource::ResourceSlice;
// Labels of the objects made for a gang.
constexpr std::string_view kGangNameLabel = "xpu.dra.dev/gang";
constexpr std::string_view kGangNamespaceLabel = "xpu.dra.dev/gang-namespace";
constexpr std::string_view kManagedBy = "app.kubernetes.io/managed-by";

DeviceAttribute String(std::string value) {
  DeviceAttribute a;
  a.string_value = std::move(value);
  return a;
}

// A CEL string literal of a uid or name (no quotes or backslashes in either).
std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string GangSelector(const AcceleratorGang& gang, std::string_view driver) {
  const std::string attrs = "device.attributes[" + Quoted(driver) + "]";
  return "'gang' in " + attrs + " && " + attrs + ".gang == " + Quoted(gang.metadata.uid);
}

api::OwnerReference OwnerOf(const AcceleratorGang& gang) {
  api::OwnerReference o;
  o.api_version = std::string(api::kXpuApiVersion);
  o.kind = std::string(api::kAcceleratorGangKind);
  o.name = gang.metadata.name;
  o.uid = gang.metadata.uid;
  o.controller = true;
  return o;
}

api::ObjectMeta OwnedMeta(const AcceleratorGang& gang, std::string name) {
  api::ObjectMeta m;
  m.name = std::move(name);
  m.namespace_name = gang.metadata.namespace_name;
  m.labels[std::string(kGangNameLabel)] = gang.metadata.name;
  m.labels[std::string(kManagedBy)] = "xpu-dra-controller";
  m.owner_references.push_back(OwnerOf(gang));
  return m;
}

kc::DeleteOptions UidPrecondition(const std::string& uid) {
  kc::DeleteOptions o;
  o.uid = uid;
  return o;
}

bool OwnedBy(const api::ObjectMeta& meta, std::string_view gang) {
  return std::any_of(meta.owner_references.begin(), meta.owner_references.end(),
                     [&](const api::OwnerReference& o) {
                       return o.kind == api::kAcceleratorGangKind && o.name == gang;
                     });
}

// Spec equality apart from the pool generation.
bool SameSlice(const api::resource::ResourceSliceSpec& a, api::resource::ResourceSliceSpec b) {
  b.pool.generation = a.pool.generation;
  return a == b;
}

}  // namespace

std::string GangSliceName(std::string_view ns, std::string_view name) {
  return std::string(kGangSlicePrefix) + std::string(ns) + "." + std::string(name);
}

std::optional<kc::ObjectKey> GangOfSlice(std::string_view slice_name) {
  if (!slice_name.starts_with(kGangSlicePrefix)) return std::nullopt;
  const std::string_view rest = slice_name.substr(kGangSlicePrefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == rest.size()) return std::nullopt;
  return kc::ObjectKey::Namespaced(std::string(rest.substr(0, dot)),
                                   std::string(rest.substr(dot + 1)));
}

std::string GangClaimName(std::string_view gang) { return std::string(gang) + "-gang"; }
std::string GangTemplateName(std::string_view gang) { return std::string(gang) + "-member"; }

ResourceSlice GangSlice(const AcceleratorGang& gang, const GangObjectOptions& options,
                        int64_t generation) {
  ResourceSlice slice;
  slice.metadata.name = GangSliceName(gang.metadata.namespace_name, gang.metadata.name);
  slice.metadata.labels[std::string(kGangNameLabel)] = gang.metadata.name;
  slice.metadata.labels[std::string(kGangNamespaceLabel)] = gang.metadata.namespace_name;
  slice.metadata.labels[std::string(kManagedBy)] = "xpu-dra-controller";
  slice.spec.driver = options.driver;
  slice.spec.pool.name = std::string(kGangPool);
  slice.spec.pool.generation = generation;
  slice.spec.pool.resource_slice_count = 1;
  std::vector<std::string> nodes;
  for (const api::GangNode& n : gang.status.nodes) {
    auto it = options.hostnames.find(n.name);
    nodes.push_back(it != options.hostnames.end() && !it->second.empty() ? it->second : n.name);
  }
  std::sort(nodes.begin(), nodes.end());
  slice.spec.node_selector = nlohmann::json{
      {"nodeSelectorTerms",
       {{{"matchExpressions",
          {{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", nodes}}}}}}}};
  api::resource::Device device;
  device.name = "gang-" + gang.metadata.name;
  device.attributes["gang"] = String(gang.metadata.uid);
  DeviceAttribute count;
  count.int_value = static_cast<int64_t>(nodes.size());
  device.attributes["gangNodes"] = count;
  const std::string& tier = gang.status.tier;
  if (!gang.status.domain.empty()) {
    if (tier == "leaf" || tier == "spine") {
      device.attributes[tier] = String(gang.status.domain);
    } else if (tier == "superpod" || tier == "scaleUpDomain") {
      device.attributes["fabricDomain"] = String(gang.status.domain);
    }
  }
  slice.spec.devices.push_back(std::move(device));
  return slice;
}

ResourceClaim GangClaim(const AcceleratorGang& gang, const GangObjectOptions& options) {
  ResourceClaim claim;
  claim.metadata = OwnedMeta(gang, GangClaimName(gang.metadata.name));
  api::resource::DeviceRequest request;
  request.name = "gang";
  request.exactly.emplace();
  request.exactly->device_class_name = GangClassName(options.driver);
  api::resource::DeviceSelector selector;
  selector.cel.emplace();
  selector.cel->expression = GangSelector(gang, options.driver);
  request.exactly->selectors.push_back(std::move(selector));
  request.exactly->count = 1;
  claim.spec.devices.requests.push_back(std::move(request));
  return claim;
}

ResourceClaimTemplate GangTemplate(const AcceleratorGang& gang, const GangObjectOptions& options) {
  ResourceClaimTemplate t;
  t.metadata = OwnedMeta(gang, GangTemplateName(gang.metadata.name));
  t.spec.metadata.labels[std::string(kGangNameLabel)] = gang.metadata.name;
  api::resource::DeviceRequest request;
  request.name = "devices";
  request.exactly.emplace();
  request.exactly->device_class_name = api::GangDeviceClass(gang.spec);
  const std::string attrs = "device.attributes[" + Quoted(options.driver) + "]";
  std::string expression =
      GangSelector(gang, options.driver) + " && !('gangNodes' in " + attrs + ")";
  const int64_t k = gang.spec.devices_per_node;
  if (options.mode == PublishMode::kGroups && k > 1) {
    expression +=
        " && 'groupSize' in " + attrs + " && " + attrs + ".groupSize == " + std::to_string(k);
    request.exactly->count = 1;
  } else {
    request.exactly->count = k;
  }
  api::resource::DeviceSelector selector;
  selector.cel.emplace();
  selector.cel->expression = std::move(expression);
  request.exactly->selectors.push_back(std::move(selector));
  t.spec.spec.devices.requests.push_back(std::move(request));
  if (options.mode != PublishMode::kGroups && k > 1 && options.scale_up_aligned) {
    api::resource::DeviceConstraint c;
    c.requests = {"devices"};
    c.match_attribute = options.driver + "/scaleUpDomain";
    t.spec.spec.devices.constraints.push_back(std::move(c));
  }
  return t;
}

GangSyncPlan PlanGangSync(const kc::ObjectKey& key, const std::optional<AcceleratorGang>& gang,
                          const std::optional<api::AcceleratorGangStatus>& next, bool moved,
                          const std::vector<ResourceSlice>& slices, int64_t top_generation,
                          const GangObjectOptions& options) {
  GangSyncPlan plan;
  plan.gang = key;
  const std::string own_slice = GangSliceName(key.ns(), key.name());
  if (!gang.has_value()) {
    for (const ResourceSlice& s : slices) plan.delete_slices.push_back(s.metadata.name);
    plan.delete_owned = true;
    return plan;
  }
  AcceleratorGang after = *gang;
  if (next.has_value() && *next != gang->status) {
    after.status = *next;
    plan.status = after;
  }
  const bool placed = after.status.phase == "Placed" && !after.status.nodes.empty();
  const ResourceSlice* existing = nullptr;
  for (const ResourceSlice& s : slices) {
    if (placed && s.metadata.name == own_slice && existing == nullptr) {
      existing = &s;
    } else {
      plan.delete_slices.push_back(s.metadata.name);
    }
  }
  if (placed) {
    ResourceSlice want = GangSlice(after, options, top_generation + 1);
    if (existing == nullptr) {
      plan.create_slice = std::move(want);
    } else if (!SameSlice(existing->spec, want.spec)) {
      want.metadata.resource_version = existing->metadata.resource_version;
      want.metadata.uid = existing->metadata.uid;
      plan.update_slice = std::move(want);
    }
    plan.claim = GangClaim(after, options);
    plan.recreate_claim = moved;
    plan.claim_template = GangTemplate(after, options);
  }
  return plan;
}

namespace {

// Deletes `name` when a gang named `gang` owns it; NotFound is done.
template <typename T>
Status DeleteIfOwned(kc::Objects<T>& objects, const kc::ObjectKey& key, std::string_view gang,
                     int& writes) {
  StatusOr<T> current = objects.Get(key);
  if (!current.ok()) {
    return current.status().code() == StatusCode::kNotFound ? OkStatus() : current.status();
  }
  if (!OwnedBy(current->metadata, gang)) return OkStatus();
  ++writes;
  Status s = objects.Delete(key, UidPrecondition(current->metadata.uid));
  return s.code() == StatusCode::kNotFound ? OkStatus() : s;
}

// After a Get that answered `read`: creates `object` when it was not found (AlreadyExists is
// fine: someone made it meanwhile); other read errors are returned.
template <typename T>
Status CreateIfMissing(kc::Objects<T>& objects, const Status& read, const T& object, int& writes) {
  if (read.code() != StatusCode::kNotFound) return read;
  ++writes;
  StatusOr<T> made = objects.Create(object);
  if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) return made.status();
  return OkStatus();
}

}  // namespace

GangSyncResult ApplyGangSync(const GangSyncPlan& plan, const GangWriters& w) {
  GangSyncResult result;
  auto fail = [&](const Status& s, const std::string& what) {
    result.status = s.WithContext(what + " of gang " + plan.gang.String());
    return result;
  };
  if (plan.status.has_value()) {
    ++result.writes;
    StatusOr<AcceleratorGang> written = w.gangs->UpdateStatus(*plan.status);
    if (!written.ok()) return fail(written.status(), "write status");
    result.written = std::move(written).value();
  }
  for (const std::string& name : plan.delete_slices) {
    ++result.writes;
    Status s = w.slices->Delete(kc::ObjectKey::Cluster(name), {});
    if (!s.ok() && s.code() != StatusCode::kNotFound) return fail(s, "delete slice " + name);
    result.deleted_slices.push_back(name);
  }
  if (plan.create_slice.has_value()) {
    ++result.writes;
    StatusOr<ResourceSlice> s = w.slices->Create(*plan.create_slice);
    if (!s.ok() && s.status().code() == StatusCode::kAlreadyExists) {
      // The cache had not seen the slice yet: the server's is brought to the plan instead.
      StatusOr<ResourceSlice> current =
          w.slices->Get(kc::ObjectKey::Cluster(plan.create_slice->metadata.name));
      if (current.ok()) {
        ResourceSlice next = *plan.create_slice;
        next.metadata.resource_version = current->metadata.resource_version;
        ++result.writes;
        s = w.slices->Update(next);
      }
    }
    if (!s.ok()) return fail(s.status(), "create slice");
    result.written_slices.push_back(std::move(s).value());
  }
  if (plan.update_slice.has_value()) {
    ++result.writes;
    StatusOr<ResourceSlice> s = w.slices->Update(*plan.update_slice);
    if (!s.ok()) return fail(s.status(), "update slice");
    result.written_slices.push_back(std::move(s).value());
  }
  const std::string gang = plan.gang.name();
  if (plan.delete_owned) {
    Status s =
        DeleteIfOwned(*w.claims, kc::ObjectKey::Namespaced(plan.gang.ns(), GangClaimName(gang)),
                      gang, result.writes);
    if (!s.ok()) return fail(s, "delete claim");
    s = DeleteIfOwned(*w.templates,
                      kc::ObjectKey::Namespaced(plan.gang.ns(), GangTemplateName(gang)), gang,
                      result.writes);
    if (!s.ok()) return fail(s, "delete claim template");
    return result;
  }
  if (plan.claim.has_value()) {
    const kc::ObjectKey key = kc::ObjectKey::Of(plan.claim->metadata);
    StatusOr<ResourceClaim> current = w.claims->Get(key);
    if (current.ok() && plan.recreate_claim && OwnedBy(current->metadata, gang)) {
      if (!current->metadata.deletion_timestamp.has_value()) {
        ++result.writes;
        Status s = w.claims->Delete(key, UidPrecondition(current->metadata.uid));
        if (!s.ok() && s.code() != StatusCode::kNotFound) return fail(s, "delete moved claim");
      }
      result.waiting = true;
    } else if (current.ok() && current->metadata.deletion_timestamp.has_value()) {
      result.waiting = true;  // being deleted: made again once gone
    } else if (!current.ok()) {
      Status s = CreateIfMissing(*w.claims, current.status(), *plan.claim, result.writes);
      if (!s.ok()) return fail(s, "make claim");
    }
  }
  if (plan.claim_template.has_value()) {
    const kc::ObjectKey key = kc::ObjectKey::Of(plan.claim_template->metadata);
    StatusOr<ResourceClaimTemplate> current = w.templates->Get(key);
    if (!current.ok()) {
      Status s =
          CreateIfMissing(*w.templates, current.status(), *plan.claim_template, result.writes);
      if (!s.ok()) return fail(s, "make claim template");
    } else if (OwnedBy(current->metadata, gang) && current->spec != plan.claim_template->spec) {
      // A template's spec cannot change: delete it, and make it again once gone.
      ++result.writes;
      Status s = w.templates->Delete(key, UidPrecondition(current->metadata.uid));
      if (!s.ok() && s.code() != StatusCode::kNotFound) return fail(s, "replace claim template");
      result.waiting = true;
    }
  }
  return result;
}

}  // namespace xpu::controller
