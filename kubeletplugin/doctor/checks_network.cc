// The checklist's network checks (internal/checks.h): 9. collective communication, 10. NIC
// pairing.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kubeletplugin/doctor/internal/checks.h"

namespace xpu::doctor::internal {

using discovery::HostRoot;

namespace {
namespace checks_network_cc {

CheckResult CheckAscendNetwork(const HostRoot& host, const Facts& facts) {
  std::map<std::string, std::string> hccn;
  StatusOr<std::string> text = host.ReadFile("etc/hccn.conf");
  if (text.ok()) {
    for (std::string_view line : Lines(*text)) {
      if (auto kv = SplitAssignment(line)) hccn[std::string(kv->first)] = std::string(kv->second);
    }
  }
  std::vector<std::string> problems;
  int configured = 0;
  std::map<int64_t, const discovery::DcmiChip*> chips;
  const bool dcmi = facts.dcmi && facts.dcmi->library.loaded;
  if (dcmi) {
    for (const auto& c : facts.dcmi->chips) chips[c.phy_id] = &c;
  }
  int healthy = 0;
  for (const auto& d : facts.inventory.status.devices) {
    if (d.vendor != "huawei") continue;
    const std::string n = std::to_string(d.index);
    const auto address = hccn.find("address_" + n);
    if (address == hccn.end() || !hccn.contains("netmask_" + n)) {
      std::string missing = d.name;
      missing.append(": no address_").append(n).append("/netmask_").append(n);
      problems.push_back(std::move(missing));
    } else {
      ++configured;
    }
    const auto chip = chips.find(d.index);
    if (!dcmi || chip == chips.end()) continue;
    const discovery::DcmiChip& c = *chip->second;
    if (address != hccn.end() && !c.device_ip.empty() && c.device_ip != address->second) {
      problems.push_back(d.name + ": DCMI device IP " + c.device_ip + " != hccn.conf " +
                         address->second);
    }
    if (c.network_health == "ok") {
      ++healthy;
    } else if (!c.network_health.empty()) {
      problems.push_back(d.name + ": RoCE network " + c.network_health);
    }
  }
  std::string evidence =
      "/etc/hccn.conf: " + (text.ok() ? std::to_string(configured) + " devices addressed"
                                      : std::string(text.status().message()));
  evidence += dcmi ? "; DCMI network health ok on " + std::to_string(healthy)
                   : std::string("; DCMI not loaded: network health not read");
  if (!problems.empty()) {
    return Result("collective-network", CheckStatus::kFail, evidence + "; " + Join(problems, "; "),
                  "configure each NPU's RoCE port (hccn_tool -i N -ip -s address ... netmask ...) "
                  "and check its link (hccn_tool -i N -net_health -g)");
  }
  if (!dcmi) {
    return Result("collective-network", CheckStatus::kWarn, evidence,
                  "load DCMI (--vendor-lib-dir) to read the RoCE addresses and their health");
  }
  return Result("collective-network", CheckStatus::kPass, evidence);
}

bool IsRdma(const api::InventoryNic& nic) { return nic.type == "roce" || nic.type == "infiniband"; }

}  // namespace checks_network_cc
}  // namespace

// ---- 9. collective communication ----

CheckResult CheckCollectiveNetwork(const HostRoot& host, const Facts& facts) {
  if (facts.vendors.empty()) {
    return Result("collective-network", CheckStatus::kSkip, "no accelerator found");
  }
  if (facts.vendors.contains("huawei")) return checks_network_cc::CheckAscendNetwork(host, facts);
  const auto& nics = facts.inventory.status.nics;
  const auto rdma = std::count_if(nics.begin(), nics.end(), checks_network_cc::IsRdma);
  const std::string evidence = "/sys/class/net: " + std::to_string(nics.size()) + " NICs, " +
                               std::to_string(rdma) + " RoCE/InfiniBand";
  if (rdma == 0) {
    return Result("collective-network", CheckStatus::kWarn, evidence,
                  "no RDMA NIC: multi-node collectives (NCCL, RCCL, ...) fall back to TCP");
  }
  return Result("collective-network", CheckStatus::kPass, evidence);
}

// ---- 10. NIC pairing ----

CheckResult CheckNicPairing(const Facts& facts) {
  std::map<std::string, const api::InventoryDevice*> by_name;
  for (const auto& d : facts.inventory.status.devices) by_name[d.name] = &d;
  std::vector<std::string> pairs;
  std::vector<std::string> problems;
  int rdma = 0;
  for (const auto& nic : facts.inventory.status.nics) {
    if (!checks_network_cc::IsRdma(nic)) continue;
    ++rdma;
    const auto d = by_name.find(nic.paired_device);
    if (d == by_name.end()) {
      problems.push_back(nic.name + " serves no device");
    } else if (d->second->pcie_root != nic.pcie_root) {
      problems.push_back(nic.name + " (" + nic.pcie_root + ") and " + d->first + " (" +
                         d->second->pcie_root + ") on different PCIe roots");
    } else {
      pairs.push_back(nic.name + "-" + d->first);
    }
  }
  if (rdma == 0) {
    return Result("nic-pairing", CheckStatus::kSkip,
                  facts.inventory.status.devices.empty() ? "no accelerator found"
                                                         : "no RoCE/InfiniBand NIC to pair");
  }
  std::string evidence = std::to_string(pairs.size()) + " of " + std::to_string(rdma) +
                         " RDMA NICs on their device's PCIe root";
  if (!pairs.empty()) evidence += " (" + Join(pairs, ", ") + ")";
  if (!problems.empty()) {
    return Result("nic-pairing", CheckStatus::kWarn, evidence + "; " + Join(problems, "; "),
                  "GPUDirect RDMA across PCIe roots goes through the CPU: move the NIC next to "
                  "its device");
  }
  return Result("nic-pairing", CheckStatus::kPass, evidence);
}

}  // namespace xpu::doctor::internal
