// Fabric descriptions (api/fabric_description.h), the JSON `xpuctl gang --fabric` reads: parse,
// build the fabric, place a few gangs. A fabric that builds with unique, non-empty tier names
// must encode to a description that parses back to the same encoding and free devices.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "api/fabric_description.h"
#include "fuzz/fuzz_util.h"
#include "topology/fabric.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using xpu::fuzz::Dump;
  std::optional<nlohmann::json> doc = xpu::fuzz::ParseJson(xpu::fuzz::AsText(data, size));
  if (!doc) return 0;
  std::vector<int> free_devices;
  xpu::StatusOr<xpu::topology::FabricSpec> spec =
      xpu::api::ParseFabricDescription(*doc, &free_devices);
  if (!spec.ok()) return 0;
  FUZZ_CHECK(free_devices.size() == spec->nodes.size());
  xpu::StatusOr<xpu::topology::Fabric> fabric = xpu::topology::Fabric::Build(*spec);
  if (!fabric.ok()) return 0;

  for (int nodes : {1, 2, 4}) {
    for (int per_node : {1, 8}) {
      const xpu::topology::GangResult gang = xpu::topology::PlaceGang(
          *fabric, free_devices, nodes, per_node, fabric->tier_count() - 1);
      if (!gang.feasible) continue;
      FUZZ_CHECK(gang.nodes.size() == static_cast<size_t>(nodes), Dump(*doc));
      for (int node : gang.nodes) {
        FUZZ_CHECK(node >= 0 && node < fabric->node_count(), Dump(*doc));
        FUZZ_CHECK(free_devices[static_cast<size_t>(node)] >= per_node, Dump(*doc));
      }
    }
  }

  std::set<std::string> tier_names;
  for (const auto& tier : spec->tiers) {
    if (tier.name.empty() || !tier_names.insert(tier.name).second) return 0;
  }
  const nlohmann::json encoded = xpu::api::FabricDescriptionToJson(*spec, free_devices, "fuzz");
  std::vector<int> free_again;
  xpu::StatusOr<xpu::topology::FabricSpec> again =
      xpu::api::ParseFabricDescription(encoded, &free_again);
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\n" + Dump(encoded));
  FUZZ_CHECK(free_again == free_devices, Dump(encoded));
  FUZZ_CHECK(xpu::api::FabricDescriptionToJson(*again, free_again, "fuzz") == encoded,
             Dump(encoded));
  return 0;
}
