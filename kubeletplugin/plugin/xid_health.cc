#include "kubeletplugin/plugin/xid_health.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "base/time.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::plugin {
namespace {

// "60s", "250ms".
std::string DurationText(std::chrono::nanoseconds d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

// The kubelet's health stream splits a False condition's message on ';' to find each device's
// part (HealthMonitor::Update): none may appear inside one.
std::string WithoutSemicolons(std::string text) {
  std::replace(text.begin(), text.end(), ';', ',');
  return text;
}

std::string FaultMessage(const std::string& device, const XidFault& f,
                         std::chrono::nanoseconds settle) {
  std::string out = device + ": XID " + std::to_string(f.xid);
  if (std::string_view what = discovery::XidDescription(f.xid); !what.empty()) {
    out += " (" + std::string(what) + ")";
  }
  out += " at " + FormatTime(f.at);
  if (f.recovered) return out + ", recovered at " + FormatTime(f.recovered_at);
  out += ", unhealthy until NVML answers and no fatal XID for " + DurationText(settle);
  if (!f.check_error.empty()) out += ", NVML: " + WithoutSemicolons(f.check_error);
  return out;
}

}  // namespace

XidHealth::XidHealth(const Clock& clock, std::chrono::nanoseconds settle)
    : clock_(clock), settle_(settle) {}

bool XidHealth::OnXid(const std::string& device, uint64_t xid) {
  MutexLock lock(mu_);
  auto [it, added] = faults_.try_emplace(device);
  XidFault& f = it->second;
  const bool new_episode = added || f.recovered;
  const bool changed = new_episode || f.xid != xid;
  if (new_episode) f = XidFault{.at = clock_.WallNow()};
  f.xid = xid;
  f.quiet_since = clock_.Now();
  return changed;
}

XidHealth::Checked XidHealth::OnCheck(const std::string& device, const Status& usable) {
  MutexLock lock(mu_);
  auto it = faults_.find(device);
  if (it == faults_.end() || it->second.recovered) return Checked::kUnchanged;
  XidFault& f = it->second;
  const std::string error = usable.ok() ? "" : usable.message();
  const Checked changed = f.check_error != error ? Checked::kChanged : Checked::kUnchanged;
  f.check_error = error;
  if (!usable.ok()) {
    // Still broken: the device must answer for a whole settle period from now on.
    f.quiet_since = clock_.Now();
    return changed;
  }
  if (clock_.Now() - f.quiet_since < settle_) return changed;
  f.recovered = true;
  f.recovered_at = clock_.WallNow();
  return Checked::kRecovered;
}

std::vector<std::string> XidHealth::Faulted() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [device, f] : faults_) {
    if (!f.recovered) out.push_back(device);
  }
  return out;
}

std::map<std::string, XidFault> XidHealth::Faults() const {
  MutexLock lock(mu_);
  return faults_;
}

void ApplyXidFaults(const std::map<std::string, XidFault>& faults, std::chrono::nanoseconds settle,
                    const std::string& now, api::NodeInventory* inventory) {
  api::NodeInventoryStatus& status = inventory->status;
  std::string message;
  bool waiting = false;
  for (api::InventoryDevice& d : status.devices) {
    auto it = faults.find(d.name);
    if (it == faults.end()) continue;
    const XidFault& f = it->second;
    if (!f.recovered) {
      waiting = true;
      d.health = "Unhealthy";
      d.sources["health"] = "nvml";
    }
    message += (message.empty() ? "" : "; ") + FaultMessage(d.name, f, settle);
  }
  if (message.empty()) return;
  // Messages are capped as discovery caps its own (MakeCondition).
  if (message.size() > 1024) message = message.substr(0, 1021) + "...";
  std::erase_if(status.conditions, [](const api::Condition& c) { return c.type == "XidErrors"; });
  api::Condition c;
  c.type = "XidErrors";
  c.status = waiting ? "False" : "True";
  c.reason = waiting ? "FatalXid" : "Recovered";
  c.message = std::move(message);
  c.last_transition_time = now;
  status.conditions.push_back(std::move(c));
  discovery::SetNodeHealth(status);
}

}  // namespace xpu::plugin
