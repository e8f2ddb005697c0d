// A binary under test as a child process: stdout and stderr go to a log file the test can read,
// it is stopped with SIGTERM (or killed with SIGKILL, a crash) and always reaped.
#ifndef XPU_E2E_CLIENT_CHILD_PROCESS_H_
#define XPU_E2E_CLIENT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace xpu::e2e {

class ChildProcess {
 public:
  // Starts `binary` with `args`; output to `log_path` (truncated).
  static StatusOr<std::unique_ptr<ChildProcess>> Start(const std::string& binary,
                                                       const std::vector<std::string>& args,
                                                       const std::string& log_path);
  ~ChildProcess();  // kills and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // SIGTERM, then waits: the exit code, or 128 + the signal that ended it.
  int Stop();
  // SIGKILL, then waits.
  int Kill();
  // Waits for the child to end by itself.
  int Wait();
  // Whether it has not exited yet (reaps it if it has).
  bool Running();
  // The log so far.
  std::string Log() const;
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  int Reap(bool block);

  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
};

// GET http://127.0.0.1:<port><path> (the binaries' /metrics, /healthz, /readyz): the status
// line, headers and body as received; "" when nothing listens.
std::string HttpGet(int port, const std::string& path);

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLIENT_CHILD_PROCESS_H_
