// The codec invariant the object fuzz targets check: a value that decodes encodes to JSON that
// decodes to an equal value with the same encoding. Header-only, for fuzz/ only.
#ifndef XPU_FUZZ_ROUND_TRIP_H_
#define XPU_FUZZ_ROUND_TRIP_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "api/meta.h"
#include "fuzz/fuzz_util.h"

namespace xpu::fuzz {

// Decodes `doc` as a T with api::FromJson<T>; when that succeeds, checks the round trip through
// ToJson and returns the value. nullopt when `doc` is not a T (a normal result).
template <typename T>
std::optional<T> DecodeAndRoundTrip(const nlohmann::json& doc) {
  StatusOr<T> first = api::FromJson<T>(doc);
  if (!first.ok()) return std::nullopt;
  const nlohmann::json encoded = ToJson(*first);
  StatusOr<T> second = api::FromJson<T>(encoded);
  FUZZ_CHECK(second.ok(), "re-decode failed: " + second.status().ToString() + "\n" + Dump(encoded));
  FUZZ_CHECK(*second == *first, "decoded again differently:\n" + Dump(encoded));
  FUZZ_CHECK(ToJson(*second) == encoded,
             "encoded again differently:\n" + Dump(encoded) + "\n" + Dump(ToJson(*second)));
  return *std::move(first);
}

}  // namespace xpu::fuzz

#endif  // XPU_FUZZ_ROUND_TRIP_H_
