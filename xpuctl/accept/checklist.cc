#include "xpuctl/accept/checklist.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "base/enum_names.h"
#include "base/text.h"
#include "controller/semver.h"

namespace xpu::accept {

namespace {
namespace checklist_cc {

using S = StageStatus;

bool Ran(S s) { return s == S::kPass || s == S::kFail; }

ChecklistItem Item(size_t index, ItemStatus status, std::string evidence, std::string cover = "") {
  return ChecklistItem{std::string(kChecklistItems[index]), status, std::move(evidence),
                       std::move(cover)};
}

// covered-fail when a stage failed, covered-pass when they ran, else not covered.
ItemStatus FromStages(const VendorResults& v, std::initializer_list<std::string_view> stages) {
  bool any = false;
  for (std::string_view s : stages) {
    if (v.Status(s) == S::kFail) return ItemStatus::kCoveredFail;
    any = any || v.Status(s) == S::kPass;
  }
  return any ? ItemStatus::kCoveredPass : ItemStatus::kNotCovered;
}

std::string StageWord(const VendorResults& v, std::string_view stage) {
  const StageStatus s = v.Status(stage);
  std::string out = std::string(stage) + " " + std::string(StageStatusName(s));
  const Result* r = v.For(stage);
  if (r != nullptr && s != S::kPass && !r->Stage(stage).reason.empty()) {
    out += " (" + Abbreviate(r->Stage(stage).reason, 160) + ")";
  }
  return out;
}

// The facts of the result that stands for `stage` (VendorResults::For), that stage's part.
template <typename Part>
const Part* Facts(const VendorResults& v, std::string_view stage, Part ResultFacts::*part) {
  const Result* r = v.For(stage);
  return r == nullptr ? nullptr : &(r->facts.*part);
}

ChecklistItem Framework(const VendorResults& v) {
  std::string ev = StageWord(v, "environment") + "; " + StageWord(v, "operators");
  if (const EnvironmentFacts* f = Facts(v, "environment", &ResultFacts::environment)) {
    ev += "; torch " + (f->torch_version.empty() ? "?" : f->torch_version) + ", extension " +
          (f->extension_version.empty() ? "none" : f->extension_version) + ", toolkit " +
          (f->toolkit_version.empty() ? "?" : f->toolkit_version);
  }
  if (const OperatorFacts* f = Facts(v, "operators", &ResultFacts::operators);
      f != nullptr && f->operators_total > 0) {
    ev += "; operators passed " + std::to_string(f->operators_passed) + "/" +
          std::to_string(f->operators_total);
  }
  const ItemStatus st = FromStages(v, {"environment", "operators"});
  return Item(0, st, ev,
              st == ItemStatus::kNotCovered ? "run the environment and operators stages" : "");
}

ChecklistItem ModelCoverage(const VendorResults& v) {
  std::string ev = "the kit's model only, a small decoder-only LM: " + StageWord(v, "convergence") +
                   "; " + StageWord(v, "performance");
  if (const ConvergenceFacts* f = Facts(v, "convergence", &ResultFacts::convergence);
      f != nullptr && f->final_loss_delta) {
    ev += "; final loss delta " + FormatNumber(*f->final_loss_delta * 100) + " %";
  }
  if (const PerformanceFacts* f = Facts(v, "performance", &ResultFacts::performance);
      f != nullptr && f->train_tokens_per_second) {
    ev += "; training " + FormatNumber(*f->train_tokens_per_second) + " tokens/s";
  }
  return Item(1, FromStages(v, {"convergence", "performance"}), ev,
              "models beyond the kit's decoder-only LM are not covered: run your own models' "
              "training and inference on the vendor's devices");
}

ChecklistItem OperatorGaps(const VendorResults& v) {
  const OperatorFacts* f = Facts(v, "operators", &ResultFacts::operators);
  if (f == nullptr || !Ran(v.Status("operators"))) {
    return Item(2, ItemStatus::kNotCovered, StageWord(v, "operators"), "run the operators stage");
  }
  std::string ev = std::to_string(f->gaps.size()) + " operator gaps, " +
                   std::to_string(f->fallbacks.size()) + " CPU fallbacks of " +
                   std::to_string(f->operators_total) + " operator checks";
  std::vector<std::string> named;
  for (const OperatorGap& g : f->gaps) {
    named.push_back(g.op + "/" + g.dtype + ": " + Abbreviate(g.error, 120));
  }
  for (const Fallback& b : f->fallbacks) named.push_back(b.op + " fell back to the CPU");
  if (!named.empty()) ev += ": " + Join(named, "; ");
  const bool clean = f->gaps.empty() && f->fallbacks.empty() && v.Status("operators") == S::kPass;
  return Item(2, clean ? ItemStatus::kCoveredPass : ItemStatus::kCoveredFail, ev);
}

std::vector<std::string> Images(const VendorResults& v) {
  std::vector<std::string> out;
  for (const Result& r : v.results) {
    if (!r.image.empty() && std::find(out.begin(), out.end(), r.image) == out.end()) {
      out.push_back(r.image);
    }
  }
  return out;
}

ChecklistItem ContainerImages(const VendorResults& v) {
  const std::vector<std::string> images = Images(v);
  if (images.empty()) {
    return Item(3, ItemStatus::kNotCovered, "the results name no image",
                "run through `xpuctl accept run`, which records the class's image");
  }
  std::string ev = "image " + Join(images, ", ");
  if (const EnvironmentFacts* f = Facts(v, "environment", &ResultFacts::environment)) {
    ev += "; needed extension " + (f->extension_version.empty() ? "none" : f->extension_version) +
          ", toolkit " + (f->toolkit_version.empty() ? "?" : f->toolkit_version);
  }
  ev += "; " + StageWord(v, "environment");
  const S env = v.Status("environment");
  const ItemStatus st = env == S::kFail   ? ItemStatus::kCoveredFail
                        : env == S::kPass ? ItemStatus::kCoveredPass
                                          : ItemStatus::kNotCovered;
  return Item(3, st, ev,
              st == ItemStatus::kNotCovered ? "run the environment stage in the image" : "");
}

ChecklistItem KubernetesInterfaces(const VendorResults& v) {
  std::set<std::string> nodes;
  for (const Result& r : v.results) nodes.insert(r.node.empty() ? "?" : r.node);
  std::string ev = std::to_string(v.results.size()) + " result(s) from pods on node(s) " +
                   Join(nodes, ", ") + ", each on a claim prepared through DRA";
  const EnvironmentFacts* f = Facts(v, "environment", &ResultFacts::environment);
  if (f == nullptr || f->claimed_devices.empty()) {
    return Item(4, ItemStatus::kNotCovered, ev + "; the claim's devices were not recorded",
                "run the environment stage through `xpuctl accept run`, which records the "
                "claimed devices against those the framework sees");
  }
  ev += "; claimed " + Join(f->claimed_devices, ",") + ", the framework sees " +
        std::to_string(f->framework_devices.size());
  const bool match = f->framework_devices.size() == f->claimed_devices.size() &&
                     v.Status("environment") != S::kFail;
  return Item(4, match ? ItemStatus::kCoveredPass : ItemStatus::kCoveredFail, ev);
}

ChecklistItem Monitoring(const VendorResults& v) {
  const PowerFacts* f = Facts(v, "power", &ResultFacts::power);
  if (f == nullptr || !Ran(v.Status("power")) || !f->joules) {
    return Item(5, ItemStatus::kNotCovered, StageWord(v, "power"),
                "the power stage from the driver's telemetry (the claim's status.devices[].data "
                "energy), which `xpuctl accept run` fills in");
  }
  std::string ev = "the driver's telemetry: " + FormatNumber(*f->joules) + " J";
  if (f->average_watts) ev += ", average " + FormatNumber(*f->average_watts) + " W";
  if (f->peak_watts) ev += ", peak " + FormatNumber(*f->peak_watts) + " W";
  if (f->power_seconds) ev += " over " + FormatNumber(*f->power_seconds) + " s";
  return Item(5, FromStages(v, {"power"}), ev);
}

ChecklistItem Collectives(const VendorResults& v) {
  std::string ev = StageWord(v, "collectives");
  if (const CollectiveFacts* f = Facts(v, "collectives", &ResultFacts::collectives)) {
    int64_t world = 0;
    std::set<std::string> ops;
    for (const CollectivePoint& p : f->points) {
      world = std::max(world, p.world_size);
      ops.insert(p.op);
    }
    if (!f->backend.empty()) ev += "; backend " + f->backend;
    if (!ops.empty()) ev += "; " + Join(ops, ", ") + " up to " + std::to_string(world) + " ranks";
    if (f->gate_measured_gbps) {
      ev += "; gate " + FormatNumber(*f->gate_measured_gbps) + " GB/s bus bandwidth";
      if (f->gate_expected_gbps) ev += " of " + FormatNumber(*f->gate_expected_gbps) + " expected";
    }
    if (!f->gate_status.empty()) ev += " (" + f->gate_status + ")";
  }
  const ItemStatus st = FromStages(v, {"collectives"});
  return Item(6, st, ev, st == ItemStatus::kNotCovered ? "run the collectives stage" : "");
}

ChecklistItem Virtualization() {
  return Item(7, ItemStatus::kNotCovered, "not covered: the results hold no partition facts",
              "run `xpuctl doctor` on the node: the partitions facts of its NodeInventory (MIG "
              "profiles, vNPU templates, vHCU sizes) would cover it");
}

ChecklistItem FailureRecovery(const VendorResults& v) {
  const StabilityFacts* f = Facts(v, "stability", &ResultFacts::stability);
  if (f == nullptr || !Ran(v.Status("stability")) || (!f->health_events && !f->xids)) {
    return Item(8, ItemStatus::kNotCovered,
                StageWord(v, "stability") + "; no health events or XIDs from the driver",
                "the stability stage run through `xpuctl accept run`, which adds the driver's "
                "health events and XIDs for the claim's devices");
  }
  std::string ev = "soak " + StageWord(v, "stability") + ": " +
                   std::to_string(f->soak_steps.value_or(0)) + " steps, " +
                   std::to_string(f->soak_errors.value_or(0)) + " errors, " +
                   std::to_string(f->nan_steps.value_or(0)) + " NaN steps; the driver saw " +
                   std::to_string(f->health_events.value_or(0)) + " health events, " +
                   std::to_string(f->xids.value_or(0)) + " XIDs";
  return Item(8, FromStages(v, {"stability"}), ev,
              "recovery from an injected fault is not exercised by the kit");
}

ChecklistItem SupportBoundaries(const VendorResults& v, const controller::Config* config) {
  const EnvironmentFacts* f = Facts(v, "environment", &ResultFacts::environment);
  const std::string cover =
      "pass --config with the controller's supportMatrix and run the environment stage (its "
      "driverVersion); `xpuctl doctor` checks the node's versions";
  if (f == nullptr || f->driver_version.empty()) {
    return Item(9, ItemStatus::kNotCovered, "not covered: the results hold no driverVersion",
                cover);
  }
  std::vector<const controller::SupportRule*> rows;
  if (config != nullptr) {
    for (const controller::SupportRule& r : config->support_matrix) {
      if (r.vendor == v.vendor && r.driver) rows.push_back(&r);
    }
  }
  if (rows.empty()) {
    return Item(
        9, ItemStatus::kNotCovered,
        "not covered: driverVersion " + f->driver_version +
            (config == nullptr ? ", no --config" : ", no supportMatrix row for " + v.vendor),
        cover);
  }
  // The result does not say the device's family or model: every row of the vendor is tried.
  std::vector<std::string> tried;
  for (const controller::SupportRule* r : rows) {
    const std::string label = r->vendor + (r->family.empty() ? "" : "/" + r->family) +
                              (r->model.empty() ? "" : "/" + r->model);
    if (controller::InRange(*r->driver, f->driver_version)) {
      return Item(
          9, ItemStatus::kCoveredPass,
          "driverVersion " + f->driver_version + " inside " + r->driver->text + " (" + label + ")");
    }
    tried.push_back(r->driver->text + " (" + label + ")");
  }
  return Item(9, ItemStatus::kCoveredFail,
              "driverVersion " + f->driver_version + " outside " + Join(tried, ", "));
}

struct Side {
  std::string image;
  std::string extension;
  std::string toolkit;
  std::map<std::string, std::string> env;
  int gaps = 0;
  int fallbacks = 0;
};

Side SideOf(const VendorResults& v) {
  Side s;
  s.image = Join(Images(v), ", ");
  if (const EnvironmentFacts* f = Facts(v, "environment", &ResultFacts::environment)) {
    s.extension = f->extension_version;
    s.toolkit = f->toolkit_version;
    s.env = f->env;
  }
  if (const OperatorFacts* f = Facts(v, "operators", &ResultFacts::operators)) {
    s.gaps = static_cast<int>(f->gaps.size());
    s.fallbacks = static_cast<int>(f->fallbacks.size());
  }
  return s;
}

std::string OrNone(const std::string& s) { return s.empty() ? "none" : s; }

std::vector<std::string> EnvDifferences(const std::map<std::string, std::string>& mine,
                                        const std::map<std::string, std::string>& base) {
  std::vector<std::string> out;
  for (const auto& [name, value] : mine) {
    auto it = base.find(name);
    if (it == base.end() || it->second != value) out.push_back(name);
  }
  for (const auto& [name, value] : base) {
    if (mine.find(name) == mine.end()) out.push_back(name + " (unset)");
  }
  return out;
}

// The lines of ReworkCost::items, from its fields.
std::vector<std::string> ReworkItems(const ReworkCost& c) {
  std::vector<std::string> out;
  if (c.image_differs) {
    out.push_back("image: " + c.image + " (baseline " + OrNone(c.baseline_image) + ")");
  }
  if (c.extension != c.baseline_extension) {
    out.push_back("extension package: " + OrNone(c.extension) + " (baseline " +
                  OrNone(c.baseline_extension) + ")");
  }
  if (c.toolkit != c.baseline_toolkit) {
    out.push_back("toolkit: " + OrNone(c.toolkit) + " (baseline " + OrNone(c.baseline_toolkit) +
                  ")");
  }
  if (!c.env_differences.empty()) {
    out.push_back("environment variables: " + Join(c.env_differences, ", "));
  }
  if (c.operator_gaps > 0 || c.operator_gaps != c.baseline_operator_gaps) {
    out.push_back("operator gaps: " + std::to_string(c.operator_gaps) + " (baseline " +
                  std::to_string(c.baseline_operator_gaps) + ")");
  }
  if (c.fallbacks > 0 || c.fallbacks != c.baseline_fallbacks) {
    out.push_back("CPU fallbacks: " + std::to_string(c.fallbacks) + " (baseline " +
                  std::to_string(c.baseline_fallbacks) + ")");
  }
  if (!c.failed_stages.empty()) out.push_back("failed stages: " + Join(c.failed_stages, ", "));
  if (!c.not_run_stages.empty()) {
    out.push_back("stages the baseline ran, not run here: " + Join(c.not_run_stages, ", "));
  }
  return out;
}

}  // namespace checklist_cc
using namespace checklist_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

std::string_view ItemStatusName(ItemStatus status) {
  static constexpr std::string_view kNames[] = {"covered-pass", "covered-fail", "not-covered"};
  static_assert(NamesCover(kNames, ItemStatus::kNotCovered));
  return NameAt(kNames, status).value_or("not-covered");
}

std::vector<ChecklistItem> Checklist(const VendorResults& vendor,
                                     const controller::Config* config) {
  return {Framework(vendor),
          ModelCoverage(vendor),
          OperatorGaps(vendor),
          ContainerImages(vendor),
          KubernetesInterfaces(vendor),
          Monitoring(vendor),
          Collectives(vendor),
          Virtualization(),
          FailureRecovery(vendor),
          SupportBoundaries(vendor, config)};
}

ReworkCost DeriveReworkCost(const VendorResults& vendor, const VendorResults& baseline) {
  ReworkCost c;
  c.vendor = vendor.vendor;
  c.baseline = baseline.vendor;
  c.is_baseline = vendor.vendor == baseline.vendor;
  const Side mine = SideOf(vendor);
  const Side base = SideOf(baseline);
  c.image = mine.image;
  c.baseline_image = base.image;
  c.image_differs = !c.is_baseline && mine.image != base.image;
  c.extension = mine.extension;
  c.baseline_extension = base.extension;
  c.toolkit = mine.toolkit;
  c.baseline_toolkit = base.toolkit;
  if (!c.is_baseline) c.env_differences = EnvDifferences(mine.env, base.env);
  c.operator_gaps = mine.gaps;
  c.baseline_operator_gaps = base.gaps;
  c.fallbacks = mine.fallbacks;
  c.baseline_fallbacks = base.fallbacks;
  for (std::string_view stage : kStages) {
    const StageStatus s = vendor.Status(stage);
    if (s == StageStatus::kFail) c.failed_stages.emplace_back(stage);
    if (s == StageStatus::kNotRun && Ran(baseline.Status(stage))) {
      c.not_run_stages.emplace_back(stage);
    }
  }
  c.items = ReworkItems(c);
  return c;
}

}  // namespace xpu::accept
