// xpu-crash-trials: SIGKILLs the plugin during prepare and unprepare and the controller during
// publishing and gang placement under injected API faults, and checks after each kill that
// nothing was lost, doubled or orphaned and that gangs are whole or absent (plugin_trials.h,
// controller_trials.h); with --scale-nodes, kills the controller mid-publish over a simulated
// fleet and counts the writes after recovery (scale_trials.h). Run by hand through
// scripts/crash-trials, not by CI.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/flags.h"
#include "e2e/trials/controller_trials.h"
#include "e2e/trials/plugin_trials.h"
#include "e2e/trials/scale_trials.h"

namespace {

namespace trials = xpu::e2e::trials;

struct Options {
  int plugin_kills = 1000;
  int controller_kills = 200;
  int scale_nodes = 0;  // 0: no run at scale
  int scale_kills = 20;
  bool named_part = false;  // --plugin or --controller given
  std::string controller_binary = XPU_CONTROLLER_BINARY;
  uint64_t seed = 0;  // 0: a random one, printed
  std::string work_dir;
  bool keep = false;
};

constexpr const char* kUsage =
    "usage: xpu-crash-trials [--plugin N] [--controller M] [--scale-nodes F [--scale-kills K]]\n"
    "                        [--seed S] [--work-dir DIR] [--keep]\n"
    "SIGKILLs xpu-dra-plugin N times (default 1000) during batches of prepare and unprepare,\n"
    "and xpu-dra-controller M times (default 200) while it publishes and places gangs under 10%\n"
    "injected API faults; after each kill checks that no claim is lost or prepared twice, that\n"
    "CDI specs and checkpoint entries match, that the slices have no duplicate or orphan, that\n"
    "gangs are whole or absent, and that all of it converged within its bound. With\n"
    "--scale-nodes, kills the controller K times mid-publish over F simulated nodes and checks\n"
    "that the fleet converges with only the writes needed. Exits 1 on the first violation,\n"
    "naming it and the logs.\n"
    "  --plugin N        plugin kills (0 skips the part)\n"
    "  --controller M    controller kills (0 skips the part)\n"
    "  --scale-nodes F   the run at scale over F nodes (0, the default, skips it; alone, it\n"
    "                    runs without the other parts unless --plugin or --controller is given)\n"
    "  --scale-kills K   controller kills at scale (default 20)\n"
    "  --controller-binary PATH  the xpu-dra-controller to kill (default: the build's)\n"
    "  --seed S          the random choices (batches, kill times, changes); default random\n"
    "  --work-dir DIR    logs and the plugin's state (default: a new directory in $TMPDIR)\n"
    "  --keep            keep the work dir after a run that passed\n";

xpu::StatusOr<Options> ParseFlags(const std::vector<std::string>& args, bool* help) {
  Options o;
  xpu::FlagReader flags(args);
  while (flags.Next()) {
    if (flags.Is("--plugin")) {
      ASSIGN_OR_RETURN(const int64_t n, flags.Int(0, 1'000'000));
      o.plugin_kills = static_cast<int>(n);
      o.named_part = true;
    } else if (flags.Is("--controller")) {
      ASSIGN_OR_RETURN(const int64_t n, flags.Int(0, 1'000'000));
      o.controller_kills = static_cast<int>(n);
      o.named_part = true;
    } else if (flags.Is("--scale-nodes")) {
      ASSIGN_OR_RETURN(const int64_t n, flags.Int(0, 100'000));
      o.scale_nodes = static_cast<int>(n);
    } else if (flags.Is("--scale-kills")) {
      ASSIGN_OR_RETURN(const int64_t n, flags.Int(1, 10'000));
      o.scale_kills = static_cast<int>(n);
    } else if (flags.Is("--seed")) {
      ASSIGN_OR_RETURN(const int64_t n, flags.Int(1, INT64_MAX));
      o.seed = static_cast<uint64_t>(n);
    } else if (flags.Is("--controller-binary")) {
      ASSIGN_OR_RETURN(o.controller_binary, flags.Value());
    } else if (flags.Is("--work-dir")) {
      ASSIGN_OR_RETURN(o.work_dir, flags.Value());
    } else if (flags.Is("--keep")) {
      o.keep = true;
    } else {
      return flags.Unknown();
    }
  }
  *help = flags.help();
  if (o.scale_nodes > 0 && !o.named_part) o.plugin_kills = o.controller_kills = 0;
  return o;
}

xpu::StatusOr<std::string> MakeWorkDir(const std::string& wanted) {
  if (!wanted.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(wanted, ec);
    if (ec) return xpu::InternalError("create " + wanted + ": " + ec.message());
    return std::filesystem::absolute(wanted).string();
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/xpu-crash-trials-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return xpu::InternalError("create a work dir " + pattern + ": mkdtemp failed");
  }
  return pattern;
}

// Runs one part with `part` (its kill plan given `kills`, the run's `seed` and the work dir
// `work_dir`); prints its summary and adds its figures to `results`.
template <typename PartOptions>
xpu::Status RunPart(PartOptions part, int kills, uint64_t seed, const std::string& work_dir,
                    xpu::StatusOr<trials::TrialStats> (*run)(const PartOptions&),
                    std::vector<trials::TrialStats>& results) {
  part.plan.kills = kills;
  part.plan.seed = seed;
  part.plan.work_dir = work_dir;
  ASSIGN_OR_RETURN(trials::TrialStats stats, run(part));
  std::cout << trials::Summary(stats) << std::endl;
  results.push_back(std::move(stats));
  return xpu::OkStatus();
}

// The parts `o` asks for, one after another, each in its own directory under `work_dir`; the
// first error ends the run.
xpu::StatusOr<std::vector<trials::TrialStats>> RunParts(const Options& o,
                                                        const std::string& work_dir) {
  std::vector<trials::TrialStats> results;
  if (o.plugin_kills > 0) {
    trials::PluginTrialOptions plugin;
    plugin.plugin_binary = XPU_PLUGIN_BINARY;
    RETURN_IF_ERROR(RunPart(plugin, o.plugin_kills, o.seed, work_dir + "/plugin",
                            &trials::RunPluginTrials, results));
  }
  if (o.controller_kills > 0) {
    RETURN_IF_ERROR(
        RunPart(trials::ControllerTrialOptions{.controller_binary = o.controller_binary},
                o.controller_kills, o.seed, work_dir + "/controller", &trials::RunControllerTrials,
                results));
  }
  if (o.scale_nodes > 0) {
    const trials::ScaleTrialOptions scale = {.controller_binary = o.controller_binary,
                                             .kube_sim_binary = XPU_KUBE_SIM_BINARY,
                                             .nodes = o.scale_nodes};
    RETURN_IF_ERROR(RunPart(scale, o.scale_kills, o.seed, work_dir + "/scale",
                            &trials::RunScaleTrials, results));
  }
  return results;
}

int Fail(const xpu::Status& s, const std::string& work_dir) {
  std::cerr << "crash-trials: " << (s.code() == xpu::StatusCode::kDataLoss ? "VIOLATION: " : "")
            << s.message() << "\n";
  if (!work_dir.empty()) std::cerr << "crash-trials: work dir kept: " << work_dir << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  xpu::StatusOr<Options> options =
      ParseFlags(std::vector<std::string>(argv + 1, argv + argc), &help);
  if (help) {
    std::cout << kUsage;
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "crash-trials: " << options.status().message() << "\n" << kUsage;
    return 2;
  }
  if (options->seed == 0) options->seed = std::random_device()() % 1'000'000'000 + 1;
  xpu::StatusOr<std::string> work_dir = MakeWorkDir(options->work_dir);
  if (!work_dir.ok()) return Fail(work_dir.status(), "");
  std::cout << "crash-trials: seed " << options->seed << " (--seed " << options->seed
            << " repeats the choices; kill moments depend on timing), work dir " << *work_dir
            << std::endl;

  xpu::StatusOr<std::vector<trials::TrialStats>> results = RunParts(*options, *work_dir);
  if (!results.ok()) return Fail(results.status(), *work_dir);
  double seconds = 0;
  for (const trials::TrialStats& r : *results) seconds += r.seconds;
  std::printf("crash-trials: ok, seed %llu, %.1f s\n",
              static_cast<unsigned long long>(options->seed),  // NOLINT(google-runtime-int)
              seconds);
  if (!options->keep && options->work_dir.empty()) {  // ours, not one the caller named
    std::error_code ec;
    std::filesystem::remove_all(*work_dir, ec);
  }
  return 0;
}
