#include "kubeletplugin/publisher/publisher.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <utility>

#include "api/client/events.h"
#include "api/client/objects.h"
#include "api/core.h"
#include "api/validation.h"
#include "base/time.h"

namespace xpu::plugin {

using api::client::ObjectKey;
namespace {

using nlohmann::json;
namespace kc = api::client;

// The status as compared: conditions keep the stored lastTransitionTime while their status is
// unchanged, so a rediscovery that finds the same facts writes nothing.
api::NodeInventoryStatus CarryOverTimes(api::NodeInventoryStatus fresh,
                                        const api::NodeInventoryStatus& stored) {
  std::map<std::string, const api::Condition*> old;
  for (const auto& c : stored.conditions) old[c.type] = &c;
  for (auto& c : fresh.conditions) {
    if (const auto it = old.find(c.type); it != old.end()) {
      api::CarryTransitionTime(*it->second, &c);
    }
  }
  return fresh;
}

// The wire form of a status (the codec writes whole objects).
json StatusJson(const api::NodeInventoryStatus& status) {
  api::NodeInventory holder;
  holder.status = status;
  return api::ToJson(holder).value("status", json::object());
}

}  // namespace

Status PublisherOptions::Validate() const {
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(node_name, "--node-name"));
  RETURN_IF_ERROR(api::ValidateDnsLabel(ns, "--namespace"));
  if (lease_renew.count() <= 0 || lease_duration.count() <= 0 ||
      std::chrono::duration_cast<std::chrono::milliseconds>(lease_duration) <= lease_renew) {
    return InvalidArgumentError(
        "lease: the renew interval must be positive and shorter than the "
        "lease duration");
  }
  if (rediscover.count() <= 0 || node_retry.count() <= 0) {
    return InvalidArgumentError("rediscover and node retry intervals must be positive");
  }
  return OkStatus();
}

std::string LeaseName(const std::string& node_name) { return "xpu-dra-plugin-" + node_name; }

std::string MicroTime(std::chrono::system_clock::time_point t) { return FormatMicroTime(t); }

PublisherApi PublisherApiOver(kc::Client* client) {
  PublisherApi api;
  api.nodes = std::make_shared<kc::ApiObjects<api::core::Node>>(client, kc::Nodes());
  api.inventories =
      std::make_shared<kc::ApiObjects<api::NodeInventory>>(client, kc::NodeInventories());
  api.leases = std::make_shared<kc::ApiObjects<api::core::Lease>>(client, kc::Leases());
  api.events = std::make_shared<kc::ApiEventRecorder>(client);
  return api;
}

InventoryPublisher::InventoryPublisher(kc::Client* client, PublisherOptions options,
                                       DiscoverFn discover)
    : InventoryPublisher(PublisherApiOver(client), std::move(options), std::move(discover)) {}

InventoryPublisher::InventoryPublisher(PublisherApi api, PublisherOptions options,
                                       DiscoverFn discover)
    : api_(std::move(api)), options_(std::move(options)), discover_(std::move(discover)) {}

PublisherStats InventoryPublisher::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

StatusOr<std::string> InventoryPublisher::NodeUid() {
  StatusOr<api::core::Node> node = api_.nodes->Get(ObjectKey::Cluster(options_.node_name));
  if (!node.ok()) {
    if (node.status().code() == StatusCode::kNotFound) {
      return NotFoundError("node " + options_.node_name + " does not exist (yet)");
    }
    return node.status();
  }
  if (node->metadata.uid.empty()) {
    return DataLossError("get nodes " + options_.node_name + ": no metadata.uid");
  }
  return node->metadata.uid;
}

StatusOr<bool> InventoryPublisher::PublishOnce() {
  ASSIGN_OR_RETURN(const std::string uid, NodeUid());
  auto discovered = discover_();
  {
    MutexLock lock(mu_);
    ++stats_.discoveries;
  }
  if (!discovered.ok()) return discovered.status().WithContext("discover");
  api::NodeInventory inventory = std::move(discovered).value();
  inventory.metadata.name = options_.node_name;
  api::OwnerReference owner;
  owner.api_version = "v1";
  owner.kind = "Node";
  owner.name = options_.node_name;
  owner.uid = uid;
  inventory.metadata.owner_references = {owner};

  // What was refused for itself is not sent again unchanged.
  std::string wire = api::ToJson(inventory).dump();
  {
    MutexLock lock(mu_);
    if (!refused_.empty() && refused_ == wire) return refused_status_;
  }
  StatusOr<bool> written = Write(inventory, uid);
  MutexLock lock(mu_);
  if (written.ok()) {
    refused_.clear();
  } else if (NextPublishStep(written.status(), options_).terminal) {
    refused_ = std::move(wire);
    refused_status_ = written.status();
  }
  return written;
}

StatusOr<bool> InventoryPublisher::Write(const api::NodeInventory& inventory,
                                         const std::string& uid) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    StatusOr<api::NodeInventory> stored =
        api_.inventories->Get(ObjectKey::Cluster(options_.node_name));
    if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) return stored.status();
    if (!stored.ok()) {
      // Create (the API server ignores status there), then write the status.
      api::NodeInventory create = inventory;
      create.status = {};
      // Fields the server sets: a create carrying a resourceVersion is refused.
      create.metadata.resource_version.clear();
      create.metadata.uid.clear();
      create.metadata.creation_timestamp.clear();
      create.metadata.generation = 0;
      StatusOr<api::NodeInventory> made = api_.inventories->Create(create);
      if (!made.ok()) {
        if (made.status().code() == StatusCode::kAlreadyExists) continue;  // raced: re-read
        return made.status();
      }
      made->status = inventory.status;
      RETURN_IF_ERROR(api_.inventories->UpdateStatus(*made).status());
      MutexLock lock(mu_);
      ++stats_.inventory_writes;
      return true;
    }
    const api::NodeInventoryStatus want = CarryOverTimes(inventory.status, stored->status);
    const bool owner_ok = stored->metadata.owner_references.size() == 1 &&
                          stored->metadata.owner_references[0].uid == uid;
    if (owner_ok && StatusJson(want) == StatusJson(stored->status)) {
      MutexLock lock(mu_);
      ++stats_.unchanged;
      return false;
    }
    api::NodeInventory next = std::move(stored).value();
    if (!owner_ok) {
      // The Node was replaced (new uid) or the owner is missing: fix the main object first.
      next.metadata.owner_references = inventory.metadata.owner_references;
      StatusOr<api::NodeInventory> updated = api_.inventories->Update(next);
      if (!updated.ok()) {
        if (updated.status().code() == StatusCode::kAborted) continue;
        return updated.status();
      }
      next = std::move(updated).value();
    }
    next.status = want;
    StatusOr<api::NodeInventory> written = api_.inventories->UpdateStatus(next);
    if (!written.ok()) {
      if (written.status().code() == StatusCode::kAborted) continue;  // re-read and retry once
      return written.status();
    }
    MutexLock lock(mu_);
    ++stats_.inventory_writes;
    return true;
  }
  return Status(StatusCode::kAborted, "update nodeinventories.xpu.dra.dev " + options_.node_name +
                                          ": conflicts on every attempt");
}

Status InventoryPublisher::RenewLease() {
  const std::string name = LeaseName(options_.node_name);
  const std::string holder =
      options_.holder_identity.empty() ? options_.node_name : options_.holder_identity;
  const std::string now = MicroTime(options_.clock->WallNow());
  for (int attempt = 0; attempt < 2; ++attempt) {
    StatusOr<api::core::Lease> lease = api_.leases->Get(ObjectKey::Namespaced(options_.ns, name));
    if (!lease.ok() && lease.status().code() != StatusCode::kNotFound) return lease.status();
    if (!lease.ok()) {
      api::core::Lease fresh;
      fresh.metadata.name = name;
      fresh.metadata.namespace_name = options_.ns;
      if (auto uid = NodeUid(); uid.ok()) {
        api::OwnerReference owner;
        owner.api_version = "v1";
        owner.kind = "Node";
        owner.name = options_.node_name;
        owner.uid = *uid;
        fresh.metadata.owner_references = {owner};
      }
      fresh.spec.holder_identity = holder;
      fresh.spec.lease_duration_seconds = options_.lease_duration.count();
      fresh.spec.acquire_time = now;
      fresh.spec.renew_time = now;
      fresh.spec.lease_transitions = 0;
      StatusOr<api::core::Lease> made = api_.leases->Create(fresh);
      if (!made.ok()) {
        if (made.status().code() == StatusCode::kAlreadyExists) continue;
        return made.status();
      }
    } else {
      if (lease->spec.holder_identity != holder) {
        lease->spec.holder_identity = holder;
        lease->spec.acquire_time = now;
        lease->spec.lease_transitions = lease->spec.lease_transitions.value_or(0) + 1;
      }
      lease->spec.lease_duration_seconds = options_.lease_duration.count();
      lease->spec.renew_time = now;
      StatusOr<api::core::Lease> updated = api_.leases->Update(*lease);
      if (!updated.ok()) {
        if (updated.status().code() == StatusCode::kAborted) continue;
        return updated.status();
      }
    }
    MutexLock lock(mu_);
    ++stats_.lease_renewals;
    return OkStatus();
  }
  return Status(StatusCode::kAborted, "renew leases.coordination.k8s.io " + options_.ns + "/" +
                                          name + ": conflicts on every attempt");
}

PublishStep NextPublishStep(const Status& result, const PublisherOptions& options) {
  if (result.ok()) return {options.rediscover, false};
  // The Node not there yet (or the inventory deleted under us): worth another try soon.
  if (result.code() == StatusCode::kNotFound) return {options.node_retry, false};
  if (kc::IsTerminalApiError(result)) return {options.rediscover, true};
  return {options.node_retry, false};
}

void InventoryPublisher::Report(const Status& status, bool terminal,
                                const std::function<void(const std::string&)>& log) {
  const std::string what = status.ToString();
  const bool first = !terminal || what != last_reported_;
  {
    MutexLock lock(mu_);
    ++stats_.errors;
    if (terminal && first) ++stats_.terminal_errors;
  }
  if (!first) return;  // the same refusal again: reported when it was new
  const auto now = options_.clock->WallNow();
  std::string line = MicroTime(now) + " " + status.message();
  if (!terminal) {
    if (log) log(line);
    return;
  }
  last_reported_ = what;
  line += " (refused by the API server: not sent again until discovery finds something different)";
  if (log) log(line);
  kc::EventInfo event;
  event.about = {"coordination.k8s.io/v1", "Lease", options_.ns, LeaseName(options_.node_name), ""};
  event.reason = "InventoryRejected";
  event.message = line.substr(line.find(' ') + 1);
  event.component = "xpu-dra-plugin";
  event.instance = options_.node_name;
  event.host = options_.node_name;
  if (Status s = api_.events->Record(event, now); !s.ok() && log) {
    log(MicroTime(now) + " record event: " + s.message());
  }
}

void InventoryPublisher::Run(const StopFlag& stop, std::atomic<bool>* wake,
                             const std::function<void(const std::string&)>& log) {
  Clock& clock = *options_.clock;
  Ticker lease(clock, options_.lease_renew, Ticker::kAtOnce);
  Ticker publish(clock, options_.rediscover, Ticker::kAtOnce);
  while (!stop.IsSet()) {
    if (lease.Due()) {
      if (Status s = RenewLease(); !s.ok()) Report(s, false, log);
    }
    const bool woken = wake != nullptr && wake->exchange(false);
    if (publish.Due() || woken) {
      const StatusOr<bool> published = PublishOnce();
      const PublishStep step = NextPublishStep(published.status(), options_);
      publish.DueIn(step.wait);
      if (!published.ok()) {
        Report(published.status(), step.terminal, log);
      } else {
        last_reported_.clear();
      }
    }
    // Naps of 100 ms at most, so that a wake is seen promptly; a stop ends a nap at once.
    clock.Sleep(std::min<std::chrono::nanoseconds>(
                    {lease.Left(), publish.Left(), std::chrono::milliseconds(100)}),
                stop);
  }
}

}  // namespace xpu::plugin
