#include "api/testing/claim_json.h"

namespace xpu::api::testing {

nlohmann::json ClaimJson(const std::string& name, const std::string& request,
                         const std::string& device_class, int count, const std::string& ns) {
  const nlohmann::json exactly = {{"deviceClassName", device_class}, {"count", count}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"devices",
             {{"requests", nlohmann::json::array({{{"name", request}, {"exactly", exactly}}})}}}}}};
}

}  // namespace xpu::api::testing
