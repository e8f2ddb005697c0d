#include "kubeletplugin/discovery/discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "api/validation.h"
#include "base/text.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/nics.h"
#include "kubeletplugin/discovery/partitioning.h"
#include "kubeletplugin/discovery/pci.h"
#include "kubeletplugin/discovery/server_models.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/discovery/vendors.h"
#include "kubeletplugin/discovery/versions.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery {
namespace {

constexpr uint16_t kNvidia = 0x10de;
constexpr uint16_t kOtherBridge = 0x0680;  // how NVSwitch shows up (hw §0, fixtures)

// One accelerator while the inventory is assembled.
struct Found {
  const VendorInfo* vendor = nullptr;
  AcceleratorModel model;
  const PciFunction* pci = nullptr;
  api::InventoryDevice device;
};

// Problems that end up in conditions, by condition type.
struct Problems {
  std::vector<std::string> files;         // HostFiles
  std::vector<std::string> device_nodes;  // DeviceNodes
  std::vector<std::string> libraries;     // VendorLibrary: "nvml: ..."
  std::string library_reason;
  std::vector<std::string> links;    // LinksDegraded: "gpu-5: NVLink 7 down (17 of 18 active)"
  std::vector<std::string> network;  // NetworkUnhealthy: "npu-4: RoCE network unreachable"
};

std::string Quantity(int64_t bytes) {
  if (bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "Gi";
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "Mi";
  return std::to_string(bytes);
}

std::optional<int64_t> ParseInt(std::string_view text) {
  text = Trim(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// `key` of a "key=value" / "key value" / "key: value" file; empty when absent.
std::string KeyValue(std::string_view text, std::string_view key, char sep) {
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    std::string_view line = Trim(text.substr(start, nl - start));
    start = nl + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    line = Trim(line);
    if (!line.empty() && line.front() == sep) {
      line.remove_prefix(1);
      return std::string(Trim(line));
    }
    if (sep == ' ') return std::string(line);
  }
  return "";
}

// Reads an optional file: absent is fine, anything else wrong is a problem.
std::optional<std::string> ReadOptional(const HostRoot& host, std::string_view rel,
                                        Problems& problems) {
  StatusOr<std::string> text = host.ReadFile(rel);
  if (text.ok()) return std::move(text).value();
  if (text.status().code() != StatusCode::kNotFound) {
    problems.files.push_back(text.status().message());
  }
  return std::nullopt;
}

api::InventoryAttribute StringAttr(std::string v) {
  api::InventoryAttribute a;
  a.string_value = std::move(v);
  return a;
}
api::InventoryAttribute IntAttr(int64_t v) {
  api::InventoryAttribute a;
  a.int_value = v;
  return a;
}
api::InventoryAttribute BoolAttr(bool v) {
  api::InventoryAttribute a;
  a.bool_value = v;
  return a;
}
api::InventoryAttribute VersionAttr(std::string v) {
  api::InventoryAttribute a;
  a.version = std::move(v);
  return a;
}

struct VersionFile {
  std::string_view component;  // status.versions key
  std::string_view path;
  std::string_view key;  // "Version" for key=value files; empty: the whole file
  char sep = '=';
  std::string_view role;  // "driver", "firmware", "toolkit" (the device attribute it feeds)
};

// Version files per vendor (hw §1.5 for Ascend; the others as scripts/gen-host-fixtures lays them
// out, paths marked assumed there).
std::vector<VersionFile> VersionFiles(std::string_view vendor) {
  if (vendor == "huawei") {
    return {{"driver", "usr/local/Ascend/driver/version.info", "Version", '=', "driver"},
            {"firmware", "usr/local/Ascend/firmware/version.info", "Version", '=', "firmware"}};
  }
  if (vendor == "nvidia") {
    return {{"driver", "proc/driver/nvidia/version", "", '=', "driver"},
            {"driver", "sys/module/nvidia/version", "", '=', "driver"}};
  }
  if (vendor == "hygon") {
    return {{"driver", "sys/module/hydcu/version", "", '=', "driver"},
            {"hyhal", "opt/hyhal/.info/version", "", '=', ""},
            {"dtk", "opt/dtk/.info/version", "", '=', "toolkit"}};
  }
  if (vendor == "cambricon") {
    return {{"driver", "sys/module/cambricon_drv/version", "", '=', "driver"},
            {"neuware", "usr/local/neuware/version", "", '=', "toolkit"}};
  }
  if (vendor == "metax") {
    return {{"driver", "sys/module/metax/version", "", '=', "driver"},
            {"maca", "opt/maca/Version.txt", "", '=', "toolkit"}};
  }
  if (vendor == "enflame") {
    return {{"driver", "sys/module/enflame/version", "", '=', "driver"},
            {"topsrider", "usr/local/topsrider/version", "", '=', "toolkit"}};
  }
  if (vendor == "amd") {
    return {{"driver", "sys/module/amdgpu/version", "", '=', "driver"},
            {"rocm", "opt/rocm/.info/version", "", '=', "toolkit"}};
  }
  return {};
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.158.01  Release Build ..." -> "570.158.01".
std::string NvidiaProcVersion(std::string_view text) {
  const size_t at = text.find("Kernel Module");
  if (at == std::string_view::npos) return "";
  std::string_view rest = Trim(text.substr(at + 13));
  return std::string(rest.substr(0, std::min(rest.find(' '), rest.size())));
}

// The CANN toolkit: ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info, `version=`.
std::optional<std::string> AscendToolkit(const HostRoot& host, Problems& problems) {
  constexpr std::string_view kDir = "usr/local/Ascend/ascend-toolkit/latest";
  StatusOr<std::vector<std::string>> arches = host.List(kDir);
  if (!arches.ok()) {
    problems.files.push_back(arches.status().message());
    return std::nullopt;
  }
  for (const std::string& arch : *arches) {
    const std::string path = std::string(kDir) + "/" + arch + "/ascend_toolkit_install.info";
    if (std::optional<std::string> text = ReadOptional(host, path, problems)) {
      std::string v = KeyValue(*text, "version", '=');
      if (!v.empty()) return v;
    }
  }
  return std::nullopt;
}

// Reads the versions of one vendor into status.versions and returns role -> raw.
std::map<std::string, std::string> ReadVersions(const HostRoot& host, std::string_view vendor,
                                                api::NodeInventoryStatus& status,
                                                Problems& problems) {
  std::map<std::string, std::string> by_role;
  const auto add = [&](std::string_view component, std::string_view role, std::string raw) {
    if (raw.empty() || raw.size() > 128 || status.versions.contains(std::string(component))) return;
    api::ComponentVersion v;
    v.raw = raw;
    v.semver = NormalizeSemver(raw);
    status.versions[std::string(component)] = v;
    if (!role.empty()) by_role.emplace(std::string(role), std::move(raw));
  };
  for (const VersionFile& f : VersionFiles(vendor)) {
    std::optional<std::string> text = ReadOptional(host, f.path, problems);
    if (!text) continue;
    std::string raw;
    if (f.path == "proc/driver/nvidia/version") {
      raw = NvidiaProcVersion(*text);
    } else if (!f.key.empty()) {
      raw = KeyValue(*text, f.key, f.sep);
    } else {
      raw = std::string(Trim(*text));
      raw = raw.substr(0, raw.find('\n'));
    }
    add(f.component, f.role, raw);
  }
  if (vendor == "huawei") {
    if (std::optional<std::string> cann = AscendToolkit(host, problems)) {
      add("cann", "toolkit", *cann);
    }
  }
  return by_role;
}

// /proc/driver/nvidia/gpus/<bdf>/information "Device Minor:" (the /dev/nvidia<N> number).
std::optional<int> NvidiaMinor(const HostRoot& host, const std::string& bdf, Problems& problems) {
  std::optional<std::string> text =
      ReadOptional(host, "proc/driver/nvidia/gpus/" + bdf + "/information", problems);
  if (!text) return std::nullopt;
  const std::optional<int64_t> minor = ParseInt(KeyValue(*text, "Device Minor", ':'));
  if (!minor || *minor < 0 || *minor > 255) return std::nullopt;
  return static_cast<int>(*minor);
}

// The render node of a DRM device: dev/dri/renderD<N> from <function>/drm/renderD<N>.
std::string RenderNode(const HostRoot& host, const std::string& sysfs_path) {
  StatusOr<std::vector<std::string>> names = host.List(sysfs_path + "/drm");
  if (!names.ok()) return "";
  for (const std::string& n : *names) {
    if (n.starts_with("renderD")) return "dev/dri/" + n;
  }
  return "";
}

// The device's own node relative to the root ("dev/davinci3", "dev/dri/renderD130"); "" when
// a DRM device has no render node. `sysfs_path` is the PCI function's directory.
std::string DeviceNodeRel(const HostRoot& host, const VendorInfo& vendor, int64_t index,
                          const std::string& sysfs_path) {
  if (vendor.dev_node == DevNode::kDrmRender) return RenderNode(host, sysfs_path);
  char buf[64];
  std::snprintf(buf, sizeof(buf), std::string(vendor.dev_node_format).c_str(),
                static_cast<int>(index));
  return buf;
}

// /etc/hccn.conf address_<phy id>=<ip> (hw §1.4).
std::map<int, std::string> HccnAddresses(const HostRoot& host, Problems& problems) {
  std::map<int, std::string> out;
  std::optional<std::string> text = ReadOptional(host, "etc/hccn.conf", problems);
  if (!text) return out;
  size_t start = 0;
  while (start < text->size()) {
    const size_t nl = std::min(text->find('\n', start), text->size());
    const std::string_view line = Trim(std::string_view{*text}.substr(start, nl - start));
    start = nl + 1;
    if (!line.starts_with("address_")) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::optional<int64_t> id = ParseInt(line.substr(8, eq - 8));
    const std::string_view ip = Trim(line.substr(eq + 1));
    if (id && *id >= 0 && *id < 1024 && !ip.empty() && ip.size() <= 45) {
      out[static_cast<int>(*id)] = ip;
    }
  }
  return out;
}

// KFD topology (hw §3.1, §3.8): GPU nodes by PCI address, with memory, hive and xGMI links.
struct KfdNode {
  std::string bdf;
  int64_t local_mem = 0;
  std::string hive;
  std::vector<std::pair<int, double>> xgmi;  // (node id, GB/s)
};

std::map<int, KfdNode> ReadKfd(const HostRoot& host, Problems& problems) {
  std::map<int, KfdNode> nodes;
  constexpr std::string_view kNodes = "sys/class/kfd/kfd/topology/nodes";
  StatusOr<std::vector<std::string>> ids = host.List(kNodes);
  if (!ids.ok()) {
    problems.files.push_back(ids.status().message());
    return nodes;
  }
  for (const std::string& id_text : *ids) {
    const std::optional<int64_t> id = ParseInt(id_text);
    if (!id) continue;
    const std::string dir = std::string(kNodes) + "/" + id_text;
    std::optional<std::string> props = ReadOptional(host, dir + "/properties", problems);
    if (!props) continue;
    const std::optional<int64_t> location = ParseInt(KeyValue(*props, "location_id", ' '));
    const std::optional<int64_t> domain = ParseInt(KeyValue(*props, "domain", ' '));
    const std::optional<int64_t> simd = ParseInt(KeyValue(*props, "simd_count", ' '));
    if (!location || !domain || !simd || *simd == 0) continue;  // a CPU node
    KfdNode node;
    char bdf[16];
    std::snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", static_cast<unsigned>(*domain & 0xffff),
                  static_cast<unsigned>((*location >> 8) & 0xff),
                  static_cast<unsigned>((*location >> 3) & 0x1f),
                  static_cast<unsigned>(*location & 7));
    node.bdf = bdf;
    node.local_mem = ParseInt(KeyValue(*props, "local_mem_size", ' ')).value_or(0);
    node.hive = KeyValue(*props, "hive_id", ' ');
    StatusOr<std::vector<std::string>> links = host.List(dir + "/io_links");
    if (links.ok()) {
      for (const std::string& l : *links) {
        std::optional<std::string> lp = ReadOptional(
            host, std::string(dir).append("/io_links/").append(l).append("/properties"), problems);
        if (!lp) continue;
        const std::optional<int64_t> type = ParseInt(KeyValue(*lp, "type", ' '));
        const std::optional<int64_t> to = ParseInt(KeyValue(*lp, "node_to", ' '));
        const std::optional<int64_t> bw = ParseInt(KeyValue(*lp, "max_bandwidth", ' '));
        if (type == 11 && to) {  // 11 = XGMI (hw §3.8)
          node.xgmi.emplace_back(static_cast<int>(*to),
                                 bw && *bw > 0 ? static_cast<double>(*bw) / 1000 : 50);
        }
      }
    }
    nodes[static_cast<int>(*id)] = std::move(node);
  }
  return nodes;
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

api::Condition MakeCondition(std::string type, bool ok, std::string reason, std::string message,
                             const std::string& now) {
  api::Condition c;
  c.type = std::move(type);
  c.status = ok ? "True" : "False";
  c.reason = std::move(reason);
  if (message.size() > 1024) message = message.substr(0, 1021) + "...";
  c.message = std::move(message);
  c.last_transition_time = now;
  return c;
}

std::string JoinMessages(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : "; ") + s;
  return out;
}

// Replaces the links of `types` with `links` (a vendor library saw them).
void ReplaceLinks(api::NodeInventoryStatus& status, const std::set<std::string>& types,
                  std::vector<api::InventoryLink> links) {
  std::erase_if(status.links, [&](const api::InventoryLink& l) { return types.contains(l.type); });
  for (api::InventoryLink& l : links) status.links.push_back(std::move(l));
}

// NVML's MIG facts in the inventory's model (docs/partitions.md):
//  - a profile per GPU instance profile: its name, memory (memorySizeMB), counters
//    {compute: slices}, slots (the placements' size) and placements (their first slots), in order
//    of slices, slots and memory;
//  - a media-extension variant ("+me", "-me", "+me.all", "+gfx") whose base profile takes the
//    same slices and slots is left out: its instances sit where the base's do, so they are listed
//    under the base's name;
//  - capacity {compute: the most slices a profile takes}, slots: the end of the last placement;
//  - the GPU instances that exist, by first slot.
// With MIG mode off NVML gives no profiles: `enabled` false and nothing else, the device is served
// whole. Nullopt, with the reason in `error`, when the result fails the inventory's validation
// (a GPU instance of a profile NVML did not list, overlapping instances): partitions published
// from a view that disagrees with itself could take slots that are in use.
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
    // Application XIDs (13, 31, 43, 45, 68, 109) say nothing about the GPU (hw §2.6).
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
    const bool on_switch = std::any_of(d.links.begin(), d.links.end(), [](const NvmlLink& l) {
      return l.active && l.remote_type == "switch";
    });
    all_on_switch = all_on_switch && on_switch;
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
    if (d.fabric_state == "completed" && !d.cluster_uuid.empty() && d.clique_id) {
      clique = d.cluster_uuid + "." + std::to_string(*d.clique_id);
      dev.attributes["fabricDomain"] = StringAttr(clique);
      status.fabric = status.fabric.value_or(api::InventoryFabric{});
      status.fabric->cluster_uuid = d.cluster_uuid;
      status.fabric->clique_id = std::to_string(*d.clique_id);
    }
  }
  if (all_on_switch) {
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
  std::vector<api::InventoryLink> links;
  std::set<std::string> types;
  for (const DcmiTopology& t : dcmi.topology) {
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
    link.a = name_of_logic[t.a];
    link.b = name_of_logic[t.b];
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

std::string DefaultNodeName(const HostRoot& host) {
  StatusOr<std::string> name = host.ReadTrimmed("etc/hostname");
  if (!name.ok() || name->empty()) return "localhost";
  std::string out;
  for (char c : *name) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!api::ValidateNodeName(out, "metadata.name").ok()) return "localhost";
  return out;
}

// ---- The stages of Discover, in order ----

// The kernel's boot id, when readable and sensible (at most 64 bytes).
std::optional<std::string> BootId(const HostRoot& host, Problems& problems) {
  std::optional<std::string> boot = ReadOptional(host, "proc/sys/kernel/random/boot_id", problems);
  if (!boot) return std::nullopt;
  const std::string_view id = Trim(*boot);
  if (id.empty() || id.size() > 64) return std::nullopt;
  return std::string(id);
}

// Whether the host has an NVSwitch (an NVIDIA bridge function); the server models need it.
bool HasNvSwitch(const PciScan& pci) {
  return std::any_of(pci.functions.begin(), pci.functions.end(), [](const PciFunction& f) {
    return f.vendor == kNvidia && (f.pci_class >> 8) == kOtherBridge;
  });
}

// Accelerators, by vendor and class (hw §0), in PCI scan order.
std::vector<Found> FindAccelerators(const PciScan& pci) {
  std::vector<Found> found;
  for (const PciFunction& f : pci.functions) {
    const VendorInfo* vendor = AcceleratorVendor(f.vendor, f.device, f.pci_class);
    if (vendor == nullptr) continue;
    Found x;
    x.vendor = vendor;
    x.model = ModelOf(*vendor, f.device);
    x.pci = &f;
    found.push_back(std::move(x));
  }
  return found;
}

// Index: the vendor's physical index where sysfs/procfs gives it (NVIDIA device minor), else
// the order by PCI address within the device kind (= the physical id order on the Ascend
// servers, hw §1.5). Collisions fall back to the next free index. Sorts by kind and index.
void AssignIndexes(const HostRoot& host, std::vector<Found>& found, Problems& problems) {
  std::map<std::string, std::set<int64_t>> used;
  std::map<std::string, int64_t> next;
  for (Found& x : found) {
    std::optional<int> index;
    std::string index_source = "sysfs";
    if (x.vendor->vendor == "nvidia") {
      index = NvidiaMinor(host, x.pci->bdf, problems);
      if (index) index_source = "procfs";
    }
    std::set<int64_t>& taken = used[std::string(x.vendor->kind)];
    int64_t i = index && !taken.contains(*index) ? *index : next[std::string(x.vendor->kind)];
    while (taken.contains(i)) ++i;
    taken.insert(i);
    if (!index) next[std::string(x.vendor->kind)] = i + 1;
    api::InventoryDevice& d = x.device;
    d.kind = std::string(x.vendor->kind);
    d.index = i;
    d.name = d.kind + "-" + std::to_string(i);
    d.sources["index"] = index_source;
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.device.kind, a.device.index) < std::tie(b.device.kind, b.device.index);
  });
}

// What the host says about the vendors found, besides the PCI functions.
struct VendorFacts {
  std::set<std::string> vendors;                                       // found on the host
  std::map<std::string, std::map<std::string, std::string>> versions;  // vendor -> role -> raw
  std::map<int, std::string> hccn;                                     // Ascend index -> IP
  std::map<int, KfdNode> kfd;                                          // Hygon, AMD
  std::map<std::string, int> kfd_by_bdf;
};

// The version files of each vendor found (into status.versions), then the HCCN addresses and the
// KFD topology where those vendors are present.
VendorFacts ReadVendorFacts(const HostRoot& host, const std::vector<Found>& found,
                            api::NodeInventoryStatus& status, Problems& problems) {
  VendorFacts facts;
  for (const Found& x : found) {
    const std::string v(x.vendor->vendor);
    if (facts.vendors.insert(v).second) {
      facts.versions[v] = ReadVersions(host, v, status, problems);
    }
  }
  if (facts.vendors.contains("huawei")) facts.hccn = HccnAddresses(host, problems);
  if (facts.vendors.contains("hygon") || facts.vendors.contains("amd")) {
    facts.kfd = ReadKfd(host, problems);
  }
  for (const auto& [id, node] : facts.kfd) facts.kfd_by_bdf[node.bdf] = id;
  return facts;
}

// Memory: the KFD's local memory where it reports some, else the server model's.
void SetMemory(Found& x, const VendorFacts& facts) {
  api::InventoryDevice& d = x.device;
  int64_t memory = x.model.memory_bytes;
  std::string memory_source = "server-model";
  if (auto k = facts.kfd_by_bdf.find(x.pci->bdf);
      k != facts.kfd_by_bdf.end() && facts.kfd.at(k->second).local_mem > 0) {
    memory = facts.kfd.at(k->second).local_mem;
    memory_source = "kfd";
  }
  if (memory > 0) {
    d.memory = Quantity(memory);
    d.sources["memory"] = memory_source;
  }
}

// Healthy when the device node exists.
void SetDeviceNodeHealth(const HostRoot& host, Found& x, Problems& problems) {
  api::InventoryDevice& d = x.device;
  const std::string node = DeviceNodeRel(host, *x.vendor, d.index, x.pci->sysfs_path);
  if (node.empty() || !host.Exists(node)) {
    d.health = "Unhealthy";
    problems.device_nodes.push_back(
        d.name + ": " + (node.empty() ? "no device node found" : "/" + node + " missing"));
  } else {
    d.health = "Healthy";
  }
  d.sources["health"] = "sysfs";
}

// The vendor's versions. A device's version fields hold at most 64 bytes; a longer raw version
// (files may give up to 128) stays in status.versions only. The attributes hold the normalised
// semver.
void SetVersions(const VendorFacts& facts, api::InventoryDevice& d) {
  const auto vendor = facts.versions.find(d.vendor);
  if (vendor == facts.versions.end()) return;
  const std::map<std::string, std::string>& roles = vendor->second;
  for (auto [role, field] :
       {std::pair{"driver", &d.driver_version}, std::pair{"firmware", &d.firmware_version}}) {
    if (auto it = roles.find(role); it != roles.end() && it->second.size() <= 64) {
      *field = it->second;
    }
  }
  for (const auto& [role, attr] :
       {std::pair{"driver", "driverVersion"}, std::pair{"firmware", "firmwareVersion"},
        std::pair{"toolkit", "toolkitVersion"}}) {
    if (auto it = roles.find(role); it != roles.end()) {
      const std::string semver = NormalizeSemver(it->second);
      if (!semver.empty()) d.attributes[attr] = VersionAttr(semver);
    }
  }
}

// The attributes of the device's identity, its model and its PCI placement.
void SetAttributes(const Found& x, api::InventoryDevice& d) {
  d.attributes["vendor"] = StringAttr(d.vendor);
  d.attributes["family"] = StringAttr(std::string(x.model.family));
  d.attributes["model"] = StringAttr(d.model);
  d.attributes["index"] = IntAttr(d.index);
  d.attributes["bf16"] = BoolAttr(x.model.bf16);
  d.attributes["fp16"] = BoolAttr(x.model.fp16);
  d.attributes["fp8"] = BoolAttr(x.model.fp8);
  d.attributes["int8"] = BoolAttr(x.model.int8);
  if (d.numa_node) d.attributes["numaNode"] = IntAttr(*d.numa_node);
  if (!d.pcie_root.empty()) {
    d.attributes["resource.kubernetes.io/pcieRoot"] = StringAttr(d.pcie_root);
  }
  d.attributes["resource.kubernetes.io/pciBusID"] = StringAttr(d.pci_address);
}

// One device from its PCI function, model, device node, the vendor's versions and (Ascend) its
// HCCN address.
void DescribeDevice(const HostRoot& host, const VendorFacts& facts, Found& x, Problems& problems) {
  api::InventoryDevice& d = x.device;
  const PciFunction& f = *x.pci;
  d.vendor = std::string(x.vendor->vendor);
  d.model = std::string(x.model.model);
  d.pci_address = f.bdf;
  d.pcie_root = f.pcie_root;
  d.pcie_path = f.pcie_path;
  if (f.numa_node) d.numa_node = *f.numa_node;
  d.sources["pci"] = "sysfs";
  if (f.numa_node) d.sources["numaNode"] = "sysfs";
  SetMemory(x, facts);
  SetDeviceNodeHealth(host, x, problems);
  SetAttributes(x, d);
  SetVersions(facts, d);
  if (d.vendor == "huawei") {
    if (auto it = facts.hccn.find(static_cast<int>(d.index)); it != facts.hccn.end()) {
      d.attributes["huawei.com/deviceIP"] = StringAttr(it->second);
      d.sources["deviceIP"] = "hccn";
    }
  }
}

// The server model: one vendor and one model on the host, matched against the known servers.
ServerModel MatchServer(const std::vector<Found>& found, bool has_nvswitch) {
  bool uniform = !found.empty();
  for (const Found& x : found) {
    uniform =
        uniform && x.vendor == found[0].vendor && x.model.device_id == found[0].model.device_id;
  }
  ServerModelQuery query;
  query.has_nvswitch = has_nvswitch;
  for (const Found& x : found) query.devices.push_back(x.device.name);
  if (uniform) {
    query.vendor = found[0].vendor->vendor;
    query.device_id = found[0].model.device_id;
    query.model = found[0].model.model;
  }
  return MatchServerModel(query);
}

// KFD xGMI links (Hygon, AMD) take precedence over the server model: its links, and a
// link-domain group per xGMI hive.
void ApplyKfdLinks(const std::map<int, KfdNode>& kfd, const std::vector<Found>& found,
                   ServerModel& model) {
  std::map<std::string, std::string> name_of_bdf;
  for (const Found& x : found) name_of_bdf[x.pci->bdf] = x.device.name;
  std::vector<api::InventoryLink> kfd_links;
  // A pair once: KFD may list a peer twice, or two nodes may claim one PCI address.
  std::set<std::pair<std::string, std::string>> linked;
  std::map<std::string, std::vector<std::string>> hives;
  for (const auto& [id, node] : kfd) {
    auto a = name_of_bdf.find(node.bdf);
    if (a == name_of_bdf.end()) continue;
    if (!node.hive.empty() && node.hive != "0") hives[node.hive].push_back(a->second);
    for (const auto& [to, gbps] : node.xgmi) {
      auto peer = kfd.find(to);
      if (peer == kfd.end()) continue;
      auto b = name_of_bdf.find(peer->second.bdf);
      if (b == name_of_bdf.end() || !(a->second < b->second)) continue;
      if (!linked.emplace(a->second, b->second).second) continue;
      api::InventoryLink link;
      link.a = a->second;
      link.b = b->second;
      link.type = "xgmi";
      link.bandwidth_gbps = gbps;
      link.source = "kfd";
      kfd_links.push_back(std::move(link));
    }
  }
  if (kfd_links.empty()) return;
  model.links = std::move(kfd_links);
  model.groups.clear();
  model.scale_up_domain.clear();
  int k = 0;
  for (auto& [hive, members] : hives) {
    std::sort(members.begin(), members.end(), [&](const std::string& a, const std::string& b) {
      return std::make_pair(a.size(), a) < std::make_pair(b.size(), b);
    });
    api::InventoryGroup g;
    g.name = "xgmi-hive-" + std::to_string(k++);
    g.kind = "link-domain";
    g.devices = members;
    g.source = "kfd";
    for (const std::string& m : members) model.scale_up_domain[m] = g.name;
    model.groups.push_back(std::move(g));
  }
  model.description = std::to_string(found.size()) + "x " + std::string(found[0].model.model) +
                      ", xGMI links from the KFD topology";
  model.rule_set = "any";
  model.link_type = "xgmi";
  model.known = true;
}

// The topology into the status (server model, rule set, links, groups) and each device's
// link attributes.
void ApplyTopology(const ServerModel& model, std::vector<Found>& found,
                   api::NodeInventoryStatus& status) {
  status.server_model = model.description;
  status.rule_set = model.rule_set;
  status.valid_sets = model.valid_sets;
  status.links = model.links;
  status.groups = model.groups;
  for (Found& x : found) {
    api::InventoryDevice& d = x.device;
    d.attributes["linkType"] = StringAttr(model.link_type);
    if (auto it = model.scale_up_domain.find(d.name); it != model.scale_up_domain.end()) {
      d.attributes["scaleUpDomain"] = StringAttr(it->second);
    }
    if (auto it = model.module.find(d.name); it != model.module.end()) {
      d.attributes["module"] = StringAttr(it->second);
    }
    const bool from_kfd = !model.links.empty() && model.links[0].source == "kfd";
    d.sources["topology"] = from_kfd ? "kfd" : "server-model";
  }
}

// Hygon DMI's vHCUs: the partitioning of each DCU, matched by index (DMI gives no PCI address).
// A node without the library says nothing (it is needed for vHCUs alone); one that fails says so.
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

// NVML and DCMI, for the vendors found, when the options ask for them; Hygon's DMI.
void ProbeVendorLibraries(const DiscoveryOptions& options, const std::set<std::string>& vendors,
                          std::vector<Found>& found, api::NodeInventoryStatus& status,
                          Problems& problems) {
  if (!options.probe_vendor_libraries) return;
  if (vendors.contains("nvidia")) {
    const NvmlFacts nvml = options.probe_nvml ? options.probe_nvml(options.vendor_lib_dirs)
                                              : ProbeNvml(options.vendor_lib_dirs);
    if (nvml.library.loaded) {
      MergeNvml(nvml, found, status, problems);
    } else {
      problems.libraries.push_back("nvml: " + nvml.library.error);
      if (problems.library_reason.empty()) problems.library_reason = "NvmlUnavailable";
    }
  }
  if (vendors.contains("hygon")) MergeHydmi(ProbeHydmi(options.vendor_lib_dirs), found, problems);
  if (vendors.contains("huawei")) {
    const DcmiFacts dcmi = options.probe_dcmi ? options.probe_dcmi(options.vendor_lib_dirs)
                                              : ProbeDcmi(options.vendor_lib_dirs);
    if (dcmi.library.loaded) {
      MergeDcmi(dcmi, found, status, problems);
    } else {
      problems.libraries.push_back("dcmi: " + dcmi.library.error);
      if (problems.library_reason.empty()) problems.library_reason = "DcmiUnavailable";
    }
  }
}

// "8 devices found, 7 healthy": the Ready condition's message.
std::string ReadyMessage(const api::NodeInventoryStatus& status) {
  const auto healthy =
      std::count_if(status.devices.begin(), status.devices.end(),
                    [](const api::InventoryDevice& d) { return d.health == "Healthy"; });
  return std::to_string(status.devices.size()) + " devices found, " + std::to_string(healthy) +
         " healthy";
}

// The node's health from its devices', and a condition per kind of problem.
void SetHealthAndConditions(const Problems& problems, const std::string& now,
                            api::NodeInventoryStatus& status) {
  status.conditions.push_back(MakeCondition("Ready", true, "Discovered", "", now));
  SetNodeHealth(status);
  if (!problems.files.empty()) {
    status.conditions.push_back(
        MakeCondition("HostFiles", false, "UnreadableFiles", JoinMessages(problems.files), now));
  }
  if (!problems.device_nodes.empty()) {
    status.conditions.push_back(MakeCondition("DeviceNodes", false, "DeviceNodeMissing",
                                              JoinMessages(problems.device_nodes), now));
  }
  if (!problems.links.empty()) {
    status.conditions.push_back(
        MakeCondition("Links", false, "LinksDegraded", JoinMessages(problems.links), now));
  }
  if (!problems.network.empty()) {
    status.conditions.push_back(
        MakeCondition("Network", false, "NetworkUnhealthy", JoinMessages(problems.network), now));
  }
  if (!problems.libraries.empty()) {
    status.conditions.push_back(MakeCondition(
        "VendorLibrary", false,
        problems.library_reason.empty() ? "VendorLibraryErrors" : problems.library_reason,
        JoinMessages(problems.libraries), now));
  }
}

}  // namespace

void SetNodeHealth(api::NodeInventoryStatus& status) {
  const size_t unhealthy = static_cast<size_t>(
      std::count_if(status.devices.begin(), status.devices.end(),
                    [](const api::InventoryDevice& d) { return d.health != "Healthy"; }));
  status.health = unhealthy == 0                       ? "Healthy"
                  : unhealthy == status.devices.size() ? "Unhealthy"
                                                       : "Degraded";
  for (api::Condition& c : status.conditions) {
    if (c.type == "Ready") c.message = ReadyMessage(status);
  }
}

Status DiscoveryOptions::Validate() const {
  struct stat st {};
  const std::string root = host_root.empty() ? "/" : host_root;
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgumentError("host root " + root + ": not a directory");
  }
  if (!node_name.empty()) RETURN_IF_ERROR(api::ValidateNodeName(node_name, "node name"));
  return OkStatus();
}

StatusOr<api::NodeInventory> Discover(const DiscoveryOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const HostRoot host(options.host_root);
  const std::string now = options.now.empty() ? Now() : options.now;
  Problems problems;
  api::NodeInventory inv;
  inv.metadata.name = options.node_name.empty() ? DefaultNodeName(host) : options.node_name;
  api::NodeInventoryStatus& status = inv.status;
  if (std::optional<std::string> boot = BootId(host, problems)) status.boot_id = *boot;

  PciScan pci = ScanPci(host);
  for (std::string& p : pci.problems) problems.files.push_back(std::move(p));
  std::vector<Found> found = FindAccelerators(pci);
  AssignIndexes(host, found, problems);
  const VendorFacts facts = ReadVendorFacts(host, found, status, problems);
  for (Found& x : found) DescribeDevice(host, facts, x, problems);

  ServerModel model = MatchServer(found, HasNvSwitch(pci));
  ApplyKfdLinks(facts.kfd, found, model);
  ApplyTopology(model, found, status);
  ProbeVendorLibraries(options, facts.vendors, found, status, problems);

  for (Found& x : found) status.devices.push_back(std::move(x.device));
  status.nics = ScanNics(host, pci, problems.files);
  PairNics(status.nics, status.devices, pci);
  SetHealthAndConditions(problems, now, status);
  if (Status valid = api::ValidateNodeInventory(inv); !valid.ok()) {
    return InternalError("discovered inventory is invalid: " + valid.message());
  }
  return inv;
}

std::string DeviceNodePath(const std::string& host_root, const api::InventoryDevice& d) {
  const auto vendor = std::find_if(Vendors().begin(), Vendors().end(),
                                   [&](const VendorInfo& v) { return v.vendor == d.vendor; });
  if (vendor == Vendors().end()) return "";
  const HostRoot host(host_root);
  const std::string rel =
      DeviceNodeRel(host, *vendor, d.index, "sys/bus/pci/devices/" + d.pci_address);
  return rel.empty() ? "" : "/" + rel;
}

}  // namespace xpu::discovery
