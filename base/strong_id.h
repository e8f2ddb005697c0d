// Distinct types for names that share a representation, so that two of them cannot be swapped
// in a call without the compiler saying so:
//
//   using DriverName = StrongId<struct DriverNameTag>;
//   using PoolName = StrongId<struct PoolNameTag>;
//   PoolSyncPlan PlanPoolSync(const DriverName& driver, const PoolName& pool, ...);
//   PlanPoolSync(pool, driver, ...);   // does not compile
//
// Construction from a string is explicit; value() gives the string back. Ordered and hashable
// like the string, so a StrongId can key a map.
#ifndef XPU_BASE_STRONG_ID_H_
#define XPU_BASE_STRONG_ID_H_

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace xpu {

template <typename Tag>
class StrongId {
 public:
  StrongId() = default;
  explicit StrongId(std::string value) : value_(std::move(value)) {}
  explicit StrongId(std::string_view value) : value_(value) {}
  explicit StrongId(const char* value) : value_(value) {}

  const std::string& value() const { return value_; }
  bool empty() const { return value_.empty(); }

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=> as comparing 0
  friend auto operator<=>(const StrongId&, const StrongId&) = default;
  friend std::ostream& operator<<(std::ostream& out, const StrongId& id) {
    return out << id.value_;
  }

 private:
  std::string value_;
};

}  // namespace xpu

template <typename Tag>
struct std::hash<xpu::StrongId<Tag>> {
  size_t operator()(const xpu::StrongId<Tag>& id) const noexcept {
    return std::hash<std::string>()(id.value());
  }
};

#endif  // XPU_BASE_STRONG_ID_H_
