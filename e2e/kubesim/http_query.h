// The parts of a request target kube-sim reads, decoded as Go's net/url does: the query
// parameters and the path segments. Pure; api_handler.cc routes on them.
#ifndef XPU_E2E_KUBESIM_HTTP_QUERY_H_
#define XPU_E2E_KUBESIM_HTTP_QUERY_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace xpu::kubesim {

// Percent-decoding as Go's url.ParseQuery does it ('+' is a space); bad escapes stay as sent.
std::string PercentDecode(std::string_view s);

// The parameters of a query ("a=1&b=x%20y", without the '?'), decoded; the last of a repeated
// key wins, a key without '=' has the value "", empty parts are skipped.
std::map<std::string, std::string> ParseQuery(std::string_view q);

// The non-empty segments of a path, decoded: "/apis/resource.k8s.io/v1" ->
// {"apis", "resource.k8s.io", "v1"}.
std::vector<std::string> SplitPath(std::string_view path);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_HTTP_QUERY_H_
