// Byte quantities in the Kubernetes notation: "64Gi", "80G", "1024".
//
// This is the subset a node description needs: a non-negative integer with an optional binary
// (Ki Mi Gi Ti Pi Ei) or decimal (k M G T P E) suffix. Fractions ("1.5Gi"), exponents ("1e9"),
// signs and milli units are rejected with a message saying so. Pure functions.
#ifndef XPU_API_QUANTITY_H_
#define XPU_API_QUANTITY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu::api {

// The number of bytes `text` stands for; an invalid-argument error naming `text` and the problem
// when it is malformed or does not fit in an int64_t.
StatusOr<int64_t> ParseQuantityBytes(std::string_view text);

// The exact spelling of `bytes` with the suffix that leaves the smallest number: "32Gi", "80G",
// "1536Mi", "1k", "1023". Round-trips through ParseQuantityBytes for bytes >= 0.
std::string FormatQuantityBytes(int64_t bytes);

}  // namespace xpu::api

#endif  // XPU_API_QUANTITY_H_
