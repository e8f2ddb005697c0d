#include "kubeletplugin/driver/driver.h"

#include <algorithm>
#include <filesystem>
#include <future>
#include <optional>
#include <set>

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

}  // namespace

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
                 client, api::client::AcceleratorGangs()),
             std::make_shared<ApiClaimLister>(client)) {}

Driver::Driver(DriverOptions options, std::shared_ptr<ClaimReader> claims, InventoryFn inventory,
               LogFn log, std::shared_ptr<GangReader> gangs, std::shared_ptr<ClaimLister> lister)
    : options_(std::move(options)),
      claims_(std::move(claims)),
      gangs_(std::move(gangs)),
      lister_(std::move(lister)),
      inventory_(std::move(inventory)),
      log_(std::move(log)),
      specs_(options_.cdi_dir, cdi::KindForDriver(options_.driver_name)),
      driver_files_(std::make_shared<driverfiles::DriverFilesCache>(
          options_.host_root, options_.cdi_hook_path, options_.driver_files)),
      host_(HostWithDriverFiles(options_.host_root, driver_files_)),
      store_(options_.state_dir + "/checkpoint.json"),
      partitions_(
          options_.driver_name, options_.node_name, &checkpoint_,
          [this]() REQUIRES(mu_) { return SaveLocked(); }, inventory_, log_) {}

void Driver::AddPartitionBackend(std::shared_ptr<discovery::PartitionBackend> backend) {
  MutexLock lock(mu_);
  partitions_.AddBackend(std::move(backend));
}

int Driver::ApplyPartitionLayout(const std::vector<PartitionLayoutEntry>& layout) {
  MutexLock lock(mu_);
  return partitions_.ApplyLayout(layout);
}

std::vector<checkpoint::Partition> Driver::PartitionRecords() const {
  MutexLock lock(records_mu_);
  return saved_records_;
}

Status Driver::Start() {
  MutexLock lock(mu_);
  ASSIGN_OR_RETURN(checkpoint_, store_.Load());
  RETURN_IF_ERROR(partitions_.Reconcile());
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
  return specs_.Write(claim.uid, *recorded).status();
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

Status Driver::CollectDeletedClaims() {
  std::vector<ClaimRef> refs;
  {
    MutexLock lock(mu_);
    partitions_.ReleaseLeftovers();
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
  StatusOr<res::ResourceClaim> claim = claims_->Get(ObjectKey::Namespaced(ref.ns, ref.name));
  if (!claim.ok()) {
    Fetched f;
    f.status = claim.status();
    return f;
  }
  return Check(ref, std::move(claim).value());
}

Driver::Fetched Driver::Check(const ClaimRef& ref, res::ResourceClaim claim) {
  Fetched f;
  const std::string what = "ResourceClaim " + ref.ns + "/" + ref.name;
  f.claim = std::move(claim);
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

void Driver::ListInto(const std::vector<const ClaimRef*>& todo, const CallBounds& bounds,
                      CallBounds::Clock::duration reserve, std::vector<Fetched>* fetched,
                      std::vector<std::optional<res::ResourceClaim>>* listed,
                      std::vector<bool>* done) {
  if (lister_ == nullptr) return;
  const ListPlan plan = PlanLists(todo);
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    const std::string& ns = plan.lists[l];
    const std::string where = ns.empty() ? "all namespaces" : "namespace " + ns;
    std::set<ObjectKey> wanted;
    for (size_t i = 0; i < todo.size(); ++i) {
      if (plan.list_of[i] == static_cast<int>(l)) {
        wanted.insert(ObjectKey::Namespaced(todo[i]->ns, todo[i]->name));
      }
    }
    // Never more requests than the GETs it stands for.
    const int max_pages = static_cast<int>(wanted.size());
    ListedClaims result =
        ListClaims(*lister_, ns, wanted, max_pages, [&] { return bounds.Live(reserve); });
    if (!result.error.ok()) {
      log_(result.error.message() + "; reading the " +
           std::to_string(wanted.size() - result.found.size()) + " claims of " + where +
           " it did not find one by one");
    }
    for (size_t i = 0; i < todo.size(); ++i) {
      if (plan.list_of[i] != static_cast<int>(l)) continue;
      const ClaimRef& ref = *todo[i];
      auto it = result.found.find(ObjectKey::Namespaced(ref.ns, ref.name));
      if (it != result.found.end()) {
        (*listed)[i] = it->second;  // copied: a name may come twice, with two uids
      } else if (result.complete) {
        (*fetched)[i].status = NotFoundError("ResourceClaim " + ref.ns + "/" + ref.name +
                                             ": not found (not in the list of " + where + ")");
        (*done)[i] = true;
      }
    }
  }
}

std::vector<Driver::Fetched> Driver::FetchAll(const std::vector<const ClaimRef*>& todo,
                                              const CallBounds& bounds,
                                              CallBounds::Clock::duration reserve) {
  std::vector<Fetched> fetched(todo.size());
  std::vector<std::optional<res::ResourceClaim>> listed(todo.size());
  std::vector<bool> done(todo.size(), false);
  ListInto(todo, bounds, reserve, &fetched, &listed, &done);
  // Listed claims are checked here (a gang's GET at most each); the rest are read with GETs,
  // at most fetch_parallelism at a time. Every lookup first asks whether the call is live.
  std::vector<size_t> to_get;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (done[i]) continue;
    if (!listed[i]) {
      to_get.push_back(i);
    } else if (!bounds.Live(reserve)) {
      fetched[i].status = UnavailableError(NotReached(bounds, "prepared"));
    } else {
      fetched[i] = Check(*todo[i], std::move(*listed[i]));
    }
  }
  const auto parallel = static_cast<size_t>(options_.fetch_parallelism);
  for (size_t start = 0; start < to_get.size(); start += parallel) {
    if (!bounds.Live(reserve)) {
      for (size_t k = start; k < to_get.size(); ++k) {
        fetched[to_get[k]].status = UnavailableError(NotReached(bounds, "prepared"));
      }
      break;
    }
    const size_t end = std::min(to_get.size(), start + parallel);
    if (end - start == 1) {
      fetched[to_get[start]] = Fetch(*todo[to_get[start]]);
      continue;
    }
    std::vector<std::future<Fetched>> running;
    for (size_t k = start; k < end; ++k) {
      running.push_back(
          std::async(std::launch::async, [this, ref = todo[to_get[k]]] { return Fetch(*ref); }));
    }
    for (size_t k = start; k < end; ++k) fetched[to_get[k]] = running[k - start].get();
  }
  return fetched;
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
  // Read and check the claims (listed or fetched), while the call is live.
  std::vector<Fetched> fetched = FetchAll(todo, bounds, reserve);
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
        if (Status r = partitions_.ReleaseFor(uid); !r.ok()) log_(r.message());
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
        partitions_.EnsureFor(ref, *in.allocation, *inventory);
    if (!parts.ok()) {
      // Those of its partitions made before the one that failed are not kept either.
      if (Status s = partitions_.ReleaseFor(ref.uid); !s.ok()) log_(s.message());
      return PrepareResult{{}, parts.status().message()};
    }
    in.partitions = std::move(parts).value();
  }
  StatusOr<PreparedClaim> prepared = ComputePreparedClaim(in, host_);
  if (!prepared.ok()) {
    // Partitions made for a claim that cannot be prepared are not kept.
    if (Status s = partitions_.ReleaseFor(ref.uid); !s.ok()) log_(s.message());
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
    StatusOr<std::string> written = specs_.Write(ref.uid, *prepared->spec);
    if (!written.ok()) {
      return PrepareResult{
          {}, "ResourceClaim " + ref.ns + "/" + ref.name + ": " + written.status().message()};
    }
    prepared->record.cdi_spec = std::move(written).value();
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
    if (Status s = partitions_.ReleaseFor(ref.uid); !s.ok()) {
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
  DriverStats out = stats_;
  out.partitions_created = partitions_.stats().created;
  out.partitions_destroyed = partitions_.stats().destroyed;
  out.partition_errors = partitions_.stats().errors;
  return out;
}

checkpoint::Checkpoint Driver::Snapshot() const {
  MutexLock lock(mu_);
  return checkpoint_;
}

}  // namespace xpu::plugin
