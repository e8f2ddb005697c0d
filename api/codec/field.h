// A JSON value with its path, the errors that name that path ("devices[3].index: expected a
// non-negative integer, got number -1"), and reading a JSON file. The base of the codecs in
// api/codec/codec.h; usable on its own for hand-written checks. Nothing here throws.
#ifndef XPU_API_CODEC_FIELD_H_
#define XPU_API_CODEC_FIELD_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::api::codec {

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

// Whole numbers as JSON integers, so that 30 GB/s is written "30", not "30.0".
nlohmann::json Number(double value);

// Reads and parses the JSON file at `path`. Every error starts with "<context>: "; JSON syntax
// errors give the byte offset. A missing file is a not-found error, anything else invalid-argument.
StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, std::string_view context);

}  // namespace xpu::api::codec

#endif  // XPU_API_CODEC_FIELD_H_
