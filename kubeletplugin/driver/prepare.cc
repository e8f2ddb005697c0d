#include "kubeletplugin/driver/prepare.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "api/rank_table.h"
#include "base/name_list.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/driver/config.h"

namespace xpu::plugin {
namespace {

namespace res = api::resource;

// One result of ours and the node devices it stands for: itself, or a group device's members
// (the `groups` publishing mode).
struct Resolved {
  const res::DeviceRequestAllocationResult* result = nullptr;
  std::vector<const api::InventoryDevice*> devices;
  std::vector<std::string> members;  // a group's member names; empty for a single device
};

// The inventory's group devices, computed only when a result names a device that is not a node
// device.
class Groups {
 public:
  explicit Groups(const api::NodeInventory& inventory) : inventory_(inventory) {}
  const api::GroupDevice* Find(const std::string& name) {
    if (!all_) {
      StatusOr<std::vector<api::GroupDevice>> groups = api::GroupDevices(inventory_);
      all_ = groups.ok() ? std::move(groups).value() : std::vector<api::GroupDevice>{};
    }
    const auto it = std::find_if(all_->begin(), all_->end(),
                                 [&](const api::GroupDevice& g) { return g.name == name; });
    return it == all_->end() ? nullptr : &*it;
  }

 private:
  const api::NodeInventory& inventory_;
  std::optional<std::vector<api::GroupDevice>> all_;
};

StatusOr<std::vector<Resolved>> Resolve(
    const PrepareInput& in, const std::vector<const res::DeviceRequestAllocationResult*>& mine,
    const std::string& what) {
  Groups groups(*in.inventory);
  std::vector<Resolved> out;
  for (const res::DeviceRequestAllocationResult* r : mine) {
    Resolved resolved;
    resolved.result = r;
    std::vector<std::string> names = {r->device};
    if (auto part = in.partitions.find(r->device); part != in.partitions.end()) {
      if (auto t = in.taken.find(r->device); t != in.taken.end() && t->second != in.ref.uid) {
        return FailedPreconditionError(what + ": device " + r->device +
                                       " is already prepared for claim " + t->second);
      }
      resolved.devices.push_back(&part->second.device);
      out.push_back(std::move(resolved));
      continue;
    }
    if (FindInventoryDevice(*in.inventory, r->device) == nullptr) {
      const api::GroupDevice* group = groups.Find(r->device);
      if (group == nullptr) {
        return InvalidArgumentError(what + ": device " + r->device + " of request " + r->request +
                                    " is not on node " + in.node_name);
      }
      names = group->members;
      resolved.members = group->members;
    }
    const bool shared = r->share_id.has_value() || r->admin_access.value_or(false);
    for (const std::string& name : names) {
      if (auto t = in.taken.find(name); !shared && t != in.taken.end() && t->second != in.ref.uid) {
        std::string error = what;
        error.append(": device ").append(name).append(" is already prepared for claim ");
        return FailedPreconditionError(error.append(t->second));
      }
      const api::InventoryDevice* device = FindInventoryDevice(*in.inventory, name);
      if (device == nullptr) {
        std::string error = what;
        error.append(": device ").append(name).append(" of group ").append(r->device);
        return InvalidArgumentError(error.append(" is not on node ").append(in.node_name));
      }
      resolved.devices.push_back(device);
    }
    out.push_back(std::move(resolved));
  }
  return out;
}

cdi::DeviceFacts FactsOf(const PrepareInput& in, const api::InventoryDevice& d,
                         const HostView& host) {
  auto part = in.partitions.find(d.name);
  return cdi::FactsOf(d, part != in.partitions.end() && !part->second.device_node.empty()
                             ? part->second.device_node
                             : host.device_node(d));
}

std::string VariableName(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// Each vendor's user-space driver among the claim's devices, into the spec's common edits. A
// host without the files (a partial install) fails the claim before anything is written.
Status AddDriverFiles(const HostView& host, const std::vector<cdi::DeviceFacts>& facts,
                      const std::string& what, cdi::ContainerEdits& common) {
  if (!host.driver_files) return OkStatus();
  std::set<std::string> vendors;
  for (const cdi::DeviceFacts& f : facts) vendors.insert(f.vendor);
  for (const std::string& vendor : vendors) {
    StatusOr<cdi::ContainerEdits> files = host.driver_files(vendor);
    if (!files.ok()) return files.status().WithContext(what);
    for (cdi::Mount& m : files->mounts) {
      const bool present =
          std::any_of(common.mounts.begin(), common.mounts.end(),
                      [&](const cdi::Mount& c) { return c.container_path == m.container_path; });
      if (!present) common.mounts.push_back(std::move(m));
    }
    common.env.insert(common.env.end(), files->env.begin(), files->env.end());
    common.hooks.insert(common.hooks.end(), files->hooks.begin(), files->hooks.end());
  }
  return OkStatus();
}

// The local devices' edits and records, appended to `spec` and `record`.
Status AddLocalDevices(const PrepareInput& in, const HostView& host,
                       const std::map<std::string, DeviceConfig>& config,
                       const std::vector<Resolved>& resolved, cdi::Spec& spec,
                       checkpoint::Claim& claim_record) {
  const std::string what = "ResourceClaim " + in.ref.ns + "/" + in.ref.name;
  std::vector<cdi::DeviceFacts> facts;
  for (const Resolved& r : resolved) {
    for (const api::InventoryDevice* d : r.devices) facts.push_back(FactsOf(in, *d, host));
  }
  const cdi::ClaimEdits edits = cdi::EditsForClaim(facts, host.files);
  spec.edits = edits.common;
  RETURN_IF_ERROR(AddDriverFiles(host, facts, what, spec.edits));
  std::set<std::string> driver_env;
  for (const std::string& e : spec.edits.env) driver_env.insert(VariableName(e));
  size_t next_fact = 0;
  for (const Resolved& r : resolved) {
    cdi::Device device;
    device.name = in.ref.uid + "-" + r.result->device;
    for (size_t k = 0; k < r.devices.size(); ++k, ++next_fact) {
      const cdi::ContainerEdits& e = edits.per_device[next_fact];
      device.edits.env.insert(device.edits.env.end(), e.env.begin(), e.env.end());
      device.edits.device_nodes.insert(device.edits.device_nodes.end(), e.device_nodes.begin(),
                                       e.device_nodes.end());
      device.edits.mounts.insert(device.edits.mounts.end(), e.mounts.begin(), e.mounts.end());
      if (auto part = in.partitions.find(r.devices[k]->name); part != in.partitions.end()) {
        device.edits.mounts.insert(device.edits.mounts.end(), part->second.mounts.begin(),
                                   part->second.mounts.end());
      }
    }
    for (const std::string& e : device.edits.env) driver_env.insert(VariableName(e));
    const std::string request = BaseRequestName(r.result->request);
    for (const auto& [name, value] : config.at(request).env) {
      if (driver_env.contains(name)) {
        std::string error = what;
        error.append(": opaque config env.").append(name);
        return InvalidArgumentError(error.append(": set by the driver, cannot be overridden"));
      }
      std::string entry = name;
      device.edits.env.push_back(entry.append("=").append(value));
    }
    // Every device names its claim, so the device edits are never empty.
    device.edits.env.push_back("XPU_DRA_CLAIM_UID=" + in.ref.uid);
    checkpoint::Device record;
    record.request_names = {request};
    record.pool = r.result->pool;
    record.device = r.result->device;
    record.cdi_device_ids = {cdi::QualifiedName(spec.kind, device.name)};
    record.share_id = r.result->share_id.value_or("");
    record.members = r.members;
    spec.devices.push_back(std::move(device));
    claim_record.devices.push_back(std::move(record));
  }
  return OkStatus();
}

// The gang device's files, mounts and variables (see prepare.h).
Status AddGangDevice(const PrepareInput& in, const res::DeviceRequestAllocationResult& result,
                     const std::string& what, cdi::Spec& spec, PreparedClaim& out) {
  const std::string name = result.device.substr(
      result.device.starts_with(api::kGangDevicePrefix) ? api::kGangDevicePrefix.size() : 0);
  if (in.gang == nullptr || in.gang->metadata.name != name) {
    return UnavailableError(what + ": AcceleratorGang " + in.ref.ns + "/" + name + " of device " +
                            result.device + " could not be read; retry");
  }
  const api::AcceleratorGangStatus& status = in.gang->status;
  const api::GangNode* self = nullptr;
  const api::GangNode* first = nullptr;
  for (const api::GangNode& n : status.nodes) {
    if (n.name == in.node_name) self = &n;
    if (n.rank == 0) first = &n;
  }
  if (status.phase != "Placed" || self == nullptr || first == nullptr) {
    return FailedPreconditionError(what + ": AcceleratorGang " + in.ref.ns + "/" + name +
                                   " is not placed on node " + in.node_name);
  }
  const bool super_pods =
      std::any_of(status.rank_table.begin(), status.rank_table.end(),
                  [](const api::GangRank& r) { return !r.super_pod_id.empty(); });
  StatusOr<nlohmann::json> table = api::HcclRankTable(status, super_pods ? "1.2" : "1.0");
  if (!table.ok()) return InvalidArgumentError(what + ": " + table.status().message());
  const std::string dir = in.gang_dir + "/" + in.ref.uid;
  const std::string container = std::string(kGangContainerDir);
  out.files[dir + "/rank_table.json"] = table->dump(2) + "\n";
  out.files[dir + "/hostfile"] = api::HostFile(status);

  cdi::Device device;
  device.name = in.ref.uid + "-" + result.device;
  for (const char* file : {"rank_table.json", "hostfile"}) {
    device.edits.mounts.push_back(
        {dir + "/" + file, container + "/" + file, {"ro", "nosuid", "nodev", "bind"}, ""});
  }
  const size_t per_node = self->devices.size();
  device.edits.env = {
      "RANK_TABLE_FILE=" + container + "/rank_table.json",
      "XPU_DRA_HOSTFILE=" + container + "/hostfile",
      "WORLD_SIZE=" + std::to_string(status.rank_table.size()),
      "RANK_SIZE=" + std::to_string(status.rank_table.size()),
      "NNODES=" + std::to_string(status.nodes.size()),
      "NODE_RANK=" + std::to_string(self->rank),
      "LOCAL_WORLD_SIZE=" + std::to_string(per_node),
      "MASTER_ADDR=" + (first->address.empty() ? first->name : first->address),
      "XPU_DRA_GANG=" + in.ref.ns + "/" + name,
      "XPU_DRA_CLAIM_UID=" + in.ref.uid,
  };
  checkpoint::Device record;
  record.request_names = {BaseRequestName(result.request)};
  record.pool = result.pool;
  record.device = result.device;
  record.cdi_device_ids = {cdi::QualifiedName(spec.kind, device.name)};
  record.share_id = result.share_id.value_or("");
  spec.devices.push_back(std::move(device));
  out.record.devices.push_back(std::move(record));
  return OkStatus();
}

// A device attribute as ResourceSlices write it: {"string": ...}, {"int": ...}, {"bool": ...} or
// {"version": ...}.
nlohmann::json AttributeJson(const api::InventoryAttribute& a) {
  if (a.int_value) return {{"int", *a.int_value}};
  if (a.bool_value) return {{"bool", *a.bool_value}};
  if (a.version) return {{"version", *a.version}};
  return {{"string", a.string_value.value_or("")}};
}

// What the metadata file says of one local device.
nlohmann::json DeviceAttributesJson(const api::InventoryDevice& d) {
  nlohmann::json attributes = nlohmann::json::object();
  for (const auto& [name, value] : d.attributes) attributes[name] = AttributeJson(value);
  auto set = [&](const std::string& name, nlohmann::json value) {
    if (!attributes.contains(name)) attributes[name] = std::move(value);
  };
  set("vendor", {{"string", d.vendor}});
  set("model", {{"string", d.model}});
  set("index", {{"int", d.index}});
  if (!d.uuid.empty()) set("uuid", {{"string", d.uuid}});
  if (!d.pci_address.empty()) set("resource.kubernetes.io/pciBusID", {{"string", d.pci_address}});
  if (!d.pcie_root.empty()) set("resource.kubernetes.io/pcieRoot", {{"string", d.pcie_root}});
  return attributes;
}

// The KEP-5304 files and their CDI devices (see prepare.h).
void AddDeviceMetadata(const PrepareInput& in, cdi::Spec& spec, PreparedClaim& out) {
  std::map<std::string, nlohmann::json> by_request;  // request -> its devices
  std::map<std::string, std::vector<checkpoint::Device*>> records;
  for (checkpoint::Device& r : out.record.devices) {
    const std::string& request = r.request_names.at(0);
    nlohmann::json device = {{"name", r.device}, {"driver", in.driver_name}, {"pool", r.pool}};
    nlohmann::json attributes = nlohmann::json::object();
    if (r.pool == api::kGangPoolName && in.gang != nullptr) {
      const api::AcceleratorGangStatus& g = in.gang->status;
      attributes["gang"] = {{"string", in.ref.ns + "/" + in.gang->metadata.name}};
      for (const api::GangNode& n : g.nodes) {
        if (n.name == in.node_name) attributes["nodeRank"] = {{"int", n.rank}};
      }
      attributes["nodes"] = {{"int", static_cast<int64_t>(g.nodes.size())}};
      attributes["worldSize"] = {{"int", static_cast<int64_t>(g.rank_table.size())}};
      attributes["rankTableFile"] = {
          {"string", std::string(kGangContainerDir) + "/rank_table.json"}};
    } else if (in.inventory != nullptr) {
      if (const api::InventoryDevice* d = FindInventoryDevice(*in.inventory, r.device)) {
        attributes = DeviceAttributesJson(*d);
      } else if (!r.members.empty()) {
        attributes["groupSize"] = {{"int", static_cast<int64_t>(r.members.size())}};
        attributes["members"] = {{"string", JoinNames(r.members)}};
      }
    }
    device["attributes"] = std::move(attributes);
    by_request[request].push_back(std::move(device));
    records[request].push_back(&r);
  }
  const std::string claim_dir = in.metadata_dir + "/" + in.ref.ns + "_" + in.ref.name;
  for (auto& [request, devices] : by_request) {
    const nlohmann::json doc = {
        {"apiVersion", "metadata.resource.k8s.io/v1alpha1"},
        {"kind", "DeviceMetadata"},
        {"metadata", {{"name", in.ref.name}, {"namespace", in.ref.ns}, {"uid", in.ref.uid}}},
        {"requests", {{{"name", request}, {"devices", std::move(devices)}}}}};
    std::string host = claim_dir;
    host.append("/").append(request).append("/metadata.json");
    out.files[host] = doc.dump(2) + "\n";
    cdi::Device device;
    device.name = in.ref.uid + "-metadata-" + request;
    device.edits.mounts.push_back({host,
                                   "/var/run/dra-device-attributes/" + in.ref.name + "/" + request +
                                       "/" + in.driver_name + "-metadata.json",
                                   {"ro", "nosuid", "nodev", "bind"},
                                   ""});
    const std::string id = cdi::QualifiedName(spec.kind, device.name);
    for (checkpoint::Device* r : records[request]) r->cdi_device_ids.push_back(id);
    spec.devices.push_back(std::move(device));
  }
}

}  // namespace

HostView HostViewUnder(const std::string& host_root) {
  return {[host_root](const api::InventoryDevice& d) {
            return discovery::DeviceNodePath(host_root, d);
          },
          cdi::HostFilesUnder(host_root),
          {}};
}

const api::InventoryDevice* FindInventoryDevice(const api::NodeInventory& inventory,
                                                const std::string& name) {
  const auto& devices = inventory.status.devices;
  const auto it = std::find_if(devices.begin(), devices.end(),
                               [&](const api::InventoryDevice& d) { return d.name == name; });
  return it == devices.end() ? nullptr : &*it;
}

void NoteTakenDevices(const checkpoint::Claim& claim, std::map<std::string, std::string>* taken) {
  for (const checkpoint::Device& d : claim.devices) {
    if (!d.share_id.empty()) continue;
    if (d.members.empty()) (*taken)[d.device] = claim.uid;
    for (const std::string& m : d.members) (*taken)[m] = claim.uid;
  }
}

void PinPartitions(const std::vector<checkpoint::Partition>& records,
                   api::NodeInventory* inventory) {
  for (api::InventoryDevice& d : inventory->status.devices) {
    if (!d.partitioning.has_value()) continue;
    std::vector<api::InventoryPartition>& parts = d.partitioning->partitions;
    std::set<std::pair<std::string, int64_t>> pinned;  // (profile, instance)
    std::vector<bool> is_pinned(parts.size(), false);
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].placement.has_value()) continue;
      for (const checkpoint::Partition& r : records) {
        if (r.parent != d.name || r.profile != parts[i].profile || r.id != parts[i].id ||
            r.placement >= 0 || r.state == checkpoint::kPartitionDestroying) {
          continue;
        }
        parts[i].instance = r.instance;
        pinned.emplace(r.profile, r.instance);
        is_pinned[i] = true;
      }
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      if (is_pinned[i] || parts[i].placement.has_value()) continue;
      int64_t n = 0;
      while (pinned.contains({parts[i].profile, n})) ++n;
      parts[i].instance = n;
      pinned.emplace(parts[i].profile, n);
    }
  }
}

PrepareResult AnswerOf(const checkpoint::Claim& claim) {
  PrepareResult r;
  for (const checkpoint::Device& d : claim.devices) {
    r.devices.push_back({d.request_names, d.pool, d.device, d.cdi_device_ids, d.share_id});
  }
  return r;
}

StatusOr<PreparedClaim> ComputePreparedClaim(const PrepareInput& in, const HostView& host) {
  const std::string what = "ResourceClaim " + in.ref.ns + "/" + in.ref.name;
  if (in.allocation == nullptr) return InvalidArgumentError(what + ": not allocated");
  PreparedClaim out;
  out.record.uid = in.ref.uid;
  out.record.ns = in.ref.ns;
  out.record.name = in.ref.name;

  std::vector<const res::DeviceRequestAllocationResult*> mine;
  std::vector<const res::DeviceRequestAllocationResult*> gangs;
  std::vector<std::string> requests;
  for (const res::DeviceRequestAllocationResult& r : in.allocation->devices.results) {
    if (r.driver != in.driver_name) continue;
    if (r.pool == api::kGangPoolName) {
      gangs.push_back(&r);
      continue;
    }
    if (r.pool != in.node_name) continue;
    mine.push_back(&r);
    requests.push_back(r.request);
  }
  // Nothing of ours on this node (another driver's or node's results): nothing to hand over.
  if (mine.empty() && gangs.empty()) return out;

  cdi::Spec spec;
  spec.kind = in.cdi_kind;
  if (!mine.empty()) {
    StatusOr<std::map<std::string, DeviceConfig>> config =
        ConfigByRequest(in.allocation->devices.config, in.driver_name, requests);
    if (!config.ok()) return InvalidArgumentError(what + ": " + config.status().message());
    if (in.inventory == nullptr) {
      return UnavailableError("the node's devices are not discovered yet; retry");
    }
    ASSIGN_OR_RETURN(const std::vector<Resolved> resolved, Resolve(in, mine, what));
    RETURN_IF_ERROR(AddLocalDevices(in, host, *config, resolved, spec, out.record));
  }
  for (const res::DeviceRequestAllocationResult* r : gangs) {
    RETURN_IF_ERROR(AddGangDevice(in, *r, what, spec, out));
  }
  if (!in.metadata_dir.empty()) AddDeviceMetadata(in, spec, out);
  if (Status s = cdi::Validate(spec); !s.ok()) {
    return InvalidArgumentError(what + ": CDI spec: " + s.message());
  }
  out.spec = std::move(spec);
  return out;
}

}  // namespace xpu::plugin
