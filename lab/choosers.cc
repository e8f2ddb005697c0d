#include "lab/choosers.h"

#include <utility>

#include "api/partitions.h"

namespace xpu::lab {
namespace {
namespace choosers_cc {

using topology::DeviceSet;

// The name for one more partition of `profile` on `parent`: the placement's, or the lowest
// instance number not held.
std::string PartitionName(const FleetPartitionable& parent, const topology::PartitionShape& shape,
                          std::optional<int64_t> placement, const std::set<std::string>& held) {
  if (placement.has_value()) return api::PartitionDeviceName(parent.name, shape.name, *placement);
  for (int64_t n = 0;; ++n) {
    std::string name = api::PartitionDeviceName(parent.name, shape.name, n);
    if (!held.contains(name)) return name;
  }
}

class SolverChooser : public Chooser {
 public:
  SolverChooser(const Fleet& fleet, SolverMemo& memo) : fleet_(fleet), memo_(memo) {}

 protected:
  StatusOr<std::optional<PartitionChoice>> AskPartition(int model, DeviceSet /*free*/,
                                                        const NodePartitions& node,
                                                        const std::string& profile) override {
    const FleetModel& m = fleet_.models[static_cast<size_t>(model)];
    const std::optional<topology::PartitionPlace> place = SolverPartition(m, node, profile);
    if (!place.has_value()) return std::optional<PartitionChoice>();
    return std::optional<PartitionChoice>(ChoiceOf(m, *place, node, profile));
  }

  StatusOr<PolicyAnswer> Ask(int model, DeviceSet free, int count) override {
    const topology::SolveResult& r = memo_.Best(model, free, count);
    if (!r.feasible) return PolicyAnswer{};
    return PolicyAnswer{r.devices};
  }

 private:
  const Fleet& fleet_;
  SolverMemo& memo_;
};

}  // namespace choosers_cc
}  // namespace

const topology::SolveResult& SolverMemo::Best(int model, topology::DeviceSet free, int count) {
  const Question q{model, free.mask(), count};
  auto it = memo_.find(q);
  if (it != memo_.end()) return it->second;
  ++solves_;
  return memo_
      .emplace(q, topology::Solve(*fleet_.models[static_cast<size_t>(model)].node, free, count))
      .first->second;
}

std::optional<topology::PartitionPlace> SolverPartition(const FleetModel& m,
                                                        const NodePartitions& node,
                                                        const std::string& profile) {
  std::vector<const topology::PartitionableDevice*> devices;
  for (const FleetPartitionable& p : m.partitionable) devices.push_back(&p.model);
  return topology::PlacePartition(devices, node.uses, profile);
}

PartitionChoice ChoiceOf(const FleetModel& m, const topology::PartitionPlace& place,
                         const NodePartitions& node, const std::string& profile) {
  const FleetPartitionable& parent = m.partitionable[place.device];
  return {place.device, place.placement,
          choosers_cc::PartitionName(parent, *topology::FindShape(parent.model, profile),
                                     place.placement, node.held)};
}

StatusOr<std::optional<PartitionChoice>> Chooser::ChoosePartition(int model,
                                                                  topology::DeviceSet free,
                                                                  const NodePartitions& node,
                                                                  const std::string& profile) {
  std::string key = std::to_string(model) + "/" + std::to_string(free.mask()) + "/" + profile;
  for (const std::string& name : node.held) key += "," + name;
  if (auto it = partition_memo_.find(key); it != partition_memo_.end()) return it->second;
  ++calls_;
  ASSIGN_OR_RETURN(std::optional<PartitionChoice> choice, AskPartition(model, free, node, profile));
  partition_memo_.emplace(std::move(key), choice);
  return choice;
}

StatusOr<std::optional<topology::DeviceSet>> Chooser::Choose(int model, topology::DeviceSet free,
                                                             int count) {
  ASSIGN_OR_RETURN(const PolicyAnswer* answer, Answer(model, free, count));
  return answer->set;
}

StatusOr<const PolicyAnswer*> Chooser::Answer(int model, topology::DeviceSet free, int count) {
  const Question q{model, free.mask(), count};
  if (auto it = memo_.find(q); it != memo_.end()) return &it->second;
  ++calls_;
  ASSIGN_OR_RETURN(PolicyAnswer answer, Ask(model, free, count));
  const std::optional<topology::DeviceSet>& set = answer.set;
  if (set.has_value() && (set->size() != count || !set->IsSubsetOf(free))) {
    return InternalError("the policy chose devices that are not " + std::to_string(count) +
                         " free devices");
  }
  return &memo_.emplace(q, answer).first->second;
}

std::unique_ptr<Chooser> MakeSolverChooser(const Fleet& fleet, SolverMemo& memo) {
  return std::make_unique<choosers_cc::SolverChooser>(fleet, memo);
}

}  // namespace xpu::lab
