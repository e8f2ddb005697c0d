// A measured run: how well the published order of MIG partition devices packs, against placing
// each partition at the highest free placement of the first GPU that has one (the order before
// the controller ordered partitions). An inference-style trace of small partitions arrives on an
// HGX H200 with MIG on all eight GPUs; each request takes the first partition device of its
// profile that fits, in the order of the policy, as a first-fit allocator (the stock one) does;
// a request nothing fits is refused. Reported: refusals per profile, and how often a 7g.141gb
// (a whole GPU as one partition) would still have fit.
//
//   partition_packing [--requests N] [--seed S] [--load L]
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/partitions.h"
#include "api/testing/inventory_examples.h"
#include "bench/measure_support.h"
#include "controller/reference_servers.h"
#include "controller/slices.h"

namespace {

using xpu::bench::Fail;
constexpr const char* kProgram = "partition_packing";

// The trace's mix: profile and share of requests.
const std::vector<std::pair<std::string, double>> kMix = {
    {"1g.18gb", 0.55}, {"2g.35gb", 0.2}, {"3g.71gb", 0.15}, {"4g.71gb", 0.07}, {"7g.141gb", 0.03}};

struct Slot {
  std::string parent;
  const xpu::api::PartitionProfile* profile;
  int64_t placement;
};

// Which published partition devices fit now: their slots are all free.
bool Fits(const Slot& s, const std::map<std::string, uint64_t>& used) {
  const uint64_t span = ((uint64_t{1} << s.profile->slots) - 1) << s.placement;
  auto it = used.find(s.parent);
  return it == used.end() || (it->second & span) == 0;
}

struct Result {
  std::map<std::string, int> asked;
  std::map<std::string, int> refused;
  int seven_fits = 0;  // arrivals at which some GPU could still host a 7g.141gb
};

template <typename Order>
Result Replay(const xpu::api::NodeInventory& inventory, int requests, uint64_t seed, double load,
              Order order) {
  std::mt19937_64 rng(seed);
  std::discrete_distribution<size_t> pick(
      {kMix[0].second, kMix[1].second, kMix[2].second, kMix[3].second, kMix[4].second});
  // Offered load: mean compute slices asked per unit time over the fleet's 56, for a mean
  // duration of 1.
  double mean_slices = 0;
  for (const auto& [profile, share] : kMix) mean_slices += share * std::stod(profile);
  std::exponential_distribution<double> gap(load * 56.0 / mean_slices);
  std::exponential_distribution<double> duration(1.0);
  std::map<std::string, uint64_t> used;
  std::set<std::string> held;
  using Release = std::pair<double, std::string>;  // when, device
  std::priority_queue<Release, std::vector<Release>, std::greater<>> releases;
  Result r;
  double now = 0;
  for (int i = 0; i < requests; ++i) {
    now += gap(rng);
    while (!releases.empty() && releases.top().first <= now) {
      const std::string device = releases.top().second;
      releases.pop();
      held.erase(device);
      const auto t = xpu::api::ResolvePartitionDevice(inventory, device);
      used[t->parent->name] &= ~(((uint64_t{1} << t->profile->slots) - 1) << *t->placement);
    }
    const std::string& profile = kMix[pick(rng)].first;
    ++r.asked[profile];
    bool seven = false;
    for (const auto& [parent, mask] : used) seven = seven || mask == 0;
    r.seven_fits += (seven || used.size() < 8) ? 1 : 0;
    std::string chosen;
    for (const std::string& device : order(held)) {
      const auto t = xpu::api::ResolvePartitionDevice(inventory, device);
      if (!t || t->profile->name != profile) continue;
      if (Fits({t->parent->name, t->profile, *t->placement}, used)) {
        chosen = device;
        break;
      }
    }
    if (chosen.empty()) {
      ++r.refused[profile];
      continue;
    }
    const auto t = xpu::api::ResolvePartitionDevice(inventory, chosen);
    used[t->parent->name] |= ((uint64_t{1} << t->profile->slots) - 1) << *t->placement;
    held.insert(chosen);
    releases.emplace(now + duration(rng), chosen);
  }
  return r;
}

void Print(const std::string& policy, const Result& r, int requests) {
  int refused = 0;
  std::cout << "  " << std::left << std::setw(22) << policy;
  for (const auto& [profile, share] : kMix) {
    const int asked = r.asked.count(profile) ? r.asked.at(profile) : 0;
    const int no = r.refused.count(profile) ? r.refused.at(profile) : 0;
    refused += no;
    std::cout << profile << " " << std::fixed << std::setprecision(1)
              << (asked ? 100.0 * no / asked : 0.0) << "%  ";
  }
  std::cout << "all " << std::setprecision(1) << 100.0 * refused / requests
            << "% refused; a 7g.141gb would fit at " << 100.0 * r.seven_fits / requests
            << "% of arrivals\n";
}

}  // namespace

int main(int argc, char** argv) {
  const auto flags = xpu::bench::FlagValues(argc, argv, {"--requests", "--seed", "--load"});
  if (!flags.ok()) {
    return Fail(kProgram, flags.status().message() + " (--requests N, --seed S, --load L)");
  }
  auto value = [&flags](const char* name, const char* otherwise) {
    return flags->contains(name) ? flags->at(name) : std::string(otherwise);
  };
  const int requests = std::atoi(value("--requests", "20000").c_str());
  const uint64_t seed = std::strtoull(value("--seed", "1").c_str(), nullptr, 10);
  const double load = std::atof(value("--load", "0.8").c_str());
  if (requests < 1 || load <= 0) return Fail(kProgram, "--requests >= 1, --load > 0");
  const xpu::controller::ReferenceServer* server = xpu::controller::FindReferenceServer("hgx-h200");
  if (server == nullptr) return Fail(kProgram, "no reference server hgx-h200");
  xpu::api::NodeInventory inventory = server->inventory;
  for (auto& d : inventory.status.devices) {
    d.partitioning = xpu::api::testing::H200MigPartitioning();
  }
  // The controller's order, republished with what claims hold, as the controller does.
  auto published = [&inventory](const std::set<std::string>& held) {
    xpu::controller::PublishOptions options;
    options.version = xpu::api::KubeVersion::k1_35;
    auto pool = xpu::controller::BuildPool(inventory, {"n1", "uid-1", {}},
                                           xpu::controller::Config{}, options, held);
    std::vector<std::string> names;
    for (const auto& slice : pool->slices) {
      for (const auto& d : slice.devices) names.push_back(d.name);
    }
    return names;
  };
  // GPUs in name order, each placement highest first.
  std::vector<std::string> naive_names;
  for (const auto& d : inventory.status.devices) {
    for (const auto& profile : d.partitioning->profiles) {
      std::vector<int64_t> at = profile.placements;
      std::sort(at.rbegin(), at.rend());
      for (int64_t x : at) {
        naive_names.push_back(xpu::api::PartitionDeviceName(d.name, profile.name, x));
      }
    }
  }
  auto naive = [&naive_names](const std::set<std::string>&) { return naive_names; };
  std::cout << kProgram << ": " << requests << " requests on 8 H200 (MIG), load " << load
            << ", seed " << seed << "; refused per profile:\n";
  Print("first GPU, highest", Replay(inventory, requests, seed, load, naive), requests);
  Print("published order", Replay(inventory, requests, seed, load, published), requests);
  return 0;
}
