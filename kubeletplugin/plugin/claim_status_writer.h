// Writes a claim's energy account (claim_energy.h) into its ResourceClaim's status.devices[]:
// GET the claim, set or replace the entries of this driver for the account's devices (data.energy;
// their other data keys and conditions kept, other drivers' entries untouched), and update the
// status subresource with the fetched resourceVersion, re-reading on a conflict a few times.
//
// Where the server drops the field (an update that succeeds without our entries: the
// DRAResourceClaimDeviceStatus feature is off), every later write is skipped: the accounts stay
// in the metrics only, and the result names the fallback ("dropped") for the fallbacks counter.
// A refused write (403 without RBAC, 404 or 422 on the status) falls back for that claim only.
// Thread-compatible: one status thread writes.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_CLAIM_STATUS_WRITER_H_
#define XPU_KUBELETPLUGIN_PLUGIN_CLAIM_STATUS_WRITER_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "kubeletplugin/plugin/claim_energy.h"

namespace xpu::api::client {
class Client;
}  // namespace xpu::api::client

namespace xpu::plugin {

// The two calls the writer makes (the Kubernetes client; a fake in tests).
class ClaimStatusApi {
 public:
  virtual ~ClaimStatusApi() = default;
  virtual StatusOr<nlohmann::json> GetClaim(const std::string& ns, const std::string& name) = 0;
  // PUT .../resourceclaims/NAME/status; the object's resourceVersion is the precondition.
  virtual StatusOr<nlohmann::json> UpdateClaimStatus(const std::string& ns,
                                                     const nlohmann::json& claim) = 0;
};

// The client's calls. `client` outlives it.
std::unique_ptr<ClaimStatusApi> NewClaimStatusApi(api::client::Client* client);

// Whether every device of `account` is still in the claim's allocation results: the API server
// refuses status.devices entries for devices no longer allocated.
bool StillAllocated(const nlohmann::json& claim, const std::string& driver,
                    const ClaimEnergy& account);

// `claim` (as served, v1) with the account's entries of `driver` set; other entries kept.
// InvalidArgument when the claim is not the account's (another uid).
StatusOr<nlohmann::json> MergeEnergyStatus(const nlohmann::json& claim, const std::string& driver,
                                           const ClaimEnergy& account);
// Whether `claim` (an update's answer) holds the account's entries with data.energy.
bool HasEnergyStatus(const nlohmann::json& claim, const std::string& driver,
                     const ClaimEnergy& account);

struct ClaimStatusWrite {
  EnergyWriteOutcome outcome = EnergyWriteOutcome::kRetry;
  // Non-empty when the write fell back to metrics only: "dropped", "forbidden", "not_found",
  // "invalid" (the fallbacks counter's reason).
  std::string fallback = {};
  std::string message = {};  // why, for the log; empty when written
};

class ClaimStatusWriter {
 public:
  ClaimStatusWriter(ClaimStatusApi* api, std::string driver, int conflict_retries = 3)
      : api_(api), driver_(std::move(driver)), conflict_retries_(conflict_retries) {}

  ClaimStatusWrite Write(const ClaimEnergy& account);
  // Whether the server was found to drop status.devices (every write skipped since).
  bool dropped() const { return dropped_; }

 private:
  ClaimStatusApi* const api_;
  const std::string driver_;
  const int conflict_retries_;
  bool dropped_ = false;
};

// The final writes of a stop: `write` for each final account of `due` (others are skipped) until
// `clock` reads `give_up`; returns how many final accounts were left unwritten.
int WriteFinalAccounts(const std::vector<ClaimEnergy>& due, const Clock& clock,
                       Clock::SteadyTime give_up,
                       const std::function<void(const ClaimEnergy&)>& write);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_CLAIM_STATUS_WRITER_H_
