#include "kubeletplugin/driver/health_monitor.h"

#include <sstream>
#include <utility>

namespace xpu::plugin {

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
