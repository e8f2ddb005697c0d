#include "kubeletplugin/cdi/profiles.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/text.h"

namespace xpu::cdi {
namespace {

// How a visibility variable numbers the claim's devices.
enum class Numbering {
  kPhysical,  // the host's index (uuid where the vendor prefers it): read by a container runtime
              // hook that maps host devices, so host numbers are what it expects
  kOrdinal,   // 0..n-1 in index order: read by the vendor's user-space runtime inside the
              // container, which only sees the claim's nodes (assumed to enumerate them in
              // host index order)
};

struct VisibilityVar {
  std::string_view name;
  Numbering numbering;
};

// One vendor's shared edits. Names and paths are those of the vendor table in docs/install.md;
// anything else is marked as assumed.
struct Profile {
  // Shared nodes, added when they exist under the host root.
  std::vector<std::string_view> control_nodes;
  // Per-device extra nodes, printf-like "%d" replaced by the device index, added when present.
  std::vector<std::string_view> per_device_nodes;
  std::vector<VisibilityVar> visibility;
  bool prefer_uuid = false;  // kPhysical values are uuids when every device has one
};

const std::map<std::string_view, Profile>& Profiles() {
  static const std::map<std::string_view, Profile> profiles = {
      // Huawei Ascend: davinci_manager, devmm_svm, hisi_hdc, dvpp_cmdlist;
      // ASCEND_VISIBLE_DEVICES holds physical ids. ASCEND_RT_VISIBLE_DEVICES (logical ids of the
      // CANN runtime) is left unset: the container sees only its own davinci nodes.
      {"huawei",
       {{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/dvpp_cmdlist"},
        {},
        {{"ASCEND_VISIBLE_DEVICES", Numbering::kPhysical}},
        false}},
      // NVIDIA: nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset; the MIG capability
      // and IMEX channel nodes belong to partitions and channels, not to whole GPUs.
      // NVIDIA_VISIBLE_DEVICES with uuids (indexes when one is unknown). CUDA_VISIBLE_DEVICES is
      // left unset: CUDA numbers the visible GPUs itself.
      {"nvidia",
       {{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"},
        {},
        {{"NVIDIA_VISIBLE_DEVICES", Numbering::kPhysical}},
        true}},
      // Hygon DCU: /dev/kfd, /dev/mkfd; HIP_VISIBLE_DEVICES. /opt/hyhal is a driver
      // file (kubeletplugin/driverfiles/).
      {"hygon",
       {{"/dev/kfd", "/dev/mkfd"}, {}, {{"HIP_VISIBLE_DEVICES", Numbering::kOrdinal}}, false}},
      // Cambricon: cambricon_ctl, cambricon_ipcm<N> per device, and the optional shared
      // nodes. CAMBRICON_VISIBLE_DEVICES (set by the vendor's plugin, host ids);
      // MLU_VISIBLE_DEVICES (framework ordinals) is left unset as it would filter twice.
      {"cambricon",
       {{"/dev/cambricon_ctl", "/dev/cambricon_gdr", "/dev/cmsg_ctrl", "/dev/commu"},
        {"/dev/cambricon_ipcm%d"},
        {{"CAMBRICON_VISIBLE_DEVICES", Numbering::kPhysical}},
        false}},
      // MetaX: /dev/mxcd (+ /dev/mxnd, /dev/mxgd on some plugins); CUDA_VISIBLE_DEVICES.
      {"metax",
       {{"/dev/mxcd", "/dev/mxnd", "/dev/mxgd"},
        {},
        {{"CUDA_VISIBLE_DEVICES", Numbering::kOrdinal}},
        false}},
      // Biren: no shared node; SUPA_VISIBLE_DEVICES. brsmi and libbiren-ml.so are
      // driver files (kubeletplugin/driverfiles/).
      {"biren", {{}, {}, {{"SUPA_VISIBLE_DEVICES", Numbering::kOrdinal}}, false}},
      // Enflame: /dev/gcuctl; ENFLAME_VISIBLE_DEVICES (device plugin, host ids).
      {"enflame",
       {{"/dev/gcuctl"}, {}, {{"ENFLAME_VISIBLE_DEVICES", Numbering::kPhysical}}, false}},
      // Moore Threads: MTHREADS_VISIBLE_DEVICES (container runtime, host ids).
      {"mthreads", {{}, {}, {{"MTHREADS_VISIBLE_DEVICES", Numbering::kPhysical}}, false}},
      // AMD: /dev/kfd; HIP_VISIBLE_DEVICES only: ROCR_VISIBLE_DEVICES as well would filter
      // the already filtered list a second time.
      {"amd", {{"/dev/kfd"}, {}, {{"HIP_VISIBLE_DEVICES", Numbering::kOrdinal}}, false}},
  };
  return profiles;
}

std::string HostPath(const std::string& host_root, std::string_view path) {
  std::string root = host_root;
  while (!root.empty() && root.back() == '/') root.pop_back();
  return root + std::string(path);
}

bool ExistsUnder(const std::string& host_root, std::string_view path) {
  struct stat st {};
  return ::stat(HostPath(host_root, path).c_str(), &st) == 0;
}

std::string WithIndex(std::string_view format, int64_t index) {
  std::string out(format);
  const size_t at = out.find("%d");
  if (at != std::string::npos) out.replace(at, 2, std::to_string(index));
  return out;
}

// "rw": the container opens the node; it has no reason to mknod it (the "m" of the default).
void AddNode(ContainerEdits& edits, const std::string& path) {
  const bool present = std::any_of(edits.device_nodes.begin(), edits.device_nodes.end(),
                                   [&](const DeviceNode& n) { return n.path == path; });
  if (!present) edits.device_nodes.push_back(DeviceNode{path, "", "rw"});
}

// Sorted names in a host directory that start with `prefix`.
std::vector<std::string> NamesWithPrefix(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* entry = ::readdir(d)) {
    const std::string_view name = entry->d_name;
    if (name.starts_with(prefix)) names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

DeviceFacts FactsOf(const api::InventoryDevice& device, std::string device_node) {
  return DeviceFacts{.name = device.name,
                     .vendor = device.vendor,
                     .kind = device.kind,
                     .index = device.index,
                     .uuid = device.uuid,
                     .pci_address = device.pci_address,
                     .device_node = std::move(device_node)};
}

HostFiles HostFilesUnder(const std::string& host_root) {
  return {[host_root](std::string_view path) { return ExistsUnder(host_root, path); },
          [host_root](std::string_view dir, std::string_view prefix) {
            return NamesWithPrefix(HostPath(host_root, dir), prefix);
          }};
}

HostFiles FixedHostFiles(std::set<std::string> paths) {
  auto shared = std::make_shared<const std::set<std::string>>(std::move(paths));
  return {[shared](std::string_view path) { return shared->contains(std::string(path)); },
          [shared](std::string_view dir, std::string_view prefix) {
            std::vector<std::string> names;
            const std::string parent = std::string(dir) + "/";
            for (const std::string& p : *shared) {
              if (!p.starts_with(parent)) continue;
              std::string_view rest = p;
              rest.remove_prefix(parent.size());
              if (rest.find('/') == std::string_view::npos && rest.starts_with(prefix)) {
                names.emplace_back(rest);
              }
            }
            return names;  // a set iterates in order: sorted
          }};
}

ClaimEdits EditsForClaim(const std::vector<DeviceFacts>& devices, const std::string& host_root) {
  return EditsForClaim(devices, HostFilesUnder(host_root));
}

ClaimEdits EditsForClaim(const std::vector<DeviceFacts>& devices, const HostFiles& host) {
  ClaimEdits out;
  out.per_device.resize(devices.size());

  // Claim order: by vendor, then index, then name, so that the same set gives the same spec.
  std::vector<size_t> order(devices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(devices[a].vendor, devices[a].index, devices[a].name) <
           std::tie(devices[b].vendor, devices[b].index, devices[b].name);
  });

  std::map<std::string_view, std::vector<size_t>> by_vendor;  // in claim order
  std::vector<std::string> names;
  for (const size_t i : order) {
    by_vendor[devices[i].vendor].push_back(i);
    names.push_back(devices[i].name);
  }

  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceFacts& d = devices[i];
    ContainerEdits& edits = out.per_device[i];
    if (!d.device_node.empty()) AddNode(edits, d.device_node);
    const auto profile = Profiles().find(d.vendor);
    if (profile == Profiles().end()) continue;
    for (const std::string_view format : profile->second.per_device_nodes) {
      const std::string path = WithIndex(format, d.index);
      if (host.exists(path)) AddNode(edits, path);
    }
  }

  std::map<std::string_view, std::vector<std::string>> env_values;  // by variable name
  for (const auto& [vendor, members] : by_vendor) {
    const auto profile = Profiles().find(vendor);
    if (profile == Profiles().end()) continue;
    const Profile& p = profile->second;
    for (const std::string_view node : p.control_nodes) {
      if (host.exists(node)) AddNode(out.common, std::string(node));
    }
    const bool uuids = p.prefer_uuid && std::all_of(members.begin(), members.end(), [&](size_t i) {
                         return !devices[i].uuid.empty();
                       });
    for (const VisibilityVar& var : p.visibility) {
      // Two vendors may share a variable (Hygon and AMD: HIP_VISIBLE_DEVICES): one list.
      std::vector<std::string>& values = env_values[var.name];
      for (const size_t i : members) {
        if (var.numbering == Numbering::kOrdinal) {
          values.push_back(std::to_string(values.size()));
        } else {
          values.push_back(uuids ? devices[i].uuid : std::to_string(devices[i].index));
        }
      }
    }
  }
  for (const auto& [name, values] : env_values) {
    out.common.env.push_back(std::string(name) + "=" + Join(values, ","));
  }
  if (!devices.empty()) out.common.env.push_back("XPU_DRA_DEVICES=" + Join(names, ","));
  return out;
}

}  // namespace xpu::cdi
