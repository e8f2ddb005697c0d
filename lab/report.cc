// The replay's self-contained HTML report: the facts, the table, and three inline SVG plots.
// Byte-stable: every number is printed with a fixed precision, nothing depends on the clock.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/text.h"
#include "lab/result.h"

namespace xpu::lab {
namespace {
namespace report_cc {

// Okabe-Ito, colour-blind safe; policy i gets kColours[i % size].
constexpr std::array<const char*, 8> kColours = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                                 "#e69f00", "#56b4e9", "#000000", "#f0e442"};

// The plot's frame, in SVG user units.
constexpr double kWidth = 720;
constexpr double kHeight = 260;
constexpr double kLeft = 56;
constexpr double kPlotWidth = 500;
constexpr double kTop = 14;
constexpr double kPlotHeight = 204;

std::string Num(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

struct Point {
  double x;
  double y;
};

struct Plot {
  std::string title;    // for the SVG's <title>
  std::string x_label;  // under the x axis
  std::string y_label;  // beside the y axis
  double x_max = 1;     // data range: 0..x_max, 0..y_max, each a whole number of steps
  double x_step = 1;    // between ticks
  double y_max = 1;
  double y_step = 1;
  std::vector<std::vector<Point>> lines;  // one per policy, in data units; may be empty
};

// A step of 1, 2 or 5 x 10^k that cuts 0..`range` into about 5 parts.
double NiceStep(double range) {
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double raw = range / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  double nice = 10;
  if (norm <= 1) {
    nice = 1;
  } else if (norm <= 2) {
    nice = 2;
  } else if (norm <= 5) {
    nice = 5;
  }
  return nice * magnitude;
}

// The decimals a tick label needs at `step`.
int TickDecimals(double step) {
  if (step >= 1) return 0;
  return static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
}

// 0..`max` widened to a whole number of nice steps; {axis max, step}.
std::pair<double, double> NiceAxis(double max) {
  const double step = NiceStep(max);
  double top = std::ceil(max / step - 1e-9) * step;
  if (!(top > 0)) top = step;
  return {top, step};
}

double SvgX(const Plot& plot, double x) {
  return kLeft + std::clamp(x / plot.x_max, 0.0, 1.0) * kPlotWidth;
}
double SvgY(const Plot& plot, double y) {
  return kTop + kPlotHeight - std::clamp(y / plot.y_max, 0.0, 1.0) * kPlotHeight;
}

// Appends every part to `out`.
void Put(std::string& out, std::initializer_list<std::string_view> parts) {
  for (const auto part : parts) out += part;
}

std::string Svg(const Plot& plot, const std::vector<std::string>& names) {
  std::string s;
  Put(s, {"<svg width=\"", Num(kWidth, 0), "\" height=\"", Num(kHeight, 0), "\" viewBox=\"0 0 ",
          Num(kWidth, 0), " ", Num(kHeight, 0), "\" role=\"img\">\n<title>", HtmlEscape(plot.title),
          "</title>\n"});
  const double bottom = kTop + kPlotHeight;
  const double right = kLeft + kPlotWidth;
  // Ticks and grid.
  const int x_ticks = static_cast<int>(std::lround(plot.x_max / plot.x_step));
  const int y_ticks = static_cast<int>(std::lround(plot.y_max / plot.y_step));
  for (int i = 0; i <= y_ticks; ++i) {
    const double v = plot.y_step * i;
    const std::string y = Num(SvgY(plot, v), 1);
    Put(s, {"<line class=\"grid\" x1=\"", Num(kLeft, 1), "\" y1=\"", y, "\" x2=\"", Num(right, 1),
            "\" y2=\"", y, "\"/>\n"});
    Put(s, {"<text class=\"tick\" x=\"", Num(kLeft - 6, 1), "\" y=\"", y,
            "\" text-anchor=\"end\" dominant-baseline=\"middle\">",
            Num(v, TickDecimals(plot.y_step)), "</text>\n"});
  }
  for (int i = 0; i <= x_ticks; ++i) {
    const double v = plot.x_step * i;
    const std::string x = Num(SvgX(plot, v), 1);
    Put(s, {"<line class=\"axis\" x1=\"", x, "\" y1=\"", Num(bottom, 1), "\" x2=\"", x, "\" y2=\"",
            Num(bottom + 4, 1), "\"/>\n"});
    Put(s, {"<text class=\"tick\" x=\"", x, "\" y=\"", Num(bottom + 16, 1),
            "\" text-anchor=\"middle\">", Num(v, TickDecimals(plot.x_step)), "</text>\n"});
  }
  Put(s, {"<polyline class=\"axis\" points=\"", Num(kLeft, 1), ",", Num(kTop, 1), " ",
          Num(kLeft, 1), ",", Num(bottom, 1), " ", Num(right, 1), ",", Num(bottom, 1), "\"/>\n"});
  Put(s,
      {"<text class=\"label\" x=\"", Num(kLeft + kPlotWidth / 2, 1), "\" y=\"", Num(kHeight - 6, 1),
       "\" text-anchor=\"middle\">", HtmlEscape(plot.x_label), "</text>\n"});
  const std::string mid_y = Num(kTop + kPlotHeight / 2, 1);
  Put(s, {"<text class=\"label\" x=\"14.0\" y=\"", mid_y, "\" transform=\"rotate(-90 14.0 ", mid_y,
          ")\" text-anchor=\"middle\">", HtmlEscape(plot.y_label), "</text>\n"});

  // The lines.
  bool any = false;
  for (size_t i = 0; i < plot.lines.size(); ++i) {
    const auto& line = plot.lines[i];
    if (line.empty()) continue;
    any = true;
    Put(s, {"<polyline class=\"series\" stroke=\"", kColours[i % kColours.size()], "\" points=\""});
    for (size_t p = 0; p < line.size(); ++p) {
      if (p > 0) s += ' ';
      Put(s, {Num(SvgX(plot, line[p].x), 1), ",", Num(SvgY(plot, line[p].y), 1)});
    }
    s += "\"/>\n";
  }
  if (!any) {
    Put(s, {"<text class=\"nodata\" x=\"", Num(kLeft + kPlotWidth / 2, 1), "\" y=\"", mid_y,
            "\" text-anchor=\"middle\">no data</text>\n"});
  }

  // The legend.
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string y = Num(kTop + 8 + 18 * static_cast<double>(i), 1);
    Put(s, {"<line stroke=\"", kColours[i % kColours.size()], "\" stroke-width=\"3\" x1=\"",
            Num(right + 16, 1), "\" y1=\"", y, "\" x2=\"", Num(right + 36, 1), "\" y2=\"", y,
            "\"/>\n"});
    Put(s, {"<text class=\"legend\" x=\"", Num(right + 42, 1), "\" y=\"", y,
            "\" dominant-baseline=\"middle\">", HtmlEscape(names[i]), "</text>\n"});
  }
  s += "</svg>\n";
  return s;
}

// A step function (each value holds to the next point) as points, run on to `x_end`; x scaled
// by `x_scale`, y by `y_scale`.
std::vector<Point> StepLine(const std::vector<SeriesPoint>& series, double x_scale, double y_scale,
                            double x_end) {
  std::vector<Point> out;
  for (size_t i = 0; i < series.size(); ++i) {
    const double x = series[i].t * x_scale;
    if (i > 0) out.push_back({x, series[i - 1].value * y_scale});
    out.push_back({x, series[i].value * y_scale});
  }
  if (!series.empty() && series.back().t * x_scale < x_end) {
    out.push_back({x_end, series.back().value * y_scale});
  }
  return out;
}

// A plot over simulated time (hours) of one series of each policy, as step lines with the values
// times `y_scale`. The y axis runs to `y_max` when given, else to fit the largest value (at least
// 1).
Plot TimePlot(const ReplayResult& result, std::vector<SeriesPoint> PolicyMetrics::*series,
              std::string title, std::string y_label, double y_scale, std::optional<double> y_max) {
  Plot plot;
  plot.title = std::move(title);
  plot.x_label = "simulated time (hours)";
  plot.y_label = std::move(y_label);
  double end = 0;
  double most = 1;
  for (const auto& m : result.policies) {
    for (const auto& p : m.*series) {
      end = std::max(end, p.t);
      most = std::max(most, p.value * y_scale);
    }
  }
  const double end_hours = end / 3600;
  std::tie(plot.x_max, plot.x_step) = NiceAxis(end_hours);
  std::tie(plot.y_max, plot.y_step) = NiceAxis(y_max.value_or(most));
  for (const auto& m : result.policies) {
    plot.lines.push_back(StepLine(m.*series, 1.0 / 3600, y_scale, end_hours));
  }
  return plot;
}

Plot UtilisationPlot(const ReplayResult& result) {
  return TimePlot(result, &PolicyMetrics::utilisation_series, "Utilisation over time",
                  "busy devices (%)", 100, 100);
}

Plot StrandedPlot(const ReplayResult& result) {
  return TimePlot(result, &PolicyMetrics::stranded_series, "Stranded devices over time",
                  "stranded devices", 1, std::nullopt);
}

Plot DelayPlot(const ReplayResult& result) {
  Plot plot;
  plot.title = "Queueing delay, cumulative distribution";
  plot.x_label = "queueing delay (seconds, to the 99th percentile)";
  plot.y_label = "share of placed jobs";
  plot.y_max = 1;
  plot.y_step = 0.2;
  std::vector<std::vector<double>> sorted;
  double p99 = 0;
  double most = 0;
  for (const auto& m : result.policies) {
    auto d = m.queue_delays;
    std::sort(d.begin(), d.end());
    if (!d.empty()) {
      const auto n = static_cast<double>(d.size());
      const auto at = static_cast<size_t>(std::max(std::ceil(0.99 * n) - 1, 0.0));
      p99 = std::max(p99, d[std::min(at, d.size() - 1)]);
      most = std::max(most, d.back());
    }
    sorted.push_back(std::move(d));
  }
  const double x_end = p99 > 0 ? p99 : (most > 0 ? most : 1);
  std::tie(plot.x_max, plot.x_step) = NiceAxis(x_end);
  for (const auto& d : sorted) {
    std::vector<Point> line;
    if (!d.empty()) {
      const auto n = static_cast<double>(d.size());
      double share = 0;
      line.push_back({0, 0});
      for (size_t i = 0; i < d.size() && d[i] <= plot.x_max; ++i) {
        if (i + 1 < d.size() && d[i + 1] == d[i]) continue;  // the end of a run of equal delays
        const double x = std::max(d[i], 0.0);
        line.push_back({x, share});
        share = static_cast<double>(i + 1) / n;
        line.push_back({x, share});
      }
      line.push_back({plot.x_max, share});
    }
    plot.lines.push_back(std::move(line));
  }
  return plot;
}

constexpr std::string_view kStyle =
    R"(body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:60em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
table{border-collapse:collapse}th,td{padding:.25em .7em;border-bottom:1px solid #ddd}
th{text-align:left;background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
svg{display:block;margin:.5em 0}svg text{font-size:11px;fill:#333}
svg .grid{stroke:#e4e4e4}svg .axis{stroke:#555;fill:none}
svg .series{fill:none;stroke-width:1.5}svg .nodata{font-size:14px;fill:#888}
p.note{color:#555;font-size:.9em}
)";

}  // namespace report_cc
}  // namespace

std::string ReportHtml(const ReplayResult& result) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>xpu-dra placement lab</title>\n<style>\n";
  s += report_cc::kStyle;
  s += "</style>\n</head>\n<body>\n<h1>xpu-dra placement lab</h1>\n<dl class=\"facts\">\n";
  s += "<dt>trace</dt><dd>" + HtmlEscape(result.trace) + "</dd>\n";
  s += "<dt>fleet</dt><dd>" + HtmlEscape(result.fleet) + " (" + std::to_string(result.nodes) +
       " nodes, " + std::to_string(result.devices) + " devices)</dd>\n";
  s += "<dt>node order</dt><dd>" + HtmlEscape(result.node_order) + "</dd>\n";
  if (!result.scheduler.empty()) {
    s += "<dt>scheduler</dt><dd>" + HtmlEscape(SchedulerLine(result)) + "</dd>\n";
  }
  s += "<dt>jobs</dt><dd>" + std::to_string(result.jobs) + "</dd>\n</dl>\n";

  s +=
      "<table>\n<tr><th>policy</th><th>placed</th><th>unplaced</th><th>rejected</th>"
      "<th>rule viol.</th><th>below-best bw</th><th>below-fleet-best</th><th>below-vendor-best</th>"
      "<th>bottleneck GB/s</th><th>stranded dev&#183;h</th>"
      "<th>delay p50 s</th><th>delay p95 s</th><th>util %</th><th>gangs</th></tr>\n";
  std::vector<std::string> names;
  for (const auto& m : result.policies) {
    names.push_back(m.policy);
    report_cc::Put(s, {"<tr><td>", HtmlEscape(m.policy), "</td>"});
    for (const auto& cell : TableCells(m)) {
      report_cc::Put(s, {"<td class=\"n\">", HtmlEscape(cell), "</td>"});
    }
    s += "</tr>\n";
  }
  s += "</table>\n";
  s += "<p class=\"note\">placed: jobs started; unplaced: still waiting when the trace ran out; "
       "rejected: fit no node or gang of the fleet even when empty; rule viol.: jobs given a "
       "device set their node's rules forbid; below-best bw: jobs whose devices' bottleneck "
       "bandwidth was below the best a rule-keeping set of that count had on the node's free "
       "devices at that moment (in brackets, the mean shortfall); below-fleet-best: single-node "
       "jobs of 2 or more devices whose bottleneck was below the best any node offered at that "
       "moment (what the node choice lost); below-vendor-best: those below the best any node of "
       "the chosen node's vendor offered; bottleneck GB/s: the mean bottleneck bandwidth of the "
       "single-node jobs of 2 or more devices; "
       "stranded dev&#183;h: "
       "device-hours free on a node where a waiting job fitted by count but was not placed; "
       "delay: seconds from arrival to start; util: busy device-seconds over fleet devices "
       "times the arrival window (first to last arrival).</p>\n";
  if (AnyPartitions(result)) {
    s += "<p>Partition jobs:</p>\n<ul>\n";
    for (const auto& m : result.policies) {
      report_cc::Put(s,
                     {"<li>", HtmlEscape(m.policy), ": ", HtmlEscape(PartitionLine(m)), "</li>\n"});
    }
    s += "</ul>\n<p class=\"note\">waited on fragmentation: partition jobs that waited while "
         "a device offering their profile had the free slots and units for them but no legal "
         "placement; largest profile fits: the share of partitionable device-time during which "
         "each device's largest profile still fitted on it.</p>\n";
  }
  for (const auto& m : result.policies) {
    for (const std::string& note : m.notes) {
      report_cc::Put(
          s, {"<p class=\"note\">", HtmlEscape(m.policy), ": ", HtmlEscape(note), "</p>\n"});
    }
  }

  s += "<h2>Utilisation over time</h2>\n" +
       report_cc::Svg(report_cc::UtilisationPlot(result), names);
  s += "<p class=\"note\">The share of the fleet's devices held by running jobs, as simulated "
       "time goes on.</p>\n";
  s += "<h2>Queueing delay</h2>\n" + report_cc::Svg(report_cc::DelayPlot(result), names);
  s += "<p class=\"note\">The cumulative distribution of the queueing delay (arrival to start) "
       "of placed jobs, from a sample of at most 500 per policy, up to the largest 99th "
       "percentile: a line further up and to the left starts jobs sooner.</p>\n";
  s += "<h2>Stranded devices over time</h2>\n" +
       report_cc::Svg(report_cc::StrandedPlot(result), names);
  s += "<p class=\"note\">Stranded devices: devices free on a node where a waiting job fitted by "
       "count (its devices per node at most the node's free devices) but was not placed; "
       "the line shows how many devices sat so at each moment.</p>\n";
  s += "</body>\n</html>\n";
  return s;
}

}  // namespace xpu::lab
