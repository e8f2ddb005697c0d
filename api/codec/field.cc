#include "api/codec/field.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "base/text.h"

namespace xpu::api::codec {
namespace {

using nlohmann::json;

// "number -1", "string \"x\"", "array": what a value is, for "expected ..., got ..." messages.
std::string Describe(const json& j) {
  if (j.is_structured()) return j.type_name();
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(j.type_name()) + " " + text;
}

// `text` with its first letter in lower case ("No such file" -> "no such file"), for strerror.
std::string LowerFirst(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

Status Field::Error(std::string_view what) const {
  return InvalidArgumentError(path.empty() ? std::string(what) : path + ": " + std::string(what));
}

Field Field::Member(std::string_view key) const {
  auto it = value->find(key);
  return {it == value->end() ? nullptr : &*it,
          path.empty() ? std::string(key) : path + "." + std::string(key)};
}

Field Field::Element(size_t i) const {
  return {&(*value)[i], path + "[" + std::to_string(i) + "]"};
}

Status Expected(const Field& f, std::string_view what) {
  return f.Error("expected " + std::string(what) + ", got " + Describe(*f.value));
}

Status CheckObject(const Field& f, const std::vector<std::string_view>& known) {
  if (!f.value->is_object()) return Expected(f, "an object");
  for (const auto& item : f.value->items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    return f.Member(item.key()).Error("unknown field; expected one of " + Join(known));
  }
  return OkStatus();
}

Status UnknownName(const Field& f, std::string_view what, std::string_view text,
                   const std::vector<std::string>& known) {
  return f.Error("unknown " + std::string(what) + " \"" + std::string(text) +
                 "\"; expected one of " + Join(known));
}

Status CheckConstant(const Field& f, std::string_view want) {
  if (f.value == nullptr ||
      (f.value->is_string() && f.value->get_ref<const std::string&>() == want)) {
    return OkStatus();
  }
  return Expected(f, "\"" + std::string(want) + "\"");
}

json Number(double value) {
  if (std::trunc(value) == value && std::abs(value) < 9.0e15) return static_cast<int64_t>(value);
  return value;
}

StatusOr<json> ReadJsonFile(const std::string& path, std::string_view context) {
  const std::string prefix = std::string(context) + ": ";
  std::string text;
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    return Status(error == ENOENT ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
                  prefix + LowerFirst(std::strerror(error)));
  }
  char buffer[65536];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const int read_error = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_error != 0) return InvalidArgumentError(prefix + LowerFirst(std::strerror(read_error)));

  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string detail = e.what();
    if (const size_t bracket = detail.find("] "); bracket != std::string::npos) {
      detail.erase(0, bracket + 2);
    }
    return InvalidArgumentError(prefix + "invalid JSON at byte " + std::to_string(e.byte) + ": " +
                                detail);
  }
}

}  // namespace xpu::api::codec
