#include "kubeletplugin/discovery/partitioning.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "api/validation.h"

namespace xpu::discovery {
namespace {

// The templates npu-smi's create-vnpu help and Ascend's virtualisation guide list per chip, with
// the AI Cores, AI CPUs and memory (MiB) of each as the HAMi Ascend device config gives them.
// The 910B3's are what an Atlas 800T A2 offers; variants with or without media engines
// (vir10_3c_16g_nm, vir10_4c_16g_m, vir04_3c_ndvpp, ...) are left out.
constexpr VnpuTemplate k910B3[] = {{"vir05_1c_16g", 5, 1, 16384}, {"vir10_3c_32g", 10, 3, 32768}};
constexpr VnpuTemplate k910B4[] = {{"vir05_1c_8g", 5, 1, 8192}, {"vir10_3c_16g", 10, 3, 16384}};
constexpr VnpuTemplate k310P3[] = {
    {"vir01", 1, 1, 3072}, {"vir02", 2, 2, 6144}, {"vir04", 4, 4, 12288}};

// Counters where the capacity has them.
std::map<std::string, int64_t> CountersOf(const std::map<std::string, int64_t>& capacity,
                                          int64_t aicore, int64_t aicpu, int64_t memory_mib) {
  std::map<std::string, int64_t> out;
  for (auto [name, units] : {std::pair<const char*, int64_t>{"aicore", aicore},
                             {"aicpu", aicpu},
                             {"memory-mib", memory_mib}}) {
    if (capacity.contains(name) && units > 0) out.emplace(name, units);
  }
  return out;
}

api::PartitionProfile ProfileOf(const std::map<std::string, int64_t>& capacity, std::string name,
                                int64_t aicore, int64_t aicpu, int64_t memory_mib) {
  api::PartitionProfile profile;
  profile.name = std::move(name);
  if (memory_mib > 0 && memory_mib % 1024 == 0) {
    profile.memory = std::to_string(memory_mib / 1024) + "Gi";
  } else if (memory_mib > 0) {
    profile.memory = std::to_string(memory_mib) + "Mi";
  }
  profile.counters = CountersOf(capacity, aicore, aicpu, memory_mib);
  return profile;
}

}  // namespace

std::span<const VnpuTemplate> VnpuTemplatesOf(std::string_view chip_name) {
  if (chip_name == "910B3") return k910B3;
  if (chip_name == "910B4") return k910B4;
  if (chip_name == "310P3") return k310P3;
  return {};
}

Status CheckPartitioningAlone(const api::InventoryPartitioning& partitioning) {
  api::NodeInventory check;
  check.metadata.name = "node";
  api::InventoryDevice& device = check.status.devices.emplace_back();
  device.name = "device-0";
  device.kind = "accelerator";
  device.partitioning = partitioning;
  return api::ValidateNodeInventory(check);
}

namespace {

// Adds the partitions that exist (vNPU vdevices, vHCUs: each has an `id`): each under the profile
// `match` finds (an iterator into p.profiles, or end()), else under a profile of its own that
// `make_own` appends, allowing as many instances as exist. Instances are numbered per profile,
// in the order given.
template <typename Existing, typename Match, typename MakeOwn>
void AddExistingPartitions(api::InventoryPartitioning& p, std::span<const Existing> existing,
                           Match match, MakeOwn make_own) {
  std::map<std::string, int64_t> next_instance;
  std::set<std::string> own_profiles;
  for (const Existing& v : existing) {
    auto it = match(v);
    if (it == p.profiles.end()) {
      make_own(v);
      it = p.profiles.end() - 1;
      own_profiles.insert(it->name);
    }
    if (own_profiles.contains(it->name)) ++it->max_instances;  // as many as exist
    api::InventoryPartition part;
    part.profile = it->name;
    part.instance = next_instance[it->name]++;
    part.id = v.id;
    p.partitions.push_back(std::move(part));
  }
}

// `p` when it is valid on its own; nullopt and the reason in `error` otherwise.
std::optional<api::InventoryPartitioning> Checked(api::InventoryPartitioning p,
                                                  std::string* error) {
  if (const Status valid = CheckPartitioningAlone(p); !valid.ok()) {
    *error = valid.message();
    return std::nullopt;
  }
  return p;
}

}  // namespace

std::optional<api::InventoryPartitioning> VnpuPartitioning(const DcmiVnpu& vnpu,
                                                           std::string_view chip_name,
                                                           std::string* error) {
  const std::span<const VnpuTemplate> templates = VnpuTemplatesOf(chip_name);
  if (templates.empty() && vnpu.vdevices.empty()) {
    *error = "the vNPU templates of chip " + std::string(chip_name) + " are not known";
    return std::nullopt;
  }
  api::InventoryPartitioning p;
  p.kind = "vnpu";
  p.enabled = true;
  const auto aicore = static_cast<int64_t>(std::llround(vnpu.aicore));
  if (aicore > 0) p.capacity["aicore"] = aicore;
  if (vnpu.aicpu > 0) p.capacity["aicpu"] = vnpu.aicpu;
  if (vnpu.memory_mb > 0) p.capacity["memory-mib"] = static_cast<int64_t>(vnpu.memory_mb);
  for (const VnpuTemplate& t : templates) {
    p.profiles.push_back(
        ProfileOf(p.capacity, std::string(t.name), t.aicore, t.aicpu, t.memory_mib));
  }
  // An existing vdevice: under its template by name, else by size; a template this table lacks
  // gets a profile of its own.
  AddExistingPartitions(
      p, std::span<const DcmiVdevice>(vnpu.vdevices),
      [&p](const DcmiVdevice& v) {
        auto by_name =
            std::find_if(p.profiles.begin(), p.profiles.end(),
                         [&](const api::PartitionProfile& x) { return x.name == v.name; });
        if (by_name != p.profiles.end()) return by_name;
        const std::map<std::string, int64_t> counters =
            CountersOf(p.capacity, static_cast<int64_t>(std::llround(v.aicore)), v.aicpu,
                       static_cast<int64_t>(v.memory_mb));
        return std::find_if(p.profiles.begin(), p.profiles.end(),
                            [&](const api::PartitionProfile& x) { return x.counters == counters; });
      },
      [&p](const DcmiVdevice& v) {
        p.profiles.push_back(ProfileOf(p.capacity,
                                       v.name.empty() ? "vdev-" + std::to_string(v.id) : v.name,
                                       static_cast<int64_t>(std::llround(v.aicore)), v.aicpu,
                                       static_cast<int64_t>(v.memory_mb)));
      });
  return Checked(std::move(p), error);
}

std::optional<api::InventoryPartitioning> VhcuPartitioning(const HydmiDevice& device,
                                                           int max_vdevices,
                                                           std::span<const HydmiVdevice> vdevices,
                                                           std::string* error) {
  api::InventoryPartitioning p;
  p.kind = "vhcu";
  p.enabled = true;
  p.capacity = {{"compute-units", device.compute_units},
                {"memory-mib", static_cast<int64_t>(device.memory_mib)},
                {"vhcus", max_vdevices}};
  auto profile_of = [&p](int units, uint64_t memory_mib) {
    api::PartitionProfile profile;
    profile.name = VhcuProfileName(units, memory_mib);
    profile.memory = memory_mib % 1024 == 0 ? std::to_string(memory_mib / 1024) + "Gi"
                                            : std::to_string(memory_mib) + "Mi";
    profile.counters = {
        {"compute-units", units}, {"memory-mib", static_cast<int64_t>(memory_mib)}, {"vhcus", 1}};
    p.profiles.push_back(std::move(profile));
  };
  for (int quarters : {1, 2, 3}) {
    const int units = device.compute_units * quarters / 4;
    const uint64_t memory_mib = device.memory_mib * quarters / 4;
    if (units > 0 && memory_mib > 0) profile_of(units, memory_mib);
  }
  // An existing vHCU: under the profile of its size, else (a size none of the offered ones has)
  // under a profile of its own.
  AddExistingPartitions(
      p, vdevices,
      [&p](const HydmiVdevice& v) {
        const std::string name = VhcuProfileName(v.compute_units, v.memory_mib);
        return std::find_if(p.profiles.begin(), p.profiles.end(),
                            [&name](const api::PartitionProfile& x) { return x.name == name; });
      },
      [&profile_of](const HydmiVdevice& v) { profile_of(v.compute_units, v.memory_mib); });
  return Checked(std::move(p), error);
}

}  // namespace xpu::discovery
