// xpu-kubelet-call: one call of the kubelet's side of the plugin protocols, from the command
// line, for scripts that have no kubelet (scripts/device/gpu-e2e.sh): register a plugin, or
// prepare or unprepare claims over its DRA socket, as the kubelet does; the answer as JSON.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/kubelet/kubelet_stand_in.h"

namespace {

constexpr const char* kUsage =
    "usage: xpu-kubelet-call register REGISTRATION_SOCKET\n"
    "       xpu-kubelet-call prepare|unprepare DRA_SOCKET NAMESPACE/NAME/UID...\n"
    "Calls the plugin as the kubelet does (DRA v1) and prints the answer as JSON; exit 1 when the\n"
    "call fails or a claim's answer holds an error.\n";

int Fail(const std::string& message) {
  std::cerr << "xpu-kubelet-call: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2 || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() || args[0].starts_with("-") ? 0 : 2;
  }
  xpu::e2e::KubeletStandIn kubelet;
  if (args[0] == "register") {
    xpu::StatusOr<xpu::e2e::PluginInfo> info = kubelet.Register(args[1]);
    if (!info.ok()) return Fail(info.status().message());
    std::cout << nlohmann::json{{"name", info->name}, {"endpoint", info->endpoint}} << "\n";
    return 0;
  }
  std::vector<xpu::e2e::KubeletClaim> claims;
  for (size_t i = 2; i < args.size(); ++i) {
    const size_t a = args[i].find('/');
    const size_t b = args[i].find('/', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) {
      return Fail("\"" + args[i] + "\" is not NAMESPACE/NAME/UID");
    }
    claims.push_back(
        {args[i].substr(0, a), args[i].substr(a + 1, b - a - 1), args[i].substr(b + 1)});
  }
  nlohmann::json out = nlohmann::json::object();
  bool errors = false;
  if (args[0] == "prepare") {
    auto answer = kubelet.Prepare(args[1], "v1", claims);
    if (!answer.ok()) return Fail(answer.status().message());
    for (const auto& [uid, r] : *answer) {
      nlohmann::json devices = nlohmann::json::array();
      for (const auto& d : r.devices) {
        devices.push_back(
            {{"device", d.device_name}, {"pool", d.pool_name}, {"cdiDeviceIds", d.cdi_device_ids}});
      }
      out[uid] = {{"devices", devices}, {"error", r.error}};
      errors = errors || !r.error.empty();
    }
  } else if (args[0] == "unprepare") {
    auto answer = kubelet.Unprepare(args[1], "v1", claims);
    if (!answer.ok()) return Fail(answer.status().message());
    for (const auto& [uid, error] : *answer) {
      out[uid] = {{"error", error}};
      errors = errors || !error.empty();
    }
  } else {
    std::cerr << kUsage;
    return 2;
  }
  std::cout << out.dump() << "\n";
  return errors ? 1 : 0;
}
