// XPU_SKIP(reason): a test case that cannot run here, counted as skipped rather than passed.
// Catch2 v2 has no SKIP. Under ctest each test case runs in a process of its own, and
// xpu_add_test (cmake/xpu_test.cmake) sets XPU_TEST_SKIP_EXIT=1 in its environment and
// SKIP_RETURN_CODE 77 on it: the case prints the reason and the process exits 77, which ctest
// counts as "Not Run" (skipped). Run by hand, where one process runs many cases, the case warns
// with the reason and returns, so the cases after it still run. For tests only.
#ifndef XPU_BASE_TESTING_SKIP_H_
#define XPU_BASE_TESTING_SKIP_H_

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace xpu::testing {

// Under ctest: prints `reason` and exits 77. Otherwise returns (the caller then warns and returns).
inline void SkipUnderCtest(const std::string& reason) {
  const char* exit_flag = std::getenv("XPU_TEST_SKIP_EXIT");  // NOLINT(concurrency-mt-unsafe)
  if (exit_flag == nullptr || std::string(exit_flag) != "1") return;
  std::fprintf(stderr, "SKIPPED: %s\n", reason.c_str());
  std::fflush(stderr);
  std::_Exit(77);
}

}  // namespace xpu::testing

// Ends the current test case as skipped, giving `reason` (a std::string or a literal).
#define XPU_SKIP(reason)                          \
  do {                                            \
    const std::string skip_reason_ = (reason);    \
    ::xpu::testing::SkipUnderCtest(skip_reason_); \
    WARN("skipped: " << skip_reason_);            \
    return;                                       \
  } while (false)

#endif  // XPU_BASE_TESTING_SKIP_H_
