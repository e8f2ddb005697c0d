// The placement lab's policies as device choosers: each answers "which devices of a node of this
// model, with these devices free, for this count" (and "which partition, where") for one policy
// of lab/replay.h. The solver chooser takes topology::Solve's set and topology::PlacePartition's
// place; the stock choosers ask the real allocator (lab/stock_allocator.h) over the slices and
// claims the policy describes: stock-unordered the slices other drivers publish with a plain
// claim, stock-xpu the controller's slices with the claims `xpuctl render` writes.
//
// Every answer is a function of (model, free devices, count) (a partition's: of the node's held
// partitions too), so answers are memoised; calls() counts the questions actually asked.
#ifndef XPU_LAB_CHOOSERS_H_
#define XPU_LAB_CHOOSERS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "controller/config.h"
#include "lab/fleet.h"
#include "lab/node_choice.h"
#include "lab/stock_allocator.h"
#include "topology/device_set.h"
#include "topology/partitions.h"
#include "topology/solver.h"

namespace xpu::lab {

// What a policy is asked: (model, free devices, count).
struct Question {
  int model = 0;
  uint64_t mask = 0;
  int count = 0;
  friend bool operator==(const Question&, const Question&) = default;
};
struct QuestionHash {
  size_t operator()(const Question& q) const {
    uint64_t h = q.mask * 0x9E3779B97F4A7C15ULL;
    h ^= (static_cast<uint64_t>(q.model) << 8 | static_cast<uint64_t>(q.count)) +
         0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

// The solver's answers, memoised: the best rule-keeping set for a question.
class SolverMemo {
 public:
  explicit SolverMemo(const Fleet& fleet) : fleet_(fleet) {}
  // topology::Solve on a node of `model` with `free` devices free, for `count` devices.
  const topology::SolveResult& Best(int model, topology::DeviceSet free, int count);
  // The questions actually solved.
  int64_t solves() const { return solves_; }

 private:
  const Fleet& fleet_;
  std::unordered_map<Question, topology::SolveResult, QuestionHash> memo_;
  int64_t solves_ = 0;
};

// Where a partition goes on one node: which of the model's partitionable devices, where on it,
// and the partition device's name.
struct PartitionChoice {
  size_t slot = 0;  // index into FleetModel::partitionable
  std::optional<int64_t> placement;
  std::string device;
};

// A node as a partition question sees it: what each partitionable device has given out (whole
// set where a whole-device job holds it), and the partition devices held.
struct NodePartitions {
  std::vector<topology::PartitionUse> uses;  // per FleetModel::partitionable
  std::set<std::string> held;
};

// The solver's place for a partition of `profile` (topology::PlacePartition) on a node of `m`.
std::optional<topology::PartitionPlace> SolverPartition(const FleetModel& m,
                                                        const NodePartitions& node,
                                                        const std::string& profile);
// The choice `place` stands for on a node of `m`: its device, placement and partition name (the
// placement's, or the lowest instance number the node does not hold).
PartitionChoice ChoiceOf(const FleetModel& m, const topology::PartitionPlace& place,
                         const NodePartitions& node, const std::string& profile);

// A policy's device choice on one node.
class Chooser {
 public:
  virtual ~Chooser() = default;

  // One partition of `profile` on a node of `model` with `free` whole devices free; memoised.
  StatusOr<std::optional<PartitionChoice>> ChoosePartition(int model, topology::DeviceSet free,
                                                           const NodePartitions& node,
                                                           const std::string& profile);
  // `count` devices of `free` on a node of `model`, or nullopt when the policy finds none.
  StatusOr<std::optional<topology::DeviceSet>> Choose(int model, topology::DeviceSet free,
                                                      int count);
  // The whole answer, with the allocation's DynamicResources raw score; memoised (the pointer
  // stays valid: the memo only grows). An answer that is not `count` free devices is an error.
  StatusOr<const PolicyAnswer*> Answer(int model, topology::DeviceSet free, int count);
  // The questions actually asked (memo misses).
  int64_t calls() const { return calls_; }
  // What the policy has to say about its claims (stock-xpu: why counts have no claim or leave
  // vendors or models out), for the result's notes; none by default.
  virtual std::vector<std::string> Notes() const { return {}; }

 protected:
  virtual StatusOr<PolicyAnswer> Ask(int model, topology::DeviceSet free, int count) = 0;
  virtual StatusOr<std::optional<PartitionChoice>> AskPartition(int model, topology::DeviceSet free,
                                                                const NodePartitions& node,
                                                                const std::string& profile) = 0;

 private:
  std::unordered_map<Question, PolicyAnswer, QuestionHash> memo_;
  std::unordered_map<std::string, std::optional<PartitionChoice>> partition_memo_;
  int64_t calls_ = 0;
};

// solver (and solver-node's device choice): the solver's answers from `memo`.
std::unique_ptr<Chooser> MakeSolverChooser(const Fleet& fleet, SolverMemo& memo);

// stock-unordered: slices as other drivers publish them (devices in index order; attributes
// index, uuid and model), and the plain claim, a count of PlainDeviceClass.
std::unique_ptr<Chooser> MakeUnorderedChooser(const Fleet& fleet, StockAllocator& allocator,
                                              std::string driver);
// The DeviceClass stock-unordered's claims ask for: every device of `driver`.
nlohmann::json PlainDeviceClass(const std::string& driver);

// stock-xpu: the controller's slices for the devices allocated (controller::BuildPool under
// `config`), and the claims `xpuctl render` writes for `capability_class`. `config` must outlive
// the chooser.
std::unique_ptr<Chooser> MakeXpuChooser(const Fleet& fleet, StockAllocator& allocator,
                                        std::string driver, const controller::Config& config,
                                        std::string capability_class);

}  // namespace xpu::lab

#endif  // XPU_LAB_CHOOSERS_H_
