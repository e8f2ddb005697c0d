// The controller's config file (controller/config.h), YAML or JSON from a mounted ConfigMap:
// parse, judge a few devices against its support matrix and build its DeviceClasses.
//
// Invariants: a parsed config passes ValidateConfig, and every DeviceClass it asks for passes the
// API server's validation (api/resource_validation.h), so a config the controller accepts never
// makes it write objects the server refuses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "api/resource_validation.h"
#include "controller/config.h"
#include "controller/device_classes.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace api = ::xpu::api;

api::InventoryDevice Device(const char* vendor, const char* family, const char* model,
                            const char* driver, const char* firmware) {
  api::InventoryDevice d;
  d.name = std::string(vendor) + "-0";
  d.vendor = vendor;
  d.model = model;
  d.attributes["family"].string_value = family;
  d.attributes["driverVersion"].version = driver;
  d.attributes["firmwareVersion"].version = firmware;
  d.attributes["toolkitVersion"].version = "12.8.0";
  return d;
}

const std::vector<api::InventoryDevice>& Devices() {
  static const auto* devices = new std::vector<api::InventoryDevice>{
      Device("nvidia", "hopper", "H200", "570.158.1", "96.0.9"),
      Device("huawei", "ascend910b", "Ascend910B3", "24.1.0-rc2", "7.5.0"),
      Device("hygon", "dcu", "K100", "6.3.8-v1.5.2", "1.0.0"),
  };
  return *devices;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xpu::StatusOr<xpu::controller::Config> config =
      xpu::controller::ParseConfig(xpu::fuzz::AsText(data, size));
  if (!config.ok()) return 0;
  const xpu::Status valid = xpu::controller::ValidateConfig(*config);
  FUZZ_CHECK(valid.ok(), valid.ToString());
  for (const api::InventoryDevice& device : Devices()) {
    const xpu::controller::SupportVerdict verdict = xpu::controller::CheckSupport(*config, device);
    FUZZ_CHECK(verdict.supported == verdict.reason.empty(), verdict.reason);
  }
  for (const auto& device_class : xpu::controller::DesiredDeviceClasses(*config, "xpu.dra.dev")) {
    const xpu::Status status = api::ValidateDeviceClass(device_class, api::KubeVersion::k1_35);
    FUZZ_CHECK(status.ok(), status.ToString() + "\n" + xpu::fuzz::Dump(ToJson(device_class)));
  }
  return 0;
}
