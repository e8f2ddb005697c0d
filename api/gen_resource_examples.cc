// Writes one example of each resource.k8s.io object in each served version (v1, v1beta2,
// v1beta1) to DIR/<kind>-<version>.json, for scripts/check-openapi-examples.
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "api/resource.h"
#include "api/testing/generator.h"
#include "api/testing/resource_examples.h"

constexpr const char* kHelp =
    "Writes one example of each resource.k8s.io object in v1, v1beta2 and v1beta1 to DIR, for\n"
    "the check against the upstream OpenAPI schema (scripts/check-openapi-examples).\n";

int main(int argc, char** argv) {
  using xpu::api::resource::ConvertResource;
  using xpu::api::resource::ResourceVersion;
  if (auto exit = xpu::api::testing::CheckGeneratorArgs(
          argc, argv, 1, "usage: gen-resource-examples DIR\n", kHelp)) {
    return *exit;
  }
  const std::string dir = argv[1];
  namespace t = xpu::api::testing;
  const std::vector<std::pair<std::string, nlohmann::json>> objects = {
      {"resourceslice", ToJson(t::ExampleResourceSlice())},
      {"deviceclass", ToJson(t::ExampleDeviceClass())},
      {"resourceclaim", ToJson(t::ExampleResourceClaim())},
      {"resourceclaimtemplate", ToJson(t::ExampleResourceClaimTemplate())},
  };
  const std::vector<std::pair<std::string, ResourceVersion>> versions = {
      {"v1", ResourceVersion::kV1},
      {"v1beta2", ResourceVersion::kV1beta2},
      {"v1beta1", ResourceVersion::kV1beta1}};
  for (const auto& [kind, object] : objects) {
    for (const auto& [name, version] : versions) {
      xpu::StatusOr<nlohmann::json> converted = ConvertResource(object, version);
      if (!converted.ok()) {
        std::fprintf(stderr, "gen-resource-examples: %s\n", converted.status().ToString().c_str());
        return 1;
      }
      std::string path = dir;
      path.append("/").append(kind).append("-").append(name).append(".json");
      std::ofstream out(path);
      out << converted->dump(2) << "\n";
      if (!out) {
        std::fprintf(stderr, "gen-resource-examples: write %s failed\n", path.c_str());
        return 1;
      }
    }
  }
  return 0;
}
