#include "topology/partitions.h"

#include <catch2/catch.hpp>

namespace xpu::topology {
namespace {

// An H200 in MIG mode: 8 memory slots, 7 compute slices.
PartitionableDevice H200Mig() {
  PartitionableDevice d;
  d.slots = 8;
  d.capacity = {{"compute", 7}};
  d.profiles = {{"1g.18gb", 1, {0, 1, 2, 3, 4, 5, 6}, {{"compute", 1}}, 0},
                {"1g.35gb", 2, {0, 2, 4, 6}, {{"compute", 1}}, 0},
                {"2g.35gb", 2, {0, 2, 4}, {{"compute", 2}}, 0},
                {"3g.71gb", 4, {0, 4}, {{"compute", 3}}, 0},
                {"4g.71gb", 4, {0}, {{"compute", 4}}, 0},
                {"7g.141gb", 8, {0}, {{"compute", 7}}, 0}};
  return d;
}

// A 910B-like vNPU device: 20 AI cores, templates of 10, 5 and 2.
PartitionableDevice Vnpu() {
  PartitionableDevice d;
  d.capacity = {{"aicore", 20}};
  d.profiles = {{"vir02", 0, {}, {{"aicore", 2}}, 0},
                {"vir05", 0, {}, {{"aicore", 5}}, 0},
                {"vir10", 0, {}, {{"aicore", 10}}, 0}};
  return d;
}

}  // namespace

TEST_CASE("partitions: what a MIG device still allows, largest profile first", "[partitions]") {
  const PartitionableDevice d = H200Mig();
  PartitionUse use;
  // 7g, 4g, 3g, 2g.35gb, 1g.35gb, 1g.18gb.
  CHECK(StillPossible(d, use) == std::vector<int>{1, 1, 2, 3, 4, 7});
  use.Take(*FindShape(d, "3g.71gb"), 4);
  CHECK(StillPossible(d, use) == std::vector<int>{0, 1, 1, 2, 2, 4});
  CHECK_FALSE(PartitionFits(d, use, *FindShape(d, "1g.18gb"), 5));
  CHECK(PartitionFits(d, use, *FindShape(d, "1g.18gb"), 3));
  CHECK_FALSE(PartitionFits(d, use, *FindShape(d, "1g.18gb"), 7));  // not a legal placement
  CHECK_FALSE(PartitionFits(d, use, *FindShape(d, "1g.18gb"), std::nullopt));
  use.Give(*FindShape(d, "3g.71gb"), 4);
  CHECK(use == PartitionUse{});
  use.whole = true;
  CHECK(StillPossible(d, use) == std::vector<int>{0, 0, 0, 0, 0, 0});
  CHECK(FreeShare(d, use) == 0);
}

TEST_CASE("partitions: the compute slices bound MIG as well as the memory slots", "[partitions]") {
  const PartitionableDevice d = H200Mig();
  PartitionUse use;
  for (int64_t at : {0, 1, 2, 3, 4, 5}) use.Take(*FindShape(d, "1g.18gb"), at);
  CHECK(PartitionFits(d, use, *FindShape(d, "1g.18gb"), 6));
  use.Take(*FindShape(d, "1g.18gb"), 6);
  // One slot left, no compute left.
  CHECK(StillPossible(d, use) == std::vector<int>{0, 0, 0, 0, 0, 0});
  CHECK(FreeShare(d, use) == Approx(1.0 / 8));
}

TEST_CASE("partitions: a small MIG partition goes where the large profiles stay possible",
          "[partitions]") {
  const PartitionableDevice d = H200Mig();
  const std::vector<const PartitionableDevice*> devices = {&d, &d};
  std::vector<PartitionUse> uses(2);
  // On an empty device, slot 6 loses the 7g and one 3g, but keeps the 4g and every 2g.35gb.
  std::optional<PartitionPlace> place = PlacePartition(devices, uses, "1g.18gb");
  REQUIRE(place.has_value());
  CHECK(place->device == 0);
  CHECK(place->placement == 6);
  CHECK(place->cost.lost == std::vector<int>{1, 0, 1, 0, 1, 1});
  CHECK(place->cost.untouched);
  uses[0].Take(*FindShape(d, "1g.18gb"), 6);
  // The next one joins it on the device already in use (the other stays whole), at slot 4 or 5,
  // which costs one 3g already lost: slot 5 loses 2g.35gb@4 and 1g.35gb@4; slot 4 the same.
  place = PlacePartition(devices, uses, "1g.18gb");
  REQUIRE(place.has_value());
  CHECK(place->device == 0);
  CHECK(place->placement == 5);
  CHECK_FALSE(place->cost.untouched);
  // A 4g.71gb can still go on device 0.
  place = PlacePartition(devices, uses, "4g.71gb");
  REQUIRE(place.has_value());
  CHECK(place->device == 0);
  CHECK(place->placement == 0);
  // A 7g.141gb only on the untouched device.
  place = PlacePartition(devices, uses, "7g.141gb");
  REQUIRE(place.has_value());
  CHECK(place->device == 1);
  uses[1].whole = true;
  CHECK_FALSE(PlacePartition(devices, uses, "7g.141gb").has_value());
  CHECK_FALSE(PlacePartition(devices, uses, "no-such-profile").has_value());
}

TEST_CASE("partitions: vNPU instances keep the largest template possible, then fill used devices",
          "[partitions]") {
  const PartitionableDevice d = Vnpu();
  const std::vector<const PartitionableDevice*> devices = {&d, &d, &d};
  std::vector<PartitionUse> uses(3);
  uses[2].Take(*FindShape(d, "vir05"), std::nullopt);  // 15 cores left
  uses[1].Take(*FindShape(d, "vir10"), std::nullopt);  // 10 left
  // vir10, vir05, vir02 on device 1: {1, 2, 5}.
  CHECK(StillPossible(d, uses[1]) == std::vector<int>{1, 2, 5});
  // A vir05 on device 1 (10 -> 5) loses the vir10 there; on device 2 (15 -> 10) it keeps it.
  std::optional<PartitionPlace> place = PlacePartition(devices, uses, "vir05");
  REQUIRE(place.has_value());
  CHECK(place->device == 2);
  CHECK_FALSE(place->placement.has_value());
  CHECK(place->cost.lost == std::vector<int>{0, 1, 2});
  uses[2].Take(*FindShape(d, "vir05"), std::nullopt);
  // Devices 1 and 2 now have 10 left each, device 0 all 20: a vir02 goes to the lower used one,
  // and untouched device 0 stays whole.
  place = PlacePartition(devices, uses, "vir02");
  REQUIRE(place.has_value());
  CHECK(place->device == 1);
  // The instance limit holds.
  PartitionableDevice limited = Vnpu();
  limited.profiles[0].max_instances = 1;
  PartitionUse one;
  one.Take(limited.profiles[0], std::nullopt);
  CHECK_FALSE(PartitionFits(limited, one, limited.profiles[0], std::nullopt));
  CHECK(PartitionFits(limited, one, limited.profiles[1], std::nullopt));
}

}  // namespace xpu::topology
