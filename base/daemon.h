// What the daemons' main functions share: the answer to --help and to bad flags, and stopping on
// SIGTERM or SIGINT.
//
//   int main(int argc, char** argv) {
//     bool help = false;
//     auto options = ParseFlags(xpu::Args(argc, argv), &help);
//     return xpu::RunDaemon("xpu-dra-controller", options, help, Usage(), Run);
//   }
#ifndef XPU_BASE_DAEMON_H_
#define XPU_BASE_DAEMON_H_

#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/stop.h"

namespace xpu {

// argv without the program name.
inline std::vector<std::string> Args(int argc, char** argv) {
  return std::vector<std::string>(argv + 1, argv + argc);
}

// The exit code when the daemon must not run: 0 after printing `usage` to stdout for --help; 2
// after printing "<name>: <error>" to stderr for a flag that did not parse (then `usage`) or
// options that fail their Validate(). nullopt when the daemon should run.
template <typename Options>
std::optional<int> FlagsExitCode(std::string_view name, const StatusOr<Options>& options, bool help,
                                 const std::string& usage) {
  if (help) {
    std::cout << usage;
    return 0;
  }
  if (!options.ok()) {
    std::cerr << name << ": " << options.status().message() << "\n" << usage;
    return 2;
  }
  if (Status s = options->Validate(); !s.ok()) {
    std::cerr << name << ": " << s.message() << "\n";
    return 2;
  }
  return std::nullopt;
}

// Installs SIGTERM and SIGINT handlers; the flag they set (through a thread of its own, since
// a handler may not take the flag's mutex). Call once, from main.
const StopFlag& StopOnSignals();

// FlagsExitCode, else `run(*options, stop, std::cerr)` until SIGTERM or SIGINT sets `stop`.
// Returns the exit code.
template <typename Options, typename RunFn>
int RunDaemon(std::string_view name, const StatusOr<Options>& options, bool help,
              const std::string& usage, RunFn run) {
  if (std::optional<int> code = FlagsExitCode(name, options, help, usage)) return *code;
  return run(*options, StopOnSignals(), std::cerr);
}

}  // namespace xpu

#endif  // XPU_BASE_DAEMON_H_
