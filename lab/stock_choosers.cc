// The stock policies' choosers (lab/choosers.h): the real allocator over the slices and claims
// each policy describes, one node's slices at a time.
#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <utility>

#include "api/partitions.h"
#include "api/resource.h"
#include "controller/device_classes.h"
#include "controller/reference_servers.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "lab/choosers.h"
#include "lab/kube_score.h"

namespace xpu::lab {
namespace {
namespace stock_choosers_cc {

using nlohmann::json;
using topology::DeviceSet;

// The node every stock question is asked on: the allocator sees one node's slices at a time.
constexpr std::string_view kReplayNode = "replay-node";
constexpr std::string_view kPlainClass = "replay-plain";
// Slice sets the stock allocator keeps at once (a node's slices differ per allocated set); of
// them, sets with partition devices (a hundred or more devices each, rarely asked twice: the
// policy's answers are memoised), at most kMaxKeptPartitionSlices.
constexpr size_t kMaxKeptSlices = 1024;
constexpr size_t kMaxKeptPartitionSlices = 32;

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

json ClaimObject(json spec) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "job"}, {"namespace", "default"}, {"uid", "replay"}}},
          {"spec", std::move(spec)}};
}

// The claim a user writes for one partition of `profile`: one device of the kind's class whose
// profile is it.
json PartitionClaim(const std::string& kind, const std::string& driver,
                    const std::string& profile) {
  return ClaimObject(
      {{"devices",
        {{"requests",
          json::array({{{"name", "partition"},
                        {"exactly",
                         {{"deviceClassName", controller::PartitionClassName(kind, driver)},
                          {"allocationMode", "ExactCount"},
                          {"count", 1},
                          {"selectors",
                           json::array({{{"cel",
                                          {{"expression",
                                            "device.attributes[" + controller::CelLiteral(driver) +
                                                "].profile == " +
                                                controller::CelLiteral(profile)}}}}})}}}}})}}}});
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
    const json claim = PartitionClaim(kind, driver_, profile);
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
  std::vector<std::string> Notes() const override {
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

}  // namespace stock_choosers_cc
}  // namespace

std::unique_ptr<Chooser> MakeUnorderedChooser(const Fleet& fleet, StockAllocator& allocator,
                                              std::string driver) {
  return std::make_unique<stock_choosers_cc::UnorderedChooser>(fleet, allocator, std::move(driver));
}

nlohmann::json PlainDeviceClass(const std::string& driver) {
  return stock_choosers_cc::UnorderedChooser::PlainClass(driver);
}

std::unique_ptr<Chooser> MakeXpuChooser(const Fleet& fleet, StockAllocator& allocator,
                                        std::string driver, const controller::Config& config,
                                        std::string capability_class) {
  return std::make_unique<stock_choosers_cc::XpuChooser>(fleet, allocator, std::move(driver),
                                                         config, std::move(capability_class));
}

}  // namespace xpu::lab
