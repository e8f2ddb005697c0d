// The host's small text files that the discovery reads beside sysfs' PCI tree: optional files,
// "key=value" text, Ascend's /etc/hccn.conf, the KFD topology (Hygon, AMD) and NVIDIA's device
// minor numbers in procfs. A file that is absent is no problem; one that cannot be read is, and
// its message is appended to `problems` (the inventory's HostFiles condition). Thread-compatible.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_HOST_FILES_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_HOST_FILES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubeletplugin/discovery/host_root.h"

namespace xpu::discovery {

// A decimal integer, surrounding whitespace trimmed; nullopt for anything else ("", "12a").
std::optional<int64_t> ParseInt(std::string_view text);

// The value of `key` in a "key=value" (sep '='), "key: value" (':') or "key value" (' ') text:
// the first line that starts with `key` and then (after spaces) `sep`, trimmed; with sep ' ' the
// rest of the first line that starts with `key`. Empty when absent.
std::string KeyValue(std::string_view text, std::string_view key, char sep);

// The file `rel` under the host root; nullopt when it is absent, or unreadable (the message
// appended to `problems`).
std::optional<std::string> ReadOptional(const HostRoot& host, std::string_view rel,
                                        std::vector<std::string>& problems);

// /proc/driver/nvidia/gpus/<bdf>/information "Device Minor:" (the /dev/nvidia<N> number), when
// it is there and within 0..255.
std::optional<int> NvidiaMinor(const HostRoot& host, const std::string& bdf,
                               std::vector<std::string>& problems);

// /etc/hccn.conf (docs/reference/hardware.md §1.4): the RoCE address of each Ascend device,
// address_<phy id>=<ip>, for ids 0..1023 and addresses of at most 45 bytes. Empty when the file is
// absent.
std::map<int, std::string> HccnAddresses(const HostRoot& host, std::vector<std::string>& problems);

// One GPU node of the KFD topology (docs/reference/hardware.md §3.1, §3.8).
struct KfdNode {
  std::string bdf;                           // its PCI address, "0000:13:00.0"
  int64_t local_mem = 0;                     // bytes; 0 when not reported
  std::string hive;                          // the xGMI hive id; "" or "0": none
  std::vector<std::pair<int, double>> xgmi;  // (node id, GB/s)
};

// The GPU nodes of sys/class/kfd/kfd/topology/nodes by node id (CPU nodes left out), with their
// memory, hive and xGMI links (50 GB/s where a link gives no bandwidth); empty without a
// topology. A node or link that cannot be read is a problem.
std::map<int, KfdNode> ReadKfd(const HostRoot& host, std::vector<std::string>& problems);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_HOST_FILES_H_
