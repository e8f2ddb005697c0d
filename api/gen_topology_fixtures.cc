// gen-topology-fixtures DIR: writes every bundled server model (topology/testing/fixtures.cc) to
// DIR/<name>.json as a node description. api_test fails when the committed files differ.
#include <string>

#include "api/node_description.h"
#include "api/testing/generator.h"
#include "topology/testing/fixtures.h"

int main(int argc, char** argv) {
  if (auto exit = xpu::api::testing::CheckGeneratorArgs(
          argc, argv, 1, "usage: gen-topology-fixtures DIR\n",
          "Writes the node descriptions of the bundled server models (topology/testing/\n"
          "fixtures.cc) to DIR/<model>.json (e2e/fixtures/topologies in the repository).\n")) {
    return *exit;
  }
  for (const auto& model : xpu::topology::testing::BundledModels()) {
    if (!xpu::api::testing::WriteGeneratedFile(
            "gen-topology-fixtures", std::string(argv[1]) + "/" + model.name + ".json",
            xpu::api::NodeDescriptionToJson(model.spec).dump(2) + "\n")) {
      return 1;
    }
  }
  return 0;
}
