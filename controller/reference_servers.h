// The reference servers: what discovery reports on each server model the project knows, as whole
// NodeInventories (vendor, model, memory, precisions, links, groups, rule set). They are the
// discovery results of the project's reference hosts (e2e/fixtures/hosts-expected/, which the
// discovery golden test keeps equal to what the discovery really produces), built into the
// binary, so that tools that reason about "any known server" (`xpuctl render`, the autoscaler
// templates) need no cluster and no files. Parsed once, on first use; thread-safe.
#ifndef XPU_CONTROLLER_REFERENCE_SERVERS_H_
#define XPU_CONTROLLER_REFERENCE_SERVERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"

namespace xpu::controller {

struct ReferenceServer {
  std::string name;  // the reference host's name, e.g. "atlas800t-a2", "hgx-h200"
  api::NodeInventory inventory;
};

// Every reference server, in a fixed order (by name).
const std::vector<ReferenceServer>& ReferenceServers();

// The server called `name`, or nullptr.
const ReferenceServer* FindReferenceServer(std::string_view name);

// How many servers are built in (ReferenceServers() holds them all when every one parses).
int EmbeddedServerCount();

// "atlas800-9000, atlas800t-a2, ..." for error messages.
std::string ReferenceServerNames();

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_REFERENCE_SERVERS_H_
