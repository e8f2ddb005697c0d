// gen-crds DIR: writes the CustomResourceDefinitions of the project's kinds (api/crds.h) to
// DIR/<group>_<plural>.yaml. api_test fails when the committed deploy/crds/ files differ.
// gen-crds --json NAME prints the CRD of file NAME as JSON (for the YAML round-trip check).
#include <iostream>
#include <string>

#include "api/crds.h"
#include "api/testing/generator.h"

constexpr char kUsage[] = "usage: gen-crds DIR | gen-crds --json FILE_NAME\n";
constexpr char kHelp[] =
    "Writes the CustomResourceDefinitions of NodeInventory and AcceleratorGang,\n"
    "generated from the C++ types, to DIR/<group>_<plural>.yaml (deploy/crds in the\n"
    "repository), or prints one as JSON.\n";

int main(int argc, char** argv) {
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
  if (auto exit = xpu::api::testing::CheckGeneratorArgs(argc, argv, 1, kUsage, kHelp)) {
    return *exit;
  }
  for (const auto& manifest : xpu::api::Crds()) {
    if (!xpu::api::testing::WriteGeneratedFile("gen-crds",
                                               std::string(argv[1]) + "/" + manifest.file_name,
                                               xpu::api::ToYaml(manifest.crd))) {
      return 1;
    }
  }
  return 0;
}
