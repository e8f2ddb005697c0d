// Draws the controller's scaling curve (docs/performance.md, "Scaling curve") as an SVG: publish
// time and peak memory against the fleet's size, one panel each, the budgets dashed.
// Usage: scaling_plot TSV > SVG, where TSV has lines "nodes<TAB>publish_s<TAB>peak_mb" ('#'
// starts a comment), as scripts/scaling-curve writes them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Point {
  double nodes = 0;
  double publish_s = 0;
  double peak_mb = 0;
};

// One panel: a y quantity over the node counts, with a budget line from 0 to (65,000, budget).
struct Panel {
  const char* title;
  const char* unit;
  double Point::*value;
  double budget_at_65k;
};

constexpr double kWidth = 360;
constexpr double kHeight = 240;
constexpr double kMargin = 48;
constexpr double kMaxNodes = 65000;

std::string Fixed(double v, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

// A round upper bound for the axis: 1, 2 or 5 times a power of ten.
double NiceCeiling(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

void DrawPanel(std::ostream& out, const Panel& panel, const std::vector<Point>& points,
               double left) {
  double top = 0;
  for (const Point& p : points) top = std::max(top, p.*panel.value);
  top = NiceCeiling(std::max(top, panel.budget_at_65k) * 1.05);
  const double x0 = left + kMargin;
  const double y0 = kHeight - kMargin;
  const double w = kWidth - 1.5 * kMargin;
  const double h = kHeight - 2 * kMargin;
  auto x = [&](double nodes) { return x0 + w * nodes / kMaxNodes; };
  auto y = [&](double v) { return y0 - h * v / top; };
  out << "<text x=\"" << x0 << "\" y=\"" << kMargin - 16 << "\" font-weight=\"bold\">"
      << panel.title << "</text>\n";
  out << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0 + w << "\" y2=\"" << y0
      << "\" stroke=\"black\"/>\n<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0
      << "\" y2=\"" << y0 - h << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = top * i / 4;
    out << "<text x=\"" << x0 - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">"
        << Fixed(v, v < 10 ? 1 : 0) << "</text>\n";
  }
  for (double n : {0.0, 10000.0, 30000.0, 65000.0}) {
    out << "<text x=\"" << x(n) << "\" y=\"" << y0 + 16 << "\" text-anchor=\"middle\">"
        << Fixed(n / 1000, 0) << "k</text>\n";
  }
  out << "<text x=\"" << x0 + w / 2 << "\" y=\"" << y0 + 34
      << "\" text-anchor=\"middle\">nodes (8 devices each)</text>\n";
  out << "<text x=\"" << x0 - 36 << "\" y=\"" << y0 - h / 2 << "\" transform=\"rotate(-90 "
      << x0 - 36 << ' ' << y0 - h / 2 << ")\" text-anchor=\"middle\">" << panel.unit << "</text>\n";
  out << "<line x1=\"" << x(0) << "\" y1=\"" << y(0) << "\" x2=\"" << x(kMaxNodes) << "\" y2=\""
      << y(panel.budget_at_65k) << "\" stroke=\"#c0392b\" stroke-dasharray=\"6 4\"/>\n";
  out << "<text x=\"" << x(kMaxNodes) - 4 << "\" y=\"" << y(panel.budget_at_65k) - 6
      << "\" text-anchor=\"end\" fill=\"#c0392b\">budget</text>\n";
  out << "<polyline fill=\"none\" stroke=\"#2c6fbb\" stroke-width=\"2\" points=\"";
  for (const Point& p : points) out << x(p.nodes) << ',' << y(p.*panel.value) << ' ';
  out << "\"/>\n";
  for (const Point& p : points) {
    out << "<circle cx=\"" << x(p.nodes) << "\" cy=\"" << y(p.*panel.value)
        << "\" r=\"3.5\" fill=\"#2c6fbb\"/>\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    std::cerr << "usage: scaling_plot TSV > SVG\n"
                 "Draws publish time and peak memory against nodes from TSV lines\n"
                 "\"nodes<TAB>publish_s<TAB>peak_mb\" ('#' starts a comment).\n";
    return args.size() == 1 ? 0 : 2;
  }
  std::ifstream in(args[0]);
  if (!in) {
    std::cerr << "scaling_plot: cannot read " << args[0] << "\n";
    return 1;
  }
  std::vector<Point> points;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Point p;
    if (!(fields >> p.nodes >> p.publish_s >> p.peak_mb) || p.nodes <= 0) {
      std::cerr << "scaling_plot: " << args[0] << ":" << line_no
                << ": expected \"nodes publish_s peak_mb\", got \"" << line << "\"\n";
      return 1;
    }
    points.push_back(p);
  }
  if (points.empty()) {
    std::cerr << "scaling_plot: " << args[0] << ": no points\n";
    return 1;
  }
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.nodes < b.nodes; });
  std::cout << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << 2 * kWidth << "\" height=\""
            << kHeight << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
            << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  DrawPanel(std::cout, {"full publish, cold start, QPS 500", "seconds", &Point::publish_s, 300},
            points, 0);
  DrawPanel(std::cout, {"controller peak memory (VmHWM)", "MB", &Point::peak_mb, 1024}, points,
            kWidth);
  std::cout << "</svg>\n";
  return 0;
}
