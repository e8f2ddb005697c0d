#include "controller/testing/config_examples.h"

namespace xpu::controller::testing {

CapabilityClass TrainingLargeMemoryClass() {
  CapabilityClass large;
  large.name = "training-large-memory";
  large.vendors = {"nvidia", "huawei"};
  large.min_memory = "64Gi";
  large.precisions = {"bf16"};
  large.families = {"hopper", "ascend910b"};
  large.images = {{"nvidia", "nvcr.io/nvidia/pytorch:24.05-py3"},
                  {"huawei", "ascendhub.huawei.com/pytorch:8.0"}};
  large.extended_resource_name = "example.com/training-large-memory";
  return large;
}

}  // namespace xpu::controller::testing
