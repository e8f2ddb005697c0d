#include "api/rank_table.h"

#include <catch2/catch.hpp>
#include <tuple>

#include "base/testing/require_ok.h"

namespace xpu::api {
namespace {

AcceleratorGangStatus TwoNodes() {
  AcceleratorGangStatus s;
  s.phase = "Placed";
  // Listed out of rank order: the table follows the ranks.
  s.nodes = {{.name = "n4", .rank = 1, .devices = {"npu-0", "npu-1"}, .address = "10.0.0.4"},
             {.name = "n1", .rank = 0, .devices = {"npu-6", "npu-7"}, .address = ""}};
  // Out of rank order too: rank, node, device, the device's address, its super-pod.
  const std::tuple<int64_t, const char*, const char*, const char*, const char*> ranks[] = {
      {2, "n4", "npu-0", "192.168.4.0", "sp1"},
      {0, "n1", "npu-6", "192.168.1.6", "sp0"},
      {1, "n1", "npu-7", "192.168.1.7", "sp0"},
      {3, "n4", "npu-1", "192.168.4.1", "sp1"}};
  for (const auto& [rank, node, device, ip, super_pod] : ranks) {
    GangRank r;
    r.rank = rank;
    r.node = node;
    r.device = device;
    r.ip_address = ip;
    r.super_pod_id = super_pod;
    s.rank_table.push_back(std::move(r));
  }
  return s;
}

TEST_CASE("HCCL rank table 1.0 lists servers by node rank and devices by rank, all strings") {
  auto table = HcclRankTable(TwoNodes(), "1.0");
  REQUIRE_OK(table);
  const nlohmann::json want = nlohmann::json::parse(R"({
    "status": "completed", "version": "1.0", "server_count": "2",
    "server_list": [
      {"server_id": "n1", "device": [
        {"device_id": "6", "device_ip": "192.168.1.6", "rank_id": "0"},
        {"device_id": "7", "device_ip": "192.168.1.7", "rank_id": "1"}]},
      {"server_id": "10.0.0.4", "device": [
        {"device_id": "0", "device_ip": "192.168.4.0", "rank_id": "2"},
        {"device_id": "1", "device_ip": "192.168.4.1", "rank_id": "3"}]}]})");
  CHECK(*table == want);
}

TEST_CASE("HCCL rank table 1.2 adds the super-pod list") {
  auto table = HcclRankTable(TwoNodes(), "1.2");
  REQUIRE_OK(table);
  CHECK((*table)["version"] == "1.2");
  CHECK((*table)["super_pod_list"] ==
        nlohmann::json::parse(R"([{"super_pod_id": "sp0", "server_list": [{"server_id": "n1"}]},
                                   {"super_pod_id": "sp1", "server_list": [{"server_id": "10.0.0.4"}]}])"));
}

TEST_CASE("HCCL rank table errors name the problem") {
  CHECK(HcclRankTable(TwoNodes(), "2.0").status().message().find("2.0") != std::string::npos);
  CHECK(HcclRankTable(AcceleratorGangStatus{}).status().message().find("not placed") !=
        std::string::npos);
  AcceleratorGangStatus bad = TwoNodes();
  bad.rank_table[0].device = "npu";
  CHECK(HcclRankTable(bad).status().message().find("device npu has no index") != std::string::npos);
}

TEST_CASE("Host file: one line per node in rank order with its slots") {
  CHECK(HostFile(TwoNodes()) == "n1 slots=2\n10.0.0.4 slots=2\n");
}

}  // namespace
}  // namespace xpu::api
