// What the fuzz targets in fuzz/ share: the input as text or JSON, splitting it into parts, and a
// check that stops the run with a report when an invariant breaks. Header-only; every target
// links it into both its libFuzzer binary and its corpus replay (replay_main.cc).
#ifndef XPU_FUZZ_FUZZ_UTIL_H_
#define XPU_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xpu::fuzz {

// The input bytes as text (not NUL-terminated; may hold any byte).
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input as a JSON document; nullopt when it is not one. Syntax errors are not interesting:
// nlohmann's parser is not ours.
inline std::optional<nlohmann::json> ParseJson(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

// The string member `key` of `doc`; "" when `doc` is not an object or the member not a string.
inline std::string StringMember(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object()) return "";
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

// `doc` on one line for a report; bytes that are not UTF-8 become U+FFFD instead of throwing.
inline std::string Dump(const nlohmann::json& doc) {
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `text` cut at every `separator`; `max_parts` bounds the work one input can ask for (the last
// part keeps the rest).
inline std::vector<std::string_view> Split(std::string_view text, std::string_view separator,
                                           size_t max_parts = 64) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = text.find(separator);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + separator.size());
  }
  parts.push_back(text);
  return parts;
}

// Aborts with the broken invariant and where it is checked: libFuzzer reports a crash and keeps
// the input. `detail` says what the values were.
[[noreturn]] inline void Fail(const char* file, int line, const char* condition,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n%s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

}  // namespace xpu::fuzz

// FUZZ_CHECK(cond) or FUZZ_CHECK(cond, detail-string).
#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) ::xpu::fuzz::Fail(__FILE__, __LINE__, #cond, std::string(__VA_ARGS__)); \
  } while (false)

#endif  // XPU_FUZZ_FUZZ_UTIL_H_
