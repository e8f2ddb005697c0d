// Label and field selectors as kube-sim parses them from list and watch queries
// (e2e/kubesim/selectors.h). The input is a label selector, a newline, a field selector, a
// newline and the JSON object to match ("app in (a,b),!x\nspec.nodeName=n1\n{...}").
//
// Invariant: an empty selector matches every object.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "e2e/kubesim/selectors.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using xpu::kubesim::Selector;
  const std::vector<std::string_view> parts =
      xpu::fuzz::Split(xpu::fuzz::AsText(data, size), "\n", 3);
  const nlohmann::json object = parts.size() == 3
                                    ? xpu::fuzz::ParseJson(parts[2]).value_or(nlohmann::json())
                                    : nlohmann::json();

  xpu::StatusOr<Selector> labels = Selector::ParseLabels(parts[0]);
  if (labels.ok()) {
    const bool matches = labels->MatchesLabels(object);
    FUZZ_CHECK(matches || !labels->empty(), std::string(parts[0]));
  }
  if (parts.size() < 2) return 0;
  xpu::StatusOr<Selector> fields = Selector::ParseFields(parts[1]);
  if (fields.ok()) {
    const bool matches = fields->MatchesFields(object);
    FUZZ_CHECK(matches || !fields->empty(), std::string(parts[1]));
  }
  return 0;
}
