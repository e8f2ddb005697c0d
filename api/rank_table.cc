#include "api/rank_table.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

namespace xpu::api {
namespace {

using nlohmann::json;

// "npu-3" -> "3".
StatusOr<std::string> DeviceIndex(const std::string& device) {
  const size_t dash = device.rfind('-');
  const std::string digits = dash == std::string::npos ? device : device.substr(dash + 1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    return InvalidArgumentError("rank table: device " + device + " has no index");
  }
  return std::to_string(value);
}

std::vector<const GangNode*> NodesByRank(const AcceleratorGangStatus& status) {
  std::vector<const GangNode*> nodes;
  for (const GangNode& n : status.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const GangNode* a, const GangNode* b) { return a->rank < b->rank; });
  return nodes;
}

const std::string& ServerId(const GangNode& node) {
  return node.address.empty() ? node.name : node.address;
}

}  // namespace

StatusOr<json> HcclRankTable(const AcceleratorGangStatus& status, std::string_view version) {
  if (version != "1.0" && version != "1.2") {
    return InvalidArgumentError("rank table: version \"" + std::string(version) +
                                "\" is not 1.0 or 1.2");
  }
  if (status.nodes.empty() || status.rank_table.empty()) {
    return FailedPreconditionError("rank table: the gang is not placed");
  }
  std::map<std::string, std::vector<const GangRank*>> by_node;
  for (const GangRank& r : status.rank_table) by_node[r.node].push_back(&r);
  json servers = json::array();
  std::map<std::string, std::vector<std::string>> super_pods;  // id -> server ids
  for (const GangNode* node : NodesByRank(status)) {
    std::vector<const GangRank*>& ranks = by_node[node->name];
    std::sort(ranks.begin(), ranks.end(),
              [](const GangRank* a, const GangRank* b) { return a->rank < b->rank; });
    json devices = json::array();
    for (const GangRank* r : ranks) {
      ASSIGN_OR_RETURN(std::string index, DeviceIndex(r->device));
      json d = {
          {"device_id", index}, {"device_ip", r->ip_address}, {"rank_id", std::to_string(r->rank)}};
      devices.push_back(std::move(d));
      if (version == "1.2" && !r->super_pod_id.empty()) {
        std::vector<std::string>& members = super_pods[r->super_pod_id];
        if (std::find(members.begin(), members.end(), ServerId(*node)) == members.end()) {
          members.push_back(ServerId(*node));
        }
      }
    }
    servers.push_back({{"server_id", ServerId(*node)}, {"device", std::move(devices)}});
  }
  json table = {{"status", "completed"},
                {"version", std::string(version)},
                {"server_count", std::to_string(servers.size())},
                {"server_list", std::move(servers)}};
  if (!super_pods.empty()) {
    json list = json::array();
    for (const auto& [id, members] : super_pods) {
      json member_list = json::array();
      for (const std::string& m : members) member_list.push_back({{"server_id", m}});
      list.push_back({{"super_pod_id", id}, {"server_list", std::move(member_list)}});
    }
    table["super_pod_list"] = std::move(list);
  }
  return table;
}

std::string HostFile(const AcceleratorGangStatus& status) {
  std::string out;
  for (const GangNode* node : NodesByRank(status)) {
    out += ServerId(*node) + " slots=" + std::to_string(node->devices.size()) + "\n";
  }
  return out;
}

}  // namespace xpu::api
