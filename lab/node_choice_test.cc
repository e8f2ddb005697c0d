// kube-scheduler's filter search and pick (lab/node_choice.h) over fleets of numbered nodes whose
// Filter answers are given by hand.
#include "lab/node_choice.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "base/testing/require_ok.h"

namespace xpu::lab {
namespace {

// A Filter from a table: node -> raw score; nodes not in it fail. Records the nodes asked.
struct TableFilter {
  std::map<int, int64_t> raw;
  std::vector<int> asked;
  KubeNodeSearch::Filter Get() {
    return [this](int node) -> StatusOr<std::optional<int64_t>> {
      asked.push_back(node);
      auto it = raw.find(node);
      if (it == raw.end()) return std::optional<int64_t>();
      return std::optional<int64_t>(it->second);
    };
  }
};

std::optional<int> Schedule(KubeNodeSearch& search, TableFilter& filter,
                            const std::vector<int>* only = nullptr) {
  StatusOr<std::optional<int>> node = search.Schedule(filter.Get(), only);
  REQUIRE_OK(node);
  return *node;
}

TEST_CASE("scheduler names") {
  CHECK(SchedulerName(Scheduler::kKube) == "kube");
  CHECK(SchedulerName(Scheduler::kOrder) == "order");
  CHECK(ParseScheduler("kube") == Scheduler::kKube);
  CHECK(ParseScheduler("order") == Scheduler::kOrder);
  CHECK(ParseScheduler("first") == std::nullopt);
}

TEST_CASE("under 100 nodes every node is searched, the start never moves, the best score wins") {
  KubeNodeSearch search(10, 1);
  TableFilter filter{{{2, 6}, {3, 8}, {7, 7}}, {}};
  CHECK(Schedule(search, filter) == 3);
  CHECK(filter.asked == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(search.next_start() == 0);
  // Nothing passes: no node, and the start stays.
  TableFilter none;
  CHECK(Schedule(search, none) == std::nullopt);
  CHECK(search.next_start() == 0);
}

TEST_CASE("on 200 nodes the search stops at 100 feasible and the start rotates past them") {
  KubeNodeSearch search(200, 1);
  TableFilter all;
  for (int n = 0; n < 200; ++n) all.raw[n] = 1;
  all.raw[150] = 8;  // the best node, outside the first window
  const std::optional<int> first = Schedule(search, all);
  REQUIRE(first.has_value());
  CHECK(*first < 100);  // a tie among 0..99, broken at random
  CHECK(all.asked.size() == 100);
  CHECK(search.next_start() == 100);
  all.asked.clear();
  CHECK(Schedule(search, all) == 150);  // 100..199 now
  CHECK(all.asked.front() == 100);
  CHECK(search.next_start() == 0);
}

TEST_CASE("the nodes that can pass, when given, search as the whole fleet would") {
  // Odd nodes fail. Asking every node and asking only the even ones must agree on the pick (the
  // same random stream) and on the start index.
  TableFilter evens;
  for (int n = 0; n < 200; n += 2) evens.raw[n] = 1 + (n / 2) % 3;
  std::vector<int> only;
  for (int n = 0; n < 200; n += 2) only.push_back(n);
  KubeNodeSearch whole(200, 9);
  KubeNodeSearch given(200, 9);
  for (int cycle = 0; cycle < 6; ++cycle) {
    INFO(cycle);
    const std::optional<int> a = Schedule(whole, evens);
    const std::optional<int> b = Schedule(given, evens, &only);
    CHECK(a == b);
    CHECK(whole.next_start() == given.next_start());
  }
  // Rotated to 100 (one cycle of all-feasible nodes), the 100th even node is 98: 199 nodes
  // visited (upstream counts the failed ones too), and the start goes to 99.
  KubeNodeSearch rotated(200, 9);
  TableFilter all;
  for (int n = 0; n < 200; ++n) all.raw[n] = 1;
  Schedule(rotated, all);
  REQUIRE(rotated.next_start() == 100);
  evens.asked.clear();
  Schedule(rotated, evens, &only);
  CHECK(evens.asked.front() == 100);
  CHECK(evens.asked.back() == 98);
  CHECK(rotated.next_start() == 99);
  // From 99 the first even node asked is 100.
  evens.asked.clear();
  Schedule(rotated, evens, &only);
  CHECK(evens.asked.front() == 100);
}

TEST_CASE("ties are broken from the seed, reproducibly, and spread over the tied nodes") {
  std::set<int> picked;
  std::vector<int> sequence;
  KubeNodeSearch search(8, 42);
  TableFilter filter{{{1, 7}, {4, 7}, {6, 7}, {0, 6}}, {}};
  for (int i = 0; i < 60; ++i) {
    const std::optional<int> n = Schedule(search, filter);
    REQUIRE(n.has_value());
    picked.insert(*n);
    sequence.push_back(*n);
  }
  CHECK(picked == std::set<int>{1, 4, 6});
  KubeNodeSearch again(8, 42);
  for (int n : sequence) CHECK(Schedule(again, filter) == n);
}

TEST_CASE("a Filter error ends the cycle with that error") {
  KubeNodeSearch search(4, 1);
  StatusOr<std::optional<int>> r = search.Schedule(
      [](int node) -> StatusOr<std::optional<int64_t>> {
        if (node == 2) return InternalError("allocator gone");
        return std::optional<int64_t>(1);
      },
      nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "allocator gone");
}

}  // namespace
}  // namespace xpu::lab
