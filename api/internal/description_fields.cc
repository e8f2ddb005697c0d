#include "api/internal/description_fields.h"

#include "api/quantity.h"

namespace xpu::api::internal {

using codec::Expected;
using codec::Field;
using nlohmann::json;

namespace {

constexpr double kMaxBandwidthGBps = 1e6;

}  // namespace

Status IntAtLeast::Read(const Field& f, int* out) const {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  const json& j = *f.value;
  std::optional<int64_t> value;
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() <= static_cast<uint64_t>(kMax)) value = j.get<int64_t>();
  } else if (j.is_number_integer()) {
    value = j.get<int64_t>();
  }
  if (!value || *value < min || *value > kMax) {
    return Expected(f,
                    min == 0 ? "a non-negative integer" : "an integer >= " + std::to_string(min));
  }
  *out = static_cast<int>(*value);
  return OkStatus();
}

Status QuantityBytes::Read(const Field& f, int64_t* out) const {
  if (!f.value->is_string()) return Expected(f, "a quantity string such as \"64Gi\"");
  StatusOr<int64_t> bytes = ParseQuantityBytes(f.value->get_ref<const std::string&>());
  if (!bytes.ok()) return f.Error(bytes.status().message());
  *out = *bytes;
  return OkStatus();
}

json QuantityBytes::Write(int64_t bytes) const { return FormatQuantityBytes(bytes); }

Status Bandwidth::Read(const Field& f, double* out) const {
  const json& j = *f.value;
  if (!j.is_number() || !(j.get<double>() > 0) || j.get<double>() > kMaxBandwidthGBps) {
    return Expected(f, "a bandwidth in GB/s, > 0 and at most 1000000");
  }
  *out = j.get<double>();
  return OkStatus();
}

Status CheckEntries(const Field& f, size_t min_size, size_t max_size) {
  if (!f.value->is_array()) return Expected(f, "an array");
  const size_t n = f.value->size();
  if (n >= min_size && n <= max_size) return OkStatus();
  const std::string want = min_size == max_size ? std::to_string(min_size)
                           : max_size == kUnbounded
                               ? "at least " + std::to_string(min_size)
                               : std::to_string(min_size) + " to " + std::to_string(max_size);
  return f.Error("expected " + want + " entries, got " + std::to_string(n));
}

Status Constant::Read(const Field& f, std::string* out) const {
  RETURN_IF_ERROR(codec::CheckConstant(f, want));
  *out = std::string(want);
  return OkStatus();
}

}  // namespace xpu::api::internal
