// xpuctl: the operator's command-line tool. See xpuctl/README.md.
#include <iostream>
#include <string>
#include <vector>

#include "xpuctl/cli.h"

int main(int argc, char** argv) {
  return xpu::cli::RunXpuctl(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
