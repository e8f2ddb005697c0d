// The placement lab's time series and percentiles: a step function sampled at every event of a
// replay, averaged down to a plottable number of points, and the nearest-rank percentile of the
// queue delays.
#ifndef XPU_LAB_SERIES_H_
#define XPU_LAB_SERIES_H_

#include <cstddef>
#include <vector>

#include "lab/result.h"

namespace xpu::lab {

// A step function recorded at every event, averaged into at most kMaxPoints buckets.
class Series {
 public:
  static constexpr size_t kMaxPoints = 400;

  // `value` holds from `t` on; a second record at the same `t` replaces the first.
  void Record(double t, double value);
  // The time-weighted mean of each of kMaxPoints equal buckets over [first t, end]; the points
  // as recorded when there are no more than kMaxPoints of them (or `end` is not after the first).
  std::vector<SeriesPoint> Downsampled(double end) const;

 private:
  std::vector<SeriesPoint> points_;
};

// The nearest-rank `p` percentile (0..1) of `sorted` (ascending); 0 when empty.
double Percentile(const std::vector<double>& sorted, double p);

}  // namespace xpu::lab

#endif  // XPU_LAB_SERIES_H_
