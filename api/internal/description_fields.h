// Private to xpu::api: the converters (api/codec/codec.h) of the node and fabric description
// formats, whose field lists read and write topology::NodeSpec and topology::FabricSpec. Errors
// name the JSON path ("devices[3].index: expected a non-negative integer, got number -1").
#ifndef XPU_API_INTERNAL_DESCRIPTION_FIELDS_H_
#define XPU_API_INTERNAL_DESCRIPTION_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec/codec.h"
#include "base/status.h"

namespace xpu::api::internal {

inline constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

// An int from `min` to INT_MAX. In an Optional member `min` stands for unset (numaNode -1:
// unknown; freeDevices 0: none), so only greater values are written.
struct IntAtLeast {
  int min;
  Status Read(const codec::Field& f, int* out) const;
  nlohmann::json Write(int value) const { return value; }
  bool IsSet(int value) const { return value > min; }
};

// A byte count as a quantity string such as "64Gi"; written when above 0.
struct QuantityBytes {
  Status Read(const codec::Field& f, int64_t* out) const;
  nlohmann::json Write(int64_t bytes) const;
  bool IsSet(int64_t bytes) const { return bytes > 0; }
};

// A bandwidth in GB/s, > 0 and at most 1000000; written when above 0 (a tier may have none).
struct Bandwidth {
  Status Read(const codec::Field& f, double* out) const;
  nlohmann::json Write(double gbps) const { return codec::Number(gbps); }
  bool IsSet(double gbps) const { return gbps > 0; }
};

// An enumerator by name, one of the first `count` (later ones, such as the derived group kinds,
// are not allowed in a description).
template <typename E>
struct EnumName {
  std::optional<E> (*parse)(std::string_view);
  std::string_view (*name)(E);
  int count;
  std::string_view what;  // "link type"

  Status Read(const codec::Field& f, E* out) const {
    std::string text;
    RETURN_IF_ERROR(codec::Read(f, &text));
    const std::optional<E> value = parse(text);
    if (value && static_cast<int>(*value) < count) {
      *out = *value;
      return OkStatus();
    }
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) names.emplace_back(name(static_cast<E>(i)));
    return codec::UnknownName(f, what, text, names);
  }
  nlohmann::json Write(E value) const { return std::string(name(value)); }
};

// "expected <n> entries, got <m>" unless the array at `f` has min_size..max_size entries.
Status CheckEntries(const codec::Field& f, size_t min_size, size_t max_size);

// Plain strings, as list items.
struct Strings {
  Status Read(const codec::Field& f, std::string* out) const { return codec::Read(f, out); }
  nlohmann::json Write(const std::string& value) const { return value; }
};

// Structs read and written with a field list `Visit` (see codec::ReadFields), as list items.
template <typename Visit>
struct Fields {
  Visit visit;
  template <typename T>
  Status Read(const codec::Field& f, T* out) const {
    return codec::ReadFields(f, out, visit);
  }
  template <typename T>
  nlohmann::json Write(const T& value) const {
    return codec::WriteFields(value, visit);
  }
};

// A list of min_size..max_size entries, each read and written with `item`; written when not
// empty.
template <typename Item>
struct Entries {
  size_t min_size;
  size_t max_size;
  Item item;

  template <typename T>
  Status Read(const codec::Field& f, std::vector<T>* out) const {
    RETURN_IF_ERROR(CheckEntries(f, min_size, max_size));
    std::vector<T> values(f.value->size());
    for (size_t i = 0; i < values.size(); ++i) RETURN_IF_ERROR(item.Read(f.Element(i), &values[i]));
    *out = std::move(values);
    return OkStatus();
  }
  template <typename T>
  nlohmann::json Write(const std::vector<T>& values) const {
    nlohmann::json out = nlohmann::json::array();
    for (const T& value : values) out.push_back(item.Write(value));
    return out;
  }
  template <typename T>
  bool IsSet(const std::vector<T>& values) const {
    return !values.empty();
  }
};

inline Entries<Strings> StringList(size_t min_size, size_t max_size = kUnbounded) {
  return {min_size, max_size, {}};
}

template <typename Visit>
Entries<Fields<Visit>> StructList(size_t min_size, size_t max_size, Visit visit) {
  return {min_size, max_size, {visit}};
}

// apiVersion or kind of a description: absent or `want` when read, always `want` when written.
struct Constant {
  std::string_view want;
  Status Read(const codec::Field& f, std::string* out) const;
  nlohmann::json Write(const std::string& /*value*/) const { return std::string(want); }
  bool IsSet(const std::string& /*value*/) const { return true; }
};

}  // namespace xpu::api::internal

#endif  // XPU_API_INTERNAL_DESCRIPTION_FIELDS_H_
