// kube-sim's request handling (e2e/kubesim/api_handler.h): paths, query parameters, bodies,
// version conversion, selectors, watches, the fault and feature-gate endpoints, against a fresh
// store per input. The input is up to eight requests separated by "\n---\n", each a line
// "METHOD TARGET [CONTENT-TYPE]" followed by its body:
//
//   POST /apis/resource.k8s.io/v1beta1/resourceslices
//   {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", ...}
//   ---
//   GET /apis/resource.k8s.io/v1/resourceslices?watch=1&labelSelector=a%3Db
//
// Watches are read until they end; the harness keeps the fault settings from sleeping or holding
// a watch open (latency 0, watches closed after 1 ms), whatever a request set.
//
// Invariants: every answer that is not a dropped connection has a status code from 200 to 599
// and, apart from the health endpoints, a JSON body.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "e2e/kubesim/api_handler.h"
#include "e2e/kubesim/store.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace kubesim = ::xpu::kubesim;

constexpr size_t kMaxRequests = 8;
constexpr int kMaxWatchReads = 4;

kubesim::HttpRequest ParseRequest(std::string_view record) {
  const std::vector<std::string_view> lines = xpu::fuzz::Split(record, "\n", 2);
  const std::vector<std::string_view> words = xpu::fuzz::Split(lines[0], " ", 3);
  kubesim::HttpRequest request;
  request.method = words[0];
  request.target = words.size() > 1 ? words[1] : "/";
  request.content_type = words.size() > 2 ? words[2] : "application/json";
  request.authorization = "Bearer t";
  if (lines.size() > 1) request.body = lines[1];
  return request;
}

void CheckResponse(const kubesim::HttpResponse& response, const kubesim::HttpRequest& request) {
  if (response.drop_connection) return;
  const std::string what = request.method + " " + request.target + "\n" + response.body;
  FUZZ_CHECK(response.code >= 200 && response.code <= 599, what);
  if (request.target.starts_with("/healthz") || request.target.starts_with("/readyz") ||
      request.target.starts_with("/livez")) {
    return;
  }
  FUZZ_CHECK(xpu::fuzz::ParseJson(response.body).has_value(), what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kubesim::Store store(kubesim::StoreOptions{kubesim::BuiltinResources(), 1000, 3});
  kubesim::HandlerOptions options;
  options.token = "t";
  options.bookmark_interval = std::chrono::milliseconds(0);
  kubesim::ApiHandler handler(&store, options);
  (void)handler.Handle({"POST", "/api/v1/namespaces", "Bearer t", "application/json",
                        R"({"metadata":{"name":"ns"}})", ""});

  for (std::string_view record :
       xpu::fuzz::Split(xpu::fuzz::AsText(data, size), "\n---\n", kMaxRequests)) {
    kubesim::FaultSettings faults = handler.faults();
    faults.latency_ms = 0;
    faults.watch_close_after_ms = 1;
    handler.set_faults(faults);

    const kubesim::HttpRequest request = ParseRequest(record);
    kubesim::ApiHandler::Result result = handler.Handle(request);
    if (auto* response = std::get_if<kubesim::HttpResponse>(&result)) {
      CheckResponse(*response, request);
      continue;
    }
    auto& watch = std::get<std::unique_ptr<kubesim::WatchStream>>(result);
    for (int i = 0; i < kMaxWatchReads && !watch->done(); ++i) {
      for (const std::string& line : watch->Next()) {
        FUZZ_CHECK(!line.empty() && line.back() == '\n', line);
        FUZZ_CHECK(xpu::fuzz::ParseJson(line).has_value(), line);
      }
    }
  }
  return 0;
}
