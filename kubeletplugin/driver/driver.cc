#include "kubeletplugin/driver/driver.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "api/partitions.h"
#include "api/resource.h"
#include "api/validation.h"
#include "base/atomic_file.h"
#include "base/text.h"
#include "kubeletplugin/cdi/profiles.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/driver/config.h"
#include "kubeletplugin/driver/prepare.h"

namespace xpu::plugin {

using api::client::ObjectKey;
namespace {

namespace res = api::resource;

// The kubelet's input echoed in an error is cut to this many bytes, and each claim's error to
// kMaxError: a batch answer must stay far below the kubelet's 4 MiB message limit, whatever
// the batch held.
constexpr size_t kEchoedInput = 128;
constexpr size_t kMaxError = 2048;

// How much of a bounded call is kept back for writing and answering: a fifth of the time the call
// had when it came in, at least 0.5 s and at most 5 s. Unbounded calls keep nothing back.
CallBounds::Clock::duration Reserve(const CallBounds& bounds) {
  using std::chrono::milliseconds;
  if (bounds.deadline == CallBounds::Clock::time_point::max()) {
    return CallBounds::Clock::duration::zero();
  }
  const auto fifth = (bounds.deadline - CallBounds::Clock::now()) / 5;
  return std::clamp<CallBounds::Clock::duration>(fifth, milliseconds(500), milliseconds(5000));
}

// The error of a claim a bounded call did not reach.
std::string NotReached(const CallBounds& bounds, const char* verb) {
  return std::string("not ") + verb +
         (bounds.Cancelled() ? ": the caller cancelled the call"
                             : ": the call's deadline is near, the rest of the batch is left") +
         "; retry";
}

// Empty when unreadable.
std::string ReadBootId(const std::string& host_root) {
  StatusOr<std::string> id =
      discovery::HostRoot(host_root).ReadTrimmed("proc/sys/kernel/random/boot_id");
  return id.ok() ? *id : "";
}

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

}  // namespace

void CrashPoint(const char* point) {
  const char* at = std::getenv("XPU_DRA_CRASH_AT");
  if (at != nullptr && std::strcmp(at, point) == 0) ::kill(::getpid(), SIGKILL);
}

Status DriverOptions::Validate() const {
  if (driver_name.empty()) return InvalidArgumentError("--driver-name: must not be empty");
  if (node_name.empty()) return InvalidArgumentError("--node-name: must not be empty");
  if (cdi_dir.empty() || cdi_dir[0] != '/') {
    return InvalidArgumentError("--cdi-dir: must be an absolute path, got \"" + cdi_dir + "\"");
  }
  if (state_dir.empty() || state_dir[0] != '/') {
    return InvalidArgumentError("--state-dir: must be an absolute path, got \"" + state_dir + "\"");
  }
  if (fetch_parallelism < 1) return InvalidArgumentError("fetch parallelism must be positive");
  if (cdi_hook_path.empty() || cdi_hook_path[0] != '/') {
    return InvalidArgumentError("--cdi-hook-path: must be an absolute path, got \"" +
                                cdi_hook_path + "\"");
  }
  return OkStatus();
}

namespace {

// The host as HostViewUnder reads it, with the driver files of `cache`.
HostView HostWithDriverFiles(const std::string& host_root,
                             const std::shared_ptr<driverfiles::DriverFilesCache>& cache) {
  HostView host = HostViewUnder(host_root);
  host.driver_files = [cache](const std::string& vendor) -> StatusOr<cdi::ContainerEdits> {
    ASSIGN_OR_RETURN(std::shared_ptr<const driverfiles::DriverFiles> files, cache->Get(vendor));
    return files == nullptr ? cdi::ContainerEdits{} : files->edits;
  };
  return host;
}

}  // namespace

struct Driver::Fetched {
  Status status;  // of the GET and the checks that need only the claim
  res::ResourceClaim claim;
  std::optional<api::AcceleratorGang> gang;  // the gang whose device the claim holds
};

Driver::Driver(DriverOptions options, api::client::Client* client, InventoryFn inventory, LogFn log)
    : Driver(std::move(options),
             std::make_shared<api::client::ApiObjects<res::ResourceClaim>>(
                 client, api::client::ResourceClaims()),
             std::move(inventory), std::move(log),
             std::make_shared<api::client::ApiObjects<api::AcceleratorGang>>(
                 client, api::client::AcceleratorGangs())) {}

Driver::Driver(DriverOptions options, std::shared_ptr<ClaimReader> claims, InventoryFn inventory,
               LogFn log, std::shared_ptr<GangReader> gangs)
    : options_(std::move(options)),
      claims_(std::move(claims)),
      gangs_(std::move(gangs)),
      inventory_(std::move(inventory)),
      log_(std::move(log)),
      specs_(options_.cdi_dir, cdi::KindForDriver(options_.driver_name)),
      driver_files_(std::make_shared<driverfiles::DriverFilesCache>(
          options_.host_root, options_.cdi_hook_path, options_.driver_files)),
      host_(HostWithDriverFiles(options_.host_root, driver_files_)),
      store_(options_.state_dir + "/checkpoint.json") {}

Status Driver::Start() {
  MutexLock lock(mu_);
  ASSIGN_OR_RETURN(checkpoint_, store_.Load());
  RETURN_IF_ERROR(ReconcilePartitionsLocked());
  const std::string boot_id = ReadBootId(options_.host_root);
  if (!checkpoint_.boot_id.empty() && checkpoint_.boot_id != boot_id) {
    log_("node rebooted (boot id " + checkpoint_.boot_id + " -> " + boot_id + "): rewriting " +
         std::to_string(checkpoint_.claims.size()) + " CDI specs");
  }
  // Our specs without an entry: a prepare that crashed before its checkpoint write, or an
  // unprepare that removed the entry's spec... the other way round. Either way, not prepared.
  ASSIGN_OR_RETURN(std::vector<std::string> on_disk, specs_.ListClaims());
  for (const std::string& uid : on_disk) {
    if (checkpoint_.claims.contains(uid)) continue;
    log_("removing CDI spec of claim " + uid + ": not in the checkpoint");
    RETURN_IF_ERROR(specs_.Remove(uid));
  }
  for (const auto& [uid, claim] : checkpoint_.claims) RETURN_IF_ERROR(EnsureSpecLocked(claim));
  // Every entry's spec is written (above), so the kubelet's retry of a prepare that crashed
  // after recording but before answering gets the recorded answer.
  checkpoint_.boot_id = boot_id;
  RETURN_IF_ERROR(SaveLocked());
  started_ = true;
  log_("driver ready: " + std::to_string(checkpoint_.claims.size()) + " prepared claims");
  return OkStatus();
}

Status Driver::EnsureSpecLocked(const checkpoint::Claim& claim) {
  if (claim.cdi_spec.empty()) return OkStatus();  // nothing of ours on this node
  StatusOr<cdi::Spec> recorded = cdi::FromJson(claim.cdi_spec);
  if (!recorded.ok()) {
    return DataLossError("checkpoint " + store_.path() + ": claim " + claim.uid +
                         ": recorded CDI spec: " + recorded.status().message());
  }
  StatusOr<cdi::Spec> current = specs_.Read(claim.uid);
  if (current.ok() && *current == *recorded) return OkStatus();
  return specs_.Write(claim.uid, *recorded);
}

Status Driver::SaveLocked() {
  Status s = store_.Save(checkpoint_);
  if (s.ok()) ++stats_.checkpoint_writes;
  {
    MutexLock lock(records_mu_);
    saved_records_ = checkpoint_.partitions;
  }
  stats_.prepared_claims = checkpoint_.claims.size();
  stats_.prepared_devices = 0;
  for (const auto& [uid, c] : checkpoint_.claims) stats_.prepared_devices += c.devices.size();
  return s;
}

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

int Driver::ApplyPartitionLayout(const std::vector<PartitionLayoutEntry>& layout) {
  MutexLock lock(mu_);
  const std::shared_ptr<const api::NodeInventory> inventory = inventory_();
  if (inventory == nullptr) return 0;
  std::set<int64_t> used_ids = UsedPartitionIds(*inventory, checkpoint_.partitions);
  int made = 0;
  for (const api::InventoryDevice& d : inventory->status.devices) {
    if (!d.partitioning || !d.partitioning->enabled) continue;
    const api::InventoryPartitioning& p = *d.partitioning;
    discovery::PartitionBackend* backend = BackendFor(p.kind);
    if (backend == nullptr) continue;
    StatusOr<std::vector<discovery::LivePartition>> live = backend->List(ParentOf(d));
    if (!live.ok()) {
      log_("partition layout on " + d.name + ": " + live.status().message());
      continue;
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
        const int64_t id = p.kind == "vnpu" ? ChooseVnpuId(d.index, used_ids) : -1;
        StatusOr<discovery::LivePartition> part =
            backend->Create(ParentOf(d), e.profile, id, placement);
        if (!part.ok()) {
          ++stats_.partition_errors;
          log_("partition layout on " + d.name + ": create " + e.profile + ": " +
               part.status().message());
          break;
        }
        ++stats_.partitions_created;
        ++made;
        used_ids.insert(part->id);
        live->push_back(*std::move(part));
        log_("partition layout: made " + p.kind + " " + e.profile + " (id " +
             std::to_string(live->back().id) + ") on " + d.name);
      }
    }
  }
  return made;
}

void Driver::AddPartitionBackend(std::shared_ptr<discovery::PartitionBackend> backend) {
  MutexLock lock(mu_);
  backends_[backend->kind()] = std::move(backend);
}

std::vector<checkpoint::Partition> Driver::PartitionRecords() const {
  MutexLock lock(records_mu_);
  return saved_records_;
}

discovery::PartitionBackend* Driver::BackendFor(const std::string& kind) const {
  auto it = backends_.find(kind);
  return it == backends_.end() ? nullptr : it->second.get();
}

StatusOr<std::map<std::string, PartitionDevice>> Driver::EnsurePartitionsLocked(
    const ClaimRef& ref, const res::AllocationResult& allocation,
    const api::NodeInventory& inventory) {
  const std::string what = "ResourceClaim " + ref.ns + "/" + ref.name;
  std::vector<checkpoint::Partition>& records = checkpoint_.partitions;
  std::map<std::string, PartitionDevice> out;
  for (const res::DeviceRequestAllocationResult& r : allocation.devices.results) {
    if (r.driver != options_.driver_name || r.pool != options_.node_name) continue;
    const std::optional<api::PartitionTarget> t = api::ResolvePartitionDevice(inventory, r.device);
    if (!t.has_value()) continue;
    const api::InventoryDevice& parent = *t->parent;
    const std::string& kind = parent.partitioning->kind;
    const std::string device = what + ": device " + r.device;
    auto recorded =
        std::find_if(records.begin(), records.end(),
                     [&r](const checkpoint::Partition& p) { return p.device == r.device; });
    if (recorded != records.end()) {
      if (recorded->claim_uid != ref.uid) {
        return FailedPreconditionError(device + " is a partition held by claim " +
                                       recorded->claim_uid);
      }
      if (recorded->state == checkpoint::kPartitionCreated ||
          recorded->state == checkpoint::kPartitionStatic) {
        out[r.device] = DeviceFor(parent, r.device, kind, recorded->id, recorded->uuid);
        continue;
      }
      return UnavailableError(device + ": its partition is " + recorded->state + "; retry");
    }
    discovery::PartitionBackend* backend = BackendFor(kind);
    // What the parent holds now, asked once per result.
    std::optional<StatusOr<std::vector<discovery::LivePartition>>> live;
    auto ask = [&]() -> const StatusOr<std::vector<discovery::LivePartition>>& {
      if (!live) live = backend->List(ParentOf(parent));
      return *live;
    };
    bool exists = t->existing != nullptr;
    if (exists && backend != nullptr) {
      // The inventory may be older than the device (a restart just undid a create): asked.
      if (!ask().ok()) return ask().status().WithContext(device);
      checkpoint::Partition probe;
      probe.id = t->existing->id;
      probe.placement = t->existing->placement.value_or(-1);
      probe.profile = t->existing->profile;
      exists = Held(*ask(), probe) != nullptr;
    }
    if (exists) {
      // One that exists and no record names: handed over as it is, never destroyed.
      const api::InventoryPartition& e = *t->existing;
      for (const checkpoint::Partition& p : records) {
        if (p.parent == parent.name && (e.placement ? p.placement == *e.placement : p.id == e.id)) {
          return FailedPreconditionError(device + " is a partition held by claim " + p.claim_uid);
        }
      }
      records.push_back({ref.uid,
                         r.device,
                         parent.name,
                         kind,
                         e.profile,
                         e.placement.value_or(-1),
                         e.instance,
                         e.id,
                         e.uuid,
                         std::string(checkpoint::kPartitionStatic),
                         {}});
      if (Status s = SaveLocked(); !s.ok()) {
        records.pop_back();
        return s.WithContext(device + ": record the partition");
      }
      out[r.device] = DeviceFor(parent, r.device, kind, e.id, e.uuid);
      continue;
    }
    if (backend == nullptr) {
      std::string message = device;
      message.append(": ").append(kind).append(" partitions cannot be created on node ");
      message.append(options_.node_name);
      message.append(kind == "mig" ? " (no NVML that can create MIG instances; MIG instances "
                                     "that exist are handed out)"
                                   : " (no vendor library to create them)");
      return FailedPreconditionError(std::move(message));
    }
    // The vendor id it will get, recorded before the vendor call (vNPU); where the vendor picks
    // it without a placement (vHCU), the ids there before, to tell the new one apart.
    int64_t id = -1;
    std::vector<int64_t> ids_before;
    if (kind == "vnpu" || (kind == "vhcu" && !t->placement)) {
      if (!ask().ok()) return ask().status().WithContext(device);
      for (const discovery::LivePartition& l : *ask()) ids_before.push_back(l.id);
    }
    if (kind == "vnpu") {
      std::set<int64_t> used = UsedPartitionIds(inventory, records);
      used.insert(ids_before.begin(), ids_before.end());
      id = ChooseVnpuId(parent.index, used);
    }
    if (id >= 0) ids_before.clear();  // the id says which it is
    records.push_back({ref.uid, r.device, parent.name, kind, t->profile->name,
                       t->placement.value_or(-1), t->instance, id, "",
                       std::string(checkpoint::kPartitionCreating), std::move(ids_before)});
    if (Status s = SaveLocked(); !s.ok()) {
      records.pop_back();
      return s.WithContext(device + ": record the partition's intent");
    }
    CrashPoint("partition-intent");
    StatusOr<discovery::LivePartition> made =
        backend->Create(ParentOf(parent), t->profile->name, id, t->placement);
    const size_t at = records.size() - 1;
    if (!made.ok()) {
      ++stats_.partition_errors;
      records.erase(records.begin() + static_cast<long>(at));
      if (Status s = SaveLocked(); !s.ok()) log_("forget failed create: " + s.message());
      std::string context = device;
      context.append(": create ").append(kind).append(" ").append(t->profile->name);
      return made.status().WithContext(context);
    }
    CrashPoint("partition-created");
    ++stats_.partitions_created;
    records[at].state = checkpoint::kPartitionCreated;
    records[at].id = made->id;
    records[at].uuid = made->uuid;
    records[at].ids_before.clear();
    log_("created " + kind + " " + t->profile->name + " (id " + std::to_string(made->id) + ") on " +
         parent.name + " for claim " + ref.ns + "/" + ref.name);
    RETURN_IF_ERROR(SaveLocked().WithContext(device + ": record the partition"));
    CrashPoint("partition-recorded");
    out[r.device] = DeviceFor(parent, r.device, kind, made->id, made->uuid);
  }
  return out;
}

Status Driver::ReleasePartitionsLocked(const std::string& uid) {
  std::vector<checkpoint::Partition>& records = checkpoint_.partitions;
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
    RETURN_IF_ERROR(SaveLocked());
    CrashPoint("partition-destroying");
    const Status s = backend->Destroy(ParentOf(*parent), p.id);
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      ++stats_.partition_errors;
      if (first.ok()) first = s.WithContext("destroy partition " + p.device);
      ++i;
      continue;
    }
    ++stats_.partitions_destroyed;
    log_("destroyed " + p.kind + " " + p.profile + " (id " + std::to_string(p.id) + ") on " +
         p.parent);
    records.erase(records.begin() + static_cast<long>(i));
    CrashPoint("partition-destroyed");
  }
  RETURN_IF_ERROR(SaveLocked());
  return first;
}

Status Driver::ReconcilePartitionsLocked() {
  std::vector<checkpoint::Partition>& records = checkpoint_.partitions;
  if (records.empty()) return OkStatus();
  const std::shared_ptr<const api::NodeInventory> inventory = inventory_();
  for (size_t i = 0; i < records.size();) {
    checkpoint::Partition& p = records[i];
    const bool prepared = checkpoint_.claims.contains(p.claim_uid);
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
            ? backend->List(ParentOf(*parent))
            : StatusOr<std::vector<discovery::LivePartition>>(UnavailableError(
                  "no " + p.kind + " backend or no device " + p.parent + " discovered"));
    if (!live.ok()) {
      log_("partition " + p.device + " not reconciled: " + live.status().message());
      ++i;
      continue;
    }
    const discovery::LivePartition* held = Held(*live, p, records);
    const bool there = held != nullptr;
    if (p.state == checkpoint::kPartitionCreated && prepared) {
      if (!there) {
        // Gone while its claim is prepared: a reboot. Made again with the same id.
        StatusOr<discovery::LivePartition> made =
            backend->Create(ParentOf(*parent), p.profile, p.id,
                            p.placement >= 0 ? std::optional<int64_t>(p.placement) : std::nullopt);
        if (made.ok()) {
          ++stats_.partitions_created;
          log_("partition " + p.device + " was gone (reboot?): created again, id " +
               std::to_string(made->id));
          if (made->uuid != p.uuid) ReplaceInSpecLocked(p.claim_uid, p.uuid, made->uuid);
          if (p.kind == "vhcu" && made->id != p.id) {  // its conf files are named by the id
            ReplaceInSpecLocked(p.claim_uid, "/vdev" + std::to_string(p.id) + ".conf",
                                "/vdev" + std::to_string(made->id) + ".conf");
          }
          p.id = made->id;
          p.uuid = made->uuid;
        } else {
          ++stats_.partition_errors;
          log_("partition " + p.device +
               " is gone and could not be created again: " + made.status().message());
        }
      }
      ++i;
      continue;
    }
    // An intent that crashed, a destroy that did not finish, or a claim never recorded: undone.
    if (there) {
      // By the live one's id: an intent recorded before the vendor picked it has none (MIG).
      if (Status s = backend->Destroy(ParentOf(*parent), held->id);
          !s.ok() && s.code() != StatusCode::kNotFound) {
        ++stats_.partition_errors;
        log_("partition " + p.device + ": " + s.message() + "; kept for the next start");
        ++i;
        continue;
      }
      ++stats_.partitions_destroyed;
    }
    log_("partition " + p.device + " (" + p.state + ", claim " + p.claim_uid +
         (prepared ? "" : " not prepared") + (there ? "): destroyed" : "): forgotten, not there"));
    records.erase(records.begin() + static_cast<long>(i));
  }
  return OkStatus();
}

void Driver::ReleaseLeftoverPartitionsLocked() {
  std::set<std::string> leftover;
  for (const checkpoint::Partition& p : checkpoint_.partitions) {
    if (!checkpoint_.claims.contains(p.claim_uid)) leftover.insert(p.claim_uid);
  }
  for (const std::string& uid : leftover) {
    if (Status s = ReleasePartitionsLocked(uid); !s.ok()) {
      log_("partitions of unprepared claim " + uid + ": " + s.message() + "; tried again later");
    }
  }
}

void Driver::ReplaceInSpecLocked(const std::string& uid, const std::string& from,
                                 const std::string& to) {
  auto claim = checkpoint_.claims.find(uid);
  if (claim == checkpoint_.claims.end() || from.empty()) return;
  std::string& spec = claim->second.cdi_spec;
  for (size_t at = spec.find(from); at != std::string::npos; at = spec.find(from, at + to.size())) {
    spec.replace(at, from.size(), to);
  }
  log_("claim " + uid + ": CDI spec now names " + to + " (was " + from + ")");
}

Status Driver::CollectDeletedClaims() {
  std::vector<ClaimRef> refs;
  {
    MutexLock lock(mu_);
    ReleaseLeftoverPartitionsLocked();
    for (const auto& [uid, c] : checkpoint_.claims) refs.push_back({c.ns, c.name, c.uid});
  }
  std::vector<ClaimRef> gone;
  for (const ClaimRef& ref : refs) {
    StatusOr<res::ResourceClaim> claim = claims_->Get(ObjectKey::Namespaced(ref.ns, ref.name));
    // Not found is gone; any other answer (one that does not decode included) keeps the entry.
    if (!claim.ok() && claim.status().code() != StatusCode::kNotFound) {
      log_("check claim " + ref.ns + "/" + ref.name + ": " + claim.status().message() +
           "; kept for the next pass");
      continue;
    }
    if (claim.ok() && claim->metadata.uid == ref.uid) continue;
    gone.push_back(ref);
  }
  if (gone.empty()) return OkStatus();
  for (const ClaimRef& ref : gone) {
    log_("unpreparing claim " + ref.ns + "/" + ref.name + " (" + ref.uid +
         "): deleted from the API");
  }
  for (const auto& [uid, r] : Unprepare(gone)) {
    if (!r.error.empty()) return InternalError("unprepare deleted claim " + uid + ": " + r.error);
  }
  return OkStatus();
}

Status Driver::WriteGangFile(const std::string& path, const std::string& content) {
  RETURN_IF_ERROR(MakeDirectories(path.substr(0, path.rfind('/')), 0755));
  return WriteFileAtomically(path, content, 0644);
}

Driver::Fetched Driver::Fetch(const ClaimRef& ref) {
  Fetched f;
  const std::string what = "ResourceClaim " + ref.ns + "/" + ref.name;
  StatusOr<res::ResourceClaim> claim = claims_->Get(ObjectKey::Namespaced(ref.ns, ref.name));
  if (!claim.ok()) {
    f.status = claim.status();
    return f;
  }
  f.claim = std::move(*claim);
  if (f.claim.metadata.uid != ref.uid) {
    f.status = FailedPreconditionError(what + " has uid " + f.claim.metadata.uid +
                                       ", the kubelet asked for " + ref.uid);
  } else if (!f.claim.status.allocation) {
    f.status = FailedPreconditionError(what + " is not allocated");
  } else if (gangs_ != nullptr) {
    // A gang device: its AcceleratorGang (same namespace) holds the ranks.
    for (const res::DeviceRequestAllocationResult& r : f.claim.status.allocation->devices.results) {
      if (r.driver != options_.driver_name || r.pool != api::kGangPoolName ||
          !r.device.starts_with(api::kGangDevicePrefix)) {
        continue;
      }
      const std::string name = r.device.substr(api::kGangDevicePrefix.size());
      StatusOr<api::AcceleratorGang> gang = gangs_->Get(ObjectKey::Namespaced(ref.ns, name));
      if (!gang.ok()) {
        f.status = gang.status().WithContext(what + ": read its AcceleratorGang");
      } else {
        f.gang = std::move(gang).value();
      }
      break;
    }
  }
  return f;
}

std::map<std::string, PrepareResult> Driver::Prepare(const std::vector<ClaimRef>& claims,
                                                     const CallBounds& bounds) {
  const CallBounds::Clock::duration reserve = Reserve(bounds);
  std::map<std::string, PrepareResult> out;
  // Claims already prepared are answered from the checkpoint, without a GET.
  std::vector<const ClaimRef*> todo;
  {
    MutexLock lock(mu_);
    std::set<std::string_view> seen;
    for (const ClaimRef& ref : claims) {
      // A uid given twice is one claim with one answer, prepared once.
      if (!seen.insert(ref.uid).second) continue;
      if (!started_) {
        out[ref.uid].error = "the driver is not ready (startup reconciliation has not finished)";
        continue;
      }
      if (!cdi::IsValidClaimUid(ref.uid)) {
        out[ref.uid].error =
            "claim uid \"" + Abbreviate(ref.uid, kEchoedInput) + "\" is not a UUID";
        continue;
      }
      // The names go into the API path: checked before they get there.
      if (!api::IsDnsLabel(ref.ns) || !api::IsDnsSubdomain(ref.name)) {
        out[ref.uid].error = "claim " + Abbreviate(ref.ns, kEchoedInput) + "/" +
                             Abbreviate(ref.name, kEchoedInput) +
                             ": not a valid namespace (DNS label) and name (DNS subdomain)";
        continue;
      }
      auto it = checkpoint_.claims.find(ref.uid);
      if (it != checkpoint_.claims.end()) {
        if (Status s = EnsureSpecLocked(it->second); !s.ok()) {
          out[ref.uid].error = s.message();
        } else {
          out[ref.uid] = AnswerOf(it->second);
        }
        continue;
      }
      todo.push_back(&ref);
    }
  }
  // Fetch concurrently, at most fetch_parallelism at a time, while the call is live.
  std::vector<Fetched> fetched(todo.size());
  for (size_t start = 0; start < todo.size();
       start += static_cast<size_t>(options_.fetch_parallelism)) {
    if (!bounds.Live(reserve)) {
      for (size_t i = start; i < todo.size(); ++i) {
        fetched[i].status = UnavailableError(NotReached(bounds, "prepared"));
      }
      break;
    }
    const size_t end =
        std::min(todo.size(), start + static_cast<size_t>(options_.fetch_parallelism));
    if (end - start == 1) {
      fetched[start] = Fetch(*todo[start]);
      continue;
    }
    std::vector<std::future<Fetched>> running;
    for (size_t i = start; i < end; ++i) {
      running.push_back(
          std::async(std::launch::async, [this, ref = todo[i]] { return Fetch(*ref); }));
    }
    for (size_t i = start; i < end; ++i) fetched[i] = running[i - start].get();
  }
  CrashPoint("prepare-after-get");

  MutexLock lock(mu_);
  std::map<std::string, checkpoint::Claim> batch;
  for (size_t i = 0; i < todo.size(); ++i) {
    const ClaimRef& ref = *todo[i];
    if (!fetched[i].status.ok()) {
      out[ref.uid].error = fetched[i].status.message();
      continue;
    }
    if (!bounds.Live(reserve / 2)) {
      out[ref.uid].error = NotReached(bounds, "prepared");
      continue;
    }
    out[ref.uid] = PrepareLocked(ref, fetched[i], &batch);
  }
  if (!batch.empty()) {
    CrashPoint("prepare-after-cdi");
    for (auto& [uid, claim] : batch) checkpoint_.claims[uid] = claim;
    if (Status s = SaveLocked(); !s.ok()) {
      // Not recorded: take the specs back and fail those claims; the kubelet retries.
      for (const auto& [uid, claim] : batch) {
        checkpoint_.claims.erase(uid);
        (void)specs_.Remove(uid);
        if (Status r = ReleasePartitionsLocked(uid); !r.ok()) log_(r.message());
        out[uid] = PrepareResult{{}, "record claim in the checkpoint: " + s.message()};
      }
    }
    CrashPoint("prepare-after-checkpoint");
  }
  for (auto& [uid, r] : out) {
    r.error = Abbreviate(r.error, kMaxError);
    (r.error.empty() ? stats_.prepare_ok : stats_.prepare_error)++;
  }
  return out;
}

PrepareResult Driver::PrepareLocked(const ClaimRef& ref, const Fetched& fetched,
                                    std::map<std::string, checkpoint::Claim>* batch) {
  // Compute ...
  const std::shared_ptr<const api::NodeInventory> discovered = inventory_();
  // The inventory with this plugin's partition instances pinned (PinPartitions).
  std::shared_ptr<const api::NodeInventory> inventory = discovered;
  if (discovered != nullptr && !checkpoint_.partitions.empty()) {
    auto pinned = std::make_shared<api::NodeInventory>(*discovered);
    PinPartitions(checkpoint_.partitions, pinned.get());
    inventory = std::move(pinned);
  }
  PrepareInput in;
  in.driver_name = options_.driver_name;
  in.node_name = options_.node_name;
  in.cdi_kind = specs_.kind();
  in.ref = ref;
  in.allocation = &*fetched.claim.status.allocation;
  in.inventory = inventory.get();
  for (const auto& [uid, c] : checkpoint_.claims) NoteTakenDevices(c, &in.taken);
  for (const auto& [uid, c] : *batch) NoteTakenDevices(c, &in.taken);
  if (fetched.gang) in.gang = &*fetched.gang;
  in.gang_dir = GangDir();
  if (options_.device_metadata) in.metadata_dir = MetadataDir();
  if (inventory != nullptr) {
    StatusOr<std::map<std::string, PartitionDevice>> parts =
        EnsurePartitionsLocked(ref, *in.allocation, *inventory);
    if (!parts.ok()) {
      // Those of its partitions made before the one that failed are not kept either.
      if (Status s = ReleasePartitionsLocked(ref.uid); !s.ok()) log_(s.message());
      return PrepareResult{{}, parts.status().message()};
    }
    in.partitions = std::move(parts).value();
  }
  StatusOr<PreparedClaim> prepared = ComputePreparedClaim(in, host_);
  if (!prepared.ok()) {
    // Partitions made for a claim that cannot be prepared are not kept.
    if (Status s = ReleasePartitionsLocked(ref.uid); !s.ok()) log_(s.message());
    return PrepareResult{{}, prepared.status().message()};
  }
  // ... then act: the files and the spec first, the checkpoint entry (by the caller, for the
  // whole batch) last.
  for (const auto& [path, content] : prepared->files) {
    if (Status s = WriteGangFile(path, content); !s.ok()) {
      return PrepareResult{{}, "ResourceClaim " + ref.ns + "/" + ref.name + ": " + s.message()};
    }
  }
  if (prepared->spec) {
    if (Status s = specs_.Write(ref.uid, *prepared->spec); !s.ok()) {
      return PrepareResult{{}, "ResourceClaim " + ref.ns + "/" + ref.name + ": " + s.message()};
    }
    prepared->record.cdi_spec = cdi::ToJson(*prepared->spec);
  }
  PrepareResult answer = AnswerOf(prepared->record);
  (*batch)[ref.uid] = std::move(prepared->record);
  return answer;
}

std::map<std::string, UnprepareResult> Driver::Unprepare(const std::vector<ClaimRef>& claims,
                                                         const CallBounds& bounds) {
  const CallBounds::Clock::duration reserve = Reserve(bounds) / 2;
  std::map<std::string, UnprepareResult> out;
  MutexLock lock(mu_);
  std::vector<std::string> removed;
  std::set<std::string_view> seen;
  for (const ClaimRef& ref : claims) {
    if (!seen.insert(ref.uid).second) continue;  // one claim, one answer
    out[ref.uid];
    if (!started_) {
      out[ref.uid].error = "the driver is not ready (startup reconciliation has not finished)";
      continue;
    }
    if (!cdi::IsValidClaimUid(ref.uid)) {
      out[ref.uid].error = "claim uid \"" + Abbreviate(ref.uid, kEchoedInput) + "\" is not a UUID";
      continue;
    }
    if (!checkpoint_.claims.contains(ref.uid)) continue;  // not prepared: nothing to undo
    if (!bounds.Live(reserve)) {
      out[ref.uid].error = NotReached(bounds, "unprepared");
      continue;
    }
    if (Status s = specs_.Remove(ref.uid); !s.ok()) {
      out[ref.uid].error = s.message();
      continue;
    }
    // Its partitions go before its entry: a failure keeps the entry, and the kubelet retries.
    if (Status s = ReleasePartitionsLocked(ref.uid); !s.ok()) {
      out[ref.uid].error = s.message();
      continue;
    }
    std::error_code ec;
    std::filesystem::remove_all(GangDir() + "/" + ref.uid, ec);  // a gang member's files, if any
    const checkpoint::Claim& recorded = checkpoint_.claims.at(ref.uid);
    std::filesystem::remove_all(MetadataDir() + "/" + recorded.ns + "_" + recorded.name, ec);
    removed.push_back(ref.uid);
  }
  CrashPoint("unprepare-after-cdi");
  if (!removed.empty()) {
    std::map<std::string, checkpoint::Claim> saved;
    for (const std::string& uid : removed) {
      saved[uid] = checkpoint_.claims[uid];
      checkpoint_.claims.erase(uid);
    }
    if (Status s = SaveLocked(); !s.ok()) {
      // Still recorded on disk: keep them in memory too; the spec comes back on the next prepare
      // or start, and the kubelet retries the unprepare.
      for (auto& [uid, c] : saved) {
        checkpoint_.claims[uid] = std::move(c);
        out[uid].error = "remove claim from the checkpoint: " + s.message();
      }
    }
    CrashPoint("unprepare-after-checkpoint");
  }
  for (auto& [uid, r] : out) {
    r.error = Abbreviate(r.error, kMaxError);
    (r.error.empty() ? stats_.unprepare_ok : stats_.unprepare_error)++;
  }
  return out;
}

DriverStats Driver::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

checkpoint::Checkpoint Driver::Snapshot() const {
  MutexLock lock(mu_);
  return checkpoint_;
}

// ---- HealthMonitor ----

HealthMonitor::HealthMonitor(std::string pool) : pool_(std::move(pool)) {}

bool HealthMonitor::Update(const api::NodeInventory& inventory,
                           std::chrono::system_clock::time_point now) {
  const int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::map<std::string, DeviceHealth> next;
  // Why a device is unhealthy: the inventory's conditions name it ("npu-3: ...").
  std::map<std::string, std::string> why;
  for (const api::Condition& c : inventory.status.conditions) {
    if (c.status != "False") continue;
    std::stringstream lines(c.message);
    std::string line;
    while (std::getline(lines, line, ';')) {
      while (!line.empty() && line.front() == ' ') line.erase(0, 1);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string& w = why[line.substr(0, colon)];
      w += (w.empty() ? "" : "; ") + line;
    }
  }
  for (const api::InventoryDevice& d : inventory.status.devices) {
    DeviceHealth h;
    h.pool = pool_;
    h.device = d.name;
    h.health = d.health == "Healthy"     ? HealthState::kHealthy
               : d.health == "Unhealthy" ? HealthState::kUnhealthy
                                         : HealthState::kUnknown;
    if (h.health != HealthState::kHealthy) {
      h.message = why.contains(d.name) ? why[d.name] : "reported " + d.health + " by discovery";
      if (h.message.size() > 1024) h.message = h.message.substr(0, 1021) + "...";
    }
    h.last_updated_unix = now_s;
    next[d.name] = std::move(h);
  }
  MutexLock lock(mu_);
  bool changed = next.size() != health_.size();
  for (const auto& [name, h] : next) {
    auto it = health_.find(name);
    if (it == health_.end() || it->second.health != h.health || it->second.message != h.message) {
      changed = true;
    }
  }
  health_ = std::move(next);
  if (changed) {
    ++generation_;
    changed_.NotifyAll();
  }
  return changed;
}

std::vector<DeviceHealth> HealthMonitor::Snapshot(uint64_t* generation) {
  MutexLock lock(mu_);
  if (generation != nullptr) *generation = generation_;
  std::vector<DeviceHealth> out;
  for (const auto& [name, h] : health_) out.push_back(h);
  return out;
}

uint64_t HealthMonitor::WaitForChange(uint64_t seen,
                                      std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  changed_.WaitUntil(mu_, deadline, [&]() REQUIRES(mu_) { return generation_ != seen; });
  return generation_;
}

}  // namespace xpu::plugin
