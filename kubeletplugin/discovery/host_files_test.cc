#include "kubeletplugin/discovery/host_files.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/temp_dir.h"

namespace xpu::discovery {
namespace {
namespace host_files_test_cc {

// `text` written to `rel` under `root`, its folders made.
void Write(const std::string& root, const std::string& rel, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(root) / rel;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace host_files_test_cc

using host_files_test_cc::Write;

TEST_CASE("host files: ParseInt takes a whole decimal number only") {
  const struct {
    const char* text;
    std::optional<int64_t> value;
  } kCases[] = {
      {"42", 42},
      {" 42 \n", 42},
      {"-7", -7},
      {"0", 0},
      {"", std::nullopt},
      {"12a", std::nullopt},
      {"0x10", std::nullopt},
      {"1 2", std::nullopt},
  };
  for (const auto& c : kCases) {
    INFO('"' << c.text << '"');
    CHECK(ParseInt(c.text) == c.value);
  }
}

TEST_CASE("host files: KeyValue reads the first line of the key with its separator") {
  const struct {
    const char* text;
    const char* key;
    char sep;
    const char* value;
  } kCases[] = {
      {"Version=24.1.rc2\n", "Version", '=', "24.1.rc2"},
      {"a=1\n  Version = 7.5.0 \n", "Version", '=', "7.5.0"},
      {"Versionx=1\nVersion=2\n", "Version", '=', "2"},  // a longer key is another key
      {"Model: H200\nDevice Minor: \t3\n", "Device Minor", ':', "3"},
      {"simd_count 0\nlocation_id 4864\n", "location_id", ' ', "4864"},
      {"other=1\n", "Version", '=', ""},
      {"", "Version", '=', ""},
  };
  for (const auto& c : kCases) {
    INFO(c.text << " / " << c.key);
    CHECK(KeyValue(c.text, c.key, c.sep) == c.value);
  }
}

TEST_CASE("host files: an absent file is no problem, an unreadable one is") {
  testing::TempDir dir;
  Write(dir.path(), "etc/present", "text\n");
  std::filesystem::create_directories(dir.path() + "/etc/a-directory");
  const HostRoot host(dir.path());
  std::vector<std::string> problems;
  CHECK(ReadOptional(host, "etc/present", problems) == "text\n");
  CHECK(ReadOptional(host, "etc/absent", problems) == std::nullopt);
  CHECK(problems.empty());
  CHECK(ReadOptional(host, "etc/a-directory", problems) == std::nullopt);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("etc/a-directory"));
}

TEST_CASE("host files: hccn.conf addresses by device id, bad lines left out") {
  testing::TempDir dir;
  const HostRoot host(dir.path());
  std::vector<std::string> problems;
  CHECK(HccnAddresses(host, problems).empty());  // no file
  Write(dir.path(), "etc/hccn.conf",
        "# hccn_tool -i 0 -ip -s ...\n"
        "address_0=10.0.0.1\n"
        "netmask_0=255.255.255.0\n"
        "address_1 = 10.0.0.2 \n"
        "address_x=10.0.0.3\n"
        "address_2048=10.0.0.4\n"
        "address_3=\n");
  const std::map<int, std::string> want = {{0, "10.0.0.1"}, {1, "10.0.0.2"}};
  CHECK(HccnAddresses(host, problems) == want);
  CHECK(problems.empty());
}

TEST_CASE("host files: NVIDIA's device minor from procfs, within 0..255") {
  testing::TempDir dir;
  const HostRoot host(dir.path());
  std::vector<std::string> problems;
  Write(dir.path(), "proc/driver/nvidia/gpus/0000:13:00.0/information",
        "Model: \t\t NVIDIA H200\nDevice Minor: \t 3\n");
  Write(dir.path(), "proc/driver/nvidia/gpus/0000:14:00.0/information", "Device Minor: 256\n");
  CHECK(NvidiaMinor(host, "0000:13:00.0", problems) == 3);
  CHECK(NvidiaMinor(host, "0000:14:00.0", problems) == std::nullopt);
  CHECK(NvidiaMinor(host, "0000:15:00.0", problems) == std::nullopt);
  CHECK(problems.empty());
}

TEST_CASE("host files: the KFD topology's GPU nodes with their xGMI links") {
  testing::TempDir dir;
  const HostRoot host(dir.path());
  std::vector<std::string> problems;
  CHECK(ReadKfd(host, problems).empty());  // no topology: no GPU node, and no problem
  CHECK(problems.empty());
  const std::string nodes = "sys/class/kfd/kfd/topology/nodes/";
  Write(dir.path(), nodes + "0/properties", "simd_count 0\nlocation_id 0\ndomain 0\n");  // a CPU
  // 0000:13:00.0: bus 0x13, device 0, function 0 -> location_id 0x1300.
  Write(dir.path(), nodes + "1/properties",
        "simd_count 304\nlocation_id 4864\ndomain 0\nlocal_mem_size 68719476736\nhive_id 77\n");
  Write(dir.path(), nodes + "1/io_links/0/properties", "type 11\nnode_to 2\nmax_bandwidth 0\n");
  Write(dir.path(), nodes + "1/io_links/1/properties", "type 2\nnode_to 0\n");  // PCIe to CPU
  Write(dir.path(), nodes + "2/properties", "simd_count 304\nlocation_id 5120\ndomain 1\n");
  Write(dir.path(), nodes + "2/io_links/0/properties", "type 11\nnode_to 1\nmax_bandwidth 64000\n");
  const std::map<int, KfdNode> kfd = ReadKfd(host, problems);
  CHECK(problems.empty());
  REQUIRE(kfd.size() == 2);
  const KfdNode& a = kfd.at(1);
  CHECK(a.bdf == "0000:13:00.0");
  CHECK(a.local_mem == 68719476736);
  CHECK(a.hive == "77");
  CHECK(a.xgmi == std::vector<std::pair<int, double>>{{2, 50}});  // no bandwidth: 50 GB/s
  const KfdNode& b = kfd.at(2);
  CHECK(b.bdf == "0001:14:00.0");
  CHECK(b.local_mem == 0);
  CHECK(b.hive.empty());
  CHECK(b.xgmi == std::vector<std::pair<int, double>>{{1, 64}});
}

}  // namespace
}  // namespace xpu::discovery
