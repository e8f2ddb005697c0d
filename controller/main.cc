// xpu-dra-controller: the cluster-wide controller. See controller/README.md.
#include <atomic>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "controller/run.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int /*signal*/) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  auto options =
      xpu::controller::ParseFlags(std::vector<std::string>(argv + 1, argv + argc), &help);
  if (help) {
    std::cout << xpu::controller::Usage();
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "xpu-dra-controller: " << options.status().message() << "\n"
              << xpu::controller::Usage();
    return 2;
  }
  if (xpu::Status s = options->Validate(); !s.ok()) {
    std::cerr << "xpu-dra-controller: " << s.message() << "\n";
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  return xpu::controller::Run(*options, g_stop, std::cerr);
}
