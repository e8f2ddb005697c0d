#include "e2e/client/claims.h"

namespace xpu::e2e {

using nlohmann::json;
namespace kc = api::client;

StatusOr<std::string> CreateClaim(kc::Client& client, const ClaimSpec& spec) {
  const json request = {
      {"name", spec.request},
      {"exactly", {{"deviceClassName", "xpu.dra.dev"}, {"count", spec.devices.size()}}}};
  const json claim = {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", {{"name", spec.name}, {"namespace", spec.ns}}},
                      {"spec", {{"devices", {{"requests", json::array({request})}}}}}};
  ASSIGN_OR_RETURN(json created, client.Create(kc::ResourceClaims(), spec.ns, claim));
  std::string uid = created["metadata"]["uid"].get<std::string>();
  if (!spec.allocate) return uid;
  json results = json::array();
  for (const std::string& d : spec.devices) {
    json r = {
        {"request", spec.request}, {"driver", spec.driver}, {"pool", spec.pool}, {"device", d}};
    if (spec.shared) r["shareID"] = uid;
    results.push_back(std::move(r));
  }
  created["status"] = {{"allocation", {{"devices", {{"results", std::move(results)}}}}}};
  if (!spec.config.empty()) created["status"]["allocation"]["devices"]["config"] = spec.config;
  RETURN_IF_ERROR(client.UpdateStatus(kc::ResourceClaims(), spec.ns, created).status());
  return uid;
}

}  // namespace xpu::e2e
