// Running another program and reading what it prints: graphviz's `dot` for xpuctl topo, a
// kubeconfig's exec credential plugin for the API client. No shell is involved: the program gets
// exactly the arguments given. The child's standard output is read whole; standard error is either
// collected (it goes into the error when the program fails) or passed through to ours (a credential
// plugin's prompts and hints are meant for the user).
#ifndef XPU_BASE_SUBPROCESS_H_
#define XPU_BASE_SUBPROCESS_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu {

struct SubprocessOptions {
  // Written to the child's stdin, which is then closed (empty: closed at once). Ignored with
  // inherit_stdin.
  std::string input = {};
  // The child reads our stdin (an interactive credential plugin), instead of `input`.
  bool inherit_stdin = false;
  // The child's stderr goes to ours, instead of being collected for the error message.
  bool inherit_stderr = false;
  // "NAME=value" entries set in the child's environment, over ours.
  std::vector<std::string> env = {};
  // Past this the child is killed (SIGKILL) and the call fails with kDeadlineExceeded; zero: no
  // limit.
  std::chrono::milliseconds timeout{0};
};

// Runs `exe` (a path) with `argv` (argv[0] included) and returns its stdout. A program that cannot
// be started is kUnavailable ("run <exe>: <errno text>"), one that exits non-zero or is killed is
// kUnavailable with its exit status and, when collected, the end of its stderr.
StatusOr<std::string> RunProgram(const std::string& exe, const std::vector<std::string>& argv,
                                 const SubprocessOptions& options = {});

// The first executable named `program` in the folders of $PATH; nullopt when there is none.
std::optional<std::string> FindOnPath(std::string_view program);

}  // namespace xpu

#endif  // XPU_BASE_SUBPROCESS_H_
