// xpu-dra-controller: the cluster-wide controller. See controller/README.md.
#include "base/daemon.h"
#include "controller/run.h"

int main(int argc, char** argv) {
  namespace c = xpu::controller;
  bool help = false;
  auto options = c::ParseFlags(xpu::Args(argc, argv), &help);
  return xpu::RunDaemon("xpu-dra-controller", options, help, c::Usage(), c::Run);
}
