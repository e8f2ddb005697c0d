// Small text helpers for the topology library's messages.
#ifndef XPU_TOPOLOGY_INTERNAL_TEXT_H_
#define XPU_TOPOLOGY_INTERNAL_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace xpu::topology::internal {

// "1 free device", "3 free devices".
inline std::string Plural(int64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace xpu::topology::internal

#endif  // XPU_TOPOLOGY_INTERNAL_TEXT_H_
