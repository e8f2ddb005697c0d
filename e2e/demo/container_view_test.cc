#include "e2e/demo/container_view.h"

#include <catch2/catch.hpp>

namespace xpu::demo {
namespace {

const nlohmann::json kContainers = nlohmann::json::parse(R"({
  "runtime": "containerd v2.4.2, runc 1.5.3, kubelet v1.37.2",
  "pods": [
    {"pod": "default/train-gpu", "node": "h200", "allocated": ["gpu-0", "gpu-1"],
     "seen": {"deviceNodes": [{"path": "/dev/nvidia0"}, {"path": "/dev/nvidia1"}],
              "libraries": [{"soname": "libnvidia-ml.so.1", "loaded": true, "deviceCount": 2},
                            {"soname": "libdcmi.so", "loaded": false}],
              "mounts": [{"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.570.158.01"},
                         {"path": "/usr/bin/nvidia-smi"}, {"path": "/fake-vendor"}],
              "ldCache": true}},
    {"pod": "default/lost", "node": "a2", "allocated": ["npu-0"], "seen": null}]})");

TEST_CASE("real containers: each pod's view, as HTML and as terminal lines") {
  const std::string html = ContainersHtml(kContainers);
  CHECK(html.find("<h2>Real containers</h2>") != std::string::npos);
  CHECK(html.find("containerd v2.4.2, runc 1.5.3") != std::string::npos);
  CHECK(html.find("<td>/dev/nvidia0, /dev/nvidia1</td>") != std::string::npos);
  CHECK(html.find("libnvidia-ml.so.1: 2 devices") != std::string::npos);
  CHECK(html.find("<td>2, loader cache written</td>") != std::string::npos);  // not /fake-vendor
  CHECK(html.find("no report from the container") != std::string::npos);
  const std::string lines = ContainersSummary(kContainers);
  CHECK(lines.find("default/train-gpu on h200: allocated gpu-0, gpu-1; saw /dev/nvidia0, "
                   "/dev/nvidia1; libnvidia-ml.so.1: 2 devices") != std::string::npos);
  CHECK(ContainersHtml(nullptr).find("did not run here") != std::string::npos);
  CHECK(ContainersHtml(nlohmann::json::array()).find("did not run here") != std::string::npos);
}

}  // namespace
}  // namespace xpu::demo
