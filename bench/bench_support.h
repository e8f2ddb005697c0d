// Inputs shared by the benchmark programs: bundled models with pre-drawn free sets, and
// synthetic fabrics of a given size. Deterministic (fixed seeds).
#ifndef XPU_BENCH_BENCH_SUPPORT_H_
#define XPU_BENCH_BENCH_SUPPORT_H_

#include <string>
#include <vector>

#include "topology/fabric.h"
#include "topology/model.h"

namespace xpu::bench {

struct SolveCase {
  std::string model;
  topology::Node node;
  int count = 0;
  std::vector<topology::DeviceSet> free_sets;  // each leaves `count` feasible in most cases
};

// Every bundled model with 8 or 16 devices, every count its rule set allows; `sets` free sets
// each, from all-free to three quarters free.
std::vector<SolveCase> SolveCases(int sets);

struct GangCase {
  topology::Fabric fabric;
  std::vector<int> free;  // free devices per node, 0..8
};

// `nodes` nodes in leaves of 32, spines of 16 leaves, superpods of 8 spines.
GangCase MakeGangCase(int nodes);

}  // namespace xpu::bench

#endif  // XPU_BENCH_BENCH_SUPPORT_H_
