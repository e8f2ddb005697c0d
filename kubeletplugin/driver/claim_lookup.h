// How a large prepare batch finds its claims: one paged LIST of a namespace instead of a GET per
// claim. A GET per claim waits for the client's rate limiter whether the claim exists or not, so
// 10,000 claims (at 50 requests/s) cannot be read within the kubelet's 45 s; a LIST of their
// namespace answers all of them in a few requests, and a name the complete list lacks does not
// exist (a quorum read, as a GET is). The driver (driver.h) lists a namespace with at least
// kListAtClaims claims to look up, and all namespaces at once for at least as many claims spread
// over smaller ones (never from the kubelet: a pod's claims share its namespace); it reads the
// rest one by one.
#ifndef XPU_KUBELETPLUGIN_DRIVER_CLAIM_LOOKUP_H_
#define XPU_KUBELETPLUGIN_DRIVER_CLAIM_LOOKUP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "api/client/objects.h"
#include "api/resource.h"
#include "base/status.h"
#include "kubeletplugin/driver/service.h"

namespace xpu::plugin {

// Pages of ResourceClaims: the seam (production: ApiClaimLister).
class ClaimLister {
 public:
  using Wanted = std::function<bool(const std::string& ns, const std::string& name)>;
  struct Page {
    std::vector<api::resource::ResourceClaim> claims;  // only those `wanted` accepted, decoded
    std::string continue_token;                        // empty on the last page
  };
  virtual ~ClaimLister() = default;
  // The page of namespace `ns` ("": all namespaces) after `continue_token` ("": the first). Only
  // items whose namespace and name `wanted` accepts are decoded and returned; one that does not
  // decode is left out (its own GET names the error). Thread-safe, like the client.
  virtual StatusOr<Page> List(const std::string& ns, const std::string& continue_token,
                              const Wanted& wanted) = 0;
};

// ClaimLister over the client: `limit` items a page. `client` must outlive it.
class ApiClaimLister final : public ClaimLister {
 public:
  explicit ApiClaimLister(api::client::Client* client, int64_t limit = 500)
      : client_(client), limit_(limit) {}
  StatusOr<Page> List(const std::string& ns, const std::string& continue_token,
                      const Wanted& wanted) override;

 private:
  api::client::Client* const client_;
  const int64_t limit_;
};

// A namespace with at least this many claims to look up in one call is listed, and so are all
// namespaces for at least this many claims left in smaller ones. Below it the GETs cost less than
// listing a namespace that may hold many other claims; the kubelet's batches (one pod's claims)
// stay below it.
inline constexpr size_t kListAtClaims = 64;

// Which LISTs a batch's lookups take. Pure.
struct ListPlan {
  std::vector<std::string> lists;  // namespaces to list in this order; "" lists all namespaces
  std::vector<int> list_of;        // per claim of the batch: its index in `lists`, or -1 (a GET)
};
ListPlan PlanLists(const std::vector<const ClaimRef*>& todo);

// What one LIST found.
struct ListedClaims {
  std::map<api::client::ObjectKey, api::resource::ResourceClaim> found;  // the wanted ones only
  // The list reached its end: a wanted claim it did not find does not exist.
  bool complete = false;
  // Why it stopped before its end: an API error, or the page limit (not set when `go_on`
  // stopped it: the caller knows its bounds).
  Status error;
  int pages = 0;
};

// Lists `ns` ("": all namespaces) page by page while `go_on()` is true before each page, keeping
// the claims in `wanted`. At most `max_pages` pages: a list that would cost more requests than
// the GETs it replaces is left unfinished (error set), and the caller reads the claims not found
// one by one.
ListedClaims ListClaims(ClaimLister& lister, const std::string& ns,
                        const std::set<api::client::ObjectKey>& wanted, int max_pages,
                        const std::function<bool()>& go_on);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_CLAIM_LOOKUP_H_
