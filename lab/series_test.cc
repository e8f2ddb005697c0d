// The lab's time series and percentiles on small hand-made inputs.
#include "lab/series.h"

#include <catch2/catch.hpp>
#include <vector>

namespace xpu::lab {
namespace {

TEST_CASE("Percentile is the nearest rank of the sorted values") {
  const std::vector<double> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  struct Case {
    std::vector<double> sorted;
    double p;
    double want;
  };
  const std::vector<Case> cases = {
      {{}, 0.5, 0},  {{7}, 0.0, 7},  {{7}, 1.0, 7},   {ten, 0.0, 1},  {ten, 0.05, 1},
      {ten, 0.5, 5}, {ten, 0.51, 6}, {ten, 0.95, 10}, {ten, 1.0, 10}, {{1, 3}, 0.5, 1},
  };
  for (const Case& c : cases) {
    INFO("p " << c.p << " of " << c.sorted.size() << " values");
    CHECK(Percentile(c.sorted, c.p) == c.want);
  }
}

TEST_CASE("a Series keeps few points as recorded, the last of one time winning") {
  Series s;
  s.Record(0, 1);
  s.Record(2, 3);
  s.Record(2, 4);
  s.Record(5, 0);
  const std::vector<SeriesPoint> want = {{0, 1}, {2, 4}, {5, 0}};
  CHECK(s.Downsampled(10) == want);
}

TEST_CASE("a Series of many points is averaged over time into kMaxPoints buckets") {
  // A square wave of period 2 over [0, 2 x kMaxPoints x 2): each bucket spans two periods.
  Series s;
  const size_t steps = Series::kMaxPoints * 4;
  for (size_t i = 0; i < steps; ++i) s.Record(static_cast<double>(i), i % 2 == 0 ? 1.0 : 3.0);
  const std::vector<SeriesPoint> points = s.Downsampled(static_cast<double>(steps));
  REQUIRE(points.size() == Series::kMaxPoints);
  CHECK(points.front().t == 0);
  CHECK(points.back().t == static_cast<double>(steps - 4));
  for (const SeriesPoint& p : points) CHECK(p.value == Approx(2.0));
}

}  // namespace
}  // namespace xpu::lab
