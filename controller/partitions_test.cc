// Partition devices in the published slices, on a reference H200 given MIG profiles by hand (the
// MIG fixture host's discovery lands separately) and an Ascend vNPU-style profile set.
#include "controller/partitions.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "api/partitions.h"
#include "api/resource_validation.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "controller/reference_servers.h"
#include "controller/slices.h"

namespace xpu::controller {
namespace {

using PartDevice = api::resource::Device;

api::InventoryPartitioning H200Mig() { return api::testing::H200MigPartitioning(); }

api::NodeInventory H200WithMig() {
  const ReferenceServer* server = FindReferenceServer("hgx-h200");
  REQUIRE(server != nullptr);
  api::NodeInventory inventory = server->inventory;
  inventory.status.devices[0].partitioning = H200Mig();
  // gpu-1: one 3g.71gb exists in slots 4-7.
  api::InventoryPartitioning busy = H200Mig();
  busy.partitions.push_back(
      {"3g.71gb", 4, 0, "MIG-6f2d1c3e-0000-4000-8000-000000000001", 2, nullptr});
  inventory.status.devices[1].partitioning = busy;
  // gpu-2: MIG possible but off: served whole.
  api::InventoryPartitioning off = H200Mig();
  off.enabled = false;
  inventory.status.devices[2].partitioning = off;
  REQUIRE_OK(api::ValidateNodeInventory(inventory));
  return inventory;
}

std::map<std::string, PartDevice> DevicesOf(const DesiredPool& pool) {
  std::map<std::string, PartDevice> out;
  for (const auto& slice : pool.slices) {
    for (const PartDevice& d : slice.devices) out.emplace(d.name, d);
  }
  return out;
}

DesiredPool Publish(const api::NodeInventory& inventory,
                    api::KubeVersion version = api::KubeVersion::k1_35,
                    const std::set<std::string>& allocated = {}) {
  PublishOptions options;
  options.version = version;
  auto pool = BuildPool(inventory, {"n1", "uid-1", {}}, Config{}, options, allocated);
  REQUIRE_OK(pool);
  return *pool;
}

TEST_CASE("a MIG GPU publishes its slots and compute as counters, and every placement") {
  const DesiredPool pool = Publish(H200WithMig());
  std::map<std::string, api::resource::CounterSet> sets;
  for (const auto& slice : pool.slices) {
    CHECK((slice.shared_counters.empty() || slice.devices.empty()));
    for (const auto& set : slice.shared_counters) sets.emplace(set.name, set);
  }
  REQUIRE(sets.size() == 2);  // gpu-0 and gpu-1; gpu-2 has MIG off
  CHECK(sets.at("gpu-0-parts").counters.size() == 9);
  CHECK(sets.at("gpu-0-parts").counters.at("compute").value == "7");
  const auto devices = DevicesOf(pool);
  // gpu-0: 7 + 4 + 3 + 2 + 1 + 1 placements, and the whole device consuming everything.
  int parts = 0;
  for (const auto& [name, d] : devices) {
    auto parent = d.attributes.find("parent");
    if (parent != d.attributes.end() && parent->second.string_value == "gpu-0") ++parts;
  }
  CHECK(parts == 18);
  const PartDevice& whole = devices.at("gpu-0");
  REQUIRE(whole.consumes_counters.size() == 1);
  CHECK(whole.consumes_counters[0].counters.size() == 9);
  CHECK(whole.consumes_counters[0].counters.at("compute").value == "7");
  const PartDevice& slice = devices.at("gpu-0-1g-18gb-6");
  CHECK(slice.attributes.at("profile").string_value == "1g.18gb");
  CHECK(slice.attributes.at("placement").int_value == 6);
  CHECK(slice.attributes.at("partitionKind").string_value == "mig");
  CHECK_FALSE(slice.attributes.contains("vendor"));  // whole-device classes never select it
  CHECK(slice.capacity.at("memory").value == "16384Mi");
  REQUIRE(slice.consumes_counters.size() == 1);
  CHECK(slice.consumes_counters[0].counters ==
        std::map<std::string, api::resource::Counter>{{"compute", {"1", nullptr}},
                                                      {"slot-6", {"1", nullptr}}});
  CHECK(devices.at("gpu-0-3g-71gb-4").consumes_counters[0].counters.size() == 5);
  // Highest placement first, so first fit keeps the low aligned slots for large profiles.
  std::vector<std::string> order;
  for (const auto& s : pool.slices) {
    for (const PartDevice& d : s.devices) {
      if (d.name.starts_with("gpu-0-1g-18gb-")) order.push_back(d.name);
    }
  }
  CHECK(order.front() == "gpu-0-1g-18gb-6");
  CHECK(order.back() == "gpu-0-1g-18gb-0");
  // gpu-2, MIG off: whole only.
  CHECK(devices.at("gpu-2").consumes_counters.empty());
  CHECK_FALSE(devices.contains("gpu-2-1g-18gb-0"));
  for (const auto& object : SliceObjects(pool, {"n1", "uid-1", {}}, "xpu.dra.dev", 1)) {
    const Status valid = api::ValidateResourceSlice(object, api::KubeVersion::k1_35);
    INFO(valid.message());
    CHECK(valid.ok());
  }
}

TEST_CASE("an existing partition is published where it sits, and what it overlaps is not") {
  const auto devices = DevicesOf(Publish(H200WithMig()));
  const PartDevice& existing = devices.at("gpu-1-3g-71gb-4");
  CHECK(existing.attributes.at("existing").bool_value == true);
  CHECK(existing.attributes.at("uuid").string_value == "MIG-6f2d1c3e-0000-4000-8000-000000000001");
  CHECK_FALSE(devices.contains("gpu-1-1g-18gb-5"));  // inside slots 4-7
  CHECK_FALSE(devices.contains("gpu-1-7g-141gb-0"));
  CHECK(devices.contains("gpu-1-4g-71gb-0"));  // slots 0-3 are free
  CHECK(devices.contains("gpu-1-3g-71gb-0"));
}

// The counter set of a device, by name.
std::map<std::string, std::string> CounterSetOf(const DesiredPool& pool, const std::string& name) {
  std::map<std::string, std::string> out;
  for (const auto& slice : pool.slices) {
    for (const auto& set : slice.shared_counters) {
      if (set.name != name) continue;
      for (const auto& [counter, value] : set.counters) out.emplace(counter, value.value);
    }
  }
  return out;
}

TEST_CASE(
    "what existing partitions hold is taken out of the set, so the whole device is not free") {
  const DesiredPool pool = Publish(H200WithMig());
  const auto set = CounterSetOf(pool, "gpu-1-parts");
  CHECK(set.at("slot-3") == "1");
  CHECK(set.at("slot-4") == "0");  // the 3g.71gb holds slots 4-7
  CHECK(set.at("slot-7") == "0");
  CHECK(set.at("compute") == "4");  // 7 less its 3
  const auto devices = DevicesOf(pool);
  // The existing partition consumes nothing more: it is already counted out.
  CHECK(devices.at("gpu-1-3g-71gb-4").consumes_counters.empty());
  // The whole GPU still consumes every slot and all 7 compute slices, more than the set has.
  const auto& whole = devices.at("gpu-1").consumes_counters.at(0).counters;
  CHECK(whole.at("slot-4").value == "1");
  CHECK(whole.at("compute").value == "7");
  // A device without partitions: the set is full.
  CHECK(CounterSetOf(pool, "gpu-0-parts").at("compute") == "7");
}

TEST_CASE("profiles without placements publish the instances that fit the capacity") {
  api::NodeInventory inventory = FindReferenceServer("atlas800t-a2")->inventory;
  api::InventoryPartitioning vnpu;
  vnpu.kind = "vnpu";
  vnpu.enabled = true;
  vnpu.capacity = {{"aicore", 20}, {"memory-gib", 64}};
  api::PartitionProfile small;
  small.name = "vir05_1c_16g";
  small.memory = "16Gi";
  small.counters = {{"aicore", 5}, {"memory-gib", 16}};
  api::PartitionProfile large;
  large.name = "vir10_3c_32g";
  large.memory = "32Gi";
  large.counters = {{"aicore", 10}, {"memory-gib", 32}};
  vnpu.profiles = {small, large};
  api::InventoryPartition present;
  present.profile = "vir05_1c_16g";
  present.instance = 1;
  present.id = 100;
  vnpu.partitions.push_back(present);
  inventory.status.devices[0].partitioning = vnpu;
  REQUIRE_OK(api::ValidateNodeInventory(inventory));
  const auto devices = DevicesOf(Publish(inventory));
  CHECK(devices.contains("npu-0-vir05-1c-16g-3"));
  CHECK_FALSE(devices.contains("npu-0-vir05-1c-16g-4"));
  CHECK(devices.contains("npu-0-vir10-3c-32g-1"));
  CHECK_FALSE(devices.contains("npu-0-vir10-3c-32g-2"));
  CHECK(devices.at("npu-0-vir05-1c-16g-1").attributes.at("existing").bool_value == true);
  CHECK(devices.at("npu-0").consumes_counters[0].counters.at("aicore").value == "20");
  const auto three = api::ResolvePartitionDevice(inventory, "npu-0-vir05-1c-16g-3");
  REQUIRE(three.has_value());
  CHECK(three->instance == 3);
  CHECK(three->existing == nullptr);
  CHECK(api::ResolvePartitionDevice(inventory, "npu-0-vir05-1c-16g-1")->existing->id == 100);
  CHECK_FALSE(api::ResolvePartitionDevice(inventory, "npu-0-vir05-1c-16g-4").has_value());
}

TEST_CASE("vHCUs: sizes up to four per DCU, the existing ones taken out, the whole DCU takes all") {
  api::NodeInventory inventory = FindReferenceServer("hygon-dcu-8")->inventory;
  api::InventoryPartitioning vhcu;  // as DMI discovery gives it (partitioning.h)
  vhcu.kind = "vhcu";
  vhcu.enabled = true;
  vhcu.capacity = {{"compute-units", 80}, {"memory-mib", 65536}, {"vhcus", 4}};
  for (int quarters : {1, 2, 3}) {
    api::PartitionProfile p;
    p.name = std::to_string(20 * quarters) + "cu." + std::to_string(16 * quarters) + "gb";
    p.memory = std::to_string(16 * quarters) + "Gi";
    p.counters = {{"compute-units", 20 * quarters}, {"memory-mib", 16384 * quarters}, {"vhcus", 1}};
    vhcu.profiles.push_back(p);
  }
  inventory.status.devices[0].partitioning = vhcu;
  api::InventoryPartition present;  // a half made by an operator
  present.profile = "40cu.32gb";
  present.id = 2;
  vhcu.partitions.push_back(present);
  inventory.status.devices[2].partitioning = vhcu;
  REQUIRE_OK(api::ValidateNodeInventory(inventory));
  const DesiredPool pool = Publish(inventory);
  const auto devices = DevicesOf(pool);
  // Four quarters fit dcu-0 (the vhcus counter, as the units and memory), two halves, one 3/4.
  CHECK(devices.contains("dcu-0-20cu-16gb-3"));
  CHECK_FALSE(devices.contains("dcu-0-20cu-16gb-4"));
  CHECK(devices.contains("dcu-0-40cu-32gb-1"));
  CHECK_FALSE(devices.contains("dcu-0-40cu-32gb-2"));
  CHECK_FALSE(devices.contains("dcu-0-60cu-48gb-1"));
  CHECK(devices.at("dcu-0-20cu-16gb-0").attributes.at("partitionKind").string_value == "vhcu");
  CHECK(devices.at("dcu-0").consumes_counters.at(0).counters.at("vhcus").value == "4");
  CHECK(devices.at("dcu-0").consumes_counters.at(0).counters.at("compute-units").value == "80");
  // dcu-2: the existing half holds 40 units, 32 GiB and one of four vHCUs.
  CHECK(devices.at("dcu-2-40cu-32gb-0").attributes.at("existing").bool_value == true);
  const auto set = CounterSetOf(pool, "dcu-2-parts");
  CHECK(set.at("compute-units") == "40");
  CHECK(set.at("memory-mib") == "32768");
  CHECK(set.at("vhcus") == "3");
  const auto target = api::ResolvePartitionDevice(inventory, "dcu-2-20cu-16gb-1");
  REQUIRE(target.has_value());
  CHECK(target->profile->name == "20cu.16gb");
  CHECK(target->existing == nullptr);
}

TEST_CASE("1.37: every device that consumes counters names its partition type") {
  const api::NodeInventory inventory = H200WithMig();
  PublishOptions options;
  options.partition_type = true;
  auto pool = BuildPool(inventory, {"n1", "uid-1", {}}, Config{}, options, {});
  REQUIRE_OK(pool);
  int typed_slices = 0;
  for (const auto& slice : pool->slices) {
    const bool consuming =
        std::any_of(slice.devices.begin(), slice.devices.end(),
                    [](const PartDevice& d) { return !d.consumes_counters.empty(); });
    CHECK(slice.partition_type_attribute.has_value() == consuming);
    if (consuming) {
      ++typed_slices;
      CHECK(*slice.partition_type_attribute == "xpu.dra.dev/partitionType");
    }
    api::resource::ResourceSlice object;
    object.metadata.name = "n1-slice";
    object.spec = slice;
    object.spec.pool.generation = 1;
    object.spec.pool.resource_slice_count = static_cast<int64_t>(pool->slices.size());
    const Status valid = api::ValidateResourceSlice(object, api::KubeVersion::k1_35);
    INFO(valid.ToString());
    CHECK(valid.ok());
  }
  CHECK(typed_slices > 0);
  const auto devices = DevicesOf(*pool);
  CHECK(devices.at("gpu-0").attributes.at("partitionType").string_value == "whole");
  CHECK(devices.at("gpu-0-1g-18gb-6").attributes.at("partitionType").string_value == "1g.18gb");
  CHECK_FALSE(devices.at("gpu-2").attributes.contains("partitionType"));  // MIG off: no counters
  // Without the option (before 1.37, or the server dropped it): neither.
  for (const auto& slice : Publish(inventory).slices) {
    CHECK_FALSE(slice.partition_type_attribute.has_value());
  }
  CHECK_FALSE(DevicesOf(Publish(inventory)).at("gpu-0").attributes.contains("partitionType"));
}

TEST_CASE(
    "partitions are not published where the shapes cannot carry their counters, and groups "
    "mode falls back for them") {
  const api::NodeInventory inventory = H200WithMig();
  const DesiredPool old = Publish(inventory, api::KubeVersion::k1_34);
  CHECK_FALSE(DevicesOf(old).contains("gpu-0-1g-18gb-0"));
  CHECK(std::find(old.notes.begin(), old.notes.end(),
                  "partitions not published: 1.34 cannot carry their counters") != old.notes.end());
  // Groups mode keeps no single devices for them: a node with partitioning enabled publishes in
  // attributes mode, its partitions with it, and says why.
  Config groups;
  groups.mode = PublishMode::kGroups;
  auto pool = BuildPool(inventory, {"n1", "uid-1", {}}, groups, PublishOptions{});
  REQUIRE_OK(pool);
  CHECK(pool->mode == PublishMode::kAttributes);
  CHECK(DevicesOf(*pool).contains("gpu-0-1g-18gb-0"));
  CHECK(std::find(pool->notes.begin(), pool->notes.end(),
                  "groups mode: falling back to attributes: partitioning is enabled on the "
                  "node's devices") != pool->notes.end());
  CHECK(api::ProfileLabel("1g.18gb") == "1g-18gb");
  CHECK(api::ProfileLabel("vir05_1c_16g") == "vir05-1c-16g");
  CHECK(api::ProfileLabel("..").empty());
}

// The partition devices of `profile` in published order.
std::vector<std::string> OrderOf(const DesiredPool& pool, const std::string& profile) {
  std::vector<std::string> out;
  for (const auto& slice : pool.slices) {
    for (const PartDevice& d : slice.devices) {
      auto p = d.attributes.find("profile");
      if (p != d.attributes.end() && p->second.string_value == profile) out.push_back(d.name);
    }
  }
  return out;
}

TEST_CASE(
    "partitions are published in the order that packs: used parents first, placements "
    "that keep the large profiles") {
  const api::NodeInventory inventory = H200WithMig();
  // gpu-1 holds a 3g.71gb in slots 4-7, gpu-0 nothing: a 1g.18gb goes to gpu-1 first, at slot 3
  // (every free slot there blocks the 4g.71gb; 3 keeps 2g.35gb at 0, and is the highest).
  std::vector<std::string> order = OrderOf(Publish(inventory), "1g.18gb");
  REQUIRE(order.size() == 11);  // 4 free on gpu-1, 7 on gpu-0
  CHECK(order.front() == "gpu-1-1g-18gb-3");
  CHECK(order[4] == "gpu-0-1g-18gb-6");  // the untouched GPU after the used one
  // A claim holds slot 3 of gpu-1: the next is slot 2, beside it, keeping 2g.35gb at 0.
  order = OrderOf(Publish(inventory, api::KubeVersion::k1_35, {"gpu-1-1g-18gb-3"}), "1g.18gb");
  CHECK(order.front() == "gpu-1-1g-18gb-2");
  // On gpu-0 alone, with slot 6 taken, the next 1g.18gb is slot 5: 4g.71gb at 0 stays possible.
  order = OrderOf(Publish(inventory, api::KubeVersion::k1_35,
                          {"gpu-1-1g-18gb-3", "gpu-1-1g-18gb-2", "gpu-1-1g-18gb-1",
                           "gpu-1-1g-18gb-0", "gpu-0-1g-18gb-6"}),
                  "1g.18gb");
  const auto gpu0 = std::find_if(order.begin(), order.end(),
                                 [](const std::string& n) { return n.starts_with("gpu-0-"); });
  REQUIRE(gpu0 != order.end());
  CHECK(*gpu0 == "gpu-0-1g-18gb-5");
}

TEST_CASE("without counters, fallback existing serves a device's partitions as plain devices") {
  api::NodeInventory inventory = H200WithMig();
  for (auto& d : inventory.status.devices) {
    if (d.partitioning) d.partitioning->fallback = "existing";
  }
  REQUIRE_OK(api::ValidateNodeInventory(inventory));
  const DesiredPool pool = Publish(inventory, api::KubeVersion::k1_34);
  const auto devices = DevicesOf(pool);
  // gpu-1 has a 3g.71gb: it is served instead of gpu-1, with no counters to consume.
  CHECK_FALSE(devices.contains("gpu-1"));
  REQUIRE(devices.contains("gpu-1-3g-71gb-4"));
  CHECK(devices.at("gpu-1-3g-71gb-4").consumes_counters.empty());
  CHECK(devices.at("gpu-1-3g-71gb-4").attributes.at("existing").bool_value == true);
  // gpu-0 has none: served whole, as with fallback whole.
  CHECK(devices.contains("gpu-0"));
  CHECK_FALSE(devices.contains("gpu-0-1g-18gb-6"));
  CHECK(std::find(pool.notes.begin(), pool.notes.end(),
                  "device gpu-1: its 1 partitions served as plain devices, not the device "
                  "(fallback existing)") != pool.notes.end());
  // Fallback layout (the plugin made its partitions at start) is served the same way.
  for (auto& d : inventory.status.devices) {
    if (d.partitioning) d.partitioning->fallback = "layout";
  }
  inventory.status.devices[1].partitioning->layout = "3g.71gb*1";
  REQUIRE_OK(api::ValidateNodeInventory(inventory));
  const DesiredPool laid = Publish(inventory, api::KubeVersion::k1_34);
  CHECK(DevicesOf(laid).contains("gpu-1-3g-71gb-4"));
  CHECK_FALSE(DevicesOf(laid).contains("gpu-1"));
  CHECK(std::find(laid.notes.begin(), laid.notes.end(),
                  "device gpu-1: its 1 partitions served as plain devices, not the device "
                  "(fallback layout)") != laid.notes.end());
  // An unknown fallback is refused by the inventory.
  inventory.status.devices[0].partitioning->fallback = "fixed";
  CHECK_FALSE(api::ValidateNodeInventory(inventory).ok());
}

TEST_CASE("every published partition device name resolves back to its parent and place") {
  const api::NodeInventory inventory = H200WithMig();
  int resolved = 0;
  for (const auto& [name, d] : DevicesOf(Publish(inventory))) {
    const std::optional<api::PartitionTarget> t = api::ResolvePartitionDevice(inventory, name);
    if (!d.attributes.contains("partitionKind")) {
      CHECK_FALSE(t.has_value());  // whole devices are no partition
      continue;
    }
    INFO(name);
    REQUIRE(t.has_value());
    CHECK(t->parent->name == d.attributes.at("parent").string_value);
    CHECK(t->profile->name == d.attributes.at("profile").string_value);
    CHECK(t->placement == d.attributes.at("placement").int_value);
    CHECK((t->existing != nullptr) == d.attributes.contains("existing"));
    ++resolved;
  }
  CHECK(resolved > 20);
  // Names that are no partition: an illegal placement, a number past what fits, a bad number.
  CHECK_FALSE(api::ResolvePartitionDevice(inventory, "gpu-0-3g-71gb-2").has_value());
  CHECK_FALSE(api::ResolvePartitionDevice(inventory, "gpu-0-1g-18gb-07").has_value());
  CHECK_FALSE(api::ResolvePartitionDevice(inventory, "gpu-2-1g-18gb-0").has_value());  // MIG off
  CHECK_FALSE(api::ResolvePartitionDevice(inventory, "gpu-0-1g-18gb-").has_value());
}

TEST_CASE("the inventory refuses partitions of unknown profiles, bad placements and overlaps") {
  api::NodeInventory inventory = H200WithMig();
  auto expect = [&](const std::function<void(api::InventoryPartitioning&)>& spoil,
                    const std::string& part) {
    api::NodeInventory bad = inventory;
    spoil(*bad.status.devices[0].partitioning);
    const Status s = api::ValidateNodeInventory(bad);
    INFO(s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find(part) != std::string::npos);
  };
  expect(
      [](auto& p) {
        p.partitions.push_back({"9g.1tb", 0, 0, "", 0, nullptr});
      },
      "status.devices[0].partitioning.partitions[0].profile: unknown profile");
  expect(
      [](auto& p) {
        p.partitions.push_back({"3g.71gb", 2, 0, "", 0, nullptr});
      },
      "partitions[0].placement: not a placement of profile 3g.71gb");
  // Two partitions at these placements.
  auto both = [](const std::string& first, int64_t at, const std::string& second,
                 int64_t second_at) {
    return [=](api::InventoryPartitioning& p) {
      p.partitions.push_back({first, at, 0, "", 0, nullptr});
      p.partitions.push_back({second, second_at, 0, "", 0, nullptr});
    };
  };
  expect(both("3g.71gb", 4, "1g.18gb", 5), "partitions[1].placement: overlaps another partition");
  expect([](auto& p) { p.profiles[0].counters["sm"] = 1; },
         "is not a counter of the device's capacity");
  expect(
      [](auto& p) {
        p.profiles[0].placements.push_back(7);
        p.profiles[0].slots = 2;
      },
      "passes the device's 8");
  // Partitions that together take more than the device has, and a vNPU-style instance twice.
  expect(both("4g.71gb", 0, "4g.71gb", 4),
         "partitions[1].profile: the partitions take more compute than the device's capacity of 7");
  expect(
      [](auto& p) {
        p.profiles[0].placements.clear();
        p.profiles[0].slots = 0;
        p.partitions.push_back({"1g.18gb", std::nullopt, 2, "", 0, nullptr});
        p.partitions.push_back({"1g.18gb", std::nullopt, 2, "", 0, nullptr});
      },
      "partitions[1].instance: another partition of profile 1g.18gb has instance 2");
}

}  // namespace
}  // namespace xpu::controller
