// gen-crds DIR: writes the CustomResourceDefinitions of the project's kinds (api/crds.h) to
// DIR/<group>_<plural>.yaml. api_test fails when the committed deploy/crds/ files differ.
// gen-crds --json NAME prints the CRD of file NAME as JSON (for the YAML round-trip check).
#include <fstream>
#include <iostream>
#include <string>

#include "api/crds.h"

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << "usage: gen-crds DIR | gen-crds --json FILE_NAME\n"
                 "Writes the CustomResourceDefinitions of NodeInventory and AcceleratorGang,\n"
                 "generated from the C++ types, to DIR/<group>_<plural>.yaml (deploy/crds in the\n"
                 "repository), or prints one as JSON.\n";
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--json") {
    for (const auto& manifest : xpu::api::Crds()) {
      if (manifest.file_name == argv[2]) {
        std::cout << manifest.crd.dump(2) << "\n";
        return 0;
      }
    }
    std::cerr << "gen-crds: unknown manifest " << argv[2] << "\n";
    return 1;
  }
  if (argc != 2) {
    std::cerr << "usage: gen-crds DIR | gen-crds --json FILE_NAME\n";
    return 2;
  }
  for (const auto& manifest : xpu::api::Crds()) {
    const std::string path = std::string(argv[1]) + "/" + manifest.file_name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << xpu::api::ToYaml(manifest.crd);
    out.close();
    if (!out) {
      std::cerr << "gen-crds: write " << path << ": failed\n";
      return 1;
    }
    std::cout << path << "\n";
  }
  return 0;
}
