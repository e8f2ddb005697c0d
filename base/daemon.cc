#include "base/daemon.h"

#include <csignal>

namespace xpu {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int /*signal*/) { g_stop = true; }

}  // namespace

const std::atomic<bool>& StopOnSignals() {
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  return g_stop;
}

}  // namespace xpu
