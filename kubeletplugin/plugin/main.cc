// xpu-dra-plugin: the node plugin. See kubeletplugin/README.md.
#include <cstdlib>

#include "base/daemon.h"
#include "base/heap.h"
#include "kubeletplugin/plugin/plugin.h"

int main(int argc, char** argv) {
  namespace p = xpu::plugin;
  xpu::UseOneMallocArena();  // before any thread: see base/heap.h
  bool help = false;
  const char* env = std::getenv("NODE_NAME");
  auto options = p::ParseFlags(xpu::Args(argc, argv), env != nullptr ? env : "", &help);
  return xpu::RunDaemon("xpu-dra-plugin", options, help, p::Usage(), p::Run);
}
