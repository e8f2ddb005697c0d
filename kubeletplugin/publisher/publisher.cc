#include "kubeletplugin/publisher/publisher.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <thread>
#include <utility>

#include "api/core.h"
#include "api/validation.h"
#include "base/time.h"

namespace xpu::plugin {
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
    const auto it = old.find(c.type);
    if (it != old.end() && it->second->status == c.status) {
      c.last_transition_time = it->second->last_transition_time;
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

InventoryPublisher::InventoryPublisher(kc::Client* client, PublisherOptions options,
                                       DiscoverFn discover)
    : client_(client), options_(std::move(options)), discover_(std::move(discover)) {}

PublisherStats InventoryPublisher::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

StatusOr<std::string> InventoryPublisher::NodeUid() {
  auto node = client_->Get(kc::Nodes(), "", options_.node_name);
  if (!node.ok()) {
    if (node.status().code() == StatusCode::kNotFound) {
      return NotFoundError("node " + options_.node_name + " does not exist (yet)");
    }
    return node.status();
  }
  const auto meta = node->find("metadata");
  if (meta == node->end() || !meta->contains("uid")) {
    return DataLossError("get nodes " + options_.node_name + ": no metadata.uid");
  }
  return (*meta)["uid"].get<std::string>();
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

  for (int attempt = 0; attempt < 2; ++attempt) {
    auto stored_json = client_->Get(kc::NodeInventories(), "", options_.node_name);
    if (!stored_json.ok() && stored_json.status().code() != StatusCode::kNotFound) {
      return stored_json.status();
    }
    if (!stored_json.ok()) {
      // Create (the API server ignores status there), then write the status.
      api::NodeInventory create = inventory;
      create.status = {};
      // Fields the server sets: a create carrying a resourceVersion is refused.
      create.metadata.resource_version.clear();
      create.metadata.uid.clear();
      create.metadata.creation_timestamp.clear();
      create.metadata.generation = 0;
      auto made = client_->Create(kc::NodeInventories(), "", api::ToJson(create));
      if (!made.ok()) {
        if (made.status().code() == StatusCode::kAlreadyExists) continue;  // raced: re-read
        return made.status();
      }
      json with_status = *made;
      with_status["status"] = StatusJson(inventory.status);
      auto written = client_->UpdateStatus(kc::NodeInventories(), "", with_status);
      if (!written.ok()) return written.status();
      MutexLock lock(mu_);
      ++stats_.inventory_writes;
      return true;
    }
    auto stored = api::FromJson<api::NodeInventory>(*stored_json);
    api::NodeInventoryStatus want = inventory.status;
    if (stored.ok()) want = CarryOverTimes(std::move(want), stored->status);
    const bool owner_ok = stored.ok() && stored->metadata.owner_references.size() == 1 &&
                          stored->metadata.owner_references[0].uid == uid;
    if (stored.ok() && owner_ok && StatusJson(want) == StatusJson(stored->status)) {
      MutexLock lock(mu_);
      ++stats_.unchanged;
      return false;
    }
    json next = *stored_json;
    if (!owner_ok) {
      // The Node was replaced (new uid) or the owner is missing: fix the main object first.
      next["metadata"]["ownerReferences"] =
          json::array({api::ToJson(inventory)["metadata"]["ownerReferences"][0]});
      auto updated = client_->Update(kc::NodeInventories(), "", next);
      if (!updated.ok()) {
        if (updated.status().code() == StatusCode::kAborted) continue;
        return updated.status();
      }
      next = *updated;
    }
    next["status"] = StatusJson(want);
    auto written = client_->UpdateStatus(kc::NodeInventories(), "", next);
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
  const std::string now = MicroTime(std::chrono::system_clock::now());
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto stored = client_->Get(kc::Leases(), options_.ns, name);
    if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) return stored.status();
    if (!stored.ok()) {
      api::core::Lease lease;
      lease.metadata.name = name;
      lease.metadata.namespace_name = options_.ns;
      if (auto uid = NodeUid(); uid.ok()) {
        api::OwnerReference owner;
        owner.api_version = "v1";
        owner.kind = "Node";
        owner.name = options_.node_name;
        owner.uid = *uid;
        lease.metadata.owner_references = {owner};
      }
      lease.spec.holder_identity = holder;
      lease.spec.lease_duration_seconds = options_.lease_duration.count();
      lease.spec.acquire_time = now;
      lease.spec.renew_time = now;
      lease.spec.lease_transitions = 0;
      auto made = client_->Create(kc::Leases(), options_.ns, api::core::ToJson(lease));
      if (!made.ok()) {
        if (made.status().code() == StatusCode::kAlreadyExists) continue;
        return made.status();
      }
    } else {
      auto lease = api::FromJson<api::core::Lease>(*stored);
      if (!lease.ok()) {
        return lease.status().WithContext("read leases.coordination.k8s.io " + options_.ns + "/" +
                                          name);
      }
      if (lease->spec.holder_identity != holder) {
        lease->spec.holder_identity = holder;
        lease->spec.acquire_time = now;
        lease->spec.lease_transitions = lease->spec.lease_transitions.value_or(0) + 1;
      }
      lease->spec.lease_duration_seconds = options_.lease_duration.count();
      lease->spec.renew_time = now;
      auto updated = client_->Update(kc::Leases(), options_.ns, api::core::ToJson(*lease));
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

void InventoryPublisher::Run(const std::atomic<bool>& stop, std::atomic<bool>* wake,
                             const std::function<void(const std::string&)>& log) {
  using Clock = std::chrono::steady_clock;
  auto report = [&](const Status& s) {
    {
      MutexLock lock(mu_);
      ++stats_.errors;
    }
    if (log) log(MicroTime(std::chrono::system_clock::now()) + " " + s.message());
  };
  auto next_lease = Clock::now();
  auto next_publish = Clock::now();
  while (!stop.load()) {
    const auto now = Clock::now();
    if (now >= next_lease) {
      if (Status s = RenewLease(); !s.ok()) report(s);
      next_lease = now + options_.lease_renew;
    }
    const bool woken = wake != nullptr && wake->exchange(false);
    if (now >= next_publish || woken) {
      auto published = PublishOnce();
      if (!published.ok()) {
        report(published.status());
        next_publish = now + options_.node_retry;
      } else {
        next_publish = now + options_.rediscover;
      }
    }
    const auto until = std::min(next_lease, next_publish);
    // Short naps so stop and wake are seen promptly.
    std::this_thread::sleep_for(
        std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(100)));
  }
}

}  // namespace xpu::plugin
