#include "api/testing/generator.h"

#include <fstream>
#include <iostream>

namespace xpu::api::testing {

std::optional<int> CheckGeneratorArgs(int argc, char** argv, int args, std::string_view usage,
                                      std::string_view help) {
  if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::cout << usage << help;
    return 0;
  }
  if (argc != args + 1) {
    std::cerr << usage;
    return 2;
  }
  // An option it does not know is not a directory to write into.
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') {
      std::cerr << "unknown flag " << argv[i] << "\n" << usage;
      return 2;
    }
  }
  return std::nullopt;
}

bool WriteGeneratedFile(std::string_view tool, const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) {
    std::cerr << tool << ": write " << path << ": failed\n";
    return false;
  }
  std::cout << path << "\n";
  return true;
}

}  // namespace xpu::api::testing
