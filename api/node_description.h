// The JSON codec of node descriptions (topology files), the format defined in
// docs/node-description.md. A node description is read by `xpuctl plan/topo --topology FILE`; the
// bundled ones live in e2e/fixtures/topologies/.
//
// Parsing checks types and shapes and rejects unknown fields, naming the JSON path of the first
// problem ("devices[3].index: expected a non-negative integer, got number -1"). Cross references
// (device names in links, groups and valid sets, duplicate names) are checked by
// topology::Node::Build, which names the field the same way. No exception escapes.
#ifndef XPU_API_NODE_DESCRIPTION_H_
#define XPU_API_NODE_DESCRIPTION_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "topology/model.h"

namespace xpu::api {

inline constexpr std::string_view kNodeDescriptionApiVersion = "xpu.dra.dev/v1alpha1";
inline constexpr std::string_view kNodeDescriptionKind = "NodeDescription";

// An invalid-argument error whose message starts with the JSON path of the bad field.
StatusOr<topology::NodeSpec> ParseNodeDescription(const nlohmann::json& doc);

// Reads and parses a file. Every error starts with "read topology <path>: "; JSON syntax errors
// give the byte offset. A missing file is a not-found error, anything else invalid-argument.
// A file whose kind is NodeInventory (api/node_inventory.h) is read as one, validated and
// projected with NodeDescriptionFromInventory, so that `xpuctl plan` takes either.
StatusOr<topology::NodeSpec> ReadNodeDescriptionFile(const std::string& path);

// The documented shape, with empty optional fields left out and PCIe bandwidths only where they
// differ from the model values. `dump(2)` of it is byte-stable. For a spec that follows the
// documented format (one Node::Build accepts, group kinds not derived ones) ParseNodeDescription
// gives the spec back.
nlohmann::json NodeDescriptionToJson(const topology::NodeSpec& spec);

}  // namespace xpu::api

#endif  // XPU_API_NODE_DESCRIPTION_H_
