// What a gang's containers read to join the collective, computed from the gang's status
// (api/accelerator_gang.h): the HCCL rank table (hccl.json) for Ascend, in layout 1.0 or 1.2
// (1.2 adds the super-pod list, for Atlas A3 super-pods), and an NCCL/MPI host file for the
// others. Pure; the plugin writes these files for the container, the controller and xpuctl
// print them.
#ifndef XPU_API_RANK_TABLE_H_
#define XPU_API_RANK_TABLE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/accelerator_gang.h"
#include "base/status.h"

namespace xpu::api {

// {"status": "completed", "version": "1.0", "server_count": "2", "server_list": [{"server_id":
// "<node address or name>", "device": [{"device_id": "3", "device_ip": "...", "rank_id": "0"}]}]}
// with every value a string, servers in node-rank order, devices in rank order. device_id is the
// device's index (the number its name ends in). "1.2" adds "super_pod_list": [{"super_pod_id",
// "server_list": [{"server_id"}]}] when the ranks name super-pods. Errors: a version other than
// "1.0" or "1.2", a status that is not placed, a device name without an index.
StatusOr<nlohmann::json> HcclRankTable(const AcceleratorGangStatus& status,
                                       std::string_view version = "1.0");

// One line per node in node-rank order: "<address or name> slots=<devices>" (the MPI host file
// NCCL launchers read).
std::string HostFile(const AcceleratorGangStatus& status);

}  // namespace xpu::api

#endif  // XPU_API_RANK_TABLE_H_
