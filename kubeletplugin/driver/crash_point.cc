#include "kubeletplugin/driver/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace xpu::plugin {

void CrashPoint(const char* point) {
  const char* at = std::getenv("XPU_DRA_CRASH_AT");
  if (at != nullptr && std::strcmp(at, point) == 0) ::kill(::getpid(), SIGKILL);
}

}  // namespace xpu::plugin
