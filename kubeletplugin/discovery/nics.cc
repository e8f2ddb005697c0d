#include "kubeletplugin/discovery/nics.h"

#include <algorithm>
#include <map>
#include <set>

namespace xpu::discovery {
namespace {

constexpr uint16_t kMellanox = 0x15b3;
constexpr uint16_t kHuawei = 0x19e5;
constexpr uint16_t kHi1822 = 0x1822;  // assumed, as scripts/gen-host-fixtures

// 3: same PCIe switch (a common bridge below the root port), 2: same root complex, 1: same NUMA
// node, 0: none.
int Closeness(const std::vector<std::string>& a_path, std::optional<int64_t> a_numa,
              const std::vector<std::string>& b_path, std::optional<int64_t> b_numa) {
  size_t common = 0;
  while (common < a_path.size() && common < b_path.size() && a_path[common] == b_path[common]) {
    ++common;
  }
  if (common >= 3 && a_path.size() > 3 && b_path.size() > 3) return 3;
  if (common >= 1) return 2;
  if (a_numa && b_numa && *a_numa == *b_numa) return 1;
  return 0;
}

}  // namespace

std::vector<api::InventoryNic> ScanNics(const HostRoot& host, const PciScan& pci,
                                        std::vector<std::string>& problems) {
  std::map<std::string, const PciFunction*> by_path;
  for (const PciFunction& f : pci.functions) by_path[f.sysfs_path] = &f;
  std::vector<api::InventoryNic> nics;
  StatusOr<std::vector<std::string>> names = host.List("sys/class/net");
  if (!names.ok()) {
    problems.push_back(names.status().message());
    return nics;
  }
  for (const std::string& name : *names) {
    const std::string base = "sys/class/net/" + name;
    StatusOr<std::string> device = host.Resolve(base + "/device");
    if (!device.ok()) {
      if (device.status().code() != StatusCode::kNotFound) {
        problems.push_back(device.status().message());
      }
      continue;  // virtual interface
    }
    auto it = by_path.find(*device);
    if (it == by_path.end()) continue;
    const PciFunction& f = *it->second;
    api::InventoryNic nic;
    nic.name = name;
    if ((f.pci_class >> 8) == 0x0207) {
      nic.type = "infiniband";
    } else if ((f.pci_class >> 8) == 0x0200) {
      const bool rdma = f.vendor == kMellanox || (f.vendor == kHuawei && f.device == kHi1822) ||
                        host.Exists(f.sysfs_path + "/infiniband");
      nic.type = rdma ? "roce" : "ethernet";
    } else {
      continue;
    }
    nic.pci_address = f.bdf;
    nic.pcie_root = f.pcie_root;
    if (f.numa_node) nic.numa_node = *f.numa_node;
    nics.push_back(std::move(nic));
  }
  std::sort(nics.begin(), nics.end(), [](const api::InventoryNic& a, const api::InventoryNic& b) {
    return a.pci_address < b.pci_address;
  });
  return nics;
}

void PairNics(std::vector<api::InventoryNic>& nics,
              const std::vector<api::InventoryDevice>& devices, const PciScan& pci) {
  std::map<std::string, const PciFunction*> by_bdf;
  for (const PciFunction& f : pci.functions) by_bdf[f.bdf] = &f;
  std::set<std::string> paired;
  for (api::InventoryNic& nic : nics) {
    auto it = by_bdf.find(nic.pci_address);
    if (it == by_bdf.end()) continue;
    const std::vector<std::string>& path = it->second->pcie_path;
    // Best (closeness, unpaired) first; ties by device index order.
    const api::InventoryDevice* best = nullptr;
    int best_rank = 0;
    for (const api::InventoryDevice& d : devices) {
      const int close = Closeness(path, nic.numa_node, d.pcie_path, d.numa_node);
      if (close == 0) continue;
      const int rank = close * 2 + (paired.contains(d.name) ? 0 : 1);
      if (rank > best_rank) {
        best = &d;
        best_rank = rank;
      }
    }
    if (best != nullptr) {
      nic.paired_device = best->name;
      paired.insert(best->name);
    }
  }
}

}  // namespace xpu::discovery
