// Text helpers: input echoed back to callers, which must not grow an answer without bound, hex and
// base64 encoding and HTML escaping, joining lists and ASCII lower case.
#ifndef XPU_BASE_TEXT_H_
#define XPU_BASE_TEXT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xpu {

// `text` when it has at most `max` bytes; else its first `max` bytes and " ... (N bytes)",
// N being the whole length. Cuts at a byte boundary, never inside a UTF-8 sequence.
std::string Abbreviate(std::string_view text, size_t max);

// `text` in double quotes for a message: quotes and backslashes escaped, control characters as
// \xNN; cut and ended with `..."` when the quoted text passes 80 bytes. "npu-0" -> "\"npu-0\"".
std::string QuoteText(std::string_view text);

// `text` without its leading and trailing whitespace (space, tab, CR, LF), as Go's
// strings.TrimSpace for ASCII.
std::string_view Trim(std::string_view text);

// Whether `c` is an ASCII decimal digit (std::isdigit depends on the locale and takes an int).
constexpr bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// `text` safe in HTML element content and in attribute values (double- or single-quoted):
// & < > " ' become &amp; &lt; &gt; &quot; &#39;, every other byte is kept.
std::string HtmlEscape(std::string_view text);

// The characters of a fixed-size C string field: those before the first NUL, at most `cap`.
std::string BoundedCString(const char* buf, size_t cap);

// Two lower-case hex digits per byte: "\x01\xab" -> "01ab".
std::string HexEncode(std::string_view bytes);
// The inverse of HexEncode; nullopt for an odd length or a character other than 0-9 and a-f.
std::optional<std::string> HexDecode(std::string_view hex);

// Standard base64 (RFC 4648, with padding), as Go writes a []byte in JSON: "CA PEM" -> "Q0EgUEVN".
std::string Base64Encode(std::string_view bytes);
// The inverse, as Kubernetes reads *-data fields: line breaks and spaces skipped, padding
// optional; nullopt for any other character, or one after padding.
std::optional<std::string> Base64Decode(std::string_view text);

// The items of `items` (any range of strings or string views) with `separator` between each two:
// {"a", "b"} -> "a, b"; "" for none. An empty item still gets its separators ({"", "a"} -> ", a").
template <typename Range>
std::string Join(const Range& items, std::string_view separator = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    const std::string_view text = item;
    if (!first) out.append(separator);
    out.append(text);
    first = false;
  }
  return out;
}

// `text` with A-Z as a-z and every other byte kept, whatever the locale: "Class-A" -> "class-a".
std::string Lower(std::string_view text);

}  // namespace xpu

#endif  // XPU_BASE_TEXT_H_
