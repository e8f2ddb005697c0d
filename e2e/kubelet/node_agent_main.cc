// xpu-node-agent: a per-node test agent standing in for the kubelet. See e2e/README.md.
#include <atomic>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "e2e/kubelet/node_agent.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int /*signal*/) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  auto options =
      xpu::e2e::ParseNodeAgentFlags(std::vector<std::string>(argv + 1, argv + argc), &help);
  if (help) {
    std::cout << xpu::e2e::NodeAgentUsage();
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "xpu-node-agent: " << options.status().message() << "\n"
              << xpu::e2e::NodeAgentUsage();
    return 2;
  }
  if (xpu::Status s = options->Validate(); !s.ok()) {
    std::cerr << "xpu-node-agent: " << s.message() << "\n";
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  return xpu::e2e::RunNodeAgent(*options, g_stop, std::cerr);
}
