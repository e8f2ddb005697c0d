#include "api/internal/codec.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace xpu::api::internal {

using nlohmann::json;

Status Read(const Field& f, std::string* out) {
  if (!f.value->is_string()) return Expected(f, "a string");
  *out = f.value->get_ref<const std::string&>();
  return OkStatus();
}

Status Read(const Field& f, int64_t* out) {
  const json& j = *f.value;
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Expected(f, "a 64-bit integer");
    }
    *out = static_cast<int64_t>(j.get<uint64_t>());
    return OkStatus();
  }
  if (!j.is_number_integer()) return Expected(f, "an integer");
  *out = j.get<int64_t>();
  return OkStatus();
}

Status Read(const Field& f, bool* out) {
  if (!f.value->is_boolean()) return Expected(f, "a boolean");
  *out = f.value->get<bool>();
  return OkStatus();
}

Status Read(const Field& f, double* out) {
  if (!f.value->is_number()) return Expected(f, "a number");
  *out = f.value->get<double>();
  return OkStatus();
}

Status Read(const Field& f, json* out) {
  *out = *f.value;
  return OkStatus();
}

json Write(const std::string& value) { return value; }
json Write(int64_t value) { return value; }
json Write(bool value) { return value; }
json Write(double value) { return Number(value); }
json Write(const json& value) { return value; }

std::string MapKeyPath(const Field& f, const std::string& key) {
  // Attribute names such as "resource.kubernetes.io/pcieRoot" read better in brackets.
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
  if (plain) return f.path.empty() ? key : f.path + "." + key;
  return f.path + "[\"" + key + "\"]";
}

StatusOr<ObjectReader> ObjectReader::Open(const Field& f) {
  if (!f.value->is_object()) return Expected(f, "an object");
  return ObjectReader(f);
}

Field ObjectReader::Take(std::string_view key) {
  known_.push_back(key);
  Field m = field_.Member(key);
  if (m.value != nullptr && m.value->is_null()) m.value = nullptr;
  return m;
}

json ObjectReader::Unknown() const {
  // Null, not an empty object, when every member was known: decoded objects hold one of these per
  // struct, and an empty object costs a heap allocation each (informer caches hold millions).
  json out;
  for (const auto& [key, value] : field_.value->items()) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) out[key] = value;
  }
  return out;
}

json ObjectWriter::Finish(const json& unknown) && {
  if (unknown.is_object()) {
    for (const auto& [key, value] : unknown.items()) {
      if (!out_.contains(key)) out_[key] = value;
    }
  }
  return std::move(out_);
}

}  // namespace xpu::api::internal
