#include "controller/runtime_class.h"

namespace xpu::controller {

std::string_view VendorRuntimeClass(std::string_view vendor) {
  if (vendor == "nvidia") return "nvidia";
  if (vendor == "huawei") return "ascend";
  return vendor;
}

std::string RuntimeClassNote(std::string_view vendor) {
  return std::string(vendor) +
         ": driver files are off (--cdi-driver-files), so the vendor's container runtime must "
         "provide its user-space driver: pods on " +
         std::string(vendor) +
         " devices need runtimeClassName: " + std::string(VendorRuntimeClass(vendor));
}

}  // namespace xpu::controller
