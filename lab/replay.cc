// The placement lab's replay (lab/replay.h): the policies' names, the config the stock-xpu
// claims are rendered under, and one Simulation (lab/simulation.h) per policy with its chooser
// (lab/choosers.h).
#include "lab/replay.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "api/resource.h"
#include "base/enum_names.h"
#include "controller/device_classes.h"
#include "lab/choosers.h"
#include "lab/simulation.h"
#include "lab/stock_allocator.h"

namespace xpu::lab {
namespace {
namespace replay_cc {

constexpr std::string_view kStockUnordered = "stock-unordered";
constexpr std::string_view kStockXpu = "stock-xpu";
constexpr std::string_view kSolver = "solver";
constexpr std::string_view kSolverNode = "solver-node";
// The minor release of the stock allocator the lab runs (lab/stock_allocator.h): 1.37.
constexpr int kLabKubeMinor = 37;
// The capability class the rendered claims ask for when the options name none.
constexpr std::string_view kDefaultClass = "replay";

constexpr std::string_view kNodeOrderNames[] = {"first", "most-allocated", "least-allocated"};
static_assert(NamesCover(kNodeOrderNames, NodeOrder::kLeastAllocated));

// "a, b, c or d".
std::string Alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

// The config with the class the rendered claims ask for, in the publishing mode the controller
// takes on the release whose allocator the lab runs (1.37: groups, unless the config names one).
StatusOr<std::pair<controller::Config, std::string>> ReplayConfig(const Fleet& fleet,
                                                                  const ReplayOptions& options) {
  controller::Config config = controller::WithEffectiveMode(options.config, kLabKubeMinor);
  if (!options.capability_class.empty()) {
    for (const controller::CapabilityClass& c : config.capability_classes) {
      if (c.name == options.capability_class) return std::make_pair(config, c.name);
    }
    return InvalidArgumentError("--class: the config has no capability class " +
                                options.capability_class);
  }
  controller::CapabilityClass c;
  c.name = std::string(kDefaultClass);
  for (const FleetModel& m : fleet.models) {
    if (m.vendor != "mixed" &&
        std::find(c.vendors.begin(), c.vendors.end(), m.vendor) == c.vendors.end()) {
      c.vendors.push_back(m.vendor);
    }
  }
  std::erase_if(config.capability_classes,
                [](const controller::CapabilityClass& k) { return k.name == kDefaultClass; });
  config.capability_classes.push_back(std::move(c));
  return std::make_pair(std::move(config), std::string(kDefaultClass));
}

// Whether any of the options' policies is a stock one; an unknown policy is an error.
StatusOr<bool> CheckPolicies(const ReplayOptions& options) {
  const std::vector<std::string>& known = KnownPolicies();
  bool stock = false;
  for (const std::string& policy : options.policies) {
    if (std::find(known.begin(), known.end(), policy) == known.end()) {
      return InvalidArgumentError("--policy: unknown policy \"" + policy + "\"; expected " +
                                  Alternatives(known));
    }
    stock = stock || IsStockPolicy(policy);
  }
  return stock;
}

// The stock allocator, started with the plain class and the config's device classes.
StatusOr<std::unique_ptr<StockAllocator>> StartAllocator(const ReplayOptions& options,
                                                         const controller::Config& config) {
  if (options.stock_allocator.empty()) {
    return FailedPreconditionError("the stock policies need the stock allocator binary");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<StockAllocator> allocator,
                   StockAllocator::Start(options.stock_allocator));
  nlohmann::json classes = nlohmann::json::array({PlainDeviceClass(options.driver)});
  for (const api::resource::DeviceClass& c :
       controller::DesiredDeviceClasses(config, options.driver)) {
    classes.push_back(api::resource::ToJson(c));
  }
  RETURN_IF_ERROR(allocator->SetClasses(classes));
  return allocator;
}

// The result's header: what was replayed, on what, with which node choice.
ReplayResult ResultHeader(const Fleet& fleet, const std::vector<Job>& jobs,
                          const ReplayOptions& options, bool stock) {
  ReplayResult result;
  result.trace = options.trace_name;
  result.fleet = fleet.summary;
  result.node_order = std::string(NodeOrderName(options.node_order));
  if (stock) {
    result.scheduler = std::string(SchedulerName(options.scheduler));
    if (options.scheduler == Scheduler::kKube) result.scheduler_seed = options.seed;
  }
  result.nodes = static_cast<int>(fleet.nodes.size());
  result.devices = fleet.devices;
  result.jobs = static_cast<int64_t>(jobs.size());
  return result;
}

// What one policy's replay needs beside the fleet and the trace.
struct PolicyRun {
  const ReplayOptions& options;
  StockAllocator* allocator;  // null unless a stock policy runs
  const controller::Config& config;
  const std::string& capability_class;
};

// Replays `policy`: its own solver memo and chooser, and (a stock policy under kKube) its own
// scheduler, started afresh with the same seed for every policy, so that no figure depends on
// which policies ran before.
StatusOr<PolicyMetrics> ReplayPolicy(const Fleet& fleet, const std::vector<Job>& jobs,
                                     const std::string& policy, const PolicyRun& run) {
  const ReplayOptions& options = run.options;
  SolverMemo solver(fleet);
  std::unique_ptr<Chooser> chooser;
  if (policy == kStockUnordered) {
    chooser = MakeUnorderedChooser(fleet, *run.allocator, options.driver);
  } else if (policy == kStockXpu) {
    chooser =
        MakeXpuChooser(fleet, *run.allocator, options.driver, run.config, run.capability_class);
  } else {
    chooser = MakeSolverChooser(fleet, solver);
  }
  std::optional<KubeNodeSearch> kube;
  if (IsStockPolicy(policy) && options.scheduler == Scheduler::kKube) {
    kube.emplace(static_cast<int>(fleet.nodes.size()), options.seed);
  }
  Simulation simulation(fleet, jobs, *chooser, solver,
                        {.order = options.node_order,
                         .kube = kube.has_value() ? &*kube : nullptr,
                         .solver_node = policy == kSolverNode,
                         .record = options.record_placements});
  StatusOr<PolicyMetrics> metrics = simulation.Run(policy);
  if (!metrics.ok()) return metrics.status().WithContext("policy " + policy);
  metrics->notes = chooser->Notes();
  if (policy == kSolverNode) metrics->allocator_calls = solver.solves();
  return metrics;
}

}  // namespace replay_cc
}  // namespace

std::string_view NodeOrderName(NodeOrder order) {
  return NameAt(replay_cc::kNodeOrderNames, order).value_or("first");
}

std::optional<NodeOrder> ParseNodeOrder(std::string_view name) {
  return ValueNamed<NodeOrder>(replay_cc::kNodeOrderNames, name);
}

const std::vector<std::string>& KnownPolicies() {
  using namespace replay_cc;  // NOLINT(google-build-using-namespace): this file's names
  static const std::vector<std::string> policies = {std::string(kStockUnordered),
                                                    std::string(kStockXpu), std::string(kSolver),
                                                    std::string(kSolverNode)};
  return policies;
}

bool IsStockPolicy(std::string_view policy) {
  return policy == replay_cc::kStockUnordered || policy == replay_cc::kStockXpu;
}

StatusOr<ReplayResult> Replay(const Fleet& fleet, const std::vector<Job>& jobs,
                              const ReplayOptions& options) {
  using namespace replay_cc;  // NOLINT(google-build-using-namespace): this file's helpers
  ASSIGN_OR_RETURN(const bool stock, CheckPolicies(options));
  ASSIGN_OR_RETURN(const auto configured, ReplayConfig(fleet, options));
  std::unique_ptr<StockAllocator> allocator;
  if (stock) {
    ASSIGN_OR_RETURN(allocator, StartAllocator(options, configured.first));
  }
  ReplayResult result = ResultHeader(fleet, jobs, options, stock);
  const PolicyRun run{options, allocator.get(), configured.first, configured.second};
  for (const std::string& policy : options.policies) {
    ASSIGN_OR_RETURN(PolicyMetrics metrics, ReplayPolicy(fleet, jobs, policy, run));
    result.policies.push_back(std::move(metrics));
  }
  return result;
}

}  // namespace xpu::lab
