#include "kubeletplugin/plugin/claim_energy.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "base/time.h"

namespace xpu::plugin {
namespace {
namespace claim_energy_cc {

std::string PciKeyOf(std::string pci) {
  std::transform(pci.begin(), pci.end(), pci.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return pci;
}

double SecondsBetween(Clock::SteadyTime from, Clock::SteadyTime to) {
  return to <= from ? 0 : std::chrono::duration<double>(to - from).count();
}

}  // namespace claim_energy_cc
using namespace claim_energy_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

nlohmann::json EnergyData(const DeviceEnergy& e) {
  return {{"energy",
           {{"joules", e.joules},
            {"averageWatts", e.average_watts},
            {"peakWatts", e.peak_watts},
            {"secondsHeld", e.seconds_held},
            {"source", e.source},
            {"samples", e.samples},
            {"healthEvents", e.health_events},
            {"xids", e.xids},
            {"final", e.final},
            {"updatedAt", e.updated_at},
            {"since", e.since}}}};
}

bool EnergyStatusDue(const EnergyWriteState& s, Clock::SteadyTime now,
                     const EnergyStatusOptions& options) {
  if (options.period <= std::chrono::nanoseconds::zero() || s.stopped) return false;
  if (s.ended) {
    if (s.final_written || s.final_attempts >= options.final_attempts) return false;
    return s.final_attempts == 0 || !s.last_attempt || now - *s.last_attempt >= options.final_retry;
  }
  return now - s.last_attempt.value_or(s.started) >= options.period;
}

ClaimEnergyLedger::ClaimEnergyLedger(Clock& clock, EnergyStatusOptions options)
    : clock_(clock), options_(options) {}

void ClaimEnergyLedger::Start(const EnergyClaim& claim, const std::string& since) {
  MutexLock lock(mu_);
  // Held: a repeated prepare. Ended: prepared again for a later pod, a new account.
  if (auto it = accounts_.find(claim.ref.uid); it != accounts_.end()) {
    if (!it->second.write.ended) return;
    accounts_.erase(it);
  }
  const Clock::SteadyTime now = clock_.Now();
  Account a{.claim = claim, .since = since, .devices = {}, .write = {.started = now}};
  for (const EnergyDevice& d : claim.devices) {
    DeviceAccount da{.device = d, .at = now};
    if (auto it = last_.find(PciKeyOf(d.pci_address)); it != last_.end()) {
      da.watts = it->second.watts;
      da.peak = it->second.watts.value_or(0);
      da.xid_base = it->second.xid_total;
    }
    a.devices.push_back(std::move(da));
  }
  accounts_.emplace(claim.ref.uid, std::move(a));
}

void ClaimEnergyLedger::Stop(const std::string& uid, Clock::SteadyTime end) {
  MutexLock lock(mu_);
  auto it = accounts_.find(uid);
  if (it == accounts_.end() || it->second.write.ended) return;
  it->second.write.ended = std::max(end, it->second.write.started);
}

void ClaimEnergyLedger::OnReadings(const std::vector<EnergyReading>& readings) {
  MutexLock lock(mu_);
  const Clock::SteadyTime now = clock_.Now();
  std::map<std::string, const EnergyReading*> by_pci;
  for (const EnergyReading& r : readings) {
    const std::string key = PciKeyOf(r.pci_address);
    by_pci[key] = &r;
    last_[key] = r;
  }
  for (auto& [uid, a] : accounts_) {
    if (a.write.ended) continue;
    for (DeviceAccount& d : a.devices) {
      auto it = by_pci.find(PciKeyOf(d.device.pci_address));
      if (it == by_pci.end() || d.device.pci_address.empty()) continue;
      const EnergyReading& r = *it->second;
      if (r.watts) {
        // The power that held since the last reading; the first reading's when none did.
        d.joules += d.watts.value_or(*r.watts) * SecondsBetween(d.at, now);
        d.watts = r.watts;
        d.at = std::max(d.at, now);
        d.peak = std::max(d.peak, *r.watts);
        ++d.samples;
      }
      if (!r.energy_joules || (d.counter_last && *r.energy_joules < *d.counter_last)) {
        d.counter_usable = false;
      } else if (d.counter_usable) {
        if (!d.counter_first) {
          d.counter_first = r.energy_joules;
          d.joules_at_first = d.joules;
        }
        d.counter_last = r.energy_joules;
        d.joules_at_last = d.joules;
      }
      if (r.xid_total) {
        if (!d.xid_base) d.xid_base = r.xid_total;
        d.xid_counted = std::max(0.0, *r.xid_total - *d.xid_base);
      }
    }
  }
}

void ClaimEnergyLedger::OnHealth(const std::string& pool, const std::string& device,
                                 bool unhealthy) {
  MutexLock lock(mu_);
  bool& was = unhealthy_[pool + "/" + device];
  const bool became = unhealthy && !was;
  was = unhealthy;
  if (!became) return;
  for (auto& [uid, a] : accounts_) {
    if (a.write.ended) continue;
    for (DeviceAccount& d : a.devices) {
      if (d.device.pool == pool && d.device.device == device) ++d.health_events;
    }
  }
}

void ClaimEnergyLedger::OnXid(const std::string& device) {
  MutexLock lock(mu_);
  for (auto& [uid, a] : accounts_) {
    if (a.write.ended) continue;
    for (DeviceAccount& d : a.devices) {
      if (d.device.device == device) ++d.xid_events;
    }
  }
}

bool ClaimEnergyLedger::Holding() const {
  MutexLock lock(mu_);
  return std::any_of(accounts_.begin(), accounts_.end(),
                     [](const auto& entry) { return !entry.second.write.ended; });
}

ClaimEnergy ClaimEnergyLedger::SnapshotLocked(const Account& a, Clock::SteadyTime now) const {
  const Clock::SteadyTime end = a.write.ended.value_or(now);
  ClaimEnergy out{.uid = a.claim.ref.uid,
                  .ns = a.claim.ref.ns,
                  .name = a.claim.ref.name,
                  .final = a.write.ended.has_value(),
                  .devices = {}};
  const std::string updated = FormatTime(clock_.WallNow());
  for (const DeviceAccount& d : a.devices) {
    DeviceEnergy e{.pool = d.device.pool, .device = d.device.device, .share_id = d.device.share_id};
    const double tail = d.watts.value_or(0) * SecondsBetween(d.at, end);
    e.joules = d.joules + tail;
    if (d.counter_usable && d.counter_first && d.counter_last &&
        *d.counter_last > *d.counter_first) {
      // The counter between its first and last reading; power x time before and after.
      e.joules = d.joules_at_first + (*d.counter_last - *d.counter_first) +
                 (d.joules - d.joules_at_last) + tail;
      e.source = "nvml-energy-counter";
    }
    e.seconds_held = SecondsBetween(a.write.started, end);
    e.average_watts = e.seconds_held > 0 ? e.joules / e.seconds_held : 0;
    // A counter's average may pass the largest power read between two readings.
    e.peak_watts = std::max(d.peak, e.average_watts);
    e.samples = d.samples;
    e.health_events = d.health_events;
    e.xids = std::max(static_cast<int64_t>(d.xid_counted), d.xid_events);
    e.final = out.final;
    e.updated_at = updated;
    e.since = a.since;
    out.devices.push_back(std::move(e));
  }
  return out;
}

std::vector<ClaimEnergy> ClaimEnergyLedger::Due() {
  MutexLock lock(mu_);
  const Clock::SteadyTime now = clock_.Now();
  std::vector<ClaimEnergy> out;
  for (const auto& [uid, a] : accounts_) {
    if (EnergyStatusDue(a.write, now, options_)) out.push_back(SnapshotLocked(a, now));
  }
  return out;
}

void ClaimEnergyLedger::Written(const ClaimEnergy& account, EnergyWriteOutcome outcome) {
  MutexLock lock(mu_);
  auto it = accounts_.find(account.uid);
  if (it == accounts_.end()) return;
  EnergyWriteState& w = it->second.write;
  const Clock::SteadyTime now = clock_.Now();
  w.last_attempt = now;
  if (account.final) ++w.final_attempts;
  switch (outcome) {
    case EnergyWriteOutcome::kWritten:
      w.last_written = now;
      w.final_written = w.final_written || account.final;
      break;
    case EnergyWriteOutcome::kRetry:
      break;
    case EnergyWriteOutcome::kGiveUp:
      w.stopped = true;
      break;
  }
}

std::vector<ClaimEnergy> ClaimEnergyLedger::Accounts() {
  MutexLock lock(mu_);
  const Clock::SteadyTime now = clock_.Now();
  std::erase_if(accounts_, [&](const auto& entry) {
    const EnergyWriteState& w = entry.second.write;
    return w.ended && now - *w.ended >= options_.keep_after_final &&
           !EnergyStatusDue(w, now, options_) &&
           (w.final_written || w.stopped || w.final_attempts >= options_.final_attempts ||
            options_.period <= std::chrono::nanoseconds::zero());
  });
  std::vector<ClaimEnergy> out;
  out.reserve(accounts_.size());
  for (const auto& [uid, a] : accounts_) out.push_back(SnapshotLocked(a, now));
  return out;
}

std::map<std::string, PrepareResult> EnergyAccountingService::Prepare(
    const std::vector<ClaimRef>& claims, const CallBounds& bounds) {
  std::map<std::string, PrepareResult> out = inner().Prepare(claims, bounds);
  for (const ClaimRef& ref : claims) {
    auto it = out.find(ref.uid);
    if (it == out.end() || !it->second.error.empty()) continue;
    EnergyClaim claim{.ref = ref, .devices = {}};
    for (const PreparedDevice& d : it->second.devices) {
      claim.devices.push_back({.pool = d.pool,
                               .device = d.device,
                               .pci_address = pci_(d.pool, d.device),
                               .share_id = d.share_id});
    }
    ledger_->Start(claim);
  }
  return out;
}

std::map<std::string, UnprepareResult> EnergyAccountingService::Unprepare(
    const std::vector<ClaimRef>& claims, const CallBounds& bounds) {
  const Clock::SteadyTime start = clock_.Now();
  std::map<std::string, UnprepareResult> out = inner().Unprepare(claims, bounds);
  for (const auto& [uid, r] : out) {
    if (r.error.empty()) ledger_->Stop(uid, start);
  }
  return out;
}

}  // namespace xpu::plugin
