// Names of enum values as tables instead of switch statements.
//
// Values numbered 0, 1, 2, ... (our enums, and a C library's dense codes) take an array of names
// in value order; a value outside the array (a newer library's code, a corrupt field) has none,
// and the caller says what to show instead. Beside the table of one of our enums, a
// static_assert with NamesCover makes a new value fail to compile until it has a name:
//
//   enum class Mode { kAttributes, kGroups };
//   constexpr std::string_view kModeNames[] = {"attributes", "groups"};
//   static_assert(NamesCover(kModeNames, Mode::kGroups));
//   std::string_view ModeName(Mode mode) { return NameAt(kModeNames, mode).value_or("?"); }
//   std::optional<Mode> ParseMode(std::string_view s) { return ValueNamed<Mode>(kModeNames, s); }
//
// Sparse codes (a library's error numbers) take a table of {code, name} pairs and NameOf.
#ifndef XPU_BASE_ENUM_NAMES_H_
#define XPU_BASE_ENUM_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace xpu {

// names[value], or nullopt when `value` is negative or past the end. A name is usually a
// std::string_view, but any value type works (an HTTP code and reason, say).
template <typename Name, typename T, size_t N>
constexpr std::optional<Name> NameAt(const Name (&names)[N], T value) {
  const auto i = static_cast<int64_t>(value);
  if (i < 0 || static_cast<uint64_t>(i) >= N) return std::nullopt;
  return names[i];
}

// The inverse of NameAt: the value whose name is `name`, or nullopt when none has it.
template <typename E, size_t N>
constexpr std::optional<E> ValueNamed(const std::string_view (&names)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

// Whether `names` has exactly one entry for each value from 0 to `last`.
template <typename Name, typename E, size_t N>
constexpr bool NamesCover(const Name (&/*names*/)[N], E last) {
  return static_cast<size_t>(last) + 1 == N;
}

struct CodeName {
  int64_t code;
  std::string_view name;
};

// The name of `code` in `names`, or nullopt when it has none.
template <size_t N>
constexpr std::optional<std::string_view> NameOf(const CodeName (&names)[N], int64_t code) {
  for (const CodeName& entry : names) {
    if (entry.code == code) return entry.name;
  }
  return std::nullopt;
}

}  // namespace xpu

#endif  // XPU_BASE_ENUM_NAMES_H_
