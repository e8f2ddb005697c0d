#include "lab/series.h"

#include <algorithm>
#include <cmath>

namespace xpu::lab {

void Series::Record(double t, double value) {
  if (!points_.empty() && points_.back().t == t) {
    points_.back().value = value;
  } else {
    points_.push_back({t, value});
  }
}

std::vector<SeriesPoint> Series::Downsampled(double end) const {
  if (points_.size() <= kMaxPoints || end <= points_.front().t) return points_;
  const double start = points_.front().t;
  const double width = (end - start) / static_cast<double>(kMaxPoints);
  std::vector<SeriesPoint> out;
  size_t i = 0;
  for (size_t b = 0; b < kMaxPoints; ++b) {
    const double lo = start + width * static_cast<double>(b);
    const double hi = b + 1 == kMaxPoints ? end : lo + width;
    double area = 0;
    while (i + 1 < points_.size() && points_[i + 1].t <= lo) ++i;
    for (size_t j = i; j < points_.size() && points_[j].t < hi; ++j) {
      const double from = std::max(points_[j].t, lo);
      const double to = j + 1 < points_.size() ? std::min(points_[j + 1].t, hi) : hi;
      if (to > from) area += points_[j].value * (to - from);
    }
    out.push_back({lo, hi > lo ? area / (hi - lo) : 0});
  }
  return out;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace xpu::lab
