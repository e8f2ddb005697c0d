// The stock DRA allocator, for the placement lab: the real k8s.io/dynamic-resource-allocation/
// structured package (the one kube-scheduler runs), at the version the upstream control plane is
// pinned to, driven in batch by e2e/upstream/cmd/stock-allocator (built by scripts/build-upstream
// into its cache). Nothing of the allocator is re-implemented here: this is the pipe to it.
//
// The wire: one JSON document per line each way, one answer per request, in order.
//   {"op":"version"}                                   -> {"module":..., "version":"v0.37.2"}
//   {"op":"classes","classes":[DeviceClass...]}        -> {"ok":true}
//   {"op":"slices","key":K,"slices":[ResourceSlice...]} -> {"ok":true}     (kept under K)
//   {"op":"forget","key":K}                            -> {"ok":true}     (K dropped)
//   {"op":"allocate","slices":K,"node":N,"allocated":["driver/pool/device",...],"claim":ResourceClaim}
//     -> {"devices":[{"request":R,"driver":D,"pool":P,"device":X}...]}  allocated
//     -> {"devices":null,"reason":"..."}                                  does not fit on N
//   any request -> {"error":"..."}                                        a bad request
// resource.k8s.io/v1 objects; the allocator runs with the features of 1.37's defaults
// (prioritized list, device taints, partitionable devices).
#ifndef XPU_LAB_STOCK_ALLOCATOR_H_
#define XPU_LAB_STOCK_ALLOCATOR_H_

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::lab {

// Where the stock allocator binary is: `flag` (--stock-allocator) when not empty, else
// $XPU_DRA_STOCK_ALLOCATOR, else `stock-allocator` beside the running executable, else the
// build-upstream cache (${XDG_CACHE_HOME:-$HOME/.cache}/xpu-dra/upstream/<pinned>/bin/). The
// error says what was looked at and how to build it (scripts/build-upstream).
StatusOr<std::string> FindStockAllocator(const std::string& flag);

// One device of an allocation result: `request` names the claim's request, or for a
// `firstAvailable` request the subrequest used ("<request>/<subrequest>").
struct AllocatedDevice {
  std::string request;
  std::string driver;
  std::string pool;
  std::string device;
  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};

class StockAllocator {
 public:
  // Starts the binary and asks its version; errors name the binary.
  static StatusOr<std::unique_ptr<StockAllocator>> Start(const std::string& binary);
  ~StockAllocator();  // closes its stdin and reaps it
  StockAllocator(const StockAllocator&) = delete;
  StockAllocator& operator=(const StockAllocator&) = delete;

  // "k8s.io/dynamic-resource-allocation v0.37.2"
  const std::string& version() const { return version_; }

  Status SetClasses(const nlohmann::json& classes);  // an array of DeviceClass objects
  // An array of ResourceSlice objects, kept under `key` for later Allocate calls.
  Status PutSlices(const std::string& key, const nlohmann::json& slices);
  // Drops the slices kept under `key` (an unknown key is no error).
  Status ForgetSlices(const std::string& key);
  // Allocates `claim` on `node` over the slices kept under `key`, with the devices `allocated`
  // ("driver/pool/device") already taken. The devices chosen, in the allocator's result order,
  // or nullopt when the claim does not fit.
  StatusOr<std::optional<std::vector<std::string>>> Allocate(
      const std::string& key, const std::string& node, const std::vector<std::string>& allocated,
      const nlohmann::json& claim);
  // As Allocate, with each result whole: the request it serves, its driver, pool and device.
  StatusOr<std::optional<std::vector<AllocatedDevice>>> AllocateResults(
      const std::string& key, const std::string& node, const std::vector<std::string>& allocated,
      const nlohmann::json& claim);

  int64_t requests() const { return requests_; }

 private:
  StockAllocator() = default;
  StatusOr<nlohmann::json> Call(const nlohmann::json& request);

  std::string binary_;
  std::string version_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;  // read ahead from the child
  int64_t requests_ = 0;
};

}  // namespace xpu::lab

#endif  // XPU_LAB_STOCK_ALLOCATOR_H_
