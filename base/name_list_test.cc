#include "base/name_list.h"

#include <catch2/catch.hpp>

#include "base/testing/require_ok.h"

namespace xpu {
namespace {

TEST_CASE("name lists split at commas, in order") {
  auto names = SplitNameList("npu-1,npu-0");
  REQUIRE_OK(names);
  CHECK(*names == std::vector<std::string>{"npu-1", "npu-0"});
  auto empty = SplitNameList("");
  REQUIRE_OK(empty);
  CHECK(empty->empty());
}

TEST_CASE("joined names split back to the same list") {
  CHECK(JoinNames({}).empty());
  CHECK(JoinNames({"npu-1", "npu-0"}) == "npu-1,npu-0");
  CHECK(JoinNames({"a", "b"}, ", ") == "a, b");
  CHECK(*SplitNameList(JoinNames({"npu-1", "npu-0"})) ==
        std::vector<std::string>{"npu-1", "npu-0"});
}

TEST_CASE("empty and repeated names are errors that name them") {
  CHECK(SplitNameList("npu-0,,npu-1").status().message() ==
        "empty name at position 2 of \"npu-0,,npu-1\"");
  CHECK(SplitNameList("npu-0,").status().message() == "empty name at position 2 of \"npu-0,\"");
  CHECK(SplitNameList(",").status().code() == StatusCode::kInvalidArgument);
  CHECK(SplitNameList("npu-0,npu-1,npu-0").status().message() ==
        "\"npu-0\" is listed twice in \"npu-0,npu-1,npu-0\"");
}

}  // namespace
}  // namespace xpu
