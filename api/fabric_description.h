// The JSON codec of fabric descriptions, the format defined in docs/fabric-description.md: the
// tiers, domains and nodes of a multi-node fabric (topology::FabricSpec) and the free devices of
// each node. Read by `xpuctl gang --fabric FILE` and `xpuctl topo --fabric FILE`; the bundled ones
// live in e2e/fixtures/fabrics/.
//
// Parsing checks types and shapes, rejects unknown fields and resolves tier names to tier
// indexes, naming the JSON path of the first problem ("domains[2].tier: unknown tier \"spin\";
// ..."). Cross references between domains and nodes (unknown parent or domain, duplicate names) are
// checked by topology::Fabric::Build, which names the field the same way. No exception escapes.
#ifndef XPU_API_FABRIC_DESCRIPTION_H_
#define XPU_API_FABRIC_DESCRIPTION_H_

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "topology/fabric.h"

namespace xpu::api {

inline constexpr std::string_view kFabricDescriptionApiVersion = "xpu.dra.dev/v1alpha1";
inline constexpr std::string_view kFabricDescriptionKind = "FabricDescription";

// An invalid-argument error whose message starts with the JSON path of the bad field. On success
// `*free_devices` (when not null) holds nodes[i].freeDevices at index i, the span PlaceGang takes.
// The description's name is checked but not kept: FabricSpec has no name.
StatusOr<topology::FabricSpec> ParseFabricDescription(const nlohmann::json& doc,
                                                      std::vector<int>* free_devices);

// Reads and parses a file. Every error starts with "read fabric <path>: "; JSON syntax errors give
// the byte offset. A missing file is a not-found error, anything else invalid-argument.
StatusOr<topology::FabricSpec> ReadFabricDescriptionFile(const std::string& path,
                                                         std::vector<int>* free_devices);

// The documented shape, with tiers by name and empty optional fields (a zero bandwidth, an empty
// parent or domain, zero free devices) left out; `free_devices[i]` belongs to spec.nodes[i], and
// missing entries are 0. `dump(2)` of it is byte-stable. For a spec Fabric::Build accepts, with
// unique non-empty tier names, ParseFabricDescription gives the spec and the free devices back.
nlohmann::json FabricDescriptionToJson(const topology::FabricSpec& spec,
                                       std::span<const int> free_devices, std::string_view name);

}  // namespace xpu::api

#endif  // XPU_API_FABRIC_DESCRIPTION_H_
