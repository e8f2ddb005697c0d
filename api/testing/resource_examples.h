// One filled-in example of each resource.k8s.io/v1 object, using most fields, for the codec tests
// and for gen-resource-examples (checked against the upstream OpenAPI schema by
// scripts/check-openapi-examples).
#ifndef XPU_API_TESTING_RESOURCE_EXAMPLES_H_
#define XPU_API_TESTING_RESOURCE_EXAMPLES_H_

#include "api/resource.h"

namespace xpu::api::testing {

resource::ResourceSlice ExampleResourceSlice();
resource::DeviceClass ExampleDeviceClass();
resource::ResourceClaim ExampleResourceClaim();
resource::ResourceClaimTemplate ExampleResourceClaimTemplate();

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_RESOURCE_EXAMPLES_H_
