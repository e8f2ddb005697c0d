// Test support: configuration pieces more than one controller test builds.
#ifndef XPU_CONTROLLER_TESTING_CONFIG_EXAMPLES_H_
#define XPU_CONTROLLER_TESTING_CONFIG_EXAMPLES_H_

#include "controller/config.h"

namespace xpu::controller::testing {

// "training-large-memory": NVIDIA and Huawei, hopper and ascend910b, 64Gi and bf16, an image
// per vendor and the extended resource example.com/training-large-memory.
CapabilityClass TrainingLargeMemoryClass();

}  // namespace xpu::controller::testing

#endif  // XPU_CONTROLLER_TESTING_CONFIG_EXAMPLES_H_
