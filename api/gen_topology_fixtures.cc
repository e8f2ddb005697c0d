// gen-topology-fixtures DIR: writes every bundled server model (topology/testing/fixtures.cc) to
// DIR/<name>.json as a node description. api_test fails when the committed files differ.
#include <fstream>
#include <iostream>
#include <string>

#include "api/node_description.h"
#include "topology/testing/fixtures.h"

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << "usage: gen-topology-fixtures DIR\n"
                 "Writes the node descriptions of the bundled server models (topology/testing/\n"
                 "fixtures.cc) to DIR/<model>.json (e2e/fixtures/topologies in the repository).\n";
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: gen-topology-fixtures DIR\n";
    return 2;
  }
  for (const auto& model : xpu::topology::testing::BundledModels()) {
    const std::string path = std::string(argv[1]) + "/" + model.name + ".json";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << xpu::api::NodeDescriptionToJson(model.spec).dump(2) << "\n";
    out.close();
    if (!out) {
      std::cerr << "gen-topology-fixtures: write " << path << ": failed\n";
      return 1;
    }
    std::cout << path << "\n";
  }
  return 0;
}
