// The driver name of the controller tests, and slices for the pool sync tests: node `node`'s
// GPUs gpu-<first> .. gpu-<first+count-1> with index and model attributes, driver xpu.dra.dev,
// pool and nodeName set (as BuildPool leaves them).
#ifndef XPU_CONTROLLER_TESTING_SLICE_EXAMPLES_H_
#define XPU_CONTROLLER_TESTING_SLICE_EXAMPLES_H_

#include <string>

#include "api/resource.h"

namespace xpu::controller::testing {

// The driver name the controller tests publish under.
inline const std::string kDriver = "xpu.dra.dev";

inline api::resource::ResourceSliceSpec GpuSlice(const std::string& node, int first, int count,
                                                 const std::string& model = "H200") {
  api::resource::ResourceSliceSpec spec;
  spec.driver = kDriver;
  spec.pool.name = node;
  spec.node_name = node;
  for (int i = first; i < first + count; ++i) {
    api::resource::Device d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes["index"].int_value = i;
    d.attributes["model"].string_value = model;
    spec.devices.push_back(d);
  }
  return spec;
}

}  // namespace xpu::controller::testing

#endif  // XPU_CONTROLLER_TESTING_SLICE_EXAMPLES_H_
