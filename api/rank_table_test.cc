#include "api/rank_table.h"

#include <catch2/catch.hpp>

namespace xpu::api {
namespace {

AcceleratorGangStatus TwoNodes() {
  AcceleratorGangStatus s;
  s.phase = "Placed";
  // Listed out of rank order: the table follows the ranks.
  s.nodes = {{.name = "n4", .rank = 1, .devices = {"npu-0", "npu-1"}, .address = "10.0.0.4"},
             {.name = "n1", .rank = 0, .devices = {"npu-6", "npu-7"}, .address = ""}};
  s.rank_table = {
      {.rank = 2,
       .node = "n4",
       .device = "npu-0",
       .ip_address = "192.168.4.0",
       .super_pod_id = "sp1"},
      {.rank = 0,
       .node = "n1",
       .device = "npu-6",
       .ip_address = "192.168.1.6",
       .super_pod_id = "sp0"},
      {.rank = 1,
       .node = "n1",
       .device = "npu-7",
       .ip_address = "192.168.1.7",
       .super_pod_id = "sp0"},
      {.rank = 3,
       .node = "n4",
       .device = "npu-1",
       .ip_address = "192.168.4.1",
       .super_pod_id = "sp1"},
  };
  return s;
}

TEST_CASE("HCCL rank table 1.0 lists servers by node rank and devices by rank, all strings") {
  auto table = HcclRankTable(TwoNodes(), "1.0");
  REQUIRE(table.ok());
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
  REQUIRE(table.ok());
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
