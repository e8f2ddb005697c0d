// Device telemetry (telemetry.h) through the real dlopen path against the fake NVML and DCMI, and
// from the fixture hosts' sysfs. Expected values are read from the fixtures themselves.
#include "kubeletplugin/discovery/telemetry.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/testing/skip.h"
#include "base/testing/temp_dir.h"

namespace xpu::discovery {
namespace {

const std::string kFakeDir = XPU_FAKE_LIB_DIR;
const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

nlohmann::json Fixture(const std::string& host, const std::string& file) {
  std::ifstream in(kHosts + host + "/fake-vendor/" + file);
  return nlohmann::json::parse(in);
}

// Samples keyed by PCI address.
std::map<std::string, DeviceTelemetry> ByPci(std::vector<DeviceTelemetry> samples) {
  std::map<std::string, DeviceTelemetry> out;
  for (DeviceTelemetry& t : samples) out[t.pci_address] = std::move(t);
  return out;
}

// "00000000:13:00.0" (NVML) -> "0000:13:00.0" (sysfs), lower case.
std::string SysfsBusId(const std::string& nvml) {
  std::string out = nvml.substr(4);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The samples of a fixture host's fake library (`variable` names its JSON file), by PCI address.
std::map<std::string, DeviceTelemetry> SampleFake(
    const std::string& host, const char* variable, const std::string& file,
    std::unique_ptr<TelemetrySource> (*open)(const std::vector<std::string>&)) {
  setenv(variable, (kHosts + host + "/fake-vendor/" + file).c_str(), 1);
  auto source = open({kFakeDir});
  INFO(source->status().error);
  REQUIRE(source->status().loaded);
  CHECK(source->status().missing_symbols.empty());
  return ByPci(source->Sample());
}

std::map<std::string, DeviceTelemetry> SampleNvml(const std::string& host) {
  return SampleFake(host, "XPU_FAKE_NVML_JSON", "nvml.json", OpenNvmlTelemetry);
}

TEST_CASE("nvml telemetry: the fixture host's own library folder, without the variable") {
  // hgx-h200's usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 links to the fake, which then answers
  // from that host root's fake-vendor/nvml.json: what a plugin run with --host-root sees.
  // The loader maps one file once: after a test that loaded the fake from the build tree (the
  // fake cannot be unloaded), it would answer from there. First in this file for that reason;
  // ctest runs each case in its own process anyway.
  if (void* mapped = dlopen((kFakeDir + "/libnvidia-ml.so.1").c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(mapped);
    XPU_SKIP("the fake NVML is already mapped from " + kFakeDir);
  }
  unsetenv("XPU_FAKE_NVML_JSON");
  const std::vector<std::string> dirs = HostLibraryDirs(kHosts + "hgx-h200");
  REQUIRE(!dirs.empty());
  CHECK(dirs.front() == kHosts + "hgx-h200/usr/lib/x86_64-linux-gnu");
  auto source = OpenNvmlTelemetry(dirs);
  INFO(source->status().error);
  REQUIRE(source->status().loaded);
  CHECK(source->status().path == kHosts + "hgx-h200/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
  const auto samples = ByPci(source->Sample());
  REQUIRE(samples.size() == 8);
  CHECK(samples.at("0000:13:00.0").temperature_celsius == 31.0);
}

TEST_CASE("nvml telemetry: every hgx-h200 GPU reads the fixture's values") {
  const nlohmann::json fixture = Fixture("hgx-h200", "nvml.json");
  const auto samples = SampleNvml("hgx-h200");
  REQUIRE(samples.size() == fixture["devices"].size());
  for (const nlohmann::json& d : fixture["devices"]) {
    const std::string pci = SysfsBusId(d["pciBusId"].get<std::string>());
    INFO(pci);
    REQUIRE(samples.count(pci) == 1);
    const DeviceTelemetry& t = samples.at(pci);
    const nlohmann::json& want = d["telemetry"];
    CHECK(t.error.empty());
    CHECK(t.uuid == d["uuid"].get<std::string>());
    CHECK(t.temperature_celsius == want["temperatureC"].get<double>());
    CHECK(t.power_watts == Approx(want["powerMilliwatts"].get<double>() / 1000));
    // The counter is the fixture's value when the fake loaded, grown at the fixture's power since.
    REQUIRE(t.energy_joules);
    CHECK(*t.energy_joules >= want["energyMillijoules"].get<double>() / 1000);
    CHECK(t.utilization_ratio == Approx(want["utilizationGpuPercent"].get<double>() / 100));
    CHECK(t.memory_used_bytes == want["memoryUsedBytes"].get<double>());
    CHECK(t.memory_total_bytes == d["memoryTotalBytes"].get<double>());
    CHECK(t.ecc_errors == std::map<std::string, double>{{"corrected", 0}, {"uncorrected", 0}});
    CHECK(t.xid_errors == 0.0);
    CHECK(t.links_up.size() == d["nvlinks"].size());
    CHECK(t.links_up.at("nvlink17") == 1);
  }
  // Spot values, so that a wrong unit cannot hide behind the fixture's own arithmetic.
  const DeviceTelemetry& gpu1 = samples.at("0000:14:00.0");
  CHECK(gpu1.temperature_celsius == 32.0);
  CHECK(gpu1.power_watts == Approx(73.5));
  CHECK(gpu1.utilization_ratio == Approx(0.05));
  CHECK(gpu1.memory_used_bytes == 1024.0 * 1024 * 1024);
}

TEST_CASE("nvml telemetry: XID events, ECC counts and a link down on hgx-h200-unhealthy") {
  const nlohmann::json fixture = Fixture("hgx-h200-unhealthy", "nvml.json");
  const auto samples = SampleNvml("hgx-h200-unhealthy");
  const nlohmann::json& gpu3 = fixture["devices"][3];
  const DeviceTelemetry& t3 = samples.at(SysfsBusId(gpu3["pciBusId"].get<std::string>()));
  CHECK(t3.xid_errors == static_cast<double>(gpu3["xidEvents"].size()));
  CHECK(t3.xid_errors == 1.0);
  CHECK(t3.ecc_errors.at("corrected") == 4);
  CHECK(t3.ecc_errors.at("uncorrected") == 1);
  const DeviceTelemetry& t5 =
      samples.at(SysfsBusId(fixture["devices"][5]["pciBusId"].get<std::string>()));
  CHECK(t5.links_up.at("nvlink7") == 0);
  CHECK(t5.links_up.at("nvlink6") == 1);
  CHECK(t5.xid_errors == 0.0);
}

TEST_CASE("nvml telemetry: XID counts accumulate across samples and are not re-read") {
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "hgx-h200-unhealthy/fake-vendor/nvml.json").c_str(), 1);
  auto source = OpenNvmlTelemetry({kFakeDir});
  REQUIRE(source->status().loaded);
  source->Sample();
  const auto second = ByPci(source->Sample());
  CHECK(second.at("0000:54:00.0").xid_errors == 1.0);  // GPU 3: the one event, counted once
}

TEST_CASE("nvml telemetry: the energy counter grows at the device's power between samples") {
  using Clock = std::chrono::steady_clock;
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "hgx-h200/fake-vendor/nvml.json").c_str(), 1);
  auto source = OpenNvmlTelemetry({kFakeDir});
  REQUIRE(source->status().loaded);
  const std::string gpu1 = "0000:14:00.0";  // 73.5 W in the fixture
  const Clock::time_point before_first = Clock::now();
  const double first = ByPci(source->Sample()).at(gpu1).energy_joules.value();
  const Clock::time_point after_first = Clock::now();
  // Sampled again until the counter moved by a joule (14 ms at 73.5 W), 5 s at most.
  double second = first;
  Clock::time_point before_second = after_first;
  while (second - first < 1 && Clock::now() - before_first < std::chrono::seconds(5)) {
    before_second = Clock::now();
    second = ByPci(source->Sample()).at(gpu1).energy_joules.value();
  }
  const Clock::time_point after_second = Clock::now();
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  // Each reading falls inside its Sample call; the counter counts whole millijoules.
  CHECK(second - first >= 73.5 * seconds(before_second - after_first) - 0.002);
  CHECK(second - first <= 73.5 * seconds(after_second - before_first) + 0.002);
  CHECK(second - first >= 1);
}

TEST_CASE("nvml telemetry: a GPU without an energy counter has none, and no error") {
  nlohmann::json fixture = Fixture("hgx-h200", "nvml.json");
  for (nlohmann::json& d : fixture["devices"]) d["telemetry"].erase("energyMillijoules");
  xpu::testing::TempDir dir;
  setenv("XPU_FAKE_NVML_JSON", dir.Write("nvml.json", fixture.dump()).c_str(), 1);
  auto source = OpenNvmlTelemetry({kFakeDir});
  REQUIRE(source->status().loaded);
  for (const auto& [pci, t] : ByPci(source->Sample())) {
    INFO(pci);
    CHECK(!t.energy_joules);
    CHECK(t.power_watts);
    CHECK(t.error.empty());  // NOT_SUPPORTED is an answer
  }
}

TEST_CASE("host library folders: none for the real root") {
  CHECK(HostLibraryDirs("/").empty());
  CHECK(HostLibraryDirs("").empty());
  CHECK(HostLibraryDirs("/host/").front() == "/host/usr/lib/x86_64-linux-gnu");
}

TEST_CASE("nvml telemetry: no library is a status, not a failure") {
  auto source = OpenNvmlTelemetry({"/nonexistent-xpu-dir"});
  if (source->status().loaded) XPU_SKIP("a real libnvidia-ml.so.1 is on the loader path");
  CHECK(!source->status().error.empty());
  CHECK(source->Sample().empty());
}

std::map<std::string, DeviceTelemetry> SampleDcmi(const std::string& host) {
  return SampleFake(host, "XPU_FAKE_DCMI_JSON", "dcmi.json", OpenDcmiTelemetry);
}

TEST_CASE("dcmi telemetry: every atlas800t-a2 NPU reads the fixture's values") {
  const nlohmann::json fixture = Fixture("atlas800t-a2", "dcmi.json");
  const auto samples = SampleDcmi("atlas800t-a2");
  REQUIRE(samples.size() == fixture["chips"].size());
  constexpr double kMiB = 1024.0 * 1024;
  for (const nlohmann::json& c : fixture["chips"]) {
    const std::string pci = c["pciBusId"].get<std::string>();
    INFO(pci);
    REQUIRE(samples.count(pci) == 1);
    const DeviceTelemetry& t = samples.at(pci);
    const nlohmann::json& want = c["telemetry"];
    CHECK(t.error.empty());
    CHECK(t.temperature_celsius == want["temperatureC"].get<double>());
    CHECK(t.power_watts == Approx(want["powerDeciwatts"].get<double>() / 10));
    CHECK(t.utilization_ratio == Approx(want["aicoreUtilizationPercent"].get<double>() / 100));
    CHECK(t.memory_used_bytes == c["hbm"]["usedMB"].get<double>() * kMiB);
    CHECK(t.memory_total_bytes == c["hbm"]["totalMB"].get<double>() * kMiB);
    CHECK(t.ecc_errors == std::map<std::string, double>{{"corrected", 0}, {"uncorrected", 0}});
    CHECK(t.links_up == std::map<std::string, double>{{"hccs", 1}, {"roce", 1}});
    CHECK(!t.xid_errors);
    // HCCS macros 1-7, from the fixture's per-macro counts.
    REQUIRE(t.link_errors.size() == 14);
    for (int pcs = 1; pcs <= 7; ++pcs) {
      const std::string link = "hccs" + std::to_string(pcs);
      CHECK(t.link_errors.at({link, "crc"}) == c["hccs"]["crcErrors"][pcs].get<double>());
      CHECK(t.link_errors.at({link, "retry"}) == c["hccs"]["retries"][pcs].get<double>());
    }
  }
  const DeviceTelemetry& npu0 = samples.at(fixture["chips"][0]["pciBusId"].get<std::string>());
  CHECK(npu0.temperature_celsius == 40.0);
  CHECK(npu0.power_watts == Approx(90.0));
  CHECK(npu0.memory_used_bytes == 2048 * kMiB);
  const DeviceTelemetry& npu1 = samples.at(fixture["chips"][1]["pciBusId"].get<std::string>());
  CHECK(npu1.link_errors.at({"hccs1", "retry"}) == 1.0);
}

TEST_CASE("dcmi telemetry: a failing HBM call is that chip's error, the rest still read") {
  const nlohmann::json fixture = Fixture("atlas800t-a2-dcmi-broken", "dcmi.json");
  const auto samples = SampleDcmi("atlas800t-a2-dcmi-broken");
  for (const nlohmann::json& c : fixture["chips"]) {
    if (c["logicId"] != 5) continue;
    const DeviceTelemetry& t = samples.at(c["pciBusId"].get<std::string>());
    CHECK(t.error.find("dcmi_get_device_hbm_info: -8005") != std::string::npos);
    CHECK(!t.memory_used_bytes);
    CHECK(!t.memory_total_bytes);
    CHECK(t.temperature_celsius == c["telemetry"]["temperatureC"].get<double>());
  }
}

TEST_CASE("sysfs telemetry: hwmon and amdgpu-style files of a Hygon DCU") {
  const std::string root = kHosts + "hygon-dcu-8";
  const DeviceTelemetry t = ReadSysfsTelemetry(root, "0000:13:00.0");
  CHECK(t.temperature_celsius == 45.0);  // temp1_input 45000 millidegrees
  CHECK(t.power_watts == 150.0);         // power1_average 150000000 microwatts
  CHECK(t.utilization_ratio == 0.0);
  CHECK(t.memory_total_bytes == 64.0 * 1024 * 1024 * 1024);
  CHECK(t.memory_used_bytes == 1.0 * 1024 * 1024 * 1024);
  CHECK(t.ecc_errors.empty());
  CHECK(!t.xid_errors);
}

TEST_CASE("sysfs telemetry: nothing is invented for a device without those files") {
  const DeviceTelemetry t = ReadSysfsTelemetry(kHosts + "metax-c500-8", "0000:13:00.0");
  CHECK(!t.temperature_celsius);
  CHECK(!t.power_watts);
  CHECK(!t.utilization_ratio);
  CHECK(!t.memory_used_bytes);
  CHECK(!t.memory_total_bytes);
  const DeviceTelemetry missing = ReadSysfsTelemetry(kHosts + "hygon-dcu-8", "0000:ff:00.0");
  CHECK(!missing.temperature_celsius);
}

}  // namespace
}  // namespace xpu::discovery
