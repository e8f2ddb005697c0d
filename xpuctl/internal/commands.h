// Private to xpuctl: the commands and the helpers they share.
#ifndef XPU_XPUCTL_INTERNAL_COMMANDS_H_
#define XPU_XPUCTL_INTERNAL_COMMANDS_H_

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "base/status.h"
#include "controller/config.h"
#include "topology/device_set.h"
#include "topology/fabric.h"
#include "topology/model.h"
#include "xpuctl/accept/jobs.h"

namespace xpu::cli::internal {

// The flags given to a command, by long name without dashes: {"topology": "x.json"}. Flags
// without a value (--help) map to "".
using Flags = std::map<std::string, std::string, std::less<>>;

// A command returns its exit code (kExitOk, kExitInfeasible) or an error: invalid-argument and
// not-found errors exit with kExitUsage, others with kExitError.
StatusOr<int> RunPlan(const Flags& flags, std::ostream& out);
StatusOr<int> RunGang(const Flags& flags, std::ostream& out);
StatusOr<int> RunGroups(const Flags& flags, std::ostream& out);
StatusOr<int> RunTopo(const Flags& flags, std::ostream& out);
StatusOr<int> RunDiscover(const Flags& flags, std::ostream& out);
StatusOr<int> RunSlices(const Flags& flags, std::ostream& out);
StatusOr<int> RunRender(const Flags& flags, std::ostream& out);
StatusOr<int> RunAutoscalerTemplate(const Flags& flags, std::ostream& out);

// Reads and checks a NodeInventory file; errors read "read inventory FILE: ...".
StatusOr<api::NodeInventory> ReadInventoryFile(const std::string& path);
// The controller config of --config, else the default one.
StatusOr<controller::Config> LoadConfigFlag(const Flags& flags);
StatusOr<int> RunDoctor(const Flags& flags, std::ostream& out);
StatusOr<int> RunReplay(const Flags& flags, std::ostream& out);

// The acceptance kit (xpuctl/accept/): `xpuctl accept render|run|report`. A command's positional
// arguments (report's RESULT.json...) are in flags["args"], read with RepeatedFlag(flags, "args").
StatusOr<int> RunAcceptRender(const Flags& flags, std::ostream& out);
StatusOr<int> RunAcceptRun(const Flags& flags, std::ostream& out);
StatusOr<int> RunAcceptReport(const Flags& flags, std::ostream& out);

// What the flags `accept render` and `accept run` share give: the request (--class, --vendors,
// --stages, --gang, --count, --policy, --namespace, --name, --run-id, --pod-patch,
// --kubernetes-version) and the controller config (--config, else the built-in one). Errors name
// the flag or the file ("policy FILE: key: ...", "read pod patch FILE: ...").
struct AcceptRenderInput {
  accept::RenderRequest request;
  controller::Config config;
};
StatusOr<AcceptRenderInput> LoadAcceptRender(const Flags& flags);

// Reads and builds the node of --topology or --inventory (exactly one); errors read
// "read topology FILE: <field>: ...".
StatusOr<topology::Node> LoadNode(const Flags& flags);

// A fabric and the free devices of its nodes (indexed like its nodes), from one description.
struct FabricInput {
  topology::Fabric fabric;
  std::vector<int> free_devices;
};
// Reads and builds the fabric of --fabric; errors read "read fabric FILE: <field>: ...".
StatusOr<FabricInput> LoadFabric(const Flags& flags);
// --<name> as an integer >= 1.
StatusOr<int> PositiveIntFlag(const Flags& flags, std::string_view name);
// --<name> as a comma-separated list of device names of `node`; absent: the empty set.
StatusOr<topology::DeviceSet> DevicesFlag(const Flags& flags, std::string_view name,
                                          const topology::Node& node);
// --<name> as a comma-separated list of node names of `fabric`, as node ids in the order given;
// absent: empty.
StatusOr<std::vector<int>> NodesFlag(const Flags& flags, std::string_view name,
                                     const topology::Fabric& fabric);
// The values of a repeatable flag (joined with '\n' by the parser), empty ones left out; absent:
// none.
std::vector<std::string> RepeatedFlag(const Flags& flags, std::string_view name);
// --<name> checked against `allowed` ("json", "yaml"); absent: the first allowed value.
StatusOr<std::string> ChoiceFlag(const Flags& flags, std::string_view name,
                                 std::initializer_list<std::string_view> allowed);

// The text of the file at `path`; one that cannot be opened is a not-found error
// "read WHAT PATH: cannot open the file".
StatusOr<std::string> ReadInputFile(std::string_view what, const std::string& path);
// Writes `text` to the file of --out, else to `out`: kExitOk, or an unavailable error
// "write FILE: <errno text>".
StatusOr<int> WriteOutput(const Flags& flags, std::ostream& out, const std::string& text);

// Prints `doc` as JSON (indent 2) or YAML, per --output; `format` is "json" or "yaml".
void PrintDocument(const nlohmann::json& doc, std::string_view format, std::ostream& out);
// YAML for the documents xpuctl prints: block mappings, flow sequences of scalars, plain scalars
// where YAML reads them back as the same string, JSON-quoted ones otherwise.
std::string ToYaml(const nlohmann::json& doc);

}  // namespace xpu::cli::internal

#endif  // XPU_XPUCTL_INTERNAL_COMMANDS_H_
