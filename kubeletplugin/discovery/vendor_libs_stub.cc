// Stand-in for the dlopen probes (nvml.cc, dcmi.cc in xpu_discovery_vendor) until they are
// merged: no library is ever loaded, so discovery takes its sysfs + server-model path and
// reports the library as unavailable.
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

NvmlFacts ProbeNvml(const std::vector<std::string>& /*lib_dirs*/) {
  NvmlFacts facts;
  facts.library.name = "nvml";
  facts.library.error = "not built";
  return facts;
}

DcmiFacts ProbeDcmi(const std::vector<std::string>& /*lib_dirs*/) {
  DcmiFacts facts;
  facts.library.name = "dcmi";
  facts.library.error = "not built";
  return facts;
}

}  // namespace xpu::discovery
