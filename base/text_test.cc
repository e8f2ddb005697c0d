#include "base/text.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

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

TEST_CASE("QuoteText escapes quotes and control characters and cuts long text") {
  CHECK(QuoteText("npu-0") == "\"npu-0\"");
  CHECK(QuoteText("") == "\"\"");
  CHECK(QuoteText("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(QuoteText("a\nb\x7f") == "\"a\\x0ab\\x7f\"");
  const std::string quoted = QuoteText(std::string(1000, 'x'));
  CHECK(quoted == "\"" + std::string(76, 'x') + "...\"");
}

TEST_CASE("Trim drops ASCII whitespace at both ends only") {
  CHECK(Trim(" \t a b \r\n") == "a b");
  CHECK(Trim("").empty());
  CHECK(Trim(" \n\t").empty());
  CHECK(Trim("x") == "x");
}

TEST_CASE("IsAsciiDigit accepts 0-9 and nothing else") {
  CHECK(IsAsciiDigit('0'));
  CHECK(IsAsciiDigit('9'));
  CHECK_FALSE(IsAsciiDigit('a'));
  CHECK_FALSE(IsAsciiDigit('/'));
  CHECK_FALSE(IsAsciiDigit(':'));
  CHECK_FALSE(IsAsciiDigit('\xd9'));  // a Latin-1 digit-like byte
}

TEST_CASE("BoundedCString stops at the first NUL or at the field's size") {
  const char filled[4] = {'a', 'b', 'c', 'd'};  // no NUL: the whole field
  CHECK(BoundedCString(filled, sizeof filled) == "abcd");
  const char short_value[8] = "ab";
  CHECK(BoundedCString(short_value, sizeof short_value) == "ab");
  CHECK(BoundedCString(short_value, 1) == "a");
}

TEST_CASE("HtmlEscape escapes the five HTML-special characters and keeps every other byte") {
  CHECK(HtmlEscape("").empty());
  CHECK(HtmlEscape("npu-0, gpu-7") == "npu-0, gpu-7");
  CHECK(HtmlEscape("<a href=\"x\" title='y'>&amp;</a>") ==
        "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  CHECK(HtmlEscape("dev\xc2\xb7h\n\t") == "dev\xc2\xb7h\n\t");  // UTF-8 and whitespace kept
}

TEST_CASE("Join puts the separator between each two items") {
  struct Case {
    std::vector<std::string> items;
    std::string_view separator;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{}, ", ", ""},
      {{"npu-0"}, ", ", "npu-0"},
      {{"npu-0", "npu-1", "gpu-7"}, ", ", "npu-0, npu-1, gpu-7"},
      {{"dev", "accel", "accel0"}, "/", "dev/accel/accel0"},
      {{"0", "1"}, ",", "0,1"},
      {{"", "a"}, ",", ",a"},
      {{"a", ""}, ";", "a;"},
      {{"a", "b"}, "", "ab"},
  };
  for (const Case& c : cases) {
    INFO("want " << c.want);
    CHECK(Join(c.items, c.separator) == c.want);
  }
  CHECK(Join(std::vector<std::string>{"cpu", "npu"}) == "cpu, npu");  // ", " by default
  const std::vector<std::string_view> views = {"apiVersion", "kind"};
  CHECK(Join(views) == "apiVersion, kind");
}

TEST_CASE("Lower lower-cases ASCII letters only") {
  CHECK(Lower("").empty());
  CHECK(Lower("Class-A") == "class-a");
  CHECK(Lower("NVIDIA.COM/gpu-0") == "nvidia.com/gpu-0");
  CHECK(Lower("already lower 123") == "already lower 123");
  CHECK(Lower("Caf\xc3\x89") == "caf\xc3\x89");  // UTF-8 bytes kept, not case-folded
}

TEST_CASE("base64 encodes with padding and decodes what Kubernetes accepts", "[text]") {
  CHECK(Base64Encode("").empty());
  CHECK(Base64Encode("f") == "Zg==");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK(Base64Encode("foo") == "Zm9v");
  CHECK(Base64Encode("CA PEM") == "Q0EgUEVN");
  CHECK(Base64Encode(std::string("\xff\x00\xfe", 3)) == "/wD+");
  for (const std::string bytes : {"", "f", "fo", "foo", "foob", "-----BEGIN CERTIFICATE-----\n"}) {
    CHECK(Base64Decode(Base64Encode(bytes)) == bytes);
  }
  CHECK(Base64Decode("Zm9v\nYmFy") == "foobar");  // line breaks skipped
  CHECK(Base64Decode("Zg") == "f");               // padding optional
  CHECK(Base64Decode("Zm9v!") == std::nullopt);
  CHECK(Base64Decode("Zg==Zg==") == std::nullopt);  // data after padding
  CHECK(Base64Decode("Zg===") == std::nullopt);
}

}  // namespace
}  // namespace xpu
