// DeviceSet: a set of device ids (0..63) of one node, as a 64-bit mask. A value type.
#ifndef XPU_TOPOLOGY_DEVICE_SET_H_
#define XPU_TOPOLOGY_DEVICE_SET_H_

#include <bit>
#include <cstdint>
#include <vector>

namespace xpu::topology {

class DeviceSet {
 public:
  static constexpr int kCapacity = 64;

  constexpr DeviceSet() = default;
  static constexpr DeviceSet FromMask(uint64_t mask) { return DeviceSet(mask); }
  static constexpr DeviceSet FirstN(int n) {
    return DeviceSet(n >= kCapacity ? ~uint64_t{0} : ((uint64_t{1} << n) - 1));
  }
  static DeviceSet Of(const std::vector<int>& ids) {
    DeviceSet s;
    for (int id : ids) s.Add(id);
    return s;
  }

  constexpr uint64_t mask() const { return mask_; }
  constexpr int size() const { return std::popcount(mask_); }
  constexpr bool empty() const { return mask_ == 0; }
  constexpr bool Contains(int id) const { return ((mask_ >> id) & 1U) != 0; }
  constexpr void Add(int id) { mask_ |= uint64_t{1} << id; }
  constexpr void Remove(int id) { mask_ &= ~(uint64_t{1} << id); }
  constexpr bool IsSubsetOf(DeviceSet other) const { return (mask_ & ~other.mask_) == 0; }
  constexpr bool Intersects(DeviceSet other) const { return (mask_ & other.mask_) != 0; }
  // Lowest id in the set; precondition: not empty.
  constexpr int First() const { return std::countr_zero(mask_); }

  // Ids in increasing order.
  std::vector<int> Ids() const {
    std::vector<int> ids;
    for (uint64_t m = mask_; m != 0; m &= m - 1) ids.push_back(std::countr_zero(m));
    return ids;
  }

  // Lexicographic order of the sorted id lists of two sets of equal size: the set holding the
  // lowest id of the symmetric difference comes first ("lowest indices" tie-break).
  static constexpr bool LexLess(DeviceSet a, DeviceSet b) {
    const uint64_t diff = a.mask_ ^ b.mask_;
    if (diff == 0) return false;
    return (a.mask_ & (diff & (~diff + 1))) != 0;
  }

  friend constexpr DeviceSet operator|(DeviceSet a, DeviceSet b) {
    return DeviceSet(a.mask_ | b.mask_);
  }
  friend constexpr DeviceSet operator&(DeviceSet a, DeviceSet b) {
    return DeviceSet(a.mask_ & b.mask_);
  }
  friend constexpr DeviceSet operator-(DeviceSet a, DeviceSet b) {
    return DeviceSet(a.mask_ & ~b.mask_);
  }
  friend constexpr bool operator==(DeviceSet a, DeviceSet b) = default;

 private:
  constexpr explicit DeviceSet(uint64_t mask) : mask_(mask) {}
  uint64_t mask_ = 0;
};

// Calls `visit(DeviceSet)` with every `k`-subset of `ids`, in lexicographic order of their
// positions in `ids`; stops when it returns false. Returns whether it went through all of them
// (true at once when there is none: k < 1 or k > ids.size()).
template <typename F>
bool ForEachSubset(const std::vector<int>& ids, int k, F&& visit) {
  const int n = static_cast<int>(ids.size());
  if (k > n || k < 1) return true;
  std::vector<int> pick(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) pick[static_cast<size_t>(i)] = i;
  while (true) {
    DeviceSet set;
    for (int i : pick) set.Add(ids[static_cast<size_t>(i)]);
    if (!visit(set)) return false;
    int i = k - 1;
    while (i >= 0 && pick[static_cast<size_t>(i)] == n - k + i) --i;
    if (i < 0) return true;
    ++pick[static_cast<size_t>(i)];
    for (int j = i + 1; j < k; ++j) {
      pick[static_cast<size_t>(j)] = pick[static_cast<size_t>(j - 1)] + 1;
    }
  }
}

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_DEVICE_SET_H_
