// The golden-file form of a fixture host's inventory, shared by gen-discovery-goldens and
// discovery_test: discovery without vendor libraries, node name = the host's directory name,
// condition time fixed to kGoldenTime, JSON with indent 2 and a final newline.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_GOLDEN_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_GOLDEN_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::discovery {

inline constexpr std::string_view kGoldenTime = "2026-01-01T00:00:00Z";

// The directories under `hosts_dir`, sorted.
std::vector<std::string> FixtureHosts(const std::string& hosts_dir);

StatusOr<std::string> GoldenInventory(const std::string& host_root, const std::string& node_name);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_GOLDEN_H_
