// The vendor libraries' facts merged into the inventory (internal/merge.h).
#include "kubeletplugin/discovery/internal/merge.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "kubeletplugin/discovery/partitioning.h"
#include "kubeletplugin/discovery/versions.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery::internal {
namespace {
namespace merge_cc {

// Replaces the links of `types` with `links` (a vendor library saw them).
void ReplaceLinks(api::NodeInventoryStatus& status, const std::set<std::string>& types,
                  std::vector<api::InventoryLink> links) {
  std::erase_if(status.links, [&](const api::InventoryLink& l) { return types.contains(l.type); });
  for (api::InventoryLink& l : links) status.links.push_back(std::move(l));
}

// NVML's facts on one device: UUID, memory, NUMA node, health and MIG.
void ApplyNvmlDevice(const NvmlDevice& d, api::InventoryDevice& dev, Problems& problems) {
  if (!d.uuid.empty() && d.uuid.size() <= 64) {
    dev.uuid = d.uuid;
    dev.attributes["uuid"] = StringAttr(d.uuid);
    dev.sources["uuid"] = "nvml";
  }
  if (d.memory_bytes > 0) {
    dev.memory = Quantity(static_cast<int64_t>(d.memory_bytes));
    dev.sources["memory"] = "nvml";
  }
  // sysfs says -1 on single-node firmware and some VMs; NVML may still know the node.
  if (!dev.numa_node && d.numa_node && *d.numa_node >= 0) {
    dev.numa_node = *d.numa_node;
    dev.attributes["numaNode"] = IntAttr(*d.numa_node);
    dev.sources["numaNode"] = "nvml";
  }
  // Application XIDs (13, 31, 43, 45, 68, 109) say nothing about the GPU
  // (docs/reference/hardware.md §2.6).
  const bool critical_xid = std::any_of(d.xid_events.begin(), d.xid_events.end(),
                                        [](uint64_t x) { return !IsApplicationXid(x); });
  if (!d.healthy || critical_xid) {
    dev.health = "Unhealthy";
    dev.sources["health"] = "nvml";
  }
  if (d.mig) {
    std::string error;
    if (std::optional<api::InventoryPartitioning> p = MigPartitioning(*d.mig, &error)) {
      dev.partitioning = std::move(*p);
      dev.sources["partitioning"] = "nvml";
    } else {
      problems.libraries.push_back("nvml: " + dev.name + ": MIG left out: " + error);
    }
  }
}

// A GPU with some of its NVLinks down: a LinksDegraded problem, and the share still up.
void NoteNvLinksDown(const NvmlDevice& d, const api::InventoryDevice& dev,
                     std::map<std::string, double>& link_share, Problems& problems) {
  const auto active =
      std::count_if(d.links.begin(), d.links.end(), [](const NvmlLink& l) { return l.active; });
  if (!d.links.empty() && static_cast<size_t>(active) < d.links.size()) {
    std::string down;
    for (const NvmlLink& l : d.links) {
      if (!l.active) down += (down.empty() ? "" : ",") + std::to_string(l.link);
    }
    link_share[dev.name] = static_cast<double>(active) / static_cast<double>(d.links.size());
    problems.links.push_back(dev.name + ": NVLink " + down + " down (" + std::to_string(active) +
                             " of " + std::to_string(d.links.size()) + " active)");
  }
}

// Every GPU on the NVSwitches: the switch links and boards are NVML's, each pair's bandwidth what
// the weaker GPU's remaining links carry (`link_share`).
void ApplyNvSwitchTopology(const std::map<std::string, double>& link_share,
                           std::vector<Found>& found, api::NodeInventoryStatus& status) {
  for (api::InventoryLink& l : status.links) {
    if (l.type != "nvswitch") continue;
    l.source = "nvml";
    // Through the switches a pair gets what the weaker GPU's remaining links carry.
    double share = 1;
    for (const std::string& end : {l.a, l.b}) {
      if (auto it = link_share.find(end); it != link_share.end()) {
        share = std::min(share, it->second);
      }
    }
    l.bandwidth_gbps *= share;
  }
  for (api::InventoryGroup& g : status.groups) {
    if (g.kind == "nvswitch-board") g.source = "nvml";
  }
  for (Found& f : found) {
    if (f.vendor->vendor == "nvidia") f.device.sources["topology"] = "nvml";
  }
}

// DCMI's facts on one chip's device: model, memory, health, device IP, firmware, RoCE network
// health, HCCS health (the device into `hccs_down` when unhealthy), logic id and vNPUs.
void ApplyDcmiChip(const DcmiChip& c, api::InventoryDevice& dev, std::set<std::string>& hccs_down,
                   Problems& problems) {
  if (!c.chip_name.empty()) {
    dev.model = "Ascend" + c.chip_name;
    dev.attributes["model"] = StringAttr(dev.model);
    dev.sources["model"] = "dcmi";
  }
  if (c.hbm_total_mb > 0) {
    dev.memory = Quantity(static_cast<int64_t>(c.hbm_total_mb) * kMiB);
    dev.sources["memory"] = "dcmi";
  }
  if (c.health != 0 && c.health != 0xFFFFFFFFu) {
    dev.health = "Unhealthy";
    dev.sources["health"] = "dcmi";
  }
  if (!c.device_ip.empty() && c.device_ip.size() <= 45) {
    dev.attributes["huawei.com/deviceIP"] = StringAttr(c.device_ip);
    dev.sources["deviceIP"] = "dcmi";
  }
  if (!c.firmware_version.empty() && c.firmware_version.size() <= 64) {
    dev.firmware_version = c.firmware_version;
    const std::string semver = NormalizeSemver(c.firmware_version);
    if (!semver.empty()) dev.attributes["firmwareVersion"] = VersionAttr(semver);
    dev.sources["firmware"] = "dcmi";
  }
  if (!c.network_health.empty()) {
    dev.attributes["huawei.com/networkHealth"] = StringAttr(c.network_health);
    dev.sources["networkHealth"] = "dcmi";
    if (c.network_health != "ok") {
      problems.network.push_back(dev.name + ": RoCE network " + c.network_health);
    }
  }
  if (c.hccs_healthy.has_value() && !*c.hccs_healthy) {
    hccs_down.insert(dev.name);
    char detail[64];
    std::snprintf(detail, sizeof detail, "pcs_status 0x%x, hdlc_status 0x%x", c.hccs_pcs_status,
                  c.hccs_hdlc_status);
    problems.links.push_back(dev.name + ": HCCS unhealthy (" + detail + ")");
  }
  dev.attributes["huawei.com/logicID"] = IntAttr(c.logic_id);
  if (c.vnpu) {
    std::string error;
    if (std::optional<api::InventoryPartitioning> p =
            VnpuPartitioning(*c.vnpu, c.chip_name, &error)) {
      dev.partitioning = std::move(*p);
      dev.sources["partitioning"] = "dcmi";
    } else {
      problems.libraries.push_back("dcmi: " + dev.name + ": vNPU left out: " + error);
    }
  }
}

// DCMI's HCCS, SIO and HCCS-switch links between the chips named in `name_of_logic` (by logic
// id) replace the links of those types, at the server model's bandwidths where it has them.
void ApplyDcmiTopology(const std::vector<DcmiTopology>& topology,
                       const std::map<int, std::string>& name_of_logic, std::vector<Found>& found,
                       api::NodeInventoryStatus& status) {
  std::vector<api::InventoryLink> links;
  std::set<std::string> types;
  for (const DcmiTopology& t : topology) {
    std::string type;
    double gbps = 0;
    if (t.type == "hccs") type = "hccs", gbps = 56;
    if (t.type == "sio") type = "sio", gbps = 224;
    if (t.type == "hccs-sw") type = "hccs-switch", gbps = 56;
    if (type.empty() || !name_of_logic.contains(t.a) || !name_of_logic.contains(t.b)) continue;
    // Bandwidths: the server model's figures for the same link type where it has them.
    for (const api::InventoryLink& l : status.links) {
      if (l.type == type) gbps = l.bandwidth_gbps;
    }
    api::InventoryLink link;
    link.a = name_of_logic.at(t.a);
    link.b = name_of_logic.at(t.b);
    link.type = type;
    link.bandwidth_gbps = gbps;
    link.source = "dcmi";
    links.push_back(std::move(link));
    types.insert(type);
  }
  if (!links.empty()) {
    ReplaceLinks(status, types, std::move(links));
    for (Found& f : found) {
      if (f.vendor->vendor == "huawei") f.device.sources["topology"] = "dcmi";
    }
  }
}

}  // namespace merge_cc
}  // namespace

std::optional<api::InventoryPartitioning> MigPartitioning(const NvmlMig& mig, std::string* error) {
  api::InventoryPartitioning p;
  p.kind = "mig";
  p.enabled = mig.enabled;
  std::vector<const NvmlMigProfile*> profiles;
  for (const NvmlMigProfile& profile : mig.profiles) profiles.push_back(&profile);
  std::stable_sort(profiles.begin(), profiles.end(),
                   [](const NvmlMigProfile* a, const NvmlMigProfile* b) {
                     return std::tuple(a->slice_count, MigProfileSlots(*a), a->memory_mib) <
                            std::tuple(b->slice_count, MigProfileSlots(*b), b->memory_mib);
                   });
  const std::map<unsigned, std::string> name_of_id = MigProfileNames(mig);
  int64_t compute = 0;
  for (const NvmlMigProfile* profile : profiles) {
    const std::string name = MigProfileName(profile->name);
    if (name_of_id.at(profile->id) != name) continue;  // a variant listed under its base's name
    api::PartitionProfile out;
    out.name = name;
    if (profile->memory_mib > 0) out.memory = std::to_string(profile->memory_mib) + "Mi";
    out.counters["compute"] = profile->slice_count;
    out.slots = MigProfileSlots(*profile);
    for (const NvmlMigPlacement& at : profile->placements) {
      out.placements.push_back(at.start);
      p.slots = std::max<int64_t>(p.slots, int64_t{at.start} + at.size);
    }
    std::sort(out.placements.begin(), out.placements.end());
    out.placements.erase(std::unique(out.placements.begin(), out.placements.end()),
                         out.placements.end());
    compute = std::max<int64_t>(compute, profile->slice_count);
    p.profiles.push_back(std::move(out));
  }
  if (compute > 0) p.capacity["compute"] = compute;
  for (const NvmlGpuInstance& gi : mig.instances) {
    api::InventoryPartition part;
    auto it = name_of_id.find(gi.profile_id);
    part.profile = it != name_of_id.end() ? it->second : "profile-" + std::to_string(gi.profile_id);
    part.placement = gi.placement.start;
    part.uuid = gi.uuid;
    part.id = gi.id;
    p.partitions.push_back(std::move(part));
  }
  std::sort(p.partitions.begin(), p.partitions.end(),
            [](const api::InventoryPartition& a, const api::InventoryPartition& b) {
              return a.placement < b.placement;
            });
  if (const Status valid = CheckPartitioningAlone(p); !valid.ok()) {
    *error = valid.message();
    return std::nullopt;
  }
  return p;
}

void MergeNvml(const NvmlFacts& nvml, std::vector<Found>& found, api::NodeInventoryStatus& status,
               Problems& problems) {
  std::map<std::string, Found*> by_bdf;
  for (Found& f : found) {
    if (f.vendor->vendor == "nvidia") by_bdf[f.pci->bdf] = &f;
  }
  std::string clique;
  bool all_on_switch = !nvml.devices.empty();
  // Share of each GPU's NVLinks that are up, where some are down.
  std::map<std::string, double> link_share;
  for (const NvmlDevice& d : nvml.devices) {
    std::string bdf = d.pci_bus_id;
    for (char& c : bdf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = by_bdf.find(bdf);
    if (!d.error.empty()) {
      problems.libraries.push_back("nvml: device " + std::to_string(d.index) + ": " + d.error);
    }
    if (it == by_bdf.end()) continue;
    api::InventoryDevice& dev = it->second->device;
    merge_cc::ApplyNvmlDevice(d, dev, problems);
    const bool on_switch = std::any_of(d.links.begin(), d.links.end(), [](const NvmlLink& l) {
      return l.active && l.remote_type == "switch";
    });
    all_on_switch = all_on_switch && on_switch;
    merge_cc::NoteNvLinksDown(d, dev, link_share, problems);
    if (d.fabric_state == "completed" && !d.cluster_uuid.empty() && d.clique_id) {
      clique = d.cluster_uuid + "." + std::to_string(*d.clique_id);
      dev.attributes["fabricDomain"] = StringAttr(clique);
      status.fabric = status.fabric.value_or(api::InventoryFabric{});
      status.fabric->cluster_uuid = d.cluster_uuid;
      status.fabric->clique_id = std::to_string(*d.clique_id);
    }
  }
  if (all_on_switch) merge_cc::ApplyNvSwitchTopology(link_share, found, status);
  if (!nvml.driver_version.empty()) {
    api::ComponentVersion v{nvml.driver_version, NormalizeSemver(nvml.driver_version), nullptr};
    status.versions["driver"] = v;
  }
  if (nvml.cuda_driver_version > 0) {
    const std::string raw = std::to_string(nvml.cuda_driver_version / 1000) + "." +
                            std::to_string(nvml.cuda_driver_version % 1000 / 10);
    status.versions["cuda"] = api::ComponentVersion{raw, NormalizeSemver(raw), nullptr};
  }
}

void MergeDcmi(const DcmiFacts& dcmi, std::vector<Found>& found, api::NodeInventoryStatus& status,
               Problems& problems) {
  // Chips are matched to devices by PCI address, or by physical id (/dev/davinci<phy_id> is the
  // device's index) when the library gives no PCIe information.
  std::map<std::string, Found*> by_bdf;
  std::map<int64_t, Found*> by_index;
  for (Found& f : found) {
    if (f.vendor->vendor != "huawei") continue;
    by_bdf[f.pci->bdf] = &f;
    by_index[f.device.index] = &f;
  }
  std::map<int, std::string> name_of_logic;
  std::set<std::string> hccs_down;
  for (const DcmiChip& c : dcmi.chips) {
    if (!c.error.empty()) {
      problems.libraries.push_back("dcmi: logic id " + std::to_string(c.logic_id) + ": " + c.error);
    }
    Found* match = nullptr;
    if (auto it = by_bdf.find(c.pci_bus_id); it != by_bdf.end()) {
      match = it->second;
    } else if (auto ix = by_index.find(c.phy_id); c.pci_bus_id.empty() && ix != by_index.end()) {
      match = ix->second;
    }
    if (match == nullptr) continue;
    api::InventoryDevice& dev = match->device;
    name_of_logic[c.logic_id] = dev.name;
    merge_cc::ApplyDcmiChip(c, dev, hccs_down, problems);
  }
  merge_cc::ApplyDcmiTopology(dcmi.topology, name_of_logic, found, status);
  // A chip whose HCCS is unhealthy takes its HCCS links down, whichever source found them.
  for (api::InventoryLink& l : status.links) {
    const bool hccs = l.type == "hccs" || l.type == "hccs-switch";
    if (hccs && (hccs_down.contains(l.a) || hccs_down.contains(l.b))) l.state = "down";
  }
  if (!dcmi.driver_version.empty()) {
    status.versions["driver"] =
        api::ComponentVersion{dcmi.driver_version, NormalizeSemver(dcmi.driver_version), nullptr};
  }
}

void MergeHydmi(const HydmiFacts& hydmi, std::vector<Found>& found, Problems& problems) {
  if (!hydmi.library.loaded) {
    if (!hydmi.library.path.empty()) problems.libraries.push_back("hydmi: " + hydmi.library.error);
    return;
  }
  if (!hydmi.library.error.empty()) problems.libraries.push_back("hydmi: " + hydmi.library.error);
  if (hydmi.max_vdevices < 1) return;
  for (const HydmiDevice& h : hydmi.devices) {
    auto it = std::find_if(found.begin(), found.end(), [&h](const Found& f) {
      return f.vendor->vendor == "hygon" && f.device.index == h.index;
    });
    if (it == found.end()) continue;
    std::vector<HydmiVdevice> mine;
    std::copy_if(hydmi.vdevices.begin(), hydmi.vdevices.end(), std::back_inserter(mine),
                 [&h](const HydmiVdevice& v) { return v.device == h.index; });
    std::string error;
    if (std::optional<api::InventoryPartitioning> p =
            VhcuPartitioning(h, hydmi.max_vdevices, mine, &error)) {
      it->device.partitioning = std::move(*p);
      it->device.sources["partitioning"] = "hydmi";
    } else {
      problems.libraries.push_back("hydmi: " + it->device.name + ": vHCU left out: " + error);
    }
  }
}

}  // namespace xpu::discovery::internal
