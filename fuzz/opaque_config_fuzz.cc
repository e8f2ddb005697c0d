// The driver's opaque device configuration (kubeletplugin/driver/config.h), which claim authors
// and class owners write. The input is either the `parameters` object alone or a ResourceClaim
// whose status.allocation carries config entries for the driver's requests, resolved the way
// Prepare resolves them.
//
// Invariants: every variable of a parsed config has a valid name outside the driver's XPU_DRA_
// prefix, and the resolved map has an entry for each of the driver's requests (Prepare looks each
// up with at()).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/resource.h"
#include "fuzz/fuzz_util.h"
#include "kubeletplugin/driver/config.h"

namespace {

constexpr const char* kDriver = "xpu.dra.dev";

void CheckEnv(const xpu::plugin::DeviceConfig& config) {
  for (const auto& [name, value] : config.env) {
    FUZZ_CHECK(!name.empty() && !name.starts_with("XPU_DRA_"), name);
    FUZZ_CHECK(name.find('=') == std::string::npos, name);
  }
}

void ExerciseClaim(const nlohmann::json& doc) {
  xpu::StatusOr<xpu::api::resource::ResourceClaim> claim =
      xpu::api::FromJson<xpu::api::resource::ResourceClaim>(doc);
  if (!claim.ok() || !claim->status.allocation) return;
  const auto& devices = claim->status.allocation->devices;
  std::vector<std::string> requests;
  for (const auto& result : devices.results) {
    if (result.driver == kDriver) requests.push_back(result.request);
  }
  auto config = xpu::plugin::ConfigByRequest(devices.config, kDriver, requests);
  if (!config.ok()) return;
  FUZZ_CHECK(config->contains(""));
  for (const std::string& request : requests) {
    FUZZ_CHECK(config->contains(xpu::plugin::BaseRequestName(request)), request);
  }
  for (const auto& [request, device_config] : *config) CheckEnv(device_config);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<nlohmann::json> doc = xpu::fuzz::ParseJson(xpu::fuzz::AsText(data, size));
  if (!doc) return 0;
  if (xpu::fuzz::StringMember(*doc, "kind") == "ResourceClaim") {
    ExerciseClaim(*doc);
    return 0;
  }
  xpu::StatusOr<xpu::plugin::DeviceConfig> config =
      xpu::plugin::ParseDeviceConfig(*doc, "parameters");
  if (config.ok()) CheckEnv(*config);
  return 0;
}
