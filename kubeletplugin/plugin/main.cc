// xpu-dra-plugin: the node plugin. See kubeletplugin/README.md.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "kubeletplugin/plugin/plugin.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int /*signal*/) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  const char* env = std::getenv("NODE_NAME");
  auto options = xpu::plugin::ParseFlags(std::vector<std::string>(argv + 1, argv + argc),
                                         env != nullptr ? env : "", &help);
  if (help) {
    std::cout << xpu::plugin::Usage();
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "xpu-dra-plugin: " << options.status().message() << "\n" << xpu::plugin::Usage();
    return 2;
  }
  if (xpu::Status s = options->Validate(); !s.ok()) {
    std::cerr << "xpu-dra-plugin: " << s.message() << "\n";
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  return xpu::plugin::Run(*options, g_stop, std::cerr);
}
