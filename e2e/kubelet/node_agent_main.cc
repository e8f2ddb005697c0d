// xpu-node-agent: a per-node test agent standing in for the kubelet. See e2e/README.md.
#include "base/daemon.h"
#include "e2e/kubelet/node_agent.h"

int main(int argc, char** argv) {
  namespace e = xpu::e2e;
  bool help = false;
  auto options = e::ParseNodeAgentFlags(xpu::Args(argc, argv), &help);
  return xpu::RunDaemon("xpu-node-agent", options, help, e::NodeAgentUsage(), e::RunNodeAgent);
}
