#include "kubeletplugin/driver/partitions.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "kubeletplugin/driver/crash_point.h"

namespace xpu::plugin {
namespace {
namespace partitions_cc {

discovery::PartitionParent ParentOf(const api::InventoryDevice& d) {
  return {d.name, d.pci_address, d.index};
}

// The vdev id to ask for: the lowest free one of the parent's sixteen, 100 + 16 * index up,
// past every id the node's devices and records use.
int64_t ChooseVnpuId(int64_t index, const std::set<int64_t>& used) {
  const int64_t first = 100 + 16 * index;
  for (int64_t id = first; id < first + 16; ++id) {
    if (!used.contains(id)) return id;
  }
  return -1;  // all sixteen taken: let the library pick
}

// The vendor ids the node's partitions hold: in the inventory and in the records.
std::set<int64_t> UsedPartitionIds(const api::NodeInventory& inventory,
                                   const std::vector<checkpoint::Partition>& records) {
  std::set<int64_t> used;
  for (const api::InventoryDevice& d : inventory.status.devices) {
    if (!d.partitioning) continue;
    for (const api::InventoryPartition& p : d.partitioning->partitions) used.insert(p.id);
  }
  for (const checkpoint::Partition& p : records) used.insert(p.id);
  return used;
}

// A vHCU's file, which Hygon's runtime reads in the container from /etc/vdev/docker/.
std::string VhcuConf(int64_t id) { return "/etc/vdev/vdev" + std::to_string(id) + ".conf"; }

// What the container gets for a partition: the parent with the partition's identity.
PartitionDevice DeviceFor(const api::InventoryDevice& parent, const std::string& name,
                          const std::string& kind, int64_t id, const std::string& uuid) {
  PartitionDevice p;
  p.device = parent;
  p.device.name = name;
  p.device.partitioning.reset();
  if (kind == "vnpu") {
    p.device.index = id;  // ASCEND_VISIBLE_DEVICES names the vNPU by its id
    p.device.uuid.clear();
    p.device_node = "/dev/vdavinci" + std::to_string(id);
  } else if (kind == "vhcu") {
    // The parent's render node, and the vHCU's conf file, which says which vHCU it is.
    p.mounts.push_back({VhcuConf(id),
                        "/etc/vdev/docker/vdev" + std::to_string(id) + ".conf",
                        {"ro", "nosuid", "nodev", "bind"},
                        ""});
  } else if (!uuid.empty()) {
    p.device.uuid = uuid;  // NVIDIA_VISIBLE_DEVICES=MIG-...
  }
  return p;
}

// The live partition that is the recorded one, or nullptr: by place where it has one (MIG: the
// GPU instance id is NVML's to pick, and a recreated one may get another), else by vendor id.
// An intent with neither (the vendor picks the id: vHCU) is the one of its profile that was not
// on the parent before (ids_before) and that no other record of the parent names.
const discovery::LivePartition* Held(const std::vector<discovery::LivePartition>& live,
                                     const checkpoint::Partition& p,
                                     const std::vector<checkpoint::Partition>& records = {}) {
  auto named = [&](int64_t id) {
    return std::any_of(records.begin(), records.end(), [&](const checkpoint::Partition& r) {
      return &r != &p && r.parent == p.parent && r.kind == p.kind && r.id == id;
    });
  };
  auto it = std::find_if(live.begin(), live.end(), [&](const discovery::LivePartition& l) {
    if (p.placement >= 0) return l.placement == p.placement && l.profile == p.profile;
    if (p.id >= 0) return l.id == p.id;
    return p.state == checkpoint::kPartitionCreating && l.profile == p.profile &&
           std::find(p.ids_before.begin(), p.ids_before.end(), l.id) == p.ids_before.end() &&
           !named(l.id);
  });
  return it == live.end() ? nullptr : &*it;
}

// The error of a partition device that no backend can create on the node.
Status CannotCreate(const std::string& device, const std::string& kind,
                    const std::string& node_name) {
  std::string message = device;
  message.append(": ").append(kind).append(" partitions cannot be created on node ");
  message.append(node_name);
  message.append(kind == "mig" ? " (no NVML that can create MIG instances; MIG instances "
                                 "that exist are handed out)"
                               : " (no vendor library to create them)");
  return FailedPreconditionError(std::move(message));
}

}  // namespace partitions_cc
}  // namespace

StatusOr<std::vector<PartitionLayoutEntry>> ParsePartitionLayout(std::string_view text,
                                                                 std::string_view flag) {
  std::vector<PartitionLayoutEntry> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t star = item.find('*');
    PartitionLayoutEntry e;
    e.profile = std::string(item.substr(0, star));
    e.count = 1;
    bool ok = !e.profile.empty() && e.profile.size() <= 32 &&
              e.profile.find_first_of(" =") == std::string::npos;
    if (ok && star != std::string_view::npos) {
      const std::string_view n = item.substr(star + 1);
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), e.count);
      ok = ec == std::errc{} && end == n.data() + n.size() && e.count >= 1 && e.count <= 64;
    }
    if (!ok) {
      return InvalidArgumentError(std::string(flag) + ": entry \"" + std::string(item) +
                                  "\" is not PROFILE or PROFILE*COUNT (1 to 64)");
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) return InvalidArgumentError(std::string(flag) + ": empty");
  return out;
}

// What a parent holds now, asked of its backend at most once.
class PartitionManager::LiveOnce {
 public:
  LiveOnce(discovery::PartitionBackend* backend, const api::InventoryDevice& parent)
      : backend_(backend), parent_(parent) {}
  const StatusOr<std::vector<discovery::LivePartition>>& Get() {
    if (!live_) live_ = backend_->List(partitions_cc::ParentOf(parent_));
    return *live_;
  }

 private:
  discovery::PartitionBackend* const backend_;
  const api::InventoryDevice& parent_;
  std::optional<StatusOr<std::vector<discovery::LivePartition>>> live_;
};

PartitionManager::PartitionManager(std::string driver_name, std::string node_name,
                                   checkpoint::Checkpoint* checkpoint, SaveFn save,
                                   InventoryFn inventory, LogFn log)
    : driver_name_(std::move(driver_name)),
      node_name_(std::move(node_name)),
      checkpoint_(checkpoint),
      save_(std::move(save)),
      inventory_(std::move(inventory)),
      log_(std::move(log)) {}

void PartitionManager::AddBackend(std::shared_ptr<discovery::PartitionBackend> backend) {
  backends_[backend->kind()] = std::move(backend);
}

discovery::PartitionBackend* PartitionManager::BackendFor(const std::string& kind) const {
  auto it = backends_.find(kind);
  return it == backends_.end() ? nullptr : it->second.get();
}

int PartitionManager::ApplyLayout(const std::vector<PartitionLayoutEntry>& layout) {
  const std::shared_ptr<const api::NodeInventory> inventory = inventory_();
  if (inventory == nullptr) return 0;
  std::set<int64_t> used_ids = partitions_cc::UsedPartitionIds(*inventory, checkpoint_->partitions);
  int made = 0;
  for (const api::InventoryDevice& d : inventory->status.devices) {
    if (!d.partitioning || !d.partitioning->enabled) continue;
    made += ApplyLayoutOn(d, layout, &used_ids);
  }
  return made;
}

int PartitionManager::ApplyLayoutOn(const api::InventoryDevice& d,
                                    const std::vector<PartitionLayoutEntry>& layout,
                                    std::set<int64_t>* used_ids) {
  const api::InventoryPartitioning& p = *d.partitioning;
  discovery::PartitionBackend* backend = BackendFor(p.kind);
  if (backend == nullptr) return 0;
  StatusOr<std::vector<discovery::LivePartition>> live = backend->List(partitions_cc::ParentOf(d));
  if (!live.ok()) {
    log_("partition layout on " + d.name + ": " + live.status().message());
    return 0;
  }
  // The first legal placement whose slots no live partition holds.
  auto free_placement = [&](const api::PartitionProfile& want) -> std::optional<int64_t> {
    for (int64_t at : want.placements) {
      const bool taken = std::any_of(live->begin(), live->end(), [&](const auto& l) {
        const api::PartitionProfile* lp = api::FindProfile(p, l.profile);
        if (!l.placement || lp == nullptr) return false;
        return at < *l.placement + lp->slots && *l.placement < at + want.slots;
      });
      if (!taken) return at;
    }
    return std::nullopt;
  };
  int made = 0;
  for (const PartitionLayoutEntry& e : layout) {
    const api::PartitionProfile* want = api::FindProfile(p, e.profile);
    if (want == nullptr) continue;
    auto have = std::count_if(live->begin(), live->end(),
                              [&e](const auto& l) { return l.profile == e.profile; });
    for (; have < e.count; ++have) {
      std::optional<int64_t> placement;
      if (!want->placements.empty() && !(placement = free_placement(*want))) {
        log_("partition layout on " + d.name + ": no free placement for " + e.profile);
        break;
      }
      const int64_t id = p.kind == "vnpu" ? partitions_cc::ChooseVnpuId(d.index, *used_ids) : -1;
      StatusOr<discovery::LivePartition> part =
          backend->Create(partitions_cc::ParentOf(d), e.profile, id, placement);
      if (!part.ok()) {
        ++stats_.errors;
        log_("partition layout on " + d.name + ": create " + e.profile + ": " +
             part.status().message());
        break;
      }
      ++stats_.created;
      ++made;
      used_ids->insert(part->id);
      live->push_back(*std::move(part));
      log_("partition layout: made " + p.kind + " " + e.profile + " (id " +
           std::to_string(live->back().id) + ") on " + d.name);
    }
  }
  return made;
}

StatusOr<std::map<std::string, PartitionDevice>> PartitionManager::EnsureFor(
    const ClaimRef& ref, const api::resource::AllocationResult& allocation,
    const api::NodeInventory& inventory) {
  const std::string what = "ResourceClaim " + ref.ns + "/" + ref.name;
  std::map<std::string, PartitionDevice> out;
  for (const api::resource::DeviceRequestAllocationResult& r : allocation.devices.results) {
    if (r.driver != driver_name_ || r.pool != node_name_) continue;
    const std::optional<api::PartitionTarget> t = api::ResolvePartitionDevice(inventory, r.device);
    if (!t.has_value()) continue;
    ASSIGN_OR_RETURN(PartitionDevice device,
                     EnsureOne(ref, what + ": device " + r.device, r.device, *t, inventory));
    out[r.device] = std::move(device);
  }
  return out;
}

StatusOr<PartitionDevice> PartitionManager::EnsureOne(const ClaimRef& ref,
                                                      const std::string& device,
                                                      const std::string& name,
                                                      const api::PartitionTarget& t,
                                                      const api::NodeInventory& inventory) {
  const std::vector<checkpoint::Partition>& records = checkpoint_->partitions;
  const api::InventoryDevice& parent = *t.parent;
  const std::string& kind = parent.partitioning->kind;
  auto recorded =
      std::find_if(records.begin(), records.end(),
                   [&name](const checkpoint::Partition& p) { return p.device == name; });
  if (recorded != records.end()) {
    if (recorded->claim_uid != ref.uid) {
      return FailedPreconditionError(device + " is a partition held by claim " +
                                     recorded->claim_uid);
    }
    if (recorded->state == checkpoint::kPartitionCreated ||
        recorded->state == checkpoint::kPartitionStatic) {
      return partitions_cc::DeviceFor(parent, name, kind, recorded->id, recorded->uuid);
    }
    return UnavailableError(device + ": its partition is " + recorded->state + "; retry");
  }
  discovery::PartitionBackend* backend = BackendFor(kind);
  LiveOnce live(backend, parent);  // what the parent holds now, asked once per result
  bool exists = t.existing != nullptr;
  if (exists && backend != nullptr) {
    // The inventory may be older than the device (a restart just undid a create): asked.
    if (!live.Get().ok()) return live.Get().status().WithContext(device);
    checkpoint::Partition probe;
    probe.id = t.existing->id;
    probe.placement = t.existing->placement.value_or(-1);
    probe.profile = t.existing->profile;
    exists = partitions_cc::Held(*live.Get(), probe) != nullptr;
  }
  if (exists) return HandOver(ref, device, name, parent, *t.existing);
  if (backend == nullptr) return partitions_cc::CannotCreate(device, kind, node_name_);
  return Create(ref, device, name, t, inventory, *backend, live);
}

StatusOr<PartitionDevice> PartitionManager::HandOver(const ClaimRef& ref, const std::string& device,
                                                     const std::string& name,
                                                     const api::InventoryDevice& parent,
                                                     const api::InventoryPartition& e) {
  // One that exists and no record names: handed over as it is, never destroyed.
  std::vector<checkpoint::Partition>& records = checkpoint_->partitions;
  const std::string& kind = parent.partitioning->kind;
  for (const checkpoint::Partition& p : records) {
    if (p.parent == parent.name && (e.placement ? p.placement == *e.placement : p.id == e.id)) {
      return FailedPreconditionError(device + " is a partition held by claim " + p.claim_uid);
    }
  }
  records.push_back({ref.uid,
                     name,
                     parent.name,
                     kind,
                     e.profile,
                     e.placement.value_or(-1),
                     e.instance,
                     e.id,
                     e.uuid,
                     std::string(checkpoint::kPartitionStatic),
                     {}});
  if (Status s = save_(); !s.ok()) {
    records.pop_back();
    return s.WithContext(device + ": record the partition");
  }
  return partitions_cc::DeviceFor(parent, name, kind, e.id, e.uuid);
}

StatusOr<PartitionDevice> PartitionManager::Create(const ClaimRef& ref, const std::string& device,
                                                   const std::string& name,
                                                   const api::PartitionTarget& t,
                                                   const api::NodeInventory& inventory,
                                                   discovery::PartitionBackend& backend,
                                                   LiveOnce& live) {
  std::vector<checkpoint::Partition>& records = checkpoint_->partitions;
  const api::InventoryDevice& parent = *t.parent;
  const std::string& kind = parent.partitioning->kind;
  // The vendor id it will get, recorded before the vendor call (vNPU); where the vendor picks
  // it without a placement (vHCU), the ids there before, to tell the new one apart.
  int64_t id = -1;
  std::vector<int64_t> ids_before;
  if (kind == "vnpu" || (kind == "vhcu" && !t.placement)) {
    if (!live.Get().ok()) return live.Get().status().WithContext(device);
    for (const discovery::LivePartition& l : *live.Get()) ids_before.push_back(l.id);
  }
  if (kind == "vnpu") {
    std::set<int64_t> used = partitions_cc::UsedPartitionIds(inventory, records);
    used.insert(ids_before.begin(), ids_before.end());
    id = partitions_cc::ChooseVnpuId(parent.index, used);
  }
  if (id >= 0) ids_before.clear();  // the id says which it is
  records.push_back({ref.uid, name, parent.name, kind, t.profile->name, t.placement.value_or(-1),
                     t.instance, id, "", std::string(checkpoint::kPartitionCreating),
                     std::move(ids_before)});
  if (Status s = save_(); !s.ok()) {
    records.pop_back();
    return s.WithContext(device + ": record the partition's intent");
  }
  CrashPoint("partition-intent");
  StatusOr<discovery::LivePartition> made =
      backend.Create(partitions_cc::ParentOf(parent), t.profile->name, id, t.placement);
  const size_t at = records.size() - 1;
  if (!made.ok()) {
    ++stats_.errors;
    records.erase(records.begin() + static_cast<long>(at));
    if (Status s = save_(); !s.ok()) log_("forget failed create: " + s.message());
    std::string context = device;
    context.append(": create ").append(kind).append(" ").append(t.profile->name);
    return made.status().WithContext(context);
  }
  CrashPoint("partition-created");
  ++stats_.created;
  records[at].state = checkpoint::kPartitionCreated;
  records[at].id = made->id;
  records[at].uuid = made->uuid;
  records[at].ids_before.clear();
  log_("created " + kind + " " + t.profile->name + " (id " + std::to_string(made->id) + ") on " +
       parent.name + " for claim " + ref.ns + "/" + ref.name);
  RETURN_IF_ERROR(save_().WithContext(device + ": record the partition"));
  CrashPoint("partition-recorded");
  return partitions_cc::DeviceFor(parent, name, kind, made->id, made->uuid);
}

Status PartitionManager::ReleaseFor(const std::string& uid) {
  std::vector<checkpoint::Partition>& records = checkpoint_->partitions;
  if (std::none_of(records.begin(), records.end(),
                   [&uid](const checkpoint::Partition& p) { return p.claim_uid == uid; })) {
    return OkStatus();
  }
  const std::shared_ptr<const api::NodeInventory> inventory = inventory_();
  Status first;
  for (size_t i = 0; i < records.size();) {
    checkpoint::Partition& p = records[i];
    if (p.claim_uid != uid) {
      ++i;
      continue;
    }
    if (p.state == checkpoint::kPartitionStatic) {  // someone else's: only forgotten
      records.erase(records.begin() + static_cast<long>(i));
      continue;
    }
    discovery::PartitionBackend* backend = BackendFor(p.kind);
    const api::InventoryDevice* parent =
        inventory ? FindInventoryDevice(*inventory, p.parent) : nullptr;
    if (backend == nullptr || parent == nullptr) {
      if (first.ok()) {
        first = UnavailableError("partition " + p.device + ": no " + p.kind +
                                 " backend or no device " + p.parent + " to destroy it on; retry");
      }
      ++i;
      continue;
    }
    p.state = checkpoint::kPartitionDestroying;
    RETURN_IF_ERROR(save_());
    CrashPoint("partition-destroying");
    const Status s = backend->Destroy(partitions_cc::ParentOf(*parent), p.id);
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      ++stats_.errors;
      if (first.ok()) first = s.WithContext("destroy partition " + p.device);
      ++i;
      continue;
    }
    ++stats_.destroyed;
    log_("destroyed " + p.kind + " " + p.profile + " (id " + std::to_string(p.id) + ") on " +
         p.parent);
    records.erase(records.begin() + static_cast<long>(i));
    CrashPoint("partition-destroyed");
  }
  RETURN_IF_ERROR(save_());
  return first;
}

Status PartitionManager::Reconcile() {
  std::vector<checkpoint::Partition>& records = checkpoint_->partitions;
  if (records.empty()) return OkStatus();
  const std::shared_ptr<const api::NodeInventory> inventory = inventory_();
  for (size_t i = 0; i < records.size();) {
    checkpoint::Partition& p = records[i];
    const bool prepared = checkpoint_->claims.contains(p.claim_uid);
    if (p.state == checkpoint::kPartitionStatic) {
      if (!prepared) {
        records.erase(records.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
      continue;
    }
    discovery::PartitionBackend* backend = BackendFor(p.kind);
    const api::InventoryDevice* parent =
        inventory ? FindInventoryDevice(*inventory, p.parent) : nullptr;
    StatusOr<std::vector<discovery::LivePartition>> live =
        backend != nullptr && parent != nullptr
            ? backend->List(partitions_cc::ParentOf(*parent))
            : StatusOr<std::vector<discovery::LivePartition>>(UnavailableError(
                  "no " + p.kind + " backend or no device " + p.parent + " discovered"));
    if (!live.ok()) {
      log_("partition " + p.device + " not reconciled: " + live.status().message());
      ++i;
      continue;
    }
    const discovery::LivePartition* held = partitions_cc::Held(*live, p, records);
    const bool there = held != nullptr;
    if (p.state == checkpoint::kPartitionCreated && prepared) {
      if (!there) Recreate(p, *backend, *parent);
      ++i;
      continue;
    }
    // An intent that crashed, a destroy that did not finish, or a claim never recorded: undone.
    if (there) {
      // By the live one's id: an intent recorded before the vendor picked it has none (MIG).
      if (Status s = backend->Destroy(partitions_cc::ParentOf(*parent), held->id);
          !s.ok() && s.code() != StatusCode::kNotFound) {
        ++stats_.errors;
        log_("partition " + p.device + ": " + s.message() + "; kept for the next start");
        ++i;
        continue;
      }
      ++stats_.destroyed;
    }
    log_("partition " + p.device + " (" + p.state + ", claim " + p.claim_uid +
         (prepared ? "" : " not prepared") + (there ? "): destroyed" : "): forgotten, not there"));
    records.erase(records.begin() + static_cast<long>(i));
  }
  return OkStatus();
}

void PartitionManager::Recreate(checkpoint::Partition& p, discovery::PartitionBackend& backend,
                                const api::InventoryDevice& parent) {
  // Gone while its claim is prepared: a reboot. Made again with the same id.
  StatusOr<discovery::LivePartition> made =
      backend.Create(partitions_cc::ParentOf(parent), p.profile, p.id,
                     p.placement >= 0 ? std::optional<int64_t>(p.placement) : std::nullopt);
  if (!made.ok()) {
    ++stats_.errors;
    log_("partition " + p.device +
         " is gone and could not be created again: " + made.status().message());
    return;
  }
  ++stats_.created;
  log_("partition " + p.device + " was gone (reboot?): created again, id " +
       std::to_string(made->id));
  if (made->uuid != p.uuid) ReplaceInSpec(p.claim_uid, p.uuid, made->uuid);
  if (p.kind == "vhcu" && made->id != p.id) {  // its conf files are named by the id
    ReplaceInSpec(p.claim_uid, "/vdev" + std::to_string(p.id) + ".conf",
                  "/vdev" + std::to_string(made->id) + ".conf");
  }
  p.id = made->id;
  p.uuid = made->uuid;
}

void PartitionManager::ReleaseLeftovers() {
  std::set<std::string> leftover;
  for (const checkpoint::Partition& p : checkpoint_->partitions) {
    if (!checkpoint_->claims.contains(p.claim_uid)) leftover.insert(p.claim_uid);
  }
  for (const std::string& uid : leftover) {
    if (Status s = ReleaseFor(uid); !s.ok()) {
      log_("partitions of unprepared claim " + uid + ": " + s.message() + "; tried again later");
    }
  }
}

void PartitionManager::ReplaceInSpec(const std::string& uid, const std::string& from,
                                     const std::string& to) {
  auto claim = checkpoint_->claims.find(uid);
  if (claim == checkpoint_->claims.end() || from.empty()) return;
  std::string& spec = claim->second.cdi_spec;
  for (size_t at = spec.find(from); at != std::string::npos; at = spec.find(from, at + to.size())) {
    spec.replace(at, from.size(), to);
  }
  log_("claim " + uid + ": CDI spec now names " + to + " (was " + from + ")");
}

}  // namespace xpu::plugin
