// Realistic API objects for the API benchmarks: ResourceSlices and NodeInventories shaped like the
// ones the driver publishes (8 devices per node, the docs/architecture.md attribute vocabulary).
#ifndef XPU_BENCH_API_OBJECTS_H_
#define XPU_BENCH_API_OBJECTS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace xpu::bench {

// A resource.k8s.io/v1 ResourceSlice for `node` with `devices` Ascend 910B-like devices.
nlohmann::json ExampleSlice(const std::string& node, int devices);
// A NodeInventory JSON for `node` with 8 devices, their links, groups and NICs.
nlohmann::json ExampleInventory(const std::string& node);

}  // namespace xpu::bench

#endif  // XPU_BENCH_API_OBJECTS_H_
