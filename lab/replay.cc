#include "lab/replay.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "api/partitions.h"
#include "api/resource.h"
#include "base/enum_names.h"
#include "controller/device_classes.h"
#include "controller/reference_servers.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "lab/kube_score.h"
#include "lab/node_choice.h"
#include "lab/stock_allocator.h"
#include "topology/partitions.h"
#include "topology/solver.h"

namespace xpu::lab {
namespace {

using nlohmann::json;
using topology::DeviceSet;

constexpr std::string_view kStockUnordered = "stock-unordered";
constexpr std::string_view kStockXpu = "stock-xpu";
constexpr std::string_view kSolver = "solver";
constexpr std::string_view kSolverNode = "solver-node";
// The minor release of the stock allocator the lab runs (lab/stock_allocator.h): 1.37.
constexpr int kLabKubeMinor = 37;

constexpr std::string_view kNodeOrderNames[] = {"first", "most-allocated", "least-allocated"};
static_assert(NamesCover(kNodeOrderNames, NodeOrder::kLeastAllocated));

// The node every stock question is asked on: the allocator sees one node's slices at a time.
constexpr std::string_view kReplayNode = "replay-node";
constexpr std::string_view kPlainClass = "replay-plain";
constexpr std::string_view kDefaultClass = "replay";
constexpr size_t kMaxSeriesPoints = 400;
constexpr size_t kMaxDelaySample = 500;
constexpr int kMaxFreeCount = DeviceSet::kCapacity;
// Slice sets the stock allocator keeps at once (a node's slices differ per allocated set); of
// them, sets with partition devices (a hundred or more devices each, rarely asked twice: the
// policy's answers are memoised), at most kMaxKeptPartitionSlices.
constexpr size_t kMaxKeptSlices = 1024;
constexpr size_t kMaxKeptPartitionSlices = 32;

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
  const topology::SolveResult& Best(int model, DeviceSet free, int count) {
    const Question q{model, free.mask(), count};
    auto it = memo_.find(q);
    if (it != memo_.end()) return it->second;
    ++solves_;
    return memo_
        .emplace(q, topology::Solve(*fleet_.models[static_cast<size_t>(model)].node, free, count))
        .first->second;
  }
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

// A policy's device choice on one node.
class Chooser {
 public:
  virtual ~Chooser() = default;

  // One partition of `profile` on a node of `model` with `free` whole devices free; memoised.
  StatusOr<std::optional<PartitionChoice>> ChoosePartition(int model, DeviceSet free,
                                                           const NodePartitions& node,
                                                           const std::string& profile) {
    std::string key = std::to_string(model) + "/" + std::to_string(free.mask()) + "/" + profile;
    for (const std::string& name : node.held) key += "," + name;
    if (auto it = partition_memo_.find(key); it != partition_memo_.end()) return it->second;
    ++calls_;
    ASSIGN_OR_RETURN(std::optional<PartitionChoice> choice,
                     AskPartition(model, free, node, profile));
    partition_memo_.emplace(std::move(key), choice);
    return choice;
  }
  StatusOr<std::optional<DeviceSet>> Choose(int model, DeviceSet free, int count) {
    ASSIGN_OR_RETURN(const PolicyAnswer* answer, Answer(model, free, count));
    return answer->set;
  }
  // The whole answer, with the allocation's DynamicResources raw score; memoised (the pointer
  // stays valid: the memo only grows).
  StatusOr<const PolicyAnswer*> Answer(int model, DeviceSet free, int count) {
    const Question q{model, free.mask(), count};
    if (auto it = memo_.find(q); it != memo_.end()) return &it->second;
    ++calls_;
    ASSIGN_OR_RETURN(PolicyAnswer answer, Ask(model, free, count));
    const std::optional<DeviceSet>& set = answer.set;
    if (set.has_value() && (set->size() != count || !set->IsSubsetOf(free))) {
      return InternalError("the policy chose devices that are not " + std::to_string(count) +
                           " free devices");
    }
    return &memo_.emplace(q, answer).first->second;
  }
  int64_t calls() const { return calls_; }

 protected:
  virtual StatusOr<PolicyAnswer> Ask(int model, DeviceSet free, int count) = 0;
  virtual StatusOr<std::optional<PartitionChoice>> AskPartition(int model, DeviceSet free,
                                                                const NodePartitions& node,
                                                                const std::string& profile) = 0;

 private:
  std::unordered_map<Question, PolicyAnswer, QuestionHash> memo_;
  std::unordered_map<std::string, std::optional<PartitionChoice>> partition_memo_;
  int64_t calls_ = 0;
};

// The solver's place for a partition (topology::PlacePartition) on one node.
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
          PartitionName(parent, *topology::FindShape(parent.model, profile), place.placement,
                        node.held)};
}

// The devices a node holds, by name: whole devices that jobs hold (partitionable ones only while
// they hold no partition) and the partition devices.
std::set<std::string> HeldDevices(const FleetModel& m, DeviceSet free, const NodePartitions& node) {
  std::set<std::string> held = node.held;
  for (size_t k = 0; k < m.partitionable.size(); ++k) {
    if (node.uses[k].whole) held.insert(m.partitionable[k].name);
  }
  for (int id : (m.node->All() - free).Ids()) {
    const std::string& name = m.node->device(id).name;
    if (std::none_of(m.partitionable.begin(), m.partitionable.end(),
                     [&name](const FleetPartitionable& p) { return p.name == name; })) {
      held.insert(name);
    }
  }
  return held;
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

json ClaimObject(json spec) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "job"}, {"namespace", "default"}, {"uid", "replay"}}},
          {"spec", std::move(spec)}};
}

// The stock allocator over one kind of slices and claims.
class StockChooser : public Chooser {
 public:
  StockChooser(const Fleet& fleet, StockAllocator& allocator, std::string driver)
      : fleet_(fleet), allocator_(allocator), driver_(std::move(driver)) {}

 protected:
  // The slices for a node of `model` with `free` devices free, and the key they are kept under.
  virtual StatusOr<std::string> Slices(int model, DeviceSet free) = 0;
  // The claim for `count` devices; null when the policy has no claim for the count.
  virtual StatusOr<json> Claim(int count) = 0;

  StatusOr<PolicyAnswer> Ask(int model, DeviceSet free, int count) override {
    ASSIGN_OR_RETURN(const json claim, Claim(count));
    if (claim.is_null()) return PolicyAnswer{};
    ASSIGN_OR_RETURN(const std::string key, Slices(model, free));
    const topology::Node& node = *fleet_.models[static_cast<size_t>(model)].node;
    std::vector<std::string> allocated;
    for (int id : (node.All() - free).Ids()) {
      allocated.push_back(driver_ + "/" + std::string(kReplayNode) + "/" + node.device(id).name);
    }
    ASSIGN_OR_RETURN(auto results,
                     allocator_.AllocateResults(key, std::string(kReplayNode), allocated, claim));
    if (!results.has_value()) return PolicyAnswer{};
    DeviceSet set;
    std::vector<std::string> requests;
    for (const AllocatedDevice& result : *results) {
      const std::string& chosen = result.device;
      requests.push_back(result.request);
      for (const std::string& name : Members(model, chosen)) {
        std::optional<int> id = node.FindDevice(name);
        if (!id.has_value()) {
          return InternalError("the stock allocator chose device " + chosen + ", which " +
                               fleet_.models[static_cast<size_t>(model)].name + " does not have");
        }
        set.Add(*id);
      }
    }
    return PolicyAnswer{set, PrioritizedListRaw(claim["spec"], requests)};
  }

  // The slices for a partition question on a node of `model`, and the key they are kept under.
  virtual StatusOr<std::string> PartitionSlices(int model, DeviceSet free,
                                                const NodePartitions& node) = 0;

  StatusOr<std::optional<PartitionChoice>> AskPartition(int model, DeviceSet free,
                                                        const NodePartitions& node,
                                                        const std::string& profile) override {
    const FleetModel& m = fleet_.models[static_cast<size_t>(model)];
    std::string kind;
    for (const FleetPartitionable& p : m.partitionable) {
      if (kind.empty() && topology::FindShape(p.model, profile) != nullptr) kind = p.kind;
    }
    if (kind.empty()) return std::optional<PartitionChoice>();
    ASSIGN_OR_RETURN(const std::string key, PartitionSlices(model, free, node));
    std::vector<std::string> allocated;
    for (const std::string& name : HeldDevices(m, free, node)) {
      allocated.push_back(driver_ + "/" + std::string(kReplayNode) + "/" + name);
    }
    const json claim = ClaimObject(
        {{"devices",
          {{"requests",
            json::array(
                {{{"name", "partition"},
                  {"exactly",
                   {{"deviceClassName", controller::PartitionClassName(kind, driver_)},
                    {"allocationMode", "ExactCount"},
                    {"count", 1},
                    {"selectors",
                     json::array(
                         {{{"cel",
                            {{"expression", "device.attributes[" + controller::CelLiteral(driver_) +
                                                "].profile == " +
                                                controller::CelLiteral(profile)}}}}})}}}}})}}}});
    ASSIGN_OR_RETURN(auto names,
                     allocator_.Allocate(key, std::string(kReplayNode), allocated, claim));
    if (!names.has_value()) return std::optional<PartitionChoice>();
    if (names->size() != 1) {
      return InternalError("the stock allocator gave " + std::to_string(names->size()) +
                           " devices for one partition");
    }
    const std::optional<api::PartitionTarget> t =
        api::ResolvePartitionDevice(m.inventory, names->front());
    for (size_t k = 0; t.has_value() && k < m.partitionable.size(); ++k) {
      if (m.partitionable[k].name == t->parent->name && t->profile->name == profile) {
        return std::optional<PartitionChoice>(PartitionChoice{k, t->placement, names->front()});
      }
    }
    return InternalError("the stock allocator chose " + names->front() + ", which is not a " +
                         profile + " partition of " + m.name);
  }

  // The partition-serving pool of `model`: BuildPool's, with `allocated` held.
  StatusOr<controller::DesiredPool> PartitionPool(int model, const std::set<std::string>& allocated,
                                                  const controller::Config& config) const {
    const controller::NodeFacts facts{std::string(kReplayNode), "replay-node-uid", {}};
    controller::PublishOptions options;
    options.driver = driver_;
    return controller::BuildPool(fleet_.models[static_cast<size_t>(model)].inventory, facts, config,
                                 options, allocated);
  }

  // The pool's slice objects, named in order.
  json SliceArray(const controller::DesiredPool& pool) const {
    const controller::NodeFacts facts{std::string(kReplayNode), "replay-node-uid", {}};
    json slices = json::array();
    for (const api::resource::ResourceSlice& slice :
         controller::SliceObjects(pool, facts, driver_, 1)) {
      json object = api::resource::ToJson(slice);
      object["metadata"]["name"] = std::string(kReplayNode) + "-" + std::to_string(slices.size());
      slices.push_back(std::move(object));
    }
    return slices;
  }

  // The node's devices a published device stands for: itself, or a group's members.
  virtual std::vector<std::string> Members(int /*model*/, const std::string& device) {
    return {device};
  }

  // Puts `slices` under `key` once; the allocator keeps the kMaxKeptSlices sent last (of the
  // `partitions` ones, the kMaxKeptPartitionSlices sent last).
  Status Put(const std::string& key, const std::function<StatusOr<json>()>& build,
             bool partitions = false) {
    if (sent_.contains(key)) return OkStatus();
    ASSIGN_OR_RETURN(const json slices, build());
    RETURN_IF_ERROR(allocator_.PutSlices(key, slices));
    sent_.insert(key);
    std::deque<std::string>& order = partitions ? sent_partitions_ : sent_order_;
    order.push_back(key);
    if (order.size() > (partitions ? kMaxKeptPartitionSlices : kMaxKeptSlices)) {
      RETURN_IF_ERROR(allocator_.ForgetSlices(order.front()));
      sent_.erase(order.front());
      order.pop_front();
    }
    return OkStatus();
  }

  const Fleet& fleet_;
  StockAllocator& allocator_;
  std::string driver_;

 private:
  std::set<std::string, std::less<>> sent_;
  std::deque<std::string> sent_order_;
  std::deque<std::string> sent_partitions_;
};

// Slices as other drivers publish them (devices in index order, index, uuid and model), and the
// plain claim: a count of one class.
class UnorderedChooser : public StockChooser {
 public:
  using StockChooser::StockChooser;

  static json PlainClass(const std::string& driver) {
    return {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "DeviceClass"},
        {"metadata", {{"name", std::string(kPlainClass)}}},
        {"spec",
         {{"selectors", json::array({{{"cel",
                                       {{"expression", "device.driver == " +
                                                           controller::CelLiteral(driver)}}}}})}}}};
  }

 protected:
  StatusOr<std::string> Slices(int model, DeviceSet /*free*/) override {
    std::string key = "plain/" + std::to_string(model);
    RETURN_IF_ERROR(Put(key, [&]() -> StatusOr<json> {
      const FleetModel& m = fleet_.models[static_cast<size_t>(model)];
      std::map<std::string, const api::InventoryDevice*> by_name;
      for (const api::InventoryDevice& d : m.inventory.status.devices) by_name[d.name] = &d;
      json devices = json::array();
      for (const topology::DeviceSpec& spec : m.node->devices()) {
        json attributes = {{"index", {{"int", spec.index}}}};
        if (auto it = by_name.find(spec.name); it != by_name.end()) {
          if (!it->second->uuid.empty()) attributes["uuid"] = {{"string", it->second->uuid}};
          if (!it->second->model.empty()) attributes["model"] = {{"string", it->second->model}};
        }
        devices.push_back({{"name", spec.name}, {"attributes", std::move(attributes)}});
      }
      return json::array(
          {{{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceSlice"},
            {"metadata", {{"name", std::string(kReplayNode) + "-plain"}}},
            {"spec",
             {{"driver", driver_},
              {"pool",
               {{"name", std::string(kReplayNode)}, {"generation", 1}, {"resourceSliceCount", 1}}},
              {"nodeName", std::string(kReplayNode)},
              {"devices", std::move(devices)}}}}});
    }));
    return key;
  }

  // The controller's partition devices and counters, in the order a driver that does not order
  // them publishes: parent, then profile, then placement or instance, each ascending.
  StatusOr<std::string> PartitionSlices(int model, DeviceSet /*free*/,
                                        const NodePartitions& /*node*/) override {
    std::string key = "plain-partitions/" + std::to_string(model);
    RETURN_IF_ERROR(Put(key, [&]() -> StatusOr<json> {
      ASSIGN_OR_RETURN(controller::DesiredPool pool,
                       PartitionPool(model, {}, controller::Config{}));
      const FleetModel& m = fleet_.models[static_cast<size_t>(model)];
      auto rank = [&m](const api::resource::Device& d) {
        const std::optional<api::PartitionTarget> t =
            api::ResolvePartitionDevice(m.inventory, d.name);
        if (!t.has_value()) return std::make_tuple(size_t{0}, size_t{0}, int64_t{0});
        const auto& profiles = t->parent->partitioning->profiles;
        return std::make_tuple(static_cast<size_t>(t->parent - m.inventory.status.devices.data()),
                               static_cast<size_t>(t->profile - profiles.data()),
                               t->placement.value_or(t->instance));
      };
      std::vector<api::resource::Device*> at;
      std::vector<api::resource::Device> parts;
      for (api::resource::ResourceSliceSpec& slice : pool.slices) {
        for (api::resource::Device& d : slice.devices) {
          if (!d.attributes.contains(std::string(controller::kPartitionKindAttribute))) continue;
          at.push_back(&d);
          parts.push_back(d);
        }
      }
      std::stable_sort(parts.begin(), parts.end(),
                       [&rank](const auto& a, const auto& b) { return rank(a) < rank(b); });
      for (size_t i = 0; i < at.size(); ++i) *at[i] = std::move(parts[i]);
      return SliceArray(pool);
    }));
    return key;
  }

  StatusOr<json> Claim(int count) override {
    return ClaimObject(
        {{"devices",
          {{"requests", json::array({{{"name", "accelerators"},
                                      {"exactly",
                                       {{"deviceClassName", std::string(kPlainClass)},
                                        {"allocationMode", "ExactCount"},
                                        {"count", count}}}}})}}}});
  }
};

// The controller's slices for the devices allocated, and the claims `xpuctl render` writes.
class XpuChooser : public StockChooser {
 public:
  XpuChooser(const Fleet& fleet, StockAllocator& allocator, std::string driver,
             const controller::Config& config, std::string capability_class)
      : StockChooser(fleet, allocator, std::move(driver)),
        config_(config),
        class_(std::move(capability_class)) {
    for (const controller::ReferenceServer& server : controller::ReferenceServers()) {
      servers_.push_back(server);
    }
    for (const FleetModel& model : fleet.models) {
      if (controller::FindReferenceServer(model.name) == nullptr) {
        servers_.push_back({model.name, model.inventory});
      }
    }
  }

  // Why counts have no claim (render's errors) or leave vendors or models out, by count.
  std::vector<std::string> Notes() const {
    std::vector<std::string> out;
    for (const auto& [count, notes] : notes_) {
      for (const std::string& note : notes) {
        out.push_back(std::to_string(count) + (count == 1 ? " device: " : " devices: ") + note);
      }
    }
    return out;
  }

 protected:
  StatusOr<std::string> Slices(int model, DeviceSet free) override {
    std::string key = "xpu/" + std::to_string(model) + "/" + std::to_string(free.mask());
    RETURN_IF_ERROR(Put(key, [&]() -> StatusOr<json> {
      const FleetModel& m = fleet_.models[static_cast<size_t>(model)];
      std::set<std::string> allocated;
      for (int id : (m.node->All() - free).Ids()) allocated.insert(m.node->device(id).name);
      const controller::NodeFacts facts{std::string(kReplayNode), "replay-node-uid", {}};
      controller::PublishOptions options;
      options.driver = driver_;
      ASSIGN_OR_RETURN(const controller::DesiredPool pool,
                       controller::BuildPool(m.inventory, facts, config_, options, allocated));
      json slices = json::array();
      for (const api::resource::ResourceSlice& slice :
           controller::SliceObjects(pool, facts, driver_, 1)) {
        json object = api::resource::ToJson(slice);
        RecordMembers(model, object);
        object["metadata"]["name"] = std::string(kReplayNode) + "-" + std::to_string(slices.size());
        slices.push_back(std::move(object));
      }
      return slices;
    }));
    return key;
  }

  // The controller's slices with what the node holds (whole devices and partitions), as it
  // republishes them.
  StatusOr<std::string> PartitionSlices(int model, DeviceSet free,
                                        const NodePartitions& node) override {
    const FleetModel& m = fleet_.models[static_cast<size_t>(model)];
    const std::set<std::string> allocated = HeldDevices(m, free, node);
    std::string key = "xpu-partitions/" + std::to_string(model);
    for (const std::string& name : allocated) key += "/" + name;
    RETURN_IF_ERROR(Put(
        key,
        [&]() -> StatusOr<json> {
          ASSIGN_OR_RETURN(const controller::DesiredPool pool,
                           PartitionPool(model, allocated, config_));
          return SliceArray(pool);
        },
        /*partitions=*/true));
    return key;
  }

  // Groups mode: a group device consumes one counter per member device, named after it (a
  // partitionable device's counters name slots and capacities, not devices).
  void RecordMembers(int model, const json& slice) {
    const topology::Node& node = *fleet_.models[static_cast<size_t>(model)].node;
    std::map<std::string, std::vector<std::string>>& members = members_[model];
    const json devices = slice["spec"].value("devices", json::array());
    for (const json& device : devices) {
      const std::string name = device.value("name", "");
      if (members.contains(name) || !device.contains("consumesCounters")) continue;
      std::vector<std::string>& list = members[name];
      for (const json& consumption : device["consumesCounters"]) {
        const json counters = consumption.value("counters", json::object());
        for (const auto& [counter, value] : counters.items()) {
          if (node.FindDevice(counter).has_value()) list.push_back(counter);
        }
      }
    }
  }

  std::vector<std::string> Members(int model, const std::string& device) override {
    auto m = members_.find(model);
    if (m == members_.end()) return {device};
    auto it = m->second.find(device);
    if (it == m->second.end() || it->second.empty()) return {device};
    return it->second;
  }

  StatusOr<json> Claim(int count) override {
    if (auto it = claims_.find(count); it != claims_.end()) return it->second;
    controller::CapabilityRequest request;
    request.name = "job";
    request.capability_class = class_;
    request.count = count;
    request.topology = "single-node";
    controller::RenderOptions options;
    options.config = config_;
    options.driver = driver_;
    options.servers = servers_;
    StatusOr<controller::Rendered> rendered = controller::Render(request, options);
    json claim = nullptr;
    std::vector<std::string>& notes = notes_[count];
    if (!rendered.ok()) {
      notes.push_back("no claim: " + rendered.status().message());
    } else {
      for (const json& object : rendered->objects) {
        if (object.value("kind", "") == "ResourceClaimTemplate") {
          claim = ClaimObject(object["spec"]["spec"]);
        }
      }
      if (claim.is_null()) notes.emplace_back("render wrote no ResourceClaimTemplate");
      for (const controller::VendorRender& v : rendered->vendors) {
        if (v.excluded_models.empty()) continue;
        std::string models;
        for (const std::string& m : v.excluded_models) models += (models.empty() ? "" : ", ") + m;
        notes.push_back(v.vendor + "'s subrequest leaves out " + models);
      }
      for (const std::string& note : rendered->notes) {
        if (note.starts_with("no images configured")) continue;  // the lab runs no pods
        notes.push_back(note);
      }
    }
    claims_[count] = claim;
    return claim;
  }

 private:
  const controller::Config& config_;
  std::string class_;
  std::vector<controller::ReferenceServer> servers_;
  std::map<int, json> claims_;
  std::map<int, std::vector<std::string>> notes_;
  std::map<int, std::map<std::string, std::vector<std::string>>> members_;
};

// What a job asks for: nodes x devices per node, or one partition of `profile` (per_node 0).
struct Shape {
  int nodes = 1;
  int per_node = 1;
  std::string profile;
  friend bool operator<(const Shape& a, const Shape& b) {
    return std::tie(a.nodes, a.per_node, a.profile) < std::tie(b.nodes, b.per_node, b.profile);
  }
};

// Whether the device's largest profile still fits somewhere on it.
bool LargestFits(const topology::PartitionableDevice& device, const topology::PartitionUse& use) {
  const std::vector<int> left = topology::StillPossible(device, use);
  return !left.empty() && left.front() > 0;
}

// A step function recorded at every event, averaged into at most kMaxSeriesPoints buckets.
class Series {
 public:
  void Record(double t, double value) {
    if (!points_.empty() && points_.back().t == t) {
      points_.back().value = value;
    } else {
      points_.push_back({t, value});
    }
  }
  std::vector<SeriesPoint> Downsampled(double end) const {
    if (points_.size() <= kMaxSeriesPoints || end <= points_.front().t) return points_;
    const double start = points_.front().t;
    const double width = (end - start) / static_cast<double>(kMaxSeriesPoints);
    std::vector<SeriesPoint> out;
    size_t i = 0;
    for (size_t b = 0; b < kMaxSeriesPoints; ++b) {
      const double lo = start + width * static_cast<double>(b);
      const double hi = b + 1 == kMaxSeriesPoints ? end : lo + width;
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

 private:
  std::vector<SeriesPoint> points_;
};

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// One policy's replay.
class Simulation {
 public:
  // `kube`, when not null, picks the node of single-node jobs instead of `order`.
  Simulation(const Fleet& fleet, const std::vector<Job>& jobs, Chooser& chooser, SolverMemo& solver,
             NodeOrder order, KubeNodeSearch* kube, bool solver_node, bool record)
      : fleet_(fleet),
        jobs_(jobs),
        chooser_(chooser),
        solver_(solver),
        order_(order),
        kube_(kube),
        solver_node_(solver_node),
        record_(record) {
    for (const FleetNode& n : fleet.nodes) {
      free_.push_back(model(n.model).node->All());
    }
    for (const DeviceSet& f : free_) ++histogram_[static_cast<size_t>(f.size())];
    for (const FleetNode& n : fleet.nodes) ++nodes_of_model_[n.model];
    for (const FleetNode& n : fleet.nodes) {
      const FleetModel& m = model(n.model);
      partitions_.push_back({std::vector<topology::PartitionUse>(m.partitionable.size()), {}});
      largest_.emplace_back(m.partitionable.size(), 0);
      partitionable_devices_ += static_cast<int>(m.partitionable.size());
    }
    for (int n = 0; n < static_cast<int>(fleet.nodes.size()); ++n) UpdateLargest(n);
  }

  StatusOr<PolicyMetrics> Run(std::string policy) {
    metrics_.policy = std::move(policy);
    metrics_.jobs = static_cast<int64_t>(jobs_.size());
    std::vector<size_t> arrivals(jobs_.size());
    std::iota(arrivals.begin(), arrivals.end(), size_t{0});
    std::stable_sort(arrivals.begin(), arrivals.end(),
                     [&](size_t a, size_t b) { return jobs_[a].arrival < jobs_[b].arrival; });
    if (arrivals.empty()) return metrics_;
    const double first = jobs_[arrivals.front()].arrival;
    last_arrival_ = jobs_[arrivals.back()].arrival;
    double now = first;
    size_t next = 0;
    while (next < arrivals.size() || !running_.empty()) {
      double t = std::numeric_limits<double>::infinity();
      if (next < arrivals.size()) t = jobs_[arrivals[next]].arrival;
      if (!running_.empty()) t = std::min(t, running_.top().end);
      Advance(now, t);
      now = t;
      while (!running_.empty() && running_.top().end <= now) {
        Finish(running_.top().job);
        running_.pop();
      }
      while (next < arrivals.size() && jobs_[arrivals[next]].arrival <= now) {
        Arrive(arrivals[next++]);
      }
      RETURN_IF_ERROR(Pass(now));
      stranded_ = Stranded();
      utilisation_.Record(now, busy_ / fleet_.devices);
      stranded_series_.Record(now, static_cast<double>(stranded_));
    }
    for (const auto& [shape, waiting] : queues_) {
      metrics_.unplaced += static_cast<int64_t>(waiting.size());
    }
    metrics_.makespan = now - first;
    const double window = last_arrival_ - first;
    metrics_.utilisation = window > 0 ? busy_seconds_ / (fleet_.devices * window) : 0;
    std::sort(delays_.begin(), delays_.end());
    metrics_.queue_delay_p50 = Percentile(delays_, 0.50);
    metrics_.queue_delay_p95 = Percentile(delays_, 0.95);
    metrics_.queue_delay_mean = delays_.empty()
                                    ? 0
                                    : std::accumulate(delays_.begin(), delays_.end(), 0.0) /
                                          static_cast<double>(delays_.size());
    const size_t sample = std::min(delays_.size(), kMaxDelaySample);
    for (size_t i = 0; i < sample; ++i) {
      metrics_.queue_delays.push_back(
          delays_[(i * (delays_.size() - 1)) / std::max<size_t>(sample - 1, 1)]);
    }
    if (shortfall_count_ > 0) {
      metrics_.mean_bandwidth_shortfall = shortfall_sum_ / static_cast<double>(shortfall_count_);
    }
    if (bottleneck_count_ > 0) {
      metrics_.mean_bottleneck_gbps =
          bottleneck_sum_ / static_cast<double>(bottleneck_count_) / 1000.0;
    }
    metrics_.allocator_calls = chooser_.calls();
    metrics_.fragmented_waits = static_cast<int64_t>(fragmented_.size());
    if (partitionable_devices_ > 0 && window > 0) {
      metrics_.largest_profile_fits = largest_seconds_ / (partitionable_devices_ * window);
    }
    metrics_.utilisation_series = utilisation_.Downsampled(now);
    metrics_.stranded_series = stranded_series_.Downsampled(now);
    return metrics_;
  }

 private:
  struct Running {
    double end = 0;
    size_t job = 0;
    // Min-heap on (end, job).
    bool operator<(const Running& o) const { return end != o.end ? end > o.end : job > o.job; }
  };
  struct ShapeState {
    // The shape failed on every node at the end of the last pass, and no node has gained free
    // devices since but those in dirty_: only they can serve it now.
    bool failed_everywhere = false;
  };

  const FleetModel& model(int index) const { return fleet_.models[static_cast<size_t>(index)]; }
  const FleetModel& model_of(int node) const {
    return model(fleet_.nodes[static_cast<size_t>(node)].model);
  }

  void Advance(double from, double to) {
    if (to <= from) return;
    // Utilisation over the arrival window: the drain after the last arrival is not the fleet's
    // steady state.
    const double busy_to = std::min(to, last_arrival_);
    if (busy_to > from) {
      busy_seconds_ += busy_ * (busy_to - from);
      largest_seconds_ += static_cast<double>(largest_fits_) * (busy_to - from);
    }
    metrics_.stranded_device_seconds += static_cast<double>(stranded_) * (to - from);
  }

  void SetFree(int node, DeviceSet set) {
    DeviceSet& f = free_[static_cast<size_t>(node)];
    --histogram_[static_cast<size_t>(f.size())];
    f = set;
    ++histogram_[static_cast<size_t>(f.size())];
    UpdateLargest(node);
  }

  // The node's partition state as a question sees it: a partitionable device that is not free
  // and has given out no partition is held whole.
  NodePartitions PartitionsOf(int node) const {
    NodePartitions out = partitions_[static_cast<size_t>(node)];
    const FleetModel& m = model_of(node);
    const DeviceSet free = free_[static_cast<size_t>(node)];
    for (size_t k = 0; k < m.partitionable.size(); ++k) {
      out.uses[k].whole = !free.Contains(m.partitionable[k].device) && out.uses[k].empty();
    }
    return out;
  }

  // Recounts the node's devices on which their largest profile still fits.
  void UpdateLargest(int node) {
    const FleetModel& m = model_of(node);
    if (m.partitionable.empty()) return;
    const NodePartitions now = PartitionsOf(node);
    std::vector<int>& fits = largest_[static_cast<size_t>(node)];
    for (size_t k = 0; k < m.partitionable.size(); ++k) {
      const int f = LargestFits(m.partitionable[k].model, now.uses[k]) ? 1 : 0;
      largest_fits_ += f - fits[k];
      fits[k] = f;
    }
  }

  struct PartitionPlaced {
    int node = 0;
    PartitionChoice choice;
    const topology::PartitionShape* shape = nullptr;
    double share = 0;
  };

  void FinishPartition(const PartitionPlaced& p) {
    const FleetModel& m = model_of(p.node);
    const FleetPartitionable& parent = m.partitionable[p.choice.slot];
    NodePartitions& state = partitions_[static_cast<size_t>(p.node)];
    topology::PartitionUse& use = state.uses[p.choice.slot];
    use.Give(*p.shape, p.choice.placement);
    state.held.erase(p.choice.device);
    busy_ -= p.share;
    dirty_.insert(p.node);
    if (use.empty()) {
      SetFree(p.node, free_[static_cast<size_t>(p.node)] | DeviceSet::Of({parent.device}));
    } else {
      UpdateLargest(p.node);
    }
  }

  void Finish(size_t job) {
    if (auto it = partition_placed_.find(job); it != partition_placed_.end()) {
      FinishPartition(it->second);
      partition_placed_.erase(it);
      return;
    }
    for (const auto& [node, set] : placed_[job]) {
      SetFree(node, free_[static_cast<size_t>(node)] | set);
      busy_ -= set.size();
      dirty_.insert(node);
    }
    placed_.erase(job);
  }

  // Whether a model of the fleet has a device that could host the profile when empty.
  bool Offered(const std::string& profile) const {
    for (const FleetModel& m : fleet_.models) {
      for (const FleetPartitionable& p : m.partitionable) {
        if (topology::PlacePartition({&p.model}, {topology::PartitionUse{}}, profile)) return true;
      }
    }
    return false;
  }

  void Arrive(size_t job) {
    const Job& j = jobs_[job];
    if (j.partition()) {
      if (!Offered(j.profile)) {
        ++metrics_.rejected;
        return;
      }
      const Shape shape{1, 0, j.profile};
      std::deque<size_t>& waiting = queues_[shape];
      if (waiting.empty()) state_[shape] = ShapeState{};
      waiting.push_back(job);
      return;
    }
    const Shape shape{j.nodes(), j.per_node(), ""};
    // Larger than every node, or than the fleet's nodes of any one model: never fits.
    bool fits = false;
    for (const auto& [m, nodes] : nodes_of_model_) {
      fits = fits || (model(m).devices >= shape.per_node && nodes >= shape.nodes);
    }
    if (!fits) {
      ++metrics_.rejected;
      return;
    }
    std::deque<size_t>& waiting = queues_[shape];
    if (waiting.empty()) state_[shape] = ShapeState{};
    waiting.push_back(job);
  }

  // Nodes to try for `count` devices, in the node order; only `dirty_` nodes when the shape
  // failed everywhere before.
  std::vector<int> Candidates(int count, bool only_dirty) const {
    std::vector<int> nodes;
    if (only_dirty) {
      for (int n : dirty_) {
        if (free_[static_cast<size_t>(n)].size() >= count) nodes.push_back(n);
      }
    } else {
      for (int n = 0; n < static_cast<int>(free_.size()); ++n) {
        if (free_[static_cast<size_t>(n)].size() >= count) nodes.push_back(n);
      }
    }
    auto free_count = [&](int n) { return free_[static_cast<size_t>(n)].size(); };
    if (order_ == NodeOrder::kMostAllocated) {
      std::stable_sort(nodes.begin(), nodes.end(),
                       [&](int a, int b) { return free_count(a) < free_count(b); });
    } else if (order_ == NodeOrder::kLeastAllocated) {
      std::stable_sort(nodes.begin(), nodes.end(),
                       [&](int a, int b) { return free_count(a) > free_count(b); });
    }
    return nodes;
  }

  // A placement for a single-node job, or nullopt.
  StatusOr<std::optional<std::pair<int, DeviceSet>>> PlaceSingle(int count, bool only_dirty) {
    using Result = std::optional<std::pair<int, DeviceSet>>;
    if (NodesWithFree(count) == 0) return Result();
    if (kube_ != nullptr) return PlaceSingleKube(count, only_dirty);
    const std::vector<int> nodes = Candidates(count, only_dirty);
    if (solver_node_) {
      Result best;
      topology::Score best_score;
      int best_left = 0;
      for (int n : nodes) {
        const DeviceSet free = free_[static_cast<size_t>(n)];
        const topology::SolveResult& r =
            solver_.Best(fleet_.nodes[static_cast<size_t>(n)].model, free, count);
        if (!r.feasible) continue;
        const int left = free.size() - count;
        if (!best.has_value() || r.score.BetterThan(best_score) ||
            (r.score == best_score &&
             (left < best_left || (left == best_left && n < best->first)))) {
          best = std::make_pair(n, r.devices);
          best_score = r.score;
          best_left = left;
        }
      }
      return best;
    }
    for (int n : nodes) {
      ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                       chooser_.Choose(fleet_.nodes[static_cast<size_t>(n)].model,
                                       free_[static_cast<size_t>(n)], count));
      if (set.has_value()) return Result(std::make_pair(n, *set));
    }
    return Result();
  }

  // A placement for a single-node job by kube-scheduler's search and scores (lab/node_choice.h).
  // The nodes that can pass Filter: those whose free devices cover the count, and after a pass in
  // which the shape failed everywhere, only the dirty ones (dirty_ is ordered, as `only` must be).
  StatusOr<std::optional<std::pair<int, DeviceSet>>> PlaceSingleKube(int count, bool only_dirty) {
    using Result = std::optional<std::pair<int, DeviceSet>>;
    std::vector<int> dirty;
    if (only_dirty) dirty.assign(dirty_.begin(), dirty_.end());
    ASSIGN_OR_RETURN(
        const std::optional<int> node,
        kube_->Schedule(
            [&](int n) -> StatusOr<std::optional<int64_t>> {
              const DeviceSet free = free_[static_cast<size_t>(n)];
              if (free.size() < count) return std::optional<int64_t>();
              ASSIGN_OR_RETURN(
                  const PolicyAnswer* answer,
                  chooser_.Answer(fleet_.nodes[static_cast<size_t>(n)].model, free, count));
              if (!answer->set.has_value()) return std::optional<int64_t>();
              return std::optional<int64_t>(answer->prioritized_raw);
            },
            only_dirty ? &dirty : nullptr));
    if (!node.has_value()) return Result();
    ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                     chooser_.Choose(fleet_.nodes[static_cast<size_t>(*node)].model,
                                     free_[static_cast<size_t>(*node)], count));
    return Result(std::make_pair(*node, *set));
  }

  // A place for one partition of `profile`: the node order's first node where the policy finds
  // one (solver-node: the solver's cheapest over all nodes, then the node order).
  StatusOr<std::optional<PartitionPlaced>> PlacePartitionJob(const std::string& profile,
                                                             bool only_dirty) {
    std::optional<PartitionPlaced> best;
    std::optional<topology::PartitionCost> best_cost;
    for (int n : Candidates(0, only_dirty)) {
      const FleetModel& m = model_of(n);
      if (m.partitionable.empty()) continue;
      const NodePartitions state = PartitionsOf(n);
      std::optional<PartitionChoice> choice;
      if (solver_node_) {
        const std::optional<topology::PartitionPlace> place = SolverPartition(m, state, profile);
        if (!place.has_value() || (best_cost.has_value() && !(place->cost < *best_cost))) continue;
        best_cost = place->cost;
        choice = ChoiceOf(m, *place, state, profile);
      } else {
        ASSIGN_OR_RETURN(choice,
                         chooser_.ChoosePartition(fleet_.nodes[static_cast<size_t>(n)].model,
                                                  free_[static_cast<size_t>(n)], state, profile));
        if (!choice.has_value()) continue;
      }
      const topology::PartitionableDevice& device = m.partitionable[choice->slot].model;
      const topology::PartitionShape* shape = topology::FindShape(device, profile);
      if (shape == nullptr ||
          !topology::PartitionFits(device, state.uses[choice->slot], *shape, choice->placement)) {
        return InternalError("the policy chose partition " + choice->device +
                             ", which does not fit");
      }
      best = PartitionPlaced{n, *std::move(choice), shape, DeviceShare(device, *shape)};
      if (!solver_node_) break;
    }
    return best;
  }

  // A waiting partition job is held up by fragmentation when a device that offers its profile
  // has the free slots and units for it, but no legal placement free.
  bool Fragmented(const std::string& profile) const {
    for (int n = 0; n < static_cast<int>(fleet_.nodes.size()); ++n) {
      const FleetModel& m = model_of(n);
      if (m.partitionable.empty()) continue;
      const NodePartitions state = PartitionsOf(n);
      for (size_t k = 0; k < m.partitionable.size(); ++k) {
        const topology::PartitionableDevice& device = m.partitionable[k].model;
        const topology::PartitionShape* shape = topology::FindShape(device, profile);
        if (shape == nullptr || shape->placements.empty() || state.uses[k].whole) continue;
        topology::PartitionUse units = state.uses[k];
        units.slots = 0;
        const int free_slots = static_cast<int>(device.slots) - std::popcount(state.uses[k].slots);
        if (free_slots >= shape->slots &&
            topology::PartitionFits(device, units, *shape, shape->placements.front())) {
          return true;
        }
      }
    }
    return false;
  }

  void StartPartition(size_t job, const PartitionPlaced& p, double now) {
    const FleetModel& m = model_of(p.node);
    const FleetPartitionable& parent = m.partitionable[p.choice.slot];
    NodePartitions& state = partitions_[static_cast<size_t>(p.node)];
    const bool was_free = state.uses[p.choice.slot].empty();
    state.uses[p.choice.slot].Take(*p.shape, p.choice.placement);
    state.held.insert(p.choice.device);
    busy_ += p.share;
    if (was_free) {
      SetFree(p.node, free_[static_cast<size_t>(p.node)] - DeviceSet::Of({parent.device}));
    } else {
      UpdateLargest(p.node);
    }
    ++metrics_.placements;
    ++metrics_.partition_placements;
    delays_.push_back(now - jobs_[job].arrival);
    if (record_) {
      char start[32];
      std::snprintf(start, sizeof start, "%g", now);
      metrics_.placement_log.push_back(jobs_[job].id + " @" + start + " " +
                                       fleet_.nodes[static_cast<size_t>(p.node)].name + ":" +
                                       p.choice.device);
    }
    partition_placed_[job] = p;
    running_.push({now + jobs_[job].duration, job});
  }

  int NodesWithFree(int count) const {
    int nodes = 0;
    for (int f = std::max(count, 0); f <= kMaxFreeCount; ++f) {
      nodes += histogram_[static_cast<size_t>(f)];
    }
    return nodes;
  }

  // A placement for a gang: the fabric solver over each model's nodes that can give the count.
  StatusOr<std::vector<std::pair<int, DeviceSet>>> PlaceGang(const Shape& shape) {
    std::vector<std::pair<int, DeviceSet>> parts;
    if (NodesWithFree(shape.per_node) < shape.nodes) return parts;
    const topology::Fabric& fabric = *fleet_.fabric;
    std::optional<topology::GangResult> best;
    for (int m = 0; m < static_cast<int>(fleet_.models.size()); ++m) {
      std::vector<int> free_devices(fleet_.nodes.size(), 0);
      int candidates = 0;
      for (int n = 0; n < static_cast<int>(fleet_.nodes.size()); ++n) {
        const DeviceSet free = free_[static_cast<size_t>(n)];
        if (fleet_.nodes[static_cast<size_t>(n)].model != m || free.size() < shape.per_node) {
          continue;
        }
        ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                         chooser_.Choose(m, free, shape.per_node));
        if (set.has_value()) {
          free_devices[static_cast<size_t>(n)] = free.size();
          ++candidates;
        }
      }
      if (candidates < shape.nodes) continue;
      topology::GangResult r = topology::PlaceGang(fabric, free_devices, shape.nodes,
                                                   shape.per_node, fabric.tier_count() - 1);
      if (!r.feasible) continue;
      if (!best.has_value() || r.tier < best->tier ||
          (r.tier == best->tier && r.free_devices_left < best->free_devices_left)) {
        best = std::move(r);
      }
    }
    if (!best.has_value()) return parts;
    for (int n : best->nodes) {
      const int m = fleet_.nodes[static_cast<size_t>(n)].model;
      ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                       chooser_.Choose(m, free_[static_cast<size_t>(n)], shape.per_node));
      if (!set.has_value()) return InternalError("a gang node lost its devices");
      parts.emplace_back(n, *set);
    }
    last_gang_tier_ = fabric.tier(best->tier).name;
    return parts;
  }

  // The best bottleneck bandwidth a rule-keeping set of `count` had on any node's free devices
  // (with `vendor`, any node of a model of that vendor).
  int64_t FleetBest(int count, const std::string* vendor = nullptr) {
    int64_t best = 0;
    for (size_t n = 0; n < free_.size(); ++n) {
      if (free_[n].size() < count) continue;
      if (vendor != nullptr && model(fleet_.nodes[n].model).vendor != *vendor) continue;
      const topology::SolveResult& r = solver_.Best(fleet_.nodes[n].model, free_[n], count);
      if (r.feasible) best = std::max(best, r.score.bottleneck_mbps);
    }
    return best;
  }

  // Starts `job` on `parts`, judging each part against the rules and the best set.
  void Start(size_t job, const std::vector<std::pair<int, DeviceSet>>& parts, double now) {
    const Job& j = jobs_[job];
    bool violation = false;
    double shortfall = 0;
    // A single-node job against the best set any node could have given it at this moment.
    if (parts.size() == 1 && parts.front().second.size() > 1) {
      const auto& [node, set] = parts.front();
      const int64_t got =
          topology::Evaluate(*model_of(node).node, free_[static_cast<size_t>(node)], set)
              .bottleneck_mbps;
      bottleneck_sum_ += static_cast<double>(got);
      ++bottleneck_count_;
      if (got < FleetBest(set.size())) ++metrics_.below_fleet_best_bandwidth;
      if (got < FleetBest(set.size(), &model_of(node).vendor)) {
        ++metrics_.below_vendor_best_bandwidth;
      }
    }
    for (const auto& [node, set] : parts) {
      const FleetModel& m = model_of(node);
      const DeviceSet free = free_[static_cast<size_t>(node)];
      if (!topology::RuleAllows(*m.node, set)) violation = true;
      const topology::SolveResult& best =
          solver_.Best(fleet_.nodes[static_cast<size_t>(node)].model, free, set.size());
      if (best.feasible) {
        const int64_t got = topology::Evaluate(*m.node, free, set).bottleneck_mbps;
        const int64_t want = best.score.bottleneck_mbps;
        if (got < want && want > 0) {
          shortfall =
              std::max(shortfall, 1.0 - static_cast<double>(got) / static_cast<double>(want));
        }
      }
      SetFree(node, free - set);
      busy_ += set.size();
    }
    ++metrics_.placements;
    if (violation) ++metrics_.rule_violations;
    if (shortfall > 0) {
      ++metrics_.below_best_bandwidth;
      shortfall_sum_ += shortfall;
      ++shortfall_count_;
    }
    if (j.nodes() > 1) {
      ++metrics_.gangs;
      ++metrics_.gang_tiers[last_gang_tier_];
    }
    delays_.push_back(now - j.arrival);
    if (record_) {
      char start[32];
      std::snprintf(start, sizeof start, "%g", now);
      std::string line = j.id + " @" + start;
      for (const auto& [node, set] : parts) {
        line += " " + fleet_.nodes[static_cast<size_t>(node)].name + ":";
        const std::vector<std::string> names = model_of(node).node->Names(set);
        for (size_t i = 0; i < names.size(); ++i) line += (i == 0 ? "" : ",") + names[i];
      }
      metrics_.placement_log.push_back(std::move(line));
    }
    placed_[job] = parts;
    running_.push({now + j.duration, job});
  }

  // FIFO with backfill: the shape whose head arrived first goes next; a shape that fails stays
  // failed for the rest of the pass (nothing is freed during a pass).
  Status Pass(double now) {
    std::set<Shape> failed;
    while (true) {
      const Shape* pick = nullptr;
      size_t head = 0;
      for (const auto& [shape, waiting] : queues_) {
        if (waiting.empty() || failed.contains(shape)) continue;
        if (pick == nullptr || waiting.front() < head) {
          pick = &shape;
          head = waiting.front();
        }
      }
      if (pick == nullptr) break;
      const Shape shape = *pick;
      ShapeState& state = state_[shape];
      const bool only_dirty = state.failed_everywhere;
      if (!shape.profile.empty()) {
        ASSIGN_OR_RETURN(std::optional<PartitionPlaced> placed,
                         PlacePartitionJob(shape.profile, only_dirty));
        if (!placed.has_value()) {
          failed.insert(shape);
          if (Fragmented(shape.profile)) {
            for (size_t job : queues_[shape]) fragmented_.insert(job);
          }
          continue;
        }
        std::deque<size_t>& waiting = queues_[shape];
        const size_t job = waiting.front();
        waiting.pop_front();
        StartPartition(job, *placed, now);
        continue;
      }
      std::vector<std::pair<int, DeviceSet>> parts;
      if (shape.nodes == 1) {
        ASSIGN_OR_RETURN(auto placed, PlaceSingle(shape.per_node, only_dirty));
        if (placed.has_value()) parts.push_back(*placed);
      } else if (!only_dirty || !dirty_.empty()) {
        ASSIGN_OR_RETURN(parts, PlaceGang(shape));
      }
      if (parts.empty()) {
        failed.insert(shape);
        continue;
      }
      std::deque<size_t>& waiting = queues_[shape];
      const size_t job = waiting.front();
      waiting.pop_front();
      Start(job, parts, now);
    }
    dirty_.clear();
    for (auto& [shape, waiting] : queues_) {
      state_[shape].failed_everywhere = !waiting.empty() && failed.contains(shape);
    }
    return OkStatus();
  }

  // Devices free on nodes where a waiting job fits by count.
  int Stranded() const {
    int smallest = kMaxFreeCount + 1;
    for (const auto& [shape, waiting] : queues_) {
      if (waiting.empty() || !shape.profile.empty() || shape.per_node >= smallest) continue;
      if (NodesWithFree(shape.per_node) >= shape.nodes) smallest = shape.per_node;
    }
    int stranded = 0;
    for (int f = smallest; f <= kMaxFreeCount; ++f) {
      stranded += f * histogram_[static_cast<size_t>(f)];
    }
    return stranded;
  }

  const Fleet& fleet_;
  const std::vector<Job>& jobs_;
  Chooser& chooser_;
  SolverMemo& solver_;
  NodeOrder order_;
  KubeNodeSearch* kube_;
  bool solver_node_;
  bool record_;

  std::vector<DeviceSet> free_;
  std::array<int, kMaxFreeCount + 1> histogram_ = {};  // nodes by free devices
  std::map<int, int> nodes_of_model_;
  std::set<int> dirty_;  // nodes that gained free devices since the last pass
  std::map<Shape, std::deque<size_t>> queues_;
  std::map<Shape, ShapeState> state_;
  std::priority_queue<Running> running_;
  std::unordered_map<size_t, std::vector<std::pair<int, DeviceSet>>> placed_;
  double busy_ = 0;  // devices, a partition counting its share
  int stranded_ = 0;
  std::vector<NodePartitions> partitions_;  // per node
  std::vector<std::vector<int>> largest_;   // per node and partitionable device: 1 fits
  int largest_fits_ = 0;                    // devices whose largest profile fits
  int partitionable_devices_ = 0;
  double largest_seconds_ = 0;  // largest_fits_ x time, up to last arrival
  std::unordered_map<size_t, PartitionPlaced> partition_placed_;
  std::set<size_t> fragmented_;  // partition jobs held up by fragmentation
  double busy_seconds_ = 0;      // up to the last arrival
  double last_arrival_ = 0;
  double shortfall_sum_ = 0;
  double bottleneck_sum_ = 0;  // MB/s, single-node sets of 2 or more
  int64_t bottleneck_count_ = 0;
  int64_t shortfall_count_ = 0;
  std::string last_gang_tier_;
  std::vector<double> delays_;
  Series utilisation_;
  Series stranded_series_;
  PolicyMetrics metrics_;
};

// The config with the class the rendered claims ask for, in the publishing mode the controller
// takes on the release whose allocator the lab runs (1.37: groups, unless the config names one).
StatusOr<std::pair<controller::Config, std::string>> ReplayConfig(const Fleet& fleet,
                                                                  const ReplayOptions& options) {
  controller::Config config = controller::WithEffectiveMode(options.config, kLabKubeMinor);
  if (!options.capability_class.empty()) {
    for (const controller::CapabilityClass& c : config.capability_classes) {
      if (c.name == options.capability_class) return std::make_pair(config, c.name);
    }
    return InvalidArgumentError("--class: the config has no capability class " +
                                options.capability_class);
  }
  controller::CapabilityClass c;
  c.name = std::string(kDefaultClass);
  for (const FleetModel& m : fleet.models) {
    if (m.vendor != "mixed" &&
        std::find(c.vendors.begin(), c.vendors.end(), m.vendor) == c.vendors.end()) {
      c.vendors.push_back(m.vendor);
    }
  }
  std::erase_if(config.capability_classes,
                [](const controller::CapabilityClass& k) { return k.name == kDefaultClass; });
  config.capability_classes.push_back(std::move(c));
  return std::make_pair(std::move(config), std::string(kDefaultClass));
}

}  // namespace

std::string_view NodeOrderName(NodeOrder order) {
  return NameAt(kNodeOrderNames, order).value_or("first");
}

std::optional<NodeOrder> ParseNodeOrder(std::string_view name) {
  for (size_t i = 0; i < std::size(kNodeOrderNames); ++i) {
    if (kNodeOrderNames[i] == name) return static_cast<NodeOrder>(i);
  }
  return std::nullopt;
}

const std::vector<std::string>& KnownPolicies() {
  static const std::vector<std::string> policies = {std::string(kStockUnordered),
                                                    std::string(kStockXpu), std::string(kSolver),
                                                    std::string(kSolverNode)};
  return policies;
}

bool IsStockPolicy(std::string_view policy) {
  return policy == kStockUnordered || policy == kStockXpu;
}

StatusOr<ReplayResult> Replay(const Fleet& fleet, const std::vector<Job>& jobs,
                              const ReplayOptions& options) {
  bool stock = false;
  for (const std::string& policy : options.policies) {
    const auto& known = KnownPolicies();
    if (std::find(known.begin(), known.end(), policy) == known.end()) {
      return InvalidArgumentError("--policy: unknown policy \"" + policy +
                                  "\"; expected stock-unordered, stock-xpu, solver or solver-node");
    }
    stock = stock || IsStockPolicy(policy);
  }
  ASSIGN_OR_RETURN(const auto configured, ReplayConfig(fleet, options));
  const controller::Config& config = configured.first;

  std::unique_ptr<StockAllocator> allocator;
  if (stock) {
    if (options.stock_allocator.empty()) {
      return FailedPreconditionError("the stock policies need the stock allocator binary");
    }
    ASSIGN_OR_RETURN(allocator, StockAllocator::Start(options.stock_allocator));
    json classes = json::array({UnorderedChooser::PlainClass(options.driver)});
    for (const api::resource::DeviceClass& c :
         controller::DesiredDeviceClasses(config, options.driver)) {
      classes.push_back(api::resource::ToJson(c));
    }
    RETURN_IF_ERROR(allocator->SetClasses(classes));
  }

  ReplayResult result;
  result.trace = options.trace_name;
  result.fleet = fleet.summary;
  result.node_order = std::string(NodeOrderName(options.node_order));
  if (stock) {
    result.scheduler = std::string(SchedulerName(options.scheduler));
    if (options.scheduler == Scheduler::kKube) result.scheduler_seed = options.seed;
  }
  result.nodes = static_cast<int>(fleet.nodes.size());
  result.devices = fleet.devices;
  result.jobs = static_cast<int64_t>(jobs.size());
  for (const std::string& policy : options.policies) {
    // Each policy its own memo, so that no figure depends on which policies ran before.
    SolverMemo solver(fleet);
    std::unique_ptr<Chooser> chooser;
    if (policy == kStockUnordered) {
      chooser = std::make_unique<UnorderedChooser>(fleet, *allocator, options.driver);
    } else if (policy == kStockXpu) {
      chooser = std::make_unique<XpuChooser>(fleet, *allocator, options.driver, config,
                                             configured.second);
    } else {
      chooser = std::make_unique<SolverChooser>(fleet, solver);
    }
    // Each stock policy its own scheduler, started afresh: the same seed for every policy.
    std::optional<KubeNodeSearch> kube;
    if (IsStockPolicy(policy) && options.scheduler == Scheduler::kKube) {
      kube.emplace(static_cast<int>(fleet.nodes.size()), options.seed);
    }
    Simulation simulation(fleet, jobs, *chooser, solver, options.node_order,
                          kube.has_value() ? &*kube : nullptr, policy == kSolverNode,
                          options.record_placements);
    StatusOr<PolicyMetrics> metrics = simulation.Run(policy);
    if (!metrics.ok()) return metrics.status().WithContext("policy " + policy);
    if (const auto* xpu = dynamic_cast<const XpuChooser*>(chooser.get()); xpu != nullptr) {
      metrics->notes = xpu->Notes();
    }
    if (policy == kSolverNode) metrics->allocator_calls = solver.solves();
    result.policies.push_back(*std::move(metrics));
  }
  return result;
}

}  // namespace xpu::lab
