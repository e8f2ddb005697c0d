// The demo report's "Real containers" section: what each pod's container saw (e2e/demo/
// containers.sh runs them on nodes with containerd and runc and collects xpu-container-check's
// JSON). Pure.
#ifndef XPU_E2E_DEMO_CONTAINER_VIEW_H_
#define XPU_E2E_DEMO_CONTAINER_VIEW_H_

#include <nlohmann/json.hpp>
#include <string>

namespace xpu::demo {

// {"runtime": "containerd v2.4.2, runc 1.5.3, kubelet v1.37.2", "pods": [{"pod", "node",
// "allocated": ["gpu-0", ...], "seen": <xpu-container-check's JSON, or null>}]} as an HTML
// section: per pod, the devices allocated, the device nodes the container had, the vendor
// library it loaded by soname and the devices that reported, and the driver files mounted.
// A document of another shape gives a section that says so.
std::string ContainersHtml(const nlohmann::json& containers);

// One line per pod for the terminal: "default/train-gpu on h200: 4 allocated, saw /dev/nvidia0..3,
// NVML reports 4 GPUs, 17 driver files".
std::string ContainersSummary(const nlohmann::json& containers);

}  // namespace xpu::demo

#endif  // XPU_E2E_DEMO_CONTAINER_VIEW_H_
