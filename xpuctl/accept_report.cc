// xpuctl accept report RESULT.json... [--baseline VENDOR] [--config FILE] [-o html|json|text]
// [--out FILE]: the acceptance report (xpuctl/accept/report.h). It exits 0 once the report is
// written, whether or not the vendors passed: the report is the verdict, and a pipeline reads the
// pass/fail per vendor from it (JSON: vendors[].passed). Bad input exits 2, naming file and field.
#include <ostream>
#include <string>
#include <vector>

#include "xpuctl/accept/report.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunAcceptReport(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"text", "json", "html"}));
  const std::vector<std::string> files = RepeatedFlag(flags, "args");
  if (files.empty()) {
    return InvalidArgumentError("accept report: give one or more RESULT.json files");
  }
  std::vector<accept::Result> results;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(accept::Result r, accept::LoadResultFile(file));
    results.push_back(std::move(r));
  }
  accept::ReportOptions options;
  if (auto it = flags.find("baseline"); it != flags.end()) options.baseline = it->second;
  controller::Config config;
  if (flags.contains("config")) {
    ASSIGN_OR_RETURN(config, LoadConfigFlag(flags));
    options.config = &config;
  }
  ASSIGN_OR_RETURN(const accept::Report report, accept::BuildReport(std::move(results), options));
  std::string text;
  if (format == "json") {
    text = accept::ReportJson(report).dump(2) + "\n";
  } else if (format == "html") {
    text = accept::RenderHtml(report);
  } else {
    text = accept::RenderText(report);
  }
  return WriteOutput(flags, out, text);
}

}  // namespace xpu::cli::internal
