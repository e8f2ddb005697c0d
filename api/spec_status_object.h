// The envelope of a top-level Kubernetes object with a spec and a status: core/v1 Node and the
// project's custom resources (NodeInventory, AcceleratorGang). A kind defines only its spec and
// status types and names this template with them; its codec (api/internal/meta_codec.h,
// ReadObject and WriteObject) writes apiVersion, kind and metadata around the kind's own field
// list and keeps members this code does not know in `unknown` (null while nothing is unknown).
// Value type, thread-compatible.
#ifndef XPU_API_SPEC_STATUS_OBJECT_H_
#define XPU_API_SPEC_STATUS_OBJECT_H_

#include <nlohmann/json.hpp>

#include "api/meta.h"

namespace xpu::api {

template <typename Spec, typename Status>
struct SpecStatusObject {
  ObjectMeta metadata;
  Spec spec;
  Status status;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const SpecStatusObject&, const SpecStatusObject&) = default;
};

}  // namespace xpu::api

#endif  // XPU_API_SPEC_STATUS_OBJECT_H_
