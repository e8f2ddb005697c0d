// Vendor version strings normalised to semantic versions 2.0.0, the raw string kept beside.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_VERSIONS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_VERSIONS_H_

#include <string>
#include <string_view>

namespace xpu::discovery {

// "24.1.rc2" -> "24.1.0-rc2", "8.0.RC3" -> "8.0.0-rc3", "7.5.0.1.220" -> "7.5.0" (components
// after the third are dropped), "580.159.04" -> "580.159.4", "6.3.8-V1.5.2" -> "6.3.8-v1.5.2",
// "neuware 3.15.3" -> "3.15.3" (the last word that starts with a digit). Empty when no version
// can be read from `raw`, or when the result is not a valid version attribute (api/validation.h:
// longer than 64 bytes, a number above 2^64-1).
std::string NormalizeSemver(std::string_view raw);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_VERSIONS_H_
