// xpuctl accept run: render the Jobs (accept_render.cc's flags), apply them to the cluster of
// --kubeconfig, wait, collect, label and clean up (xpuctl/accept/run.h).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "api/client/kubeconfig.h"
#include "base/clock.h"
#include "base/flags.h"
#include "base/text.h"
#include "xpuctl/accept/internal/json_fields.h"
#include "xpuctl/accept/jobs.h"
#include "xpuctl/accept/policy.h"
#include "xpuctl/accept/run.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

using accept::internal::Field;
using accept::internal::Str;

// -o json: the run id, per pod its stage verdicts and result file, what did not finish and why,
// the labelled nodes, what was created and what clean-up left.
nlohmann::json SummaryJson(const accept::RunOutcome& outcome) {
  nlohmann::json results = nlohmann::json::array();
  for (const accept::PodResult& r : outcome.results) {
    nlohmann::json stages = nlohmann::json::object();
    const nlohmann::json& s = Field(r.result, "stages");
    if (s.is_object()) {
      for (const auto& [name, stage] : s.items()) stages[name] = Str(stage, "status");
    }
    results.push_back({{"vendor", r.vendor},
                       {"job", r.job},
                       {"pod", r.pod},
                       {"node", r.node},
                       {"file", r.file},
                       {"passed", r.passed},
                       {"stages", stages}});
  }
  nlohmann::json unfinished = nlohmann::json::array();
  for (const accept::Unfinished& u : outcome.unfinished) {
    unfinished.push_back({{"vendor", u.vendor}, {"job", u.job}, {"reason", u.reason}});
  }
  return {{"runId", outcome.run_id},
          {"results", results},
          {"unfinished", unfinished},
          {"timedOut", outcome.timed_out},
          {"labelledNodes", outcome.labelled_nodes},
          {"created", outcome.created},
          {"leftBehind", outcome.left_behind},
          {"exitCode", outcome.exit_code}};
}

// -o text: a table (vendor, node, pod, one column per stage run, result, file), then the Jobs that
// did not finish and why, the labelled nodes and what clean-up left.
void PrintSummary(const accept::RunOutcome& outcome, std::ostream& out) {
  std::vector<std::string> stages;
  for (std::string_view stage : accept::StageNames()) {
    const std::string name(stage);
    if (std::any_of(outcome.results.begin(), outcome.results.end(),
                    [&](const accept::PodResult& r) {
                      return Field(Field(r.result, "stages"), name).is_object();
                    })) {
      stages.push_back(name);
    }
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"VENDOR", "NODE", "POD"};
  for (const std::string& s : stages) header.push_back(s);
  header.insert(header.end(), {"RESULT", "FILE"});
  rows.push_back(header);
  for (const accept::PodResult& r : outcome.results) {
    std::vector<std::string> row = {r.vendor, r.node.empty() ? "-" : r.node, r.pod};
    for (const std::string& s : stages) {
      const std::string status = Str(Field(Field(r.result, "stages"), s), "status");
      row.push_back(status.empty() ? "-" : status);
    }
    row.insert(row.end(), {r.passed ? "PASS" : "FAIL", r.file.empty() ? "-" : r.file});
    rows.push_back(std::move(row));
  }
  out << "run " << outcome.run_id << ": " << outcome.results.size() << " result(s)";
  if (!outcome.unfinished.empty()) out << ", " << outcome.unfinished.size() << " not finished";
  out << "\n";
  if (!outcome.results.empty()) {
    std::vector<size_t> width(header.size(), 0);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) {
        out << row[i] << (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
      }
      out << "\n";
    }
  }
  for (const accept::Unfinished& u : outcome.unfinished) {
    out << u.vendor << ": " << u.reason << "\n";
  }
  if (!outcome.labelled_nodes.empty()) {
    out << "labelled nodes: " << Join(outcome.labelled_nodes) << "\n";
  }
  if (!outcome.left_behind.empty()) {
    out << "clean-up left: " << Join(outcome.left_behind) << "\n";
  }
}

}  // namespace

StatusOr<int> RunAcceptRun(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"text", "json"}));
  ASSIGN_OR_RETURN(AcceptRenderInput in, LoadAcceptRender(flags));
  Clock& clock = RealClock();
  accept::RunOptions options;
  options.run_id = flags.contains("run-id") ? flags.at("run-id") : accept::NewRunId(clock);
  in.request.run_id = options.run_id;
  options.ns = in.request.ns;
  options.capability_class = in.request.capability_class;
  options.label_nodes = flags.contains("label-nodes");
  options.keep = flags.contains("keep");
  if (auto it = flags.find("results-dir"); it != flags.end()) options.results_dir = it->second;
  if (auto it = flags.find("timeout"); it != flags.end()) {
    ASSIGN_OR_RETURN(options.timeout, ParseDuration("--timeout", it->second));
  } else {
    options.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(accept::TimeoutSeconds(in.request.policy)));
  }
  options.poll = std::min<std::chrono::nanoseconds>(std::chrono::seconds(2), options.timeout / 4);
  if (options.label_nodes) {
    RETURN_IF_ERROR(accept::AcceptedLabelKey(options.capability_class).status());
  }
  // Bad input stops here, before anything touches the cluster.
  ASSIGN_OR_RETURN(const accept::RenderedAcceptance rendered,
                   accept::RenderAcceptance(in.request, in.config));
  for (const std::string& note : rendered.notes) std::cerr << "note: " << note << "\n";

  auto flag = [&flags](const char* name) {
    return flags.contains(name) ? flags.at(name) : std::string();
  };
  ASSIGN_OR_RETURN(const api::client::ClusterConfig config,
                   api::client::ResolveUserClusterConfig(flag("kubeconfig"), flag("context")));
  auto client = api::client::Client::Create(config);
  if (!client.ok()) return InternalError(client.status().message());
  auto cluster = accept::NewRealRunCluster(**client);
  if (!cluster.ok()) return InternalError(cluster.status().message());

  auto outcome = accept::RunAcceptance(**cluster, clock, rendered, options, std::cerr);
  // What the cluster refused is not bad input: exit 1, not 2.
  if (!outcome.ok()) return InternalError(outcome.status().message());
  if (format == "json") {
    out << SummaryJson(*outcome).dump(2) << "\n";
  } else {
    PrintSummary(*outcome, out);
  }
  return outcome->exit_code;
}

}  // namespace xpu::cli::internal
