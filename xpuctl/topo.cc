// xpuctl topo: a node's topology or a fabric as Graphviz DOT, or SVG rendered by graphviz's `dot`.
#include <optional>
#include <vector>

#include "base/subprocess.h"
#include "topology/dot.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

// The DOT picture of --topology, --inventory or --fabric, with --highlight filled.
StatusOr<std::string> Draw(const Flags& flags) {
  const int given = static_cast<int>(flags.contains("topology")) +
                    static_cast<int>(flags.contains("inventory")) +
                    static_cast<int>(flags.contains("fabric"));
  if (given != 1) {
    return InvalidArgumentError("exactly one of --topology, --inventory and --fabric is required");
  }
  if (flags.contains("fabric")) {
    ASSIGN_OR_RETURN(const FabricInput input, LoadFabric(flags));
    ASSIGN_OR_RETURN(const std::vector<int> highlight, NodesFlag(flags, "highlight", input.fabric));
    return topology::ToDot(input.fabric, highlight);
  }
  ASSIGN_OR_RETURN(const topology::Node node, LoadNode(flags));
  ASSIGN_OR_RETURN(const topology::DeviceSet highlight, DevicesFlag(flags, "highlight", node));
  return topology::ToDot(node, highlight);
}

}  // namespace

StatusOr<int> RunTopo(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "format", {"dot", "svg"}));
  ASSIGN_OR_RETURN(std::string text, Draw(flags));
  if (format == "svg") {
    const std::optional<std::string> dot = FindOnPath("dot");
    if (!dot) return FailedPreconditionError("graphviz 'dot' not found on PATH; use --format dot");
    ASSIGN_OR_RETURN(text, RunProgram(*dot, {"dot", "-Tsvg"}, {.input = text}));
  }
  return WriteOutput(flags, out, text);
}

}  // namespace xpu::cli::internal
