#include "e2e/kubesim/http_query.h"

#include <catch2/catch.hpp>

namespace xpu::kubesim {
namespace {

TEST_CASE("http query: percent-decoding as Go's url.ParseQuery", "[kubesim]") {
  struct Case {
    const char* in;
    const char* out;
  };
  const Case cases[] = {
      {"plain", "plain"}, {"a+b", "a b"},   {"a%20b", "a b"},
      {"%3d%3D", "=="},   {"100%", "100%"}, {"%zz", "%zz"},
      {"%4", "%4"},       {"", ""},         {"key%3Dvalue%2Cx", "key=value,x"},
  };
  for (const Case& c : cases) {
    INFO(c.in);
    CHECK(PercentDecode(c.in) == c.out);
  }
}

TEST_CASE("http query: parameters and path segments", "[kubesim]") {
  using Query = std::map<std::string, std::string>;
  CHECK(ParseQuery("").empty());
  CHECK(ParseQuery("limit=2&continue=abc") == Query{{"limit", "2"}, {"continue", "abc"}});
  CHECK(ParseQuery("watch&&a=1&a=2") == Query{{"watch", ""}, {"a", "2"}});
  CHECK(ParseQuery("labelSelector=app%3Dx%2Ctier+in+(a)") ==
        Query{{"labelSelector", "app=x,tier in (a)"}});

  using Segments = std::vector<std::string>;
  CHECK(SplitPath("/").empty());
  CHECK(SplitPath("/apis/resource.k8s.io/v1") == Segments{"apis", "resource.k8s.io", "v1"});
  CHECK(SplitPath("//api//v1/") == Segments{"api", "v1"});
  CHECK(SplitPath("/api/v1/namespaces/a%2Fb") == Segments{"api", "v1", "namespaces", "a/b"});
}

}  // namespace
}  // namespace xpu::kubesim
