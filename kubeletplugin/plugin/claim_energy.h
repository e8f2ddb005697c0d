// Energy per claim: the plugin integrates the device telemetry it already samples into an account
// per prepared ResourceClaim, from prepare to unprepare, per device of the claim:
//
//   joules        the energy counter's increase where every reading has one (NVML total
//                 energy: source "nvml-energy-counter"), else power x time ("power-x-time"):
//                 each reading's power holds until the next one (the interval from prepare to
//                 the first reading uses the last reading taken before prepare, if any, else the
//                 first one after); the last reading's power holds until now, or unprepare.
//   averageWatts  joules / secondsHeld
//   peakWatts     the largest power read while held (at least the average)
//   secondsHeld   prepare (or the plugin's restart, "since": "restart") to unprepare, or now
//   samples       readings with a power value while held
//   healthEvents  times a device of the claim became unhealthy while held
//   xids          XID events on a device of the claim while held
//
// ClaimEnergyLedger keeps the accounts and decides when a claim's status is due
// (EnergyStatusDue: once per --claim-status-interval while held, then once, final, at
// unprepare, retried a few times); the writer (claim_status_writer.h) does the writing.
// Thread-safe: prepare and unprepare come from the kubelet's calls, readings from the telemetry
// thread, writes from the status thread. Times come from the Clock it is given.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_CLAIM_ENERGY_H_
#define XPU_KUBELETPLUGIN_PLUGIN_CLAIM_ENERGY_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "kubeletplugin/driver/service.h"

namespace xpu::plugin {

// A device of a prepared claim: its result's pool and device, and where its telemetry comes from
// (a partition reads its parent's, the whole device's, power).
struct EnergyDevice {
  std::string pool;
  std::string device;
  std::string pci_address;  // sysfs form; empty: no telemetry, nothing accounted
  std::string share_id;     // the result's shareID, when the device is shared
  friend bool operator==(const EnergyDevice&, const EnergyDevice&) = default;
};

struct EnergyClaim {
  ClaimRef ref;
  std::vector<EnergyDevice> devices;
};

// One device's reading of one telemetry sample.
struct EnergyReading {
  std::string pci_address;
  std::optional<double> watts;
  std::optional<double> energy_joules;  // a cumulative counter (NVML total energy), if any
  std::optional<double> xid_total;      // cumulative XID events, if the source counts them
};

// One device's account, as written into status.devices[].data.energy.
struct DeviceEnergy {
  std::string pool = {};
  std::string device = {};
  std::string share_id = {};
  double joules = 0;
  double average_watts = 0;
  double peak_watts = 0;
  double seconds_held = 0;
  std::string source = "power-x-time";  // or "nvml-energy-counter"
  int64_t samples = 0;
  int64_t health_events = 0;
  int64_t xids = 0;
  bool final = false;
  std::string updated_at = {};    // RFC 3339
  std::string since = "prepare";  // or "restart": accounting began at the plugin's restart
};

// The data object of a status.devices[] entry: {"energy": {...}} (docs/kubelet-plugin.md).
nlohmann::json EnergyData(const DeviceEnergy& energy);

struct ClaimEnergy {
  std::string uid;
  std::string ns;
  std::string name;
  bool final = false;  // unprepared: the account is complete
  std::vector<DeviceEnergy> devices;
};

// Where a claim's status writing stands.
struct EnergyWriteState {
  Clock::SteadyTime started{};
  std::optional<Clock::SteadyTime> ended = {};         // unprepared
  std::optional<Clock::SteadyTime> last_attempt = {};  // the last write tried (any outcome)
  std::optional<Clock::SteadyTime> last_written = {};  // the last write that succeeded
  bool final_written = false;
  bool stopped = false;  // the writer gave up on this claim (metrics only)
  int final_attempts = 0;
};

struct EnergyStatusOptions {
  // Status writes while held, at most this often; zero: no status writes (metrics only).
  std::chrono::nanoseconds period = std::chrono::seconds(30);
  // The final write, after unprepare: retried this often, this many times.
  std::chrono::nanoseconds final_retry = std::chrono::seconds(5);
  int final_attempts = 6;
  // An unprepared claim's account stays in the metrics this long.
  std::chrono::nanoseconds keep_after_final = std::chrono::minutes(5);
};

// Whether a status write of the claim is due at `now`: never with a zero period or once the
// writer gave up; after unprepare, the final write until it succeeded (the first at once, then
// every final_retry, final_attempts in all); while held, one period after the last attempt (or
// prepare).
bool EnergyStatusDue(const EnergyWriteState& state, Clock::SteadyTime now,
                     const EnergyStatusOptions& options);

// What a status write came to.
enum class EnergyWriteOutcome {
  kWritten,
  kRetry,   // try again when due (a conflict that outlived its retries, the API unavailable)
  kGiveUp,  // never again for this claim: the server drops the field, the claim is gone
};

class ClaimEnergyLedger {
 public:
  ClaimEnergyLedger(Clock& clock, EnergyStatusOptions options);

  // Begins the claim's account now, unless it is held (prepare is idempotent); an unprepared
  // claim prepared again starts a new account.
  // `since` is "prepare", or "restart" for a claim found in the checkpoint at start.
  void Start(const EnergyClaim& claim, const std::string& since = "prepare") EXCLUDES(mu_);
  // Ends the account at `end` (the unprepare call's start); unknown uids are ignored.
  void Stop(const std::string& uid, Clock::SteadyTime end) EXCLUDES(mu_);
  // One telemetry sample, taken now. Readings are joined to devices by PCI address.
  void OnReadings(const std::vector<EnergyReading>& readings) EXCLUDES(mu_);
  // The device `device` of pool `pool` is unhealthy (true) or not; a change to unhealthy counts a
  // health event on every held claim with that device.
  void OnHealth(const std::string& pool, const std::string& device, bool unhealthy) EXCLUDES(mu_);
  // An XID event on `device` (the XID watcher's), counted where the telemetry counts none.
  void OnXid(const std::string& device) EXCLUDES(mu_);

  // Whether any claim is held (the telemetry loop samples at 1 Hz at least while one is).
  bool Holding() const EXCLUDES(mu_);
  // The accounts whose status write is due now (EnergyStatusDue).
  std::vector<ClaimEnergy> Due() EXCLUDES(mu_);
  // Records a write of the claim's account (as Due returned it).
  void Written(const ClaimEnergy& account, EnergyWriteOutcome outcome) EXCLUDES(mu_);
  // Every account kept (held, and unprepared ones for keep_after_final), for the metrics; drops
  // the expired ones.
  std::vector<ClaimEnergy> Accounts() EXCLUDES(mu_);

 private:
  struct DeviceAccount {
    EnergyDevice device;
    std::optional<double> watts = {};  // the power holding since `at`
    Clock::SteadyTime at{};            // prepare, or the last reading
    double joules = 0;                 // power x time up to `at`
    double peak = 0;
    int64_t samples = 0;
    // The energy counter: its first and last reading while held, and the power x time integral
    // at each (the head before the first and the tail after the last are power x time).
    std::optional<double> counter_first = {};
    std::optional<double> counter_last = {};
    double joules_at_first = 0;
    double joules_at_last = 0;
    bool counter_usable = true;           // false once a reading lacked it or it went backwards
    std::optional<double> xid_base = {};  // the telemetry's XID count at prepare
    double xid_counted = 0;
    int64_t xid_events = 0;  // the XID watcher's
    int64_t health_events = 0;
  };
  struct Account {
    EnergyClaim claim;
    std::string since;
    std::vector<DeviceAccount> devices;
    EnergyWriteState write;
  };
  ClaimEnergy SnapshotLocked(const Account& account, Clock::SteadyTime now) const REQUIRES(mu_);

  Clock& clock_;
  const EnergyStatusOptions options_;
  mutable Mutex mu_;
  std::map<std::string, Account> accounts_ GUARDED_BY(mu_);  // by claim uid
  // The last reading of each PCI address, for a claim prepared between two samples.
  std::map<std::string, EnergyReading> last_ GUARDED_BY(mu_);
  std::map<std::string, bool> unhealthy_ GUARDED_BY(mu_);  // "pool/device"
};

// The seam between the kubelet's calls and the ledger: a NodeService that starts a claim's account
// when its prepare succeeded and ends it (at the call's start) when its unprepare did. Claims
// already kept (a repeated prepare) keep their account.
class EnergyAccountingService : public NodeServiceDecorator {
 public:
  // The PCI address of a device of this node ("" when unknown).
  using PciFn = std::function<std::string(const std::string& pool, const std::string& device)>;
  // `inner`, `ledger` and `clock` outlive it.
  EnergyAccountingService(NodeService* inner, ClaimEnergyLedger* ledger, const Clock& clock,
                          PciFn pci)
      : NodeServiceDecorator(inner), clock_(clock), ledger_(ledger), pci_(std::move(pci)) {}

  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims,
                                               const CallBounds& bounds) override;
  std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims,
                                                   const CallBounds& bounds) override;

 private:
  const Clock& clock_;
  ClaimEnergyLedger* const ledger_;
  const PciFn pci_;
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_CLAIM_ENERGY_H_
