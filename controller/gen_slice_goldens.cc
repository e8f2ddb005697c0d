// Writes e2e/fixtures/slices-expected/<host>.{groups,attributes}.json from every
// e2e/fixtures/hosts-expected/<host>.json (see controller/slice_goldens.h).
// Usage: gen-slice-goldens <source dir>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/testing/generator.h"
#include "controller/slice_goldens.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (auto exit = xpu::api::testing::CheckGeneratorArgs(
          argc, argv, 1, "usage: gen-slice-goldens SOURCE_DIR\n",
          "Writes SOURCE_DIR/e2e/fixtures/slices-expected/<host>.{groups,attributes}.json, the\n"
          "slices the controller publishes for each SOURCE_DIR/e2e/fixtures/hosts-expected/\n"
          "<host>.json inventory, in both publishing modes.\n")) {
    return *exit;
  }
  const fs::path root = argv[1];
  const fs::path out_dir = root / "e2e/fixtures/slices-expected";
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  std::vector<fs::path> inputs;
  for (const fs::directory_entry& e :
       fs::directory_iterator(root / "e2e/fixtures/hosts-expected", ec)) {
    if (e.path().extension() == ".json") inputs.push_back(e.path());
  }
  if (ec) {
    std::cerr << "read " << (root / "e2e/fixtures/hosts-expected").string() << ": " << ec.message()
              << "\n";
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& input : inputs) {
    std::ifstream in(input);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    auto inventory = xpu::api::FromJson<xpu::api::NodeInventory>(doc);
    if (!inventory.ok()) {
      std::cerr << "read " << input.string() << ": " << inventory.status().message() << "\n";
      return 1;
    }
    for (auto mode :
         {xpu::controller::PublishMode::kGroups, xpu::controller::PublishMode::kAttributes}) {
      auto list = xpu::controller::GoldenSlices(*inventory, mode);
      if (!list.ok()) {
        std::cerr << "build slices of " << input.string() << ": " << list.status().message()
                  << "\n";
        return 1;
      }
      const fs::path out =
          out_dir / (input.stem().string() + "." +
                     std::string(xpu::controller::PublishModeName(mode)) + ".json");
      std::ofstream file(out);
      file << list->dump(2) << "\n";
      if (!file) {
        std::cerr << "write " << out.string() << ": failed\n";
        return 1;
      }
    }
  }
  return 0;
}
