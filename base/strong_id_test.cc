#include "base/strong_id.h"

#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <type_traits>
#include <unordered_set>

namespace xpu {
namespace {

using AppleName = StrongId<struct AppleTag>;
using PearName = StrongId<struct PearTag>;

// What the type is for: one kind of id is not another, nor a string.
static_assert(!std::is_convertible_v<AppleName, PearName>);
static_assert(!std::is_convertible_v<std::string, AppleName>);
static_assert(!std::is_convertible_v<const char*, AppleName>);
static_assert(!std::is_convertible_v<AppleName, std::string>);
static_assert(std::is_constructible_v<AppleName, std::string>);

TEST_CASE("a strong id holds its string, compares and orders like it") {
  const AppleName a("gala");
  const AppleName b(std::string("fuji"));
  CHECK(a.value() == "gala");
  CHECK_FALSE(a.empty());
  CHECK(AppleName().empty());
  CHECK(a == AppleName(std::string_view("gala")));
  CHECK(b < a);
  std::map<AppleName, int> by_name = {{a, 1}, {b, 2}};
  CHECK(by_name.begin()->first == b);
  std::unordered_set<AppleName> set = {a, b, AppleName("gala")};
  CHECK(set.size() == 2);
  std::ostringstream out;
  out << a;
  CHECK(out.str() == "gala");
}

}  // namespace
}  // namespace xpu
