// kube-sim: a local Kubernetes API server over HTTPS. See e2e/README.md.
#include <iostream>
#include <string>
#include <vector>

#include "e2e/kubesim/kube_sim.h"

int main(int argc, char** argv) {
  bool help = false;
  auto options = xpu::kubesim::ParseFlags(std::vector<std::string>(argv + 1, argv + argc), &help);
  if (help) {
    std::cout << xpu::kubesim::Usage();
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "kube-sim: " << options.status().message() << "\n" << xpu::kubesim::Usage();
    return 2;
  }
  return xpu::kubesim::Run(*options, std::cout, std::cerr);
}
