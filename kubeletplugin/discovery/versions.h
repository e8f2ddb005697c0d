// Vendor version strings normalised to semantic versions 2.0.0, the raw string kept beside, and
// the version files each vendor's driver and toolkit leave on the host.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_VERSIONS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_VERSIONS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "kubeletplugin/discovery/host_root.h"

namespace xpu::discovery {

// "24.1.rc2" -> "24.1.0-rc2", "8.0.RC3" -> "8.0.0-rc3", "7.5.0.1.220" -> "7.5.0" (components
// after the third are dropped), "580.159.04" -> "580.159.4", "6.3.8-V1.5.2" -> "6.3.8-v1.5.2",
// "neuware 3.15.3" -> "3.15.3" (the last word that starts with a digit). Empty when no version
// can be read from `raw`, or when the result is not a valid version attribute (api/validation.h:
// longer than 64 bytes, a number of more than 18 digits).
std::string NormalizeSemver(std::string_view raw);

// Reads the version files of `vendor` ("nvidia", "huawei", ...: docs/reference/hardware.md §1.5 for
// Ascend, the others as scripts/gen-host-fixtures lays them out) under the host root into
// status.versions (raw and normalised; the first file of a component wins, an empty or
// over-128-byte version is left out; Ascend's CANN toolkit from
// ascend-toolkit/latest/<arch>/ascend_toolkit_install.info). Returns the raw version of each role
// the files feed ("driver", "firmware", "toolkit"). Files that exist but cannot be read are
// appended to `problems`.
std::map<std::string, std::string> ReadVersions(const HostRoot& host, std::string_view vendor,
                                                api::NodeInventoryStatus& status,
                                                std::vector<std::string>& problems);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_VERSIONS_H_
