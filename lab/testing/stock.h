// The stock allocator child for the upstream-tier lab tests: found as xpuctl finds it and started,
// or the test fails saying why (run scripts/build-upstream).
#ifndef XPU_LAB_TESTING_STOCK_H_
#define XPU_LAB_TESTING_STOCK_H_

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "base/testing/require_ok.h"
#include "lab/stock_allocator.h"

namespace xpu::lab::testing {

inline std::unique_ptr<StockAllocator> StartStockAllocator() {
  const StatusOr<std::string> binary = FindStockAllocator("");
  REQUIRE_OK(binary);
  StatusOr<std::unique_ptr<StockAllocator>> stock = StockAllocator::Start(*binary);
  REQUIRE_OK(stock);
  return std::move(stock).value();
}

}  // namespace xpu::lab::testing

#endif  // XPU_LAB_TESTING_STOCK_H_
