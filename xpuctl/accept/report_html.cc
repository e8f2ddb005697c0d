// The HTML rendering of the acceptance report: one self-contained page, inline CSS, inline SVG
// plots, no scripts and nothing loaded from elsewhere. Every text from the results is escaped.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "base/text.h"
#include "xpuctl/accept/report.h"

namespace xpu::accept {

namespace {
namespace report_html_cc {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
constexpr const char* kDashes[] = {"", "6 3", "2 3", "8 3 2 3"};

constexpr const char* kStyle = R"(body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.pass,.covered-pass{background:#e3f6e3}
.fail,.covered-fail{background:#fbe1e1}
.skip,.not-run,.not-covered{background:#f4f4f4;color:#666}
.num{text-align:right;font-variant-numeric:tabular-nums}
svg{background:#fff;border:1px solid #ddd;margin:0.5em 0 1.5em}
svg text{font-size:11px;fill:#333}
ul.ev{margin:0;padding-left:1.2em}
code{font-size:90%})";

std::string H(std::string_view s) { return HtmlEscape(s); }
std::string Css(std::string_view status) {
  std::string out(status);
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}
std::string Color(size_t i) { return kPalette[i % std::size(kPalette)]; }
std::string N(double v) { return FormatNumber(v); }

// A plot's frame: the axes map data to the drawing area.
struct Frame {
  double x0, x1, y0, y1;  // data ranges
  static constexpr double kLeft = 60, kTop = 20, kWidth = 460, kHeight = 240;
  double X(double x) const { return kLeft + (x1 == x0 ? 0 : (x - x0) / (x1 - x0) * kWidth); }
  double Y(double y) const {
    return kTop + kHeight - (y1 == y0 ? 0 : (y - y0) / (y1 - y0) * kHeight);
  }
};

// Axes, grid lines and tick labels; `xlabel(v)` names an x tick.
template <typename Label>
std::string Axes(const Frame& f, const std::vector<double>& xticks, Label xlabel,
                 std::string_view xtitle, std::string_view ytitle) {
  std::ostringstream o;
  const double bottom = Frame::kTop + Frame::kHeight, right = Frame::kLeft + Frame::kWidth;
  o << "<line x1=\"" << Frame::kLeft << "\" y1=\"" << bottom << "\" x2=\"" << right << "\" y2=\""
    << bottom << "\" stroke=\"#333\"/><line x1=\"" << Frame::kLeft << "\" y1=\"" << Frame::kTop
    << "\" x2=\"" << Frame::kLeft << "\" y2=\"" << bottom << "\" stroke=\"#333\"/>";
  for (int i = 0; i <= 4; ++i) {
    const double v = f.y0 + (f.y1 - f.y0) * i / 4, y = f.Y(v);
    o << "<line x1=\"" << Frame::kLeft << "\" y1=\"" << N(y) << "\" x2=\"" << right << "\" y2=\""
      << N(y) << "\" stroke=\"#eee\"/><text x=\"" << Frame::kLeft - 4 << "\" y=\"" << N(y + 4)
      << "\" text-anchor=\"end\">" << N(v) << "</text>";
  }
  for (double v : xticks) {
    o << "<text x=\"" << N(f.X(v)) << "\" y=\"" << bottom + 14 << "\" text-anchor=\"middle\">"
      << H(xlabel(v)) << "</text>";
  }
  o << "<text x=\"" << Frame::kLeft + Frame::kWidth / 2 << "\" y=\"" << bottom + 32
    << "\" text-anchor=\"middle\">" << H(xtitle) << "</text><text x=\"14\" y=\""
    << Frame::kTop + Frame::kHeight / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
    << Frame::kTop + Frame::kHeight / 2 << ")\">" << H(ytitle) << "</text>";
  return o.str();
}

struct Series {
  std::string label;
  std::string color;
  std::string dash;
  std::vector<std::pair<double, double>> points;  // data coordinates
};

std::string Plot(std::string_view title, const Frame& f, const std::string& axes,
                 const std::vector<Series>& series) {
  std::ostringstream o;
  o << "<svg width=\"760\" height=\"310\" viewBox=\"0 0 760 "
       "310\" role=\"img\" aria-label=\""
    << H(title) << "\"><title>" << H(title) << "</title>" << axes;
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << s.color << "\"";
    if (!s.dash.empty()) o << " stroke-dasharray=\"" << s.dash << "\"";
    o << " points=\"";
    for (const auto& [x, y] : s.points) o << N(f.X(x)) << "," << N(f.Y(y)) << " ";
    o << "\"/>";
    const double ly = Frame::kTop + 8 + 16.0 * static_cast<double>(i);
    const double lx = Frame::kLeft + Frame::kWidth + 16;
    o << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 22 << "\" y2=\"" << ly
      << "\" stroke-width=\"2\" stroke=\"" << s.color << "\""
      << (s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"") << "/><text x=\"" << lx + 28
      << "\" y=\"" << ly + 4 << "\">" << H(s.label) << "</text>";
  }
  if (series.empty()) {
    o << "<text x=\"" << Frame::kLeft + 20 << "\" y=\"" << Frame::kTop + 20
      << "\">no data in the results</text>";
  }
  o << "</svg>\n";
  return o.str();
}

// Data range of the series, padded when flat.
void Range(const std::vector<Series>& series, Frame* f) {
  bool first = true;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      f->x0 = first ? x : std::min(f->x0, x);
      f->x1 = first ? x : std::max(f->x1, x);
      f->y0 = first ? y : std::min(f->y0, y);
      f->y1 = first ? y : std::max(f->y1, y);
      first = false;
    }
  }
  if (f->y1 == f->y0) f->y1 = f->y0 + 1;
  if (f->x1 == f->x0) f->x1 = f->x0 + 1;
}

std::string LossPlot(const Report& report) {
  std::vector<Series> series;
  for (size_t i = 0; i < report.vendors.size(); ++i) {
    const VendorReport& v = report.vendors[i];
    Series s{v.vendor, Color(i), "", {}};
    for (size_t k = 0; k < v.loss.size(); ++k) s.points.emplace_back(k + 1, v.loss[k]);
    if (!s.points.empty()) series.push_back(std::move(s));
  }
  for (const VendorReport& v : report.vendors) {  // one reference: the first vendor's
    if (v.reference_loss.empty()) continue;
    Series s{"reference (" + v.vendor + "'s run)", "#777", "4 3", {}};
    for (size_t k = 0; k < v.reference_loss.size(); ++k) {
      s.points.emplace_back(k + 1, v.reference_loss[k]);
    }
    series.push_back(std::move(s));
    break;
  }
  Frame f{0, 1, 0, 1};
  Range(series, &f);
  f.y0 = std::min(f.y0, 0.0);
  std::vector<double> ticks;
  for (int i = 0; i <= 4; ++i) ticks.push_back(std::round(f.x0 + (f.x1 - f.x0) * i / 4));
  const std::string axes = Axes(
      f, ticks, [](double v) { return N(v); }, "training step", "loss");
  return Plot("Loss curves", f, axes, series);
}

std::string BytesLabel(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return N(bytes) + " " + units[u];
}

std::string BusPlot(const Report& report) {
  std::vector<Series> series;
  std::vector<std::string> ops;
  for (size_t i = 0; i < report.vendors.size(); ++i) {
    for (const BusCurve& c : report.vendors[i].bus_curves) {
      auto it = std::find(ops.begin(), ops.end(), c.op);
      if (it == ops.end()) it = ops.insert(ops.end(), c.op);
      Series s{report.vendors[i].vendor + " " + c.op + " " + c.scope +
                   " n=" + std::to_string(c.world_size),
               Color(i),
               kDashes[static_cast<size_t>(it - ops.begin()) % std::size(kDashes)],
               {}};
      for (const auto& [bytes, bw] : c.points) {
        if (bytes > 0) s.points.emplace_back(std::log2(bytes), bw);
      }
      if (!s.points.empty()) series.push_back(std::move(s));
    }
  }
  Frame f{0, 1, 0, 1};
  Range(series, &f);
  f.y0 = 0;
  std::vector<double> ticks;
  for (double x = std::ceil(f.x0); x <= f.x1; x += std::max(1.0, std::ceil((f.x1 - f.x0) / 6))) {
    ticks.push_back(x);
  }
  const std::string axes = Axes(
      f, ticks, [](double v) { return BytesLabel(std::exp2(v)); }, "message size (log2 bytes)",
      "bus bandwidth (GB/s)");
  return Plot("Bus bandwidth", f, axes, series);
}

std::string StagesTable(const Report& report) {
  std::ostringstream o;
  o << "<table><tr><th>stage</th>";
  for (const VendorReport& v : report.vendors) o << "<th>" << H(v.vendor) << "</th>";
  o << "</tr>\n";
  for (size_t s = 0; s < kStages.size(); ++s) {
    o << "<tr><th>" << kStages[s] << "</th>";
    for (const VendorReport& v : report.vendors) {
      const std::string_view st = StageStatusName(v.stages[s].status);
      o << "<td class=\"" << Css(st) << "\">" << st << "</td>";
    }
    o << "</tr>\n";
  }
  o << "<tr><th>run</th>";
  for (const VendorReport& v : report.vendors) {
    o << "<td class=\"" << (v.passed ? "pass\">passed" : "fail\">failed") << "</td>";
  }
  o << "</tr></table>\n";
  return o.str();
}

std::string MetricsTable(const Report& report) {
  std::ostringstream o;
  o << "<table><tr><th>metric</th>";
  for (const VendorReport& v : report.vendors) o << "<th>" << H(v.vendor) << "</th>";
  for (const VendorReport& v : report.vendors) {
    if (!v.baseline) o << "<th>" << H(v.vendor) << " vs " << H(report.baseline) << "</th>";
  }
  o << "</tr>\n";
  for (size_t m = 0; m < report.vendors.front().metrics.size(); ++m) {
    const Metric& first = report.vendors.front().metrics[m];
    o << "<tr><th>" << H(first.name) << " (" << H(first.unit) << ")</th>";
    for (const VendorReport& v : report.vendors) {
      const auto& val = v.metrics[m].value;
      o << "<td class=\"num\">" << (val ? N(*val) : "&ndash;") << "</td>";
    }
    for (const VendorReport& v : report.vendors) {
      if (v.baseline) continue;
      const Metric& x = v.metrics[m];
      std::string cell = "&ndash;";
      if (x.versus_baseline) {
        cell = x.versus == "difference"
                   ? (*x.versus_baseline >= 0 ? "+" : "") + N(*x.versus_baseline) + " pp"
                   : N(*x.versus_baseline) + "&times;";
      }
      o << "<td class=\"num\">" << cell << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string EvidenceList(const std::vector<std::string>& lines) {
  if (lines.empty()) return "";
  std::string out = "<ul class=\"ev\">";
  for (const std::string& l : lines) out += "<li>" + H(l) + "</li>";
  return out + "</ul>";
}

std::string VendorSection(const Report& report, const VendorReport& v) {
  std::ostringstream o;
  o << "<h3 id=\"v-" << H(v.vendor) << "\">" << H(v.vendor) << (v.baseline ? " (baseline)" : "")
    << ": " << (v.passed ? "passed" : "failed") << "</h3>\n";
  std::vector<std::string> images;
  for (const std::string& i : v.images) images.push_back("<code>" + H(i) + "</code>");
  o << "<p>Images: " << (images.empty() ? "none recorded" : Join(images, ", "))
    << ". Nodes: " << H(v.nodes.empty() ? "none recorded" : Join(v.nodes, ", "))
    << ". Results: " << H(Join(v.files, ", ")) << ".</p>\n";
  o << "<table><tr><th>stage</th><th>status</th><th>reason</th><th>evidence</th></tr>\n";
  for (const StageRow& s : v.stages) {
    const std::string_view st = StageStatusName(s.status);
    o << "<tr><th>" << s.stage << "</th><td class=\"" << Css(st) << "\">" << st << "</td><td>"
      << H(s.reason) << "</td><td>" << EvidenceList(s.evidence) << "</td></tr>\n";
  }
  o << "</table>\n<h4>Vendor acceptance list</h4>\n<table><tr><th>item</th><th>status</th>"
       "<th>evidence</th><th>what would cover it</th></tr>\n";
  for (const ChecklistItem& i : v.checklist) {
    const std::string_view st = ItemStatusName(i.status);
    o << "<tr><th>" << H(i.item) << "</th><td class=\"" << st << "\">" << st << "</td><td>"
      << H(i.evidence) << "</td><td>" << H(i.what_would_cover_it) << "</td></tr>\n";
  }
  o << "</table>\n<h4>Rework cost"
    << (v.rework_cost.is_baseline ? " (the baseline)" : " against " + H(report.baseline))
    << "</h4>\n";
  if (v.rework_cost.items.empty()) {
    o << "<p>Nothing differed.</p>\n";
  } else {
    o << EvidenceList(v.rework_cost.items) << "\n";
  }
  return o.str();
}

}  // namespace report_html_cc
using namespace report_html_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

std::string RenderHtml(const Report& report) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<title>xpu-dra acceptance report</title>\n<style>\n"
    << kStyle << "\n</style>\n</head>\n<body>\n<h1>Acceptance report</h1>\n<p>"
    << report.vendors.size() << " vendor(s); baseline <strong>" << H(report.baseline)
    << "</strong>. Ratios are each vendor's number over the baseline's; the loss delta is compared "
       "in percentage points. The report is generated by <code>xpuctl accept report</code>.</p>\n"
    << "<h2>Stages</h2>\n"
    << StagesTable(report) << "<h2>Numbers side by side</h2>\n"
    << MetricsTable(report) << "<h2>Loss curves</h2>\n"
    << LossPlot(report) << "<h2>Bus bandwidth</h2>\n"
    << BusPlot(report) << "<h2>Per vendor: evidence, acceptance list, rework cost</h2>\n";
  for (const VendorReport& v : report.vendors) o << VendorSection(report, v);
  o << "</body>\n</html>\n";
  return o.str();
}

}  // namespace xpu::accept
