#include "base/text.h"

#include <catch2/catch.hpp>

namespace xpu {
namespace {

TEST_CASE("short text is kept, long text is cut with its length") {
  CHECK(Abbreviate("npu-0", 8) == "npu-0");
  CHECK(Abbreviate("abcdefgh", 8) == "abcdefgh");
  CHECK(Abbreviate("abcdefghij", 4) == "abcd ... (10 bytes)");
  const std::string huge(1 << 20, 'x');
  CHECK(Abbreviate(huge, 64).size() < 100);
}

TEST_CASE("a cut never splits a UTF-8 character") {
  // "é" is two bytes (C3 A9): a cut after one of them backs up to before it.
  CHECK(Abbreviate("ab\xC3\xA9z", 3) == "ab ... (5 bytes)");
}

TEST_CASE("hex: two lower-case digits a byte, decoding refuses anything else") {
  CHECK(HexEncode(std::string("\x01\xab\xff", 3)) == "01abff");
  CHECK(HexEncode("").empty());
  CHECK(HexDecode("01abff") == std::string("\x01\xab\xff", 3));
  CHECK(HexDecode(HexEncode("{\"rv\":7}")) == "{\"rv\":7}");
  CHECK(HexDecode("abc") == std::nullopt);
  CHECK(HexDecode("AB") == std::nullopt);
  CHECK(HexDecode("0g") == std::nullopt);
}

}  // namespace
}  // namespace xpu
