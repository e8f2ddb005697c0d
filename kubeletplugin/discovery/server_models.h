// Which published server model a host is: when no vendor library reports the link topology, the
// accelerator model, the device count and whether NVSwitch functions are present decide it
// (docs/reference/hardware.md §1.1, §2.1, §3.2, §3.8), and its layout (topology/server_models.h,
// the one source the bundled node descriptions of e2e/fixtures/topologies/ are built from too)
// gives the rule set, the vendor groups and the links, as inventory entries with source
// "server-model".
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_SERVER_MODELS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_SERVER_MODELS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"

namespace xpu::discovery {

struct ServerModelQuery {
  std::string_view vendor;           // "huawei"
  uint16_t device_id = 0;            // of the accelerators
  std::string_view model;            // "H200"
  std::vector<std::string> devices;  // device names in index order
  bool has_nvswitch = false;         // NVIDIA NVSwitch functions (class 0x0680) on the host
};

struct ServerModel {
  std::string description;                           // status.serverModel
  std::string rule_set;                              // "ascend910-ring", ...
  std::vector<std::vector<std::string>> valid_sets;  // ring-sets only
  std::vector<api::InventoryLink> links;             // source "server-model"
  std::vector<api::InventoryGroup> groups;           // source "server-model"
  std::string link_type;  // linkType attribute: "hccs", "hccs+sio", "nvswitch", "pcie" ...
  // Per device: the scale-up domain (a group name) and the module (hard pairing unit).
  std::map<std::string, std::string> scale_up_domain;
  std::map<std::string, std::string> module;
  bool known = false;  // false: a generic PCIe server (rule set pcie-tree, no links)
};

ServerModel MatchServerModel(const ServerModelQuery& query);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_SERVER_MODELS_H_
