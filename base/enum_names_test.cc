#include "base/enum_names.h"

#include <catch2/catch.hpp>

namespace xpu {
namespace {

enum class Color { kRed, kGreen, kBlue };
constexpr std::string_view kColorNames[] = {"red", "green", "blue"};
static_assert(NamesCover(kColorNames, Color::kBlue));
static_assert(!NamesCover(kColorNames, Color::kGreen));
static_assert(NameAt(kColorNames, Color::kGreen) == "green");

TEST_CASE("enum names: by value, nothing outside the table") {
  CHECK(NameAt(kColorNames, Color::kRed) == "red");
  CHECK(NameAt(kColorNames, Color::kBlue) == "blue");
  CHECK(NameAt(kColorNames, static_cast<Color>(3)) == std::nullopt);
  CHECK(NameAt(kColorNames, -1) == std::nullopt);
  CHECK(NameAt(kColorNames, static_cast<unsigned char>(2)) == "blue");
  CHECK(NameAt(kColorNames, 7).value_or("other") == "other");

  struct Reason {
    int code;
    std::string_view text;
  };
  constexpr Reason kReasons[] = {{500, "Internal"}, {404, "NotFound"}, {409, "Conflict"}};
  static_assert(NamesCover(kReasons, Color::kBlue));
  CHECK(NameAt(kReasons, Color::kGreen)->code == 404);
  CHECK(NameAt(kReasons, static_cast<Color>(5)).value_or(Reason{500, "?"}).text == "?");
}

TEST_CASE("enum values by name: the inverse of NameAt, nothing for an unknown name") {
  CHECK(ValueNamed<Color>(kColorNames, "red") == Color::kRed);
  CHECK(ValueNamed<Color>(kColorNames, "blue") == Color::kBlue);
  CHECK(ValueNamed<Color>(kColorNames, "Blue") == std::nullopt);
  CHECK(ValueNamed<Color>(kColorNames, "") == std::nullopt);
}

TEST_CASE("code names: sparse codes, nothing for the rest") {
  constexpr CodeName kCodes[] = {{0, "ok"}, {-8001, "invalid parameter"}, {-8255, "not supported"}};
  CHECK(NameOf(kCodes, 0) == "ok");
  CHECK(NameOf(kCodes, -8255) == "not supported");
  CHECK(NameOf(kCodes, -8002) == std::nullopt);
}

}  // namespace
}  // namespace xpu
