#include "kubeletplugin/discovery/golden.h"

#include <algorithm>

#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/host_root.h"

namespace xpu::discovery {

std::vector<std::string> FixtureHosts(const std::string& hosts_dir) {
  std::vector<std::string> out;
  const HostRoot dir(hosts_dir);
  StatusOr<std::vector<std::string>> names = dir.List("");
  if (!names.ok()) return out;
  for (const std::string& n : *names) {
    if (n != "README.md" && dir.List(n).ok() && !dir.ReadFile(n).ok()) out.push_back(n);
  }
  return out;
}

StatusOr<std::string> GoldenInventory(const std::string& host_root, const std::string& node_name) {
  DiscoveryOptions options;
  options.host_root = host_root;
  options.node_name = node_name;
  options.now = std::string(kGoldenTime);
  options.probe_vendor_libraries = false;
  ASSIGN_OR_RETURN(const api::NodeInventory inventory, Discover(options));
  return api::ToJson(inventory).dump(2) + "\n";
}

}  // namespace xpu::discovery
