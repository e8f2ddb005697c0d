#include "kubeletplugin/discovery/discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "api/validation.h"
#include "base/text.h"
#include "kubeletplugin/discovery/host_files.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/internal/assembly.h"
#include "kubeletplugin/discovery/internal/merge.h"
#include "kubeletplugin/discovery/nics.h"
#include "kubeletplugin/discovery/pci.h"
#include "kubeletplugin/discovery/server_models.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/discovery/vendors.h"
#include "kubeletplugin/discovery/versions.h"

namespace xpu::discovery {
namespace {

using internal::BoolAttr;
using internal::Found;
using internal::IntAttr;
using internal::MergeDcmi;
using internal::MergeHydmi;
using internal::MergeNvml;
using internal::Problems;
using internal::Quantity;
using internal::StringAttr;
using internal::VersionAttr;

constexpr uint16_t kNvidia = 0x10de;
constexpr uint16_t kOtherBridge =
    0x0680;  // how NVSwitch shows up (docs/reference/hardware.md §0, fixtures)

// ---- The stages of Discover, in order ----

// metadata.name when the options give none: etc/hostname in lower case, else "localhost".
std::string DefaultNodeName(const HostRoot& host) {
  StatusOr<std::string> name = host.ReadTrimmed("etc/hostname");
  if (!name.ok() || name->empty()) return "localhost";
  std::string out;
  for (char c : *name) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!api::ValidateNodeName(out, "metadata.name").ok()) return "localhost";
  return out;
}

// The kernel's boot id, when readable and sensible (at most 64 bytes).
std::optional<std::string> BootId(const HostRoot& host, Problems& problems) {
  std::optional<std::string> boot =
      ReadOptional(host, "proc/sys/kernel/random/boot_id", problems.files);
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

// Accelerators, by vendor and class (docs/reference/hardware.md §0), in PCI scan order.
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
// servers, docs/reference/hardware.md §1.5). Collisions fall back to the next free index. Sorts by
// kind and index.
void AssignIndexes(const HostRoot& host, std::vector<Found>& found, Problems& problems) {
  std::map<std::string, std::set<int64_t>> used;
  std::map<std::string, int64_t> next;
  for (Found& x : found) {
    std::optional<int> index;
    std::string index_source = "sysfs";
    if (x.vendor->vendor == "nvidia") {
      index = NvidiaMinor(host, x.pci->bdf, problems.files);
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
      facts.versions[v] = ReadVersions(host, v, status, problems.files);
    }
  }
  if (facts.vendors.contains("huawei")) facts.hccn = HccnAddresses(host, problems.files);
  if (facts.vendors.contains("hygon") || facts.vendors.contains("amd")) {
    facts.kfd = ReadKfd(host, problems.files);
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

// Whether `library` loaded; if not, its error is a problem, and `reason` the condition's reason
// unless an earlier library gave one.
bool LibraryLoaded(const LibraryStatus& library, std::string_view name, std::string_view reason,
                   Problems& problems) {
  if (library.loaded) return true;
  problems.libraries.push_back(std::string(name) + ": " + library.error);
  if (problems.library_reason.empty()) problems.library_reason = reason;
  return false;
}

// NVML and DCMI, for the vendors found, when the options ask for them; Hygon's DMI.
void ProbeVendorLibraries(const DiscoveryOptions& options, const std::set<std::string>& vendors,
                          std::vector<Found>& found, api::NodeInventoryStatus& status,
                          Problems& problems) {
  if (!options.probe_vendor_libraries) return;
  if (vendors.contains("nvidia")) {
    const NvmlFacts nvml = options.probe_nvml ? options.probe_nvml(options.vendor_lib_dirs)
                                              : ProbeNvml(options.vendor_lib_dirs);
    if (LibraryLoaded(nvml.library, "nvml", "NvmlUnavailable", problems)) {
      MergeNvml(nvml, found, status, problems);
    }
  }
  if (vendors.contains("hygon")) MergeHydmi(ProbeHydmi(options.vendor_lib_dirs), found, problems);
  if (vendors.contains("huawei")) {
    const DcmiFacts dcmi = options.probe_dcmi ? options.probe_dcmi(options.vendor_lib_dirs)
                                              : ProbeDcmi(options.vendor_lib_dirs);
    if (LibraryLoaded(dcmi.library, "dcmi", "DcmiUnavailable", problems)) {
      MergeDcmi(dcmi, found, status, problems);
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

// ---- The conditions ----

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
