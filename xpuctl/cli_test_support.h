// Helpers of xpuctl's CLI tests (cli_test.cc, cli_publish_test.cc): running the CLI in-process
// with its output captured, the bundled fixtures, a temporary directory, and the checks of usage
// errors and of commands that write a file. For tests only.
#ifndef XPU_XPUCTL_CLI_TEST_SUPPORT_H_
#define XPU_XPUCTL_CLI_TEST_SUPPORT_H_

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"
#include "xpuctl/cli.h"

namespace xpu::cli::cli_testing {

// The matchers and the JSON type every CLI test reads output with.
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;

// What one xpuctl run gave: its exit code, stdout and stderr.
struct Result {
  int code;
  std::string out;
  std::string err;
};

// Runs xpuctl with `args` (without the program name) in-process.
inline Result Run(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunXpuctl(args, out, err);
  return {code, out.str(), err.str()};
}

// A bundled node description: e2e/fixtures/topologies/<name>.json.
inline std::string Fixture(const std::string& name) {
  return std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/topologies/" + name + ".json";
}

// A bundled fabric description: e2e/fixtures/fabrics/<name>.json.
inline std::string FabricFixture(const std::string& name) {
  return std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/fabrics/" + name + ".json";
}

// Sorted device names of a plan's output.
inline std::vector<std::string> PlannedDevices(const Result& r) {
  INFO(r.out << r.err);
  REQUIRE(r.code == kExitOk);
  std::vector<std::string> devices = json::parse(r.out).at("devices");
  std::sort(devices.begin(), devices.end());
  return devices;
}

// A fresh temporary directory, removed with everything in it at the end.
using xpu::testing::TempDir;

// Checks that `text` contains each of `parts`.
inline void CheckContainsAll(const std::string& text, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) CHECK_THAT(text, Contains(part));
}

// A command line that must exit 2 with nothing on stdout and stderr starting with `message`.
struct UsageError {
  std::vector<std::string> args;
  std::string message;
};

// Runs every case and checks its exit code, stdout and message.
inline void CheckUsageErrors(const std::vector<UsageError>& cases) {
  for (const UsageError& c : cases) {
    Result r = Run(c.args);
    INFO(r.err);
    CHECK(r.code == kExitUsage);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, StartsWith(c.message));
  }
}

// Runs `args` with `--out <name>` in a fresh directory: the command prints nothing and writes
// the file, whose contents are returned.
inline std::string RunToFile(std::vector<std::string> args, const std::string& name) {
  TempDir dir;
  args.insert(args.end(), {"--out", dir.Path(name)});
  const Result r = Run(args);
  INFO(r.err);
  CHECK(r.code == kExitOk);
  CHECK(r.out.empty());
  return xpu::testing::ReadText(dir.Path(name));
}

}  // namespace xpu::cli::cli_testing

#endif  // XPU_XPUCTL_CLI_TEST_SUPPORT_H_
