// Private to xpu::api: the small helpers the JSON codecs (node and fabric descriptions) share to
// read a document field by field, naming the JSON path of the first problem ("devices[3].index:
// expected a non-negative integer, got number -1"), and to read a JSON file. Nothing here throws.
#ifndef XPU_API_INTERNAL_JSON_FIELDS_H_
#define XPU_API_INTERNAL_JSON_FIELDS_H_

#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xpu::api::internal {

inline constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

// A JSON value and its path for messages ("devices[3].index"); value is null when absent. The
// root has an empty path. Does not own the value.
struct Field {
  const nlohmann::json* value = nullptr;
  std::string path;

  // An invalid-argument error "<path>: <what>".
  Status Error(std::string_view what) const;
  // Precondition: value is an object.
  Field Member(std::string_view key) const;
  // Precondition: value is an array with more than i elements.
  Field Element(size_t i) const;
};

// "expected <what>, got <what the value is>", e.g. "expected a string, got number 5".
Status Expected(const Field& f, std::string_view what);

// Checks that the value is an object with no keys but `known`, so that typos are caught.
Status CheckObject(const Field& f, const std::vector<std::string_view>& known);

// "<path>: unknown <what> \"<text>\"; expected one of <known, comma-separated>".
Status UnknownName(const Field& f, std::string_view what, std::string_view text,
                   const std::vector<std::string>& known);

// Fails unless the field is absent or holds exactly the string `want` (apiVersion, kind).
Status CheckConstant(const Field& f, std::string_view want);

// Reads a required field with `parse` (a callable Field -> StatusOr<T>).
template <typename T, typename Parse>
Status Required(const Field& f, Parse parse, T* out) {
  if (f.value == nullptr) return f.Error("missing required field");
  ASSIGN_OR_RETURN(*out, parse(f));
  return OkStatus();
}

// Reads an optional field with `parse`; leaves *out as it is when the field is absent.
template <typename T, typename Parse>
Status Optional(const Field& f, Parse parse, T* out) {
  if (f.value == nullptr) return OkStatus();
  ASSIGN_OR_RETURN(*out, parse(f));
  return OkStatus();
}

StatusOr<std::string> AsString(const Field& f);

// An integer from `min` to INT_MAX.
StatusOr<int> AsIntAtLeast(const Field& f, int min);
inline auto IntAtLeast(int min) {
  return [min](const Field& f) { return AsIntAtLeast(f, min); };
}

// A bandwidth in GB/s: a number > 0 and at most 1000000.
StatusOr<double> AsBandwidth(const Field& f);

// An array of min_size..max_size elements, each read by `parse`.
template <typename T, typename Parse>
StatusOr<std::vector<T>> AsList(const Field& f, size_t min_size, size_t max_size, Parse parse) {
  if (!f.value->is_array()) return Expected(f, "an array");
  const size_t n = f.value->size();
  if (n < min_size || n > max_size) {
    const std::string want = min_size == max_size ? std::to_string(min_size)
                             : max_size == kUnbounded
                                 ? "at least " + std::to_string(min_size)
                                 : std::to_string(min_size) + " to " + std::to_string(max_size);
    return f.Error("expected " + want + " entries, got " + std::to_string(n));
  }
  std::vector<T> out;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(T item, parse(f.Element(i)));
    out.push_back(std::move(item));
  }
  return out;
}

inline auto StringList(size_t min_size, size_t max_size = kUnbounded) {
  return [=](const Field& f) { return AsList<std::string>(f, min_size, max_size, AsString); };
}

// Whole numbers as JSON integers, so that 30 GB/s is written "30", not "30.0".
nlohmann::json Number(double value);

// Reads and parses the JSON file at `path`. Every error starts with "<context>: "; JSON syntax
// errors give the byte offset. A missing file is a not-found error, anything else invalid-argument.
StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, std::string_view context);

}  // namespace xpu::api::internal

#endif  // XPU_API_INTERNAL_JSON_FIELDS_H_
