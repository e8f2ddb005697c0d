// kube-sim: a local Kubernetes API server over HTTPS. See e2e/README.md.
#include <iostream>

#include "base/daemon.h"
#include "e2e/kubesim/kube_sim.h"

int main(int argc, char** argv) {
  namespace k = xpu::kubesim;
  bool help = false;
  auto options = k::ParseFlags(xpu::Args(argc, argv), &help);
  if (auto code = xpu::FlagsExitCode("kube-sim", options, help, k::Usage())) return *code;
  return k::Run(*options, std::cout, std::cerr);  // stops on SIGTERM and SIGINT itself
}
