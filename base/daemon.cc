#include "base/daemon.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

namespace xpu {
namespace {

StopFlag g_stop;
int g_signal_pipe[2] = {-1, -1};

// Async-signal-safe: one byte into the pipe, which the stopper thread reads.
void OnSignal(int /*signal*/) {
  const int saved = errno;
  const char byte = 1;
  (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

const StopFlag& StopOnSignals() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
    // No pipe (out of descriptors at start): the default action, which ends the process, stays.
    return g_stop;
  }
  // The handler's end never blocks: once the thread has read its byte, later signals only fill
  // the pipe, and a full pipe drops them.
  (void)::fcntl(g_signal_pipe[1], F_SETFL, O_NONBLOCK);
  std::thread([] {
    char byte = 0;
    while (::read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    g_stop.Set();
  }).detach();
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  return g_stop;
}

}  // namespace xpu
