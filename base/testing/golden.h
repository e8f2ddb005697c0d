// CheckGolden: a test's output against a golden file in the repository. With XPU_UPDATE_GOLDENS=1
// in the environment the file is rewritten with the output first (then the check passes), so a
// deliberate change is one run followed by a review of the diff. For tests only.
#ifndef XPU_BASE_TESTING_GOLDEN_H_
#define XPU_BASE_TESTING_GOLDEN_H_

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace xpu::testing {

// CHECKs that the file `path` holds exactly `got`; `regenerate` is the command that rewrites it,
// named in the failure.
inline void CheckGolden(const std::string& path, const std::string& got,
                        const std::string& regenerate) {
  const char* update = std::getenv("XPU_UPDATE_GOLDENS");  // NOLINT(concurrency-mt-unsafe)
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << got;
  }
  std::ifstream in(path, std::ios::binary);
  INFO(path << " is missing or differs; regenerate with XPU_UPDATE_GOLDENS=1 " << regenerate
            << " and review the diff");
  REQUIRE(in);
  std::stringstream want;
  want << in.rdbuf();
  CHECK(got == want.str());
}

}  // namespace xpu::testing

#endif  // XPU_BASE_TESTING_GOLDEN_H_
