#include "xpuctl/cli.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "api/fabric_description.h"
#include "api/node_description.h"
#include "api/node_inventory.h"
#include "base/name_list.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli {
namespace {

using internal::Flags;

struct FlagSpec {
  std::string_view name;   // long name: --name
  char short_name;         // '\0' when none: -o
  std::string_view value;  // placeholder in the usage text; empty for a switch
  bool required;
  std::string_view help;
  bool repeatable = false;  // may be given more than once; the values are joined with '\n'
};

struct Command {
  std::string_view name;  // a group's commands are two words: "accept render"
  std::string_view summary;
  std::vector<FlagSpec> flags;
  StatusOr<int> (*run)(const Flags&, std::ostream&);
  // The placeholder of the positional arguments ("RESULT.json..."), at least one of which is
  // then required; empty: the command takes none. They reach the command as flags["args"].
  std::string_view positional = {};
};

// A command group: `xpuctl <name> <command>`, listed once in the main usage.
struct CommandGroup {
  std::string_view name;
  std::string_view summary;
  std::string_view description;  // the group usage's paragraph
};

constexpr CommandGroup kAcceptGroup = {
    "accept",
    "the acceptance kit: a Job per vendor on the driver's claims, run them, report "
    "('xpuctl accept --help')",
    "The acceptance kit: for each vendor a capability class allows, a Job runs the acceptance\n"
    "workload (environment, operators, convergence, performance, power, stability,\n"
    "collectives) in the vendor's image on a claim for that vendor's devices; run applies the\n"
    "Jobs and collects their results and the claims' energy, report compares the vendors\n"
    "(docs/acceptance.md)."};

constexpr FlagSpec kTopologyFlag = {
    "topology", '\0', "FILE", false,
    "node description (JSON, docs/node-description.md); give this or --inventory"};
constexpr FlagSpec kInventoryFlag = {
    "inventory", '\0', "FILE", false,
    "NodeInventory (JSON, docs/node-inventory.md), e.g. from 'xpuctl discover'"};
constexpr FlagSpec kFabricFlag = {"fabric", '\0', "FILE", true,
                                  "fabric description (JSON, docs/fabric-description.md)"};
constexpr FlagSpec kOutputFlag = {"output", 'o', "json|yaml", false,
                                  "output format (default json)"};
constexpr FlagSpec kConfigFlag = {
    "config", '\0', "FILE", false,
    "controller config (YAML or JSON, docs/controller-config.md; default: built-in)"};
constexpr FlagSpec kHelpFlag = {"help", 'h', "", false, "show this help"};
constexpr FlagSpec kKubeVersionFlag = {
    "kubernetes-version", '\0', "1.34|1.35|1.36|1.37|1.38", false,
    "the API server's release: slice shapes and limits (1.36 to 1.38 publish like 1.35), and "
    "the publishing mode when the config sets none: groups from 1.36, attributes before "
    "(default 1.38, the newest supported)"};
constexpr FlagSpec kVendorLibFlag = {"vendor-lib-dir",
                                     '\0',
                                     "DIR",
                                     false,
                                     "search DIR first for libnvidia-ml.so.1 and libdcmi.so "
                                     "(repeatable)",
                                     true};

// The commands over one node's devices: choosing, drawing and grouping them (and a gang's nodes).
std::vector<Command> NodeCommands() {
  return {
      {"plan",
       "choose the best devices for a request on one node (exit 3: infeasible)",
       {kTopologyFlag,
        kInventoryFlag,
        {"count", '\0', "K", true, "number of devices wanted"},
        {"allocated", '\0', "d1,d2", false, "devices already taken (names such as npu-0)"},
        kOutputFlag},
       internal::RunPlan},
      {"gang",
       "place a multi-node gang in the tightest fabric domain (exit 3: infeasible)",
       {kFabricFlag,
        {"nodes", '\0', "M", true, "number of nodes in the gang"},
        {"devices-per-node", '\0', "K", true, "free devices each node must have"},
        {"highest-tier", '\0', "NAME", false,
         "highest tier the gang may span (default: the top tier)"},
        kOutputFlag},
       internal::RunGang},
      {"topo",
       "draw a node's devices and links, or a fabric's domains and nodes, with Graphviz",
       {{"topology", '\0', "FILE", false, "node description; give this or --fabric"},
        kInventoryFlag,
        {"fabric", '\0', "FILE", false, "fabric description; give this or --topology"},
        {"highlight", '\0', "d1,d2", false,
         "devices to fill, with the links among them bold; with --fabric, nodes to fill"},
        {"format", '\0', "dot|svg", false, "DOT text, or SVG through graphviz 'dot' (default dot)"},
        {"out", '\0', "FILE", false, "write to FILE instead of standard output"}},
       internal::RunTopo},
      {"groups",
       "list the aligned device groups of one size, the sets worth publishing",
       {kTopologyFlag, kInventoryFlag, {"size", '\0', "K", true, "group size"}, kOutputFlag},
       internal::RunGroups},
  };
}

// The commands that discover a host and show what the controller publishes and renders.
std::vector<Command> PublishingCommands() {
  return {
      {"discover",
       "discover this host's accelerators and print its NodeInventory",
       {{"host-root", '\0', "DIR", false, "read sysfs, /dev and /proc under DIR (default /)"},
        {"vendor-lib-dir", '\0', "DIR", false,
         "search DIR for libnvidia-ml.so.1 and libdcmi.so (repeatable; default: the host "
         "root's library folders, as the plugin)",
         true},
        {"node-name", '\0', "NAME", false,
         "metadata.name (default: etc/hostname under the host root)"},
        kOutputFlag},
       internal::RunDiscover},
      {"slices",
       "print the ResourceSlices the controller publishes for a node's inventory",
       {{"inventory", '\0', "FILE", true,
         "NodeInventory (JSON, docs/node-inventory.md), e.g. from 'xpuctl discover'"},
        {"node-name", '\0', "NAME", false, "the Node's name (default: the inventory's name)"},
        {"mode", '\0', "attributes|groups", false,
         "publishing mode (default: the config's, else by --kubernetes-version)"},
        kKubeVersionFlag,
        kConfigFlag,
        {"label", '\0', "k=v,...", false, "the Node's labels (fabric tiers)"},
        {"allocated", '\0', "DEV,...", false,
         "devices claims hold (attributes mode orders the free ones after them)"},
        kOutputFlag},
       internal::RunSlices},
      {"render",
       "turn a capability request into the claim template or gang, flavors and classes to apply",
       {{"request", '\0', "FILE", true,
         "the request (YAML or JSON: name, namespace, accelerator: {class, count, topology, "
         "precision})"},
        kConfigFlag,
        {"kubernetes-version", '\0', "1.34|1.35|1.36|1.37|1.38", false,
         "the API server's release, for the publishing mode when the config sets none, which "
         "decides the subrequests: groups from 1.36, attributes before (default 1.38, the "
         "newest supported)"},
        {"vendor", '\0', "V,...", false, "render for these of the class' vendors only"},
        {"cdi-driver-files", '\0', "auto|off|VENDOR=MODE,...", false,
         "the plugins' --cdi-driver-files: vendors whose files are off need their runtime's "
         "RuntimeClass (default auto)"},
        {"output", 'o', "yaml|json", false, "output format (default yaml)"}},
       internal::RunRender},
      {"autoscaler-template",
       "print what a new node of a node group would publish, in the autoscalers' shapes",
       {{"node-group", '\0', "FILE", true,
         "node-group profile (YAML or JSON: name, model or inventory, labels, minSize, maxSize)"},
        kConfigFlag,
        kKubeVersionFlag,
        kOutputFlag},
       internal::RunAutoscalerTemplate},
  };
}

// The flags `accept render` and `accept run` share: what to render.
std::vector<FlagSpec> AcceptRenderFlags(std::string_view run_id_help) {
  return {
      {"class", '\0', "NAME", true,
       "the capability class to accept: its vendors and their images come from the config"},
      kConfigFlag,
      {"vendors", '\0', "V,...", false,
       "only these vendors, each allowed by the class (default: every vendor it allows)"},
      {"stages", '\0', "S,...", false,
       "stages to run, of environment, operators, convergence, performance, power, stability, "
       "collectives (default all)"},
      {"gang", '\0', "M", false,
       "per vendor an AcceleratorGang of M >= 2 nodes and an Indexed Job of M pods on its "
       "claims, for the cross-node collectives"},
      {"count", '\0', "K", false, "devices per pod, per node with --gang (default 1)"},
      {"policy", '\0', "FILE", false,
       "thresholds (YAML or JSON) merged over the defaults, deploy/acceptance/policy.default.json"},
      {"namespace", '\0', "NS", false, "namespace of the Jobs and claims (default default)"},
      {"name", '\0', "PREFIX", false, "objects are named PREFIX-<vendor> (default accept-<class>)"},
      {"run-id", '\0', "ID", false, run_id_help},
      {"pod-patch", '\0', "FILE", false,
       "a patch (YAML or JSON) of each Job's pod spec, as kubectl's strategic merge: "
       "containers merged by name (env by name, volumeMounts by mountPath, ...), volumes, "
       "imagePullSecrets and resourceClaims by name, tolerations appended, {name: X, $patch: "
       "delete} removes an entry; other fields as a JSON merge patch (RFC 7386, null deletes)"},
      {"kubernetes-version", '\0', "1.34|1.35|1.36|1.37|1.38", false,
       "the API server's release, for the publishing mode when the config sets none, which "
       "decides the claims' subrequests (default 1.38, the newest supported)"},
  };
}

// `xpuctl accept render|run|report`.
std::vector<Command> AcceptCommands() {
  std::vector<FlagSpec> render =
      AcceptRenderFlags("the xpu.dra.dev/accept-run label of every object (default render)");
  render.push_back({"output", 'o', "yaml|json", false, "output format (default yaml)"});
  std::vector<FlagSpec> run = AcceptRenderFlags(
      "the xpu.dra.dev/accept-run label of every object, which the clean-up selects on "
      "(default: a new one per run)");
  run.insert(run.end(),
             {{"kubeconfig", '\0', "FILE", false,
               "the cluster to run on (default: $KUBECONFIG, else ~/.kube/config, else the "
               "in-cluster service account)"},
              {"context", '\0', "NAME", false,
               "the kubeconfig context to use (default: its current-context)"},
              {"timeout", '\0', "DURATION", false,
               "give up on the Jobs after this long, e.g. 30s, 10m (default: the policy's "
               "run.timeoutSeconds)"},
              {"results-dir", '\0', "DIR", false,
               "write each Job's result JSON here (default ./accept-results)"},
              {"label-nodes", '\0', "", false,
               "label the nodes of passed runs xpu.dra.dev/accepted.<class>=<date>"},
              {"keep", '\0', "", false, "leave what the run created in the cluster (no clean-up)"},
              {"output", 'o', "text|json", false, "output format (default text)"}});
  return {
      {"accept render",
       "write a Job per vendor the class allows, each on its own claim for that vendor",
       std::move(render), internal::RunAcceptRender},
      {"accept run",
       "apply the Jobs, wait, collect the results and the claims' energy, then clean up",
       std::move(run), internal::RunAcceptRun},
      {"accept report",
       "compare results per vendor and stage: a terminal table, JSON or one HTML page",
       {{"baseline", '\0', "VENDOR", false, "the vendor the others' numbers are compared to"},
        {"config", '\0', "FILE", false,
         "controller config whose supportMatrix answers the support-boundary item"},
        {"output", 'o', "html|json|text", false, "output format (default text)"},
        {"out", '\0', "FILE", false, "write to FILE instead of standard output"}},
       internal::RunAcceptReport,
       "RESULT.json..."},
  };
}

// The commands that check a node and compare placement policies.
std::vector<Command> OperatorCommands() {
  return {
      {"doctor",
       "check this node's integration, hardware to kubelet (exit 3: a check failed)",
       {{"host-root", '\0', "DIR", false, "read sysfs, /dev, /proc and /etc under DIR (default /)"},
        kVendorLibFlag,
        kConfigFlag,
        {"kubelet-version", '\0', "X.Y.Z", false,
         "the kubelet's version (default: the kubelet package in the dpkg database)"},
        {"node-name", '\0', "NAME", false, "the node's name (default: etc/hostname)"},
        {"cdi-driver-files", '\0', "auto|off|VENDOR=MODE,...", false,
         "the plugin's --cdi-driver-files, for the driver-files check (default auto)"},
        {"cdi-hook-path", '\0', "PATH", false,
         "the plugin's --cdi-hook-path (default /opt/xpu-dra/bin/xpu-cdi-hook)"},
        {"output", 'o', "text|json", false, "output format (default text)"}},
       internal::RunDoctor},
      {"replay",
       "replay a job trace on a fleet under each placement policy and compare (placement lab)",
       {{"trace", '\0', "JOBS.csv", false,
         "job trace: id,arrival,shape,duration (shape 8, 8+8+8+8 or partition:1g.18gb); give "
         "this or --synthetic"},
        {"synthetic", '\0', "N", false, "generate N jobs with the documented mix instead"},
        {"seed", '\0', "S", false,
         "seed of --synthetic and of --scheduler kube's tie-break (default 1)"},
        {"load", '\0', "L", false,
         "--synthetic: offered load, device-seconds per second over the fleet's devices "
         "(default 0.9)"},
        {"partitions", '\0', "SHARE", false,
         "--synthetic: the share of jobs, 0..1, that ask for one partition of a profile the "
         "fleet's partitionable devices offer, smaller profiles more often (default 0)"},
        {"fleet", '\0', "FLEET.yaml", true,
         "nodes: [{model: NAME | inventory: FILE, count: N}], optional fabric: {leafSize: N}"},
        {"policy", '\0', "P", false,
         "stock-unordered, stock-xpu, solver or solver-node (repeatable; default solver)", true},
        {"scheduler", '\0', "kube|order", false,
         "the stock policies' node choice: kube-scheduler's search and scores, or --node-order "
         "(default kube)"},
        {"node-order", '\0', "first|most-allocated|least-allocated", false,
         "the node choice of solver, and of the stock policies with --scheduler order "
         "(default first)"},
        kConfigFlag,
        {"class", '\0', "NAME", false,
         "the config's capability class stock-xpu's claims ask for (default: one over the "
         "fleet's vendors)"},
        {"stock-allocator", '\0', "FILE", false,
         "the stock allocator binary (default: found as scripts/build-upstream installs it)"},
        {"report", '\0', "FILE", false, "also write a self-contained HTML report with plots"},
        {"write-trace", '\0', "FILE", false, "also write the trace replayed as CSV"},
        {"output", 'o', "text|json", false, "output format (default text)"}},
       internal::RunReplay},
  };
}

// Every command, in the order `xpuctl help` lists them.
const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = [] {
    std::vector<Command> all;
    for (std::vector<Command> group :
         {NodeCommands(), PublishingCommands(), OperatorCommands(), AcceptCommands()}) {
      all.insert(all.end(), std::make_move_iterator(group.begin()),
                 std::make_move_iterator(group.end()));
    }
    return all;
  }();
  return commands;
}

// `text` padded with spaces to `width` columns (at least one space).
std::string Pad(std::string_view text, size_t width) {
  return std::string(text) + std::string(text.size() < width ? width - text.size() : 1, ' ');
}

std::string MainUsage() {
  std::string text =
      "xpuctl: the xpu-dra operator tool\n\n"
      "usage: xpuctl <command> [flags]\n\ncommands:\n";
  bool accept_listed = false;
  for (const Command& c : Commands()) {
    if (c.name.starts_with(std::string(kAcceptGroup.name) + " ")) {
      if (!accept_listed) {
        text += "  " + Pad(kAcceptGroup.name, 10) + std::string(kAcceptGroup.summary) + "\n";
      }
      accept_listed = true;
      continue;
    }
    text += "  " + Pad(c.name, 10) + std::string(c.summary) + "\n";
  }
  text += "  " + Pad("help", 10);
  text +=
      "show this text; 'xpuctl help <command>' shows a command's flags\n\n"
      "Flags take their value as '--flag value' or '--flag=value'.\n"
      "Exit status: 0 ok, 1 internal error, 2 bad usage or input, 3 infeasible (doctor: a\n"
      "check failed).\n";
  return text;
}

// The usage of `xpuctl accept`: its commands, one per line.
std::string GroupUsage(const CommandGroup& group) {
  const std::string prefix = std::string(group.name) + " ";
  std::string text = "usage: xpuctl " + prefix + "<command> [flags]\n\n" +
                     std::string(group.description) + "\n\ncommands:\n";
  for (const Command& c : Commands()) {
    if (!c.name.starts_with(prefix)) continue;
    text += "  " + Pad(c.name.substr(prefix.size()), 10) + std::string(c.summary) + "\n";
  }
  text += "\n'xpuctl " + prefix + "<command> --help' shows a command's flags.\n";
  return text;
}

std::string FlagLabel(const FlagSpec& f) {
  std::string label = f.short_name ? std::string("-") + f.short_name + ", " : "";
  label += "--" + std::string(f.name);
  if (!f.value.empty()) label += " " + std::string(f.value);
  return label;
}

// A command's flags, then --help, which every command takes.
std::vector<FlagSpec> FlagsOf(const Command& c) {
  std::vector<FlagSpec> flags = c.flags;
  flags.push_back(kHelpFlag);
  return flags;
}

std::string CommandUsage(const Command& c) {
  std::string text = "usage: xpuctl " + std::string(c.name);
  for (const FlagSpec& f : c.flags) {
    std::string flag = "--" + std::string(f.name);
    if (!f.value.empty()) flag += " " + std::string(f.value);
    text += f.required ? " " + flag : " [" + flag + "]";
  }
  if (!c.positional.empty()) text += " " + std::string(c.positional);
  text += "\n\n" + std::string(c.summary) + "\n\nflags:\n";
  for (const FlagSpec& f : FlagsOf(c)) {
    text += "  " + Pad(FlagLabel(f), 26) + std::string(f.help) + (f.required ? " (required)" : "") +
            "\n";
  }
  return text;
}

const Command* FindCommand(std::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Parses args[1..] as the flags of `command`: "--name value", "--name=value", "-o value",
// "-o=value", and where the command takes them, positional arguments (into "args", joined with
// '\n'); then checks the required ones (unless --help was given).
StatusOr<Flags> ParseFlags(const Command& command, const std::vector<std::string>& args) {
  const std::vector<FlagSpec> known = FlagsOf(command);
  Flags flags;
  std::vector<std::string> positional;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool is_long = arg.starts_with("--");
    if (!arg.starts_with("-") || arg.size() < 2) {
      if (command.positional.empty()) {
        return InvalidArgumentError("unexpected argument \"" + arg + "\"");
      }
      positional.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const size_t start = is_long ? 2 : 1;
    const std::string_view name =
        std::string_view{arg}.substr(start, eq == std::string::npos ? eq : eq - start);
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& f : known) {
      if (is_long ? f.name == name : (name.size() == 1 && f.short_name == name[0])) spec = &f;
    }
    if (spec == nullptr) return InvalidArgumentError("unknown flag " + arg.substr(0, eq));
    std::string value;
    if (eq != std::string::npos) {
      if (spec->value.empty()) {
        return InvalidArgumentError("--" + std::string(spec->name) + " takes no value");
      }
      value = arg.substr(eq + 1);
    } else if (!spec->value.empty()) {
      if (i + 1 >= args.size()) {
        return InvalidArgumentError("--" + std::string(spec->name) + " needs a value");
      }
      value = args[++i];
    }
    if (spec->repeatable && flags.contains(spec->name)) {
      flags[std::string(spec->name)] += "\n" + value;
    } else if (!flags.emplace(spec->name, std::move(value)).second) {
      return InvalidArgumentError("--" + std::string(spec->name) + " given twice");
    }
  }
  if (!positional.empty()) flags.emplace("args", JoinNames(positional, "\n"));
  if (flags.contains("help")) return flags;
  if (!command.positional.empty() && positional.empty()) {
    std::string_view what = command.positional;
    if (what.ends_with("...")) what.remove_suffix(3);
    return InvalidArgumentError("at least one " + std::string(what) + " is required");
  }
  for (const FlagSpec& f : command.flags) {
    if (f.required && !flags.contains(f.name)) {
      return InvalidArgumentError("--" + std::string(f.name) + " is required");
    }
  }
  return flags;
}

int ExitCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kOutOfRange:
      return kExitUsage;
    default:
      return kExitError;
  }
}

int Dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << MainUsage();
    return kExitUsage;
  }
  // "xpuctl help <command>" is "xpuctl <command> --help".
  const bool help = args[0] == "help";
  if (args[0] == "--help" || args[0] == "-h" || (help && args.size() == 1)) {
    out << MainUsage();
    return kExitOk;
  }
  std::vector<std::string> rest(args.begin() + (help ? 1 : 0), args.end());
  // A group's commands are "<group> <command>": `xpuctl accept render ...`.
  if (rest[0] == kAcceptGroup.name) {
    if (rest.size() == 1 || rest[1] == "--help" || rest[1] == "-h") {
      (help || rest.size() > 1 ? out : err) << GroupUsage(kAcceptGroup);
      return help || rest.size() > 1 ? kExitOk : kExitUsage;
    }
    if (FindCommand(rest[0] + " " + rest[1]) == nullptr) {
      err << "xpuctl " << rest[0] << ": unknown command \"" << rest[1] << "\"\nrun 'xpuctl "
          << rest[0] << " --help' for the list of commands\n";
      return kExitUsage;
    }
    rest[0] += " " + rest[1];
    rest.erase(rest.begin() + 1);
  }
  const std::string& name = rest[0];
  const Command* command = FindCommand(name);
  if (command == nullptr) {
    err << "xpuctl: unknown command \"" << name
        << "\"\nrun 'xpuctl --help' for the list of commands\n";
    return kExitUsage;
  }
  if (help) {
    out << CommandUsage(*command);
    return kExitOk;
  }
  StatusOr<Flags> flags = ParseFlags(*command, rest);
  if (!flags.ok()) {
    err << "xpuctl " << name << ": " << flags.status().message() << "\nrun 'xpuctl " << name
        << " --help' for usage\n";
    return kExitUsage;
  }
  if (flags->contains("help")) {
    out << CommandUsage(*command);
    return kExitOk;
  }
  StatusOr<int> code = command->run(*flags, out);
  if (!code.ok()) {
    err << "xpuctl " << name << ": " << code.status().message() << "\n";
    return ExitCode(code.status());
  }
  return *code;
}

}  // namespace

int RunXpuctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    return Dispatch(args, out, err);
  } catch (const std::exception& e) {
    err << "xpuctl: internal error: " << e.what() << "\n";
    return kExitError;
  }
}

namespace internal {
namespace {

// An --inventory file must hold a NodeInventory (ReadNodeDescriptionFile reports the rest).
Status CheckInventoryKind(const std::string& path) {
  std::ifstream file(path);
  if (!file) return OkStatus();  // ReadNodeDescriptionFile names the missing file
  const nlohmann::json doc = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return OkStatus();  // ... and the syntax error
  const nlohmann::json kind = doc.value("kind", nlohmann::json());
  if (kind != api::kNodeInventoryKind) {
    return InvalidArgumentError("read inventory " + path + ": kind is " + kind.dump() +
                                ", expected \"NodeInventory\"");
  }
  return OkStatus();
}

}  // namespace

StatusOr<topology::Node> LoadNode(const Flags& flags) {
  const bool inventory = flags.contains("inventory");
  if (inventory == flags.contains("topology")) {
    return InvalidArgumentError("exactly one of --topology and --inventory is required");
  }
  const std::string& path = flags.at(inventory ? "inventory" : "topology");
  // ReadNodeDescriptionFile reads either kind; --inventory insists on a NodeInventory.
  if (inventory) RETURN_IF_ERROR(CheckInventoryKind(path));
  ASSIGN_OR_RETURN(topology::NodeSpec spec, api::ReadNodeDescriptionFile(path));
  StatusOr<topology::Node> node = topology::Node::Build(spec);
  if (!node.ok()) {
    return node.status().WithContext((inventory ? "read inventory " : "read topology ") + path);
  }
  return node;
}

StatusOr<FabricInput> LoadFabric(const Flags& flags) {
  const std::string& path = flags.at("fabric");
  std::vector<int> free_devices;
  ASSIGN_OR_RETURN(const topology::FabricSpec spec,
                   api::ReadFabricDescriptionFile(path, &free_devices));
  StatusOr<topology::Fabric> fabric = topology::Fabric::Build(spec);
  if (!fabric.ok()) return fabric.status().WithContext("read fabric " + path);
  return FabricInput{std::move(fabric).value(), std::move(free_devices)};
}

StatusOr<int> PositiveIntFlag(const Flags& flags, std::string_view name) {
  auto it = flags.find(name);
  if (it == flags.end()) return InvalidArgumentError("--" + std::string(name) + " is required");
  const std::string& text = it->second;
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1) {
    return InvalidArgumentError("--" + std::string(name) + ": expected a positive integer, got \"" +
                                text + "\"");
  }
  return value;
}

StatusOr<topology::DeviceSet> DevicesFlag(const Flags& flags, std::string_view name,
                                          const topology::Node& node) {
  auto it = flags.find(name);
  if (it == flags.end()) return topology::DeviceSet();
  StatusOr<topology::DeviceSet> set = node.ParseDeviceList(it->second);
  if (!set.ok()) return set.status().WithContext("--" + std::string(name));
  return set;
}

StatusOr<std::vector<int>> NodesFlag(const Flags& flags, std::string_view name,
                                     const topology::Fabric& fabric) {
  std::vector<int> nodes;
  auto it = flags.find(name);
  if (it == flags.end()) return nodes;
  StatusOr<std::vector<std::string>> names = SplitNameList(it->second);
  if (!names.ok()) return names.status().WithContext("--" + std::string(name));
  for (const std::string& item : *names) {
    const std::optional<int> id = fabric.FindNode(item);
    if (!id) {
      return InvalidArgumentError("--" + std::string(name) + ": node " + item +
                                  " is not in the fabric");
    }
    nodes.push_back(*id);
  }
  return nodes;
}

std::vector<std::string> RepeatedFlag(const Flags& flags, std::string_view name) {
  std::vector<std::string> values;
  auto it = flags.find(name);
  if (it == flags.end()) return values;
  const std::string& joined = it->second;
  for (size_t start = 0; start <= joined.size();) {
    const size_t nl = std::min(joined.find('\n', start), joined.size());
    if (nl > start) values.push_back(joined.substr(start, nl - start));
    start = nl + 1;
  }
  return values;
}

StatusOr<std::string> ChoiceFlag(const Flags& flags, std::string_view name,
                                 std::initializer_list<std::string_view> allowed) {
  auto it = flags.find(name);
  if (it == flags.end()) return std::string(*allowed.begin());
  std::string list;
  for (std::string_view a : allowed) {
    if (a == it->second) return it->second;
    list += (list.empty() ? "" : " or ") + std::string(a);
  }
  return InvalidArgumentError("--" + std::string(name) + ": expected " + list + ", got \"" +
                              it->second + "\"");
}

}  // namespace internal
}  // namespace xpu::cli
