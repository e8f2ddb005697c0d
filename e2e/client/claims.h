// Allocated ResourceClaims for end-to-end tests and measurements: what the scheduler would have
// written, made directly (there is no scheduler in kube-sim).
#ifndef XPU_E2E_CLIENT_CLAIMS_H_
#define XPU_E2E_CLIENT_CLAIMS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "base/status.h"

namespace xpu::e2e {

struct ClaimSpec {
  std::string ns = "default";
  std::string name;
  std::string request = "npus";  // one request of deviceClassName xpu.dra.dev
  std::vector<std::string> devices;
  std::string driver = "xpu.dra.dev";
  std::string pool;                                 // the node's name
  bool allocate = true;                             // false: created without status
  bool shared = false;                              // each result gets shareID = the claim's uid
  nlohmann::json config = nlohmann::json::array();  // status.allocation.devices.config
};

// Creates the claim and, unless `allocate` is false, writes its allocation (one result per
// device, in order). Returns the claim's uid.
StatusOr<std::string> CreateClaim(api::client::Client& client, const ClaimSpec& spec);

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLIENT_CLAIMS_H_
