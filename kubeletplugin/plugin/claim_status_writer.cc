#include "kubeletplugin/plugin/claim_status_writer.h"

#include <utility>

#include "api/client/client.h"

namespace xpu::plugin {
namespace {
namespace claim_status_writer_cc {

class ClientClaimStatusApi final : public ClaimStatusApi {
 public:
  explicit ClientClaimStatusApi(api::client::Client* client) : client_(client) {}
  StatusOr<nlohmann::json> GetClaim(const std::string& ns, const std::string& name) override {
    return client_->Get(api::client::ResourceClaims(), ns, name);
  }
  StatusOr<nlohmann::json> UpdateClaimStatus(const std::string& ns,
                                             const nlohmann::json& claim) override {
    return client_->UpdateStatus(api::client::ResourceClaims(), ns, claim);
  }

 private:
  api::client::Client* const client_;
};

std::string StringAt(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Whether the status.devices entry `entry` is the one of `driver` for `device`.
bool IsEntryOf(const nlohmann::json& entry, const std::string& driver, const DeviceEnergy& device) {
  return StringAt(entry, "driver") == driver && StringAt(entry, "pool") == device.pool &&
         StringAt(entry, "device") == device.device &&
         StringAt(entry, "shareID") == device.share_id;
}

}  // namespace claim_status_writer_cc
using namespace claim_status_writer_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

std::unique_ptr<ClaimStatusApi> NewClaimStatusApi(api::client::Client* client) {
  return std::make_unique<ClientClaimStatusApi>(client);
}

StatusOr<nlohmann::json> MergeEnergyStatus(const nlohmann::json& claim, const std::string& driver,
                                           const ClaimEnergy& account) {
  const std::string what = "resourceclaim " + account.ns + "/" + account.name;
  if (!claim.is_object() ||
      StringAt(claim.value("metadata", nlohmann::json::object()), "uid") != account.uid) {
    return InvalidArgumentError(what + ": metadata.uid: not the prepared claim's " + account.uid);
  }
  nlohmann::json out = claim;
  nlohmann::json& status = out["status"];
  if (!status.is_object()) status = nlohmann::json::object();
  nlohmann::json& devices = status["devices"];
  if (!devices.is_array()) devices = nlohmann::json::array();
  for (const DeviceEnergy& d : account.devices) {
    nlohmann::json* entry = nullptr;
    for (nlohmann::json& e : devices) {
      if (IsEntryOf(e, driver, d)) entry = &e;
    }
    if (entry == nullptr) {
      nlohmann::json fresh = {{"driver", driver}, {"pool", d.pool}, {"device", d.device}};
      if (!d.share_id.empty()) fresh["shareID"] = d.share_id;
      devices.push_back(std::move(fresh));
      entry = &devices.back();
    }
    nlohmann::json& data = (*entry)["data"];
    if (!data.is_object()) data = nlohmann::json::object();
    data["energy"] = EnergyData(d)["energy"];
  }
  return out;
}

// Every device of `account` is still among the claim's allocation results: the API server refuses
// status.devices entries for devices no longer allocated (the claim controller deallocates a
// claim as soon as its pods are done, often before the write at unprepare).
bool StillAllocated(const nlohmann::json& claim, const std::string& driver,
                    const ClaimEnergy& account) {
  const nlohmann::json* results = nullptr;
  if (claim.is_object()) {
    const nlohmann::json::json_pointer path("/status/allocation/devices/results");
    if (claim.contains(path) && claim.at(path).is_array()) results = &claim.at(path);
  }
  if (results == nullptr) return false;
  for (const DeviceEnergy& d : account.devices) {
    bool found = false;
    for (const nlohmann::json& r : *results) {
      found = found || (r.is_object() && r.value("driver", "") == driver &&
                        r.value("pool", "") == d.pool && r.value("device", "") == d.device);
    }
    if (!found) return false;
  }
  return true;
}

bool HasEnergyStatus(const nlohmann::json& claim, const std::string& driver,
                     const ClaimEnergy& account) {
  if (!claim.is_object()) return false;
  const nlohmann::json status = claim.value("status", nlohmann::json::object());
  const nlohmann::json devices = status.is_object()
                                     ? status.value("devices", nlohmann::json::array())
                                     : nlohmann::json::array();
  if (!devices.is_array()) return false;
  for (const DeviceEnergy& d : account.devices) {
    bool found = false;
    for (const nlohmann::json& e : devices) {
      if (!IsEntryOf(e, driver, d)) continue;
      const nlohmann::json data = e.value("data", nlohmann::json::object());
      found = found || (data.is_object() && data.contains("energy"));
    }
    if (!found) return false;
  }
  return true;
}

ClaimStatusWrite ClaimStatusWriter::Write(const ClaimEnergy& account) {
  const std::string what = "resourceclaim " + account.ns + "/" + account.name + " status";
  if (dropped_) {
    return {.outcome = EnergyWriteOutcome::kGiveUp,
            .fallback = "",
            .message = what + ": the API server drops status.devices"};
  }
  if (account.devices.empty()) return {.outcome = EnergyWriteOutcome::kWritten};
  auto fall_back = [&](const char* reason, const std::string& message) {
    return ClaimStatusWrite{
        .outcome = EnergyWriteOutcome::kGiveUp, .fallback = reason, .message = message};
  };
  Status last;
  for (int attempt = 0; attempt <= conflict_retries_; ++attempt) {
    StatusOr<nlohmann::json> claim = api_->GetClaim(account.ns, account.name);
    if (!claim.ok()) {
      if (claim.status().code() == StatusCode::kNotFound) {  // deleted after unprepare
        return {.outcome = EnergyWriteOutcome::kGiveUp, .fallback = "", .message = ""};
      }
      return {.outcome = EnergyWriteOutcome::kRetry, .message = claim.status().message()};
    }
    if (!StillAllocated(*claim, driver_, account)) {  // deallocated: the last write stands
      return {.outcome = EnergyWriteOutcome::kGiveUp,
              .fallback = "",
              .message = what + ": the claim is no longer allocated; its last write stands"};
    }
    StatusOr<nlohmann::json> merged = MergeEnergyStatus(*claim, driver_, account);
    if (!merged.ok()) {  // replaced by a claim of the same name
      return {.outcome = EnergyWriteOutcome::kGiveUp, .message = merged.status().message()};
    }
    StatusOr<nlohmann::json> updated = api_->UpdateClaimStatus(account.ns, *merged);
    if (updated.ok()) {
      if (HasEnergyStatus(*updated, driver_, account)) {
        return {.outcome = EnergyWriteOutcome::kWritten};
      }
      dropped_ = true;
      return fall_back("dropped", what +
                                      ": the API server dropped status.devices "
                                      "(DRAResourceClaimDeviceStatus off?): claim energy is "
                                      "in the metrics only from now on");
    }
    last = updated.status();
    switch (last.code()) {
      case StatusCode::kAborted:
        continue;  // a conflict: read again
      case StatusCode::kPermissionDenied:
        return fall_back("forbidden", last.message() +
                                          " (RBAC: resourceclaims/status update, and from 1.36 "
                                          "resourceclaims/driver associated-node:update)");
      case StatusCode::kNotFound:
        return fall_back("not_found", last.message());
      case StatusCode::kInvalidArgument:
        return fall_back("invalid", last.message());
      default:
        return {.outcome = EnergyWriteOutcome::kRetry, .message = last.message()};
    }
  }
  return {.outcome = EnergyWriteOutcome::kRetry, .message = last.message()};
}

int WriteFinalAccounts(const std::vector<ClaimEnergy>& due, const Clock& clock,
                       Clock::SteadyTime give_up,
                       const std::function<void(const ClaimEnergy&)>& write) {
  int left = 0;
  for (const ClaimEnergy& account : due) {
    if (!account.final) continue;
    if (clock.Now() >= give_up) {
      ++left;
    } else {
      write(account);
    }
  }
  return left;
}

}  // namespace xpu::plugin
