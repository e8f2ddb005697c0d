// xpuctl, the operator's command-line tool, as a library function so that tests run it in-process.
#ifndef XPU_XPUCTL_CLI_H_
#define XPU_XPUCTL_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace xpu::cli {

// Exit codes of xpuctl.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // internal or environment error (e.g. graphviz missing)
inline constexpr int kExitUsage = 2;  // bad usage or bad input; the message names file and field
inline constexpr int kExitInfeasible = 3;  // `plan`, `gang`: no placement satisfies the request

// Runs `xpuctl <args...>` (args without the program name): results go to `out`, messages to
// `err`. Returns the exit code; never throws.
int RunXpuctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace xpu::cli

#endif  // XPU_XPUCTL_CLI_H_
