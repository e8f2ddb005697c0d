// Private to xpu::api: the building blocks of the Kubernetes object codecs (api/meta.h,
// api/resource.h). Decoding is `Status Read(const Field&, T*)`, encoding `nlohmann::json
// Write(const T&)`, one overload per type, found by argument-dependent lookup from the generic
// list, map and optional helpers here. ObjectReader records which members a struct knows, so that
// the rest can be kept in its `unknown` member and written back by ObjectWriter::Finish. Errors
// name the JSON path ("spec.devices[2].name: expected a string, got number 5"). Nothing throws.
#ifndef XPU_API_INTERNAL_CODEC_H_
#define XPU_API_INTERNAL_CODEC_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/internal/json_fields.h"
#include "base/status.h"

namespace xpu::api::internal {

Status Read(const Field& f, std::string* out);
Status Read(const Field& f, int64_t* out);
Status Read(const Field& f, bool* out);
// Any finite JSON number.
Status Read(const Field& f, double* out);
// Any JSON value, kept as it is (raw extensions, node selectors, conditions).
Status Read(const Field& f, nlohmann::json* out);
template <typename T>
Status Read(const Field& f, std::vector<T>* out);
template <typename T>
Status Read(const Field& f, std::map<std::string, T>* out);
template <typename T>
Status Read(const Field& f, std::optional<T>* out);

nlohmann::json Write(const std::string& value);
nlohmann::json Write(int64_t value);
nlohmann::json Write(bool value);
// Whole numbers as JSON integers (see Number in json_fields.h).
nlohmann::json Write(double value);
nlohmann::json Write(const nlohmann::json& value);
template <typename T>
nlohmann::json Write(const std::vector<T>& values);
template <typename T>
nlohmann::json Write(const std::map<std::string, T>& values);

// "<key>" of an object member, or "[<key>]" for map keys that are not identifiers.
std::string MapKeyPath(const Field& f, const std::string& key);

// Reads the members of one JSON object. A member that is absent or null counts as unset.
class ObjectReader {
 public:
  // Fails unless the field holds an object.
  static StatusOr<ObjectReader> Open(const Field& f);

  // The member `key`, now counted as known.
  Field Take(std::string_view key);

  template <typename T>
  Status Required(std::string_view key, T* out) {
    const Field m = Take(key);
    if (m.value == nullptr) return m.Error("missing required field");
    return Read(m, out);
  }
  // Leaves *out as it is when the member is unset.
  template <typename T>
  Status Optional(std::string_view key, T* out) {
    const Field m = Take(key);
    if (m.value == nullptr) return OkStatus();
    return Read(m, out);
  }

  // The members not taken so far, as an object; null if none.
  nlohmann::json Unknown() const;

  const Field& field() const { return field_; }

 private:
  explicit ObjectReader(Field f) : field_(std::move(f)) {}

  Field field_;
  std::vector<std::string_view> known_;
};

// Builds one JSON object with the upstream member names.
class ObjectWriter {
 public:
  template <typename T>
  void Set(std::string_view key, const T& value) {
    out_[std::string(key)] = Write(value);
  }
  template <typename T>
  void Optional(std::string_view key, const std::optional<T>& value) {
    if (value.has_value()) Set(key, *value);
  }
  // Strings, lists and maps tagged omitempty upstream.
  template <typename T>
  void NonEmpty(std::string_view key, const T& value) {
    if (!value.empty()) Set(key, value);
  }
  void NonZero(std::string_view key, int64_t value) {
    if (value != 0) Set(key, value);
  }
  // The object, with the members of `unknown` the writer did not set itself added back.
  nlohmann::json Finish(const nlohmann::json& unknown) &&;

 private:
  nlohmann::json out_ = nlohmann::json::object();
};

template <typename T>
Status Read(const Field& f, std::vector<T>* out) {
  if (!f.value->is_array()) return Expected(f, "an array");
  out->clear();
  out->reserve(f.value->size());
  for (size_t i = 0; i < f.value->size(); ++i) {
    T item{};
    RETURN_IF_ERROR(Read(f.Element(i), &item));
    out->push_back(std::move(item));
  }
  return OkStatus();
}

template <typename T>
Status Read(const Field& f, std::map<std::string, T>* out) {
  if (!f.value->is_object()) return Expected(f, "an object");
  out->clear();
  for (const auto& [key, value] : f.value->items()) {
    T item{};
    RETURN_IF_ERROR(Read(Field{&value, MapKeyPath(f, key)}, &item));
    out->emplace(key, std::move(item));
  }
  return OkStatus();
}

template <typename T>
Status Read(const Field& f, std::optional<T>* out) {
  T value{};
  RETURN_IF_ERROR(Read(f, &value));
  *out = std::move(value);
  return OkStatus();
}

template <typename T>
nlohmann::json Write(const std::vector<T>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& value : values) out.push_back(Write(value));
  return out;
}

template <typename T>
nlohmann::json Write(const std::map<std::string, T>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : values) out[key] = Write(value);
  return out;
}

}  // namespace xpu::api::internal

#endif  // XPU_API_INTERNAL_CODEC_H_
