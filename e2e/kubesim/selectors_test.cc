#include "e2e/kubesim/selectors.h"

#include <catch2/catch.hpp>

#include "base/testing/require_ok.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;

json WithLabels(json labels) { return {{"metadata", {{"name", "a"}, {"labels", labels}}}}; }

bool LabelsMatch(const char* selector, const json& obj) {
  auto s = Selector::ParseLabels(selector);
  REQUIRE_OK(s);
  return s->MatchesLabels(obj);
}

TEST_CASE("label selectors support equality, existence and set operators") {
  const json obj = WithLabels({{"tier", "gpu"}, {"zone", "a"}});
  const struct {
    const char* selector;
    bool matches;
  } kCases[] = {
      {"", true},
      {"tier=gpu", true},
      {"tier==gpu,zone=a", true},
      {"tier=gpu,zone=b", false},
      {"tier!=cpu", true},
      {"missing!=x", true},
      {"tier", true},
      {"!tier", false},
      {"!missing", true},
      {"zone in (a, b)", true},
      {"zone notin (a,b)", false},
      {"zone in (a,b),tier", true},
  };
  for (const auto& c : kCases) {
    INFO(c.selector);
    CHECK(LabelsMatch(c.selector, obj) == c.matches);
  }
  CHECK_FALSE(LabelsMatch("tier", json{{"metadata", {{"name", "x"}}}}));
}

TEST_CASE("field selectors allow the supported fields only") {
  const json slice = {{"metadata", {{"name", "s1"}}}, {"spec", {{"nodeName", "n1"}}}};
  auto s = Selector::ParseFields("spec.nodeName=n1,metadata.name!=s2");
  REQUIRE_OK(s);
  CHECK(s->MatchesFields(slice));
  auto other = Selector::ParseFields("spec.nodeName=n2");
  REQUIRE_OK(other);
  CHECK_FALSE(other->MatchesFields(slice));
  auto absent = Selector::ParseFields("spec.driver=");
  REQUIRE_OK(absent);
  CHECK(absent->MatchesFields(slice));  // absent fields compare as ""
  CHECK(Selector::ParseFields("spec.unknown=x").status().code() == StatusCode::kFailedPrecondition);
  CHECK_FALSE(Selector::ParseFields("spec.nodeName").ok());
  CHECK_FALSE(Selector::ParseLabels("a in b").ok());
}

}  // namespace
}  // namespace xpu::kubesim
