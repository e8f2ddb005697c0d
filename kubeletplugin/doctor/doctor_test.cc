// The checklist on the fixture hosts (e2e/fixtures/hosts/, with the fake NVML and DCMI loaded
// through the real dlopen path) and on small host roots written by the tests.
#include "kubeletplugin/doctor/doctor.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"

namespace xpu::doctor {
namespace {

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

DoctorReport Doctor(const std::string& root, const DoctorOptions& options) {
  StatusOr<DoctorReport> report = RunChecks(discovery::HostRoot(root), options);
  REQUIRE_OK(report);
  return std::move(report).value();
}

// A fixture host with its fake vendor libraries.
DoctorReport DoctorFixture(const std::string& host, DoctorOptions options = {}) {
  ::setenv("XPU_FAKE_NVML_JSON", (kHosts + host + "/fake-vendor/nvml.json").c_str(), 1);
  ::setenv("XPU_FAKE_DCMI_JSON", (kHosts + host + "/fake-vendor/dcmi.json").c_str(), 1);
  options.vendor_lib_dirs = {XPU_FAKE_LIB_DIR};
  options.node_name = host;
  return Doctor(kHosts + host, options);
}

const CheckResult& Find(const DoctorReport& report, const std::string& name) {
  for (const CheckResult& c : report.checks) {
    if (c.name == name) return c;
  }
  FAIL("no check named " << name);
  return report.checks.front();  // not reached
}

CheckStatus StatusOf(const DoctorReport& report, const std::string& name) {
  const CheckResult& c = Find(report, name);
  INFO(c.name << ": " << c.evidence << " | " << c.hint);
  return c.status;
}

void Write(const std::string& root, const std::string& rel, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(root) / rel;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST_CASE("doctor on atlas800t-a2 with DCMI: every check, none failing", "[doctor]") {
  const DoctorReport r = DoctorFixture("atlas800t-a2");
  CHECK(r.node == "atlas800t-a2");
  REQUIRE(r.checks.size() == 16);
  CHECK_FALSE(HasFailure(r));
  CHECK(StatusOf(r, "kernel") == CheckStatus::kPass);
  CHECK(Find(r, "kernel").evidence == "/proc/version: 5.15.0-119-generic");
  CHECK(StatusOf(r, "iommu") == CheckStatus::kPass);
  CHECK(StatusOf(r, "devices") == CheckStatus::kPass);
  CHECK(Find(r, "devices").evidence.find("8x huawei Ascend910B") != std::string::npos);
  CHECK(StatusOf(r, "driver") == CheckStatus::kPass);
  CHECK(Find(r, "driver").evidence.find("24.1.rc3") != std::string::npos);
  CHECK(Find(r, "driver").evidence.find("/sys/module/drv_davinci_intf") != std::string::npos);
  CHECK(StatusOf(r, "vendor-library") == CheckStatus::kPass);
  CHECK(StatusOf(r, "firmware") == CheckStatus::kPass);
  CHECK(StatusOf(r, "toolkit") == CheckStatus::kPass);
  CHECK(Find(r, "toolkit").evidence.find("cann 8.0.RC3") != std::string::npos);
  // Fixture device nodes are regular files: honest warn, not a pass.
  CHECK(StatusOf(r, "device-nodes") == CheckStatus::kWarn);
  CHECK(Find(r, "device-nodes").evidence.find("8 device nodes") != std::string::npos);
  // The fixture has the driver's files but not xpu-cdi-hook, which the DaemonSet installs.
  CHECK(StatusOf(r, "driver-files") == CheckStatus::kWarn);
  CHECK(Find(r, "driver-files").evidence.find("xpu-cdi-hook") != std::string::npos);
  CHECK(StatusOf(r, "health") == CheckStatus::kPass);
  CHECK(Find(r, "health").evidence == "8 of 8 healthy (DCMI)");
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kPass);
  CHECK(Find(r, "container-runtime").evidence.find("containerd 1.7.24-1") != std::string::npos);
  CHECK(StatusOf(r, "cdi-spec-dirs") == CheckStatus::kPass);
  CHECK(StatusOf(r, "kubelet") == CheckStatus::kPass);
  CHECK(StatusOf(r, "support-matrix") == CheckStatus::kSkip);
  CHECK(StatusOf(r, "collective-network") == CheckStatus::kPass);
  CHECK(Find(r, "collective-network").evidence.find("8 devices addressed") != std::string::npos);
  CHECK(StatusOf(r, "nic-pairing") == CheckStatus::kPass);
}

TEST_CASE("doctor without vendor libraries warns where only they can tell", "[doctor]") {
  DoctorOptions options;
  options.probe_vendor_libraries = false;
  const DoctorReport r = Doctor(kHosts + "atlas800t-a2", options);
  CHECK_FALSE(HasFailure(r));
  CHECK(StatusOf(r, "vendor-library") == CheckStatus::kSkip);
  CHECK(StatusOf(r, "health") == CheckStatus::kWarn);
  CHECK(StatusOf(r, "collective-network") == CheckStatus::kWarn);
  CHECK(StatusOf(r, "driver") == CheckStatus::kPass);  // the module and the version file
}

TEST_CASE("doctor on atlas800t-a2-dcmi-broken fails what is broken", "[doctor]") {
  const DoctorReport r = DoctorFixture("atlas800t-a2-dcmi-broken");
  CHECK(HasFailure(r));
  CHECK(StatusOf(r, "iommu") == CheckStatus::kWarn);
  CHECK(StatusOf(r, "device-nodes") == CheckStatus::kFail);
  CHECK(Find(r, "device-nodes").evidence.find("/dev/davinci6 missing") != std::string::npos);
  CHECK(StatusOf(r, "health") == CheckStatus::kFail);
  CHECK(Find(r, "health").evidence.find("7 of 8 healthy (DCMI); npu-6 Unhealthy") == 0);
  CHECK(Find(r, "health").evidence.find("DCMI chip 3: HCCS down") != std::string::npos);
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kFail);
  CHECK(Find(r, "container-runtime").evidence.find("1.6.33") != std::string::npos);
  CHECK(StatusOf(r, "cdi-spec-dirs") == CheckStatus::kWarn);
  CHECK(StatusOf(r, "kubelet") == CheckStatus::kFail);
  CHECK(StatusOf(r, "collective-network") == CheckStatus::kFail);
  CHECK(Find(r, "collective-network").evidence.find("npu-4: RoCE network unreachable") !=
        std::string::npos);
}

TEST_CASE("the checklist as the plugin's NodeChecklist condition", "[doctor]") {
  const api::Condition broken =
      ChecklistCondition(DoctorFixture("atlas800t-a2-dcmi-broken"), "2026-01-01T00:00:00Z");
  CHECK(broken.type == "NodeChecklist");
  CHECK(broken.status == "False");
  CHECK(broken.reason == "ChecksFailed");
  CHECK(broken.last_transition_time == "2026-01-01T00:00:00Z");
  INFO(broken.message);
  CHECK(broken.message.starts_with(
      "5 fail (device-nodes, health, container-runtime, kubelet, collective-network), 3 warn "
      "(iommu, driver-files, cdi-spec-dirs) of 16 checks (xpuctl doctor); device-nodes: fail, "));
  CHECK(broken.message.find("; device-nodes: fail, ") != std::string::npos);
  CHECK(broken.message.find("; iommu: warn, ") != std::string::npos);
  // Each part starts with a check's name (the health stream reads "<device>: ..." parts): the
  // evidence's own ';' became ','.
  CHECK(broken.message.find("; health: fail, 7 of 8 healthy (DCMI), npu-6 Unhealthy, ") !=
        std::string::npos);
  CHECK(broken.message.find("; npu-") == std::string::npos);
  CHECK(broken.message.size() <= 1024);

  const api::Condition fine = ChecklistCondition(DoctorFixture("atlas800t-a2"), "");
  CHECK(fine.status == "True");
  CHECK(fine.reason ==
        (fine.message.find(": warn, ") != std::string::npos ? "ChecksWarned" : "ChecksPassed"));
  CHECK(fine.message.find(": fail, ") == std::string::npos);
  const api::Condition empty = ChecklistCondition(DoctorReport{"n", {}}, "");
  CHECK(empty.reason == "ChecksPassed");
  CHECK(empty.message == "0 fail, 0 warn of 0 checks (xpuctl doctor)");
}

TEST_CASE("doctor on the HGX H200 hosts: NVML health, XIDs and a failing init", "[doctor]") {
  const DoctorReport good = DoctorFixture("hgx-h200");
  CHECK_FALSE(HasFailure(good));
  CHECK(StatusOf(good, "health") == CheckStatus::kPass);
  CHECK(StatusOf(good, "firmware") == CheckStatus::kWarn);  // NVML gives no firmware version
  CHECK(Find(good, "toolkit").evidence ==
        "cuda 12.8 (driver API, NVML); CUDA toolkit 12.8.1 (/usr/local/cuda/version.json)");
  CHECK(StatusOf(good, "container-runtime") == CheckStatus::kPass);
  CHECK(Find(good, "container-runtime").evidence.find("version 3") != std::string::npos);
  CHECK(StatusOf(good, "nic-pairing") == CheckStatus::kPass);
  CHECK(Find(good, "nic-pairing").evidence.find("8 of 8") != std::string::npos);

  const DoctorReport sick = DoctorFixture("hgx-h200-unhealthy");
  CHECK(StatusOf(sick, "health") == CheckStatus::kFail);
  CHECK(Find(sick, "health").evidence.find("NVML gpu 3: XID 79") != std::string::npos);
  CHECK(Find(sick, "health").evidence.find("NVML gpu 5: NVLink 7 down") != std::string::npos);

  const DoctorReport init = DoctorFixture("hgx-h200-nvml-init-fails");
  CHECK(StatusOf(init, "vendor-library") == CheckStatus::kFail);
  CHECK(Find(init, "vendor-library").evidence.find("nvmlInit_v2") != std::string::npos);
}

TEST_CASE("doctor reads CRI-O and a DRM vendor's files", "[doctor]") {
  const DoctorReport r = DoctorFixture("hygon-dcu-8");
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kPass);
  CHECK(Find(r, "container-runtime").evidence.find("CRI-O 1.30.4") != std::string::npos);
  CHECK(StatusOf(r, "vendor-library") == CheckStatus::kSkip);
  CHECK(StatusOf(r, "toolkit") == CheckStatus::kPass);
  CHECK(Find(r, "toolkit").evidence.find("dtk 24.04.2") != std::string::npos);
}

TEST_CASE("doctor applies the injected support verdict to every device", "[doctor]") {
  DoctorOptions options;
  options.support_source = "test matrix";
  options.support = [](const api::InventoryDevice& d) {
    return d.index == 3 ? SupportJudgement{false, "driverVersion 24.1.0-rc3 outside >=25.0.0"}
                        : SupportJudgement{};
  };
  const DoctorReport r = DoctorFixture("atlas800t-a2", options);
  CHECK(StatusOf(r, "support-matrix") == CheckStatus::kFail);
  CHECK(Find(r, "support-matrix").evidence ==
        "1 of 8 devices outside the support matrix (test matrix): npu-3: driverVersion "
        "24.1.0-rc3 outside >=25.0.0");
  options.support = [](const api::InventoryDevice&) { return SupportJudgement{}; };
  CHECK(StatusOf(DoctorFixture("atlas800t-a2", options), "support-matrix") == CheckStatus::kPass);
}

TEST_CASE("doctor judges device node modes", "[doctor]") {
  CHECK(JudgeDeviceNode(false, false, 0) == CheckStatus::kFail);
  CHECK(JudgeDeviceNode(true, false, 0644) == CheckStatus::kWarn);
  CHECK(JudgeDeviceNode(true, true, 0666) == CheckStatus::kPass);
  CHECK(JudgeDeviceNode(true, true, 0660) == CheckStatus::kPass);
  CHECK(JudgeDeviceNode(true, true, 0600) == CheckStatus::kWarn);
  CHECK(JudgeDeviceNode(true, true, 0662) == CheckStatus::kFail);
  CHECK(JudgeDeviceNode(true, true, 0777) == CheckStatus::kFail);
  CHECK(JudgeDeviceNode(true, true, 04660) == CheckStatus::kFail);
}

TEST_CASE("doctor judges the container runtime and the kubelet from their files", "[doctor]") {
  testing::TempDir dir;
  const std::string& root = dir.path();
  DoctorOptions options;
  options.probe_vendor_libraries = false;
  // No accelerator, no runtime, no kubelet.
  DoctorReport r = Doctor(root, options);
  CHECK(StatusOf(r, "devices") == CheckStatus::kFail);
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kFail);
  CHECK(StatusOf(r, "kubelet") == CheckStatus::kWarn);
  CHECK(StatusOf(r, "kernel") == CheckStatus::kWarn);
  CHECK(StatusOf(r, "nic-pairing") == CheckStatus::kSkip);

  // containerd 2.x with CDI switched off.
  Write(root, "var/lib/dpkg/status",
        "Package: containerd\nStatus: install ok installed\nVersion: 2.0.5-0ubuntu1\n\n"
        "Package: kubelet\nStatus: deinstall ok config-files\nVersion: 1.34.0-1.1\n");
  Write(root, "etc/containerd/config.toml",
        "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n  enable_cdi = false # no\n");
  r = Doctor(root, options);
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kFail);
  CHECK(StatusOf(r, "kubelet") == CheckStatus::kWarn);  // removed package: version unknown

  // containerd 2.x, CDI on by default; a kubelet given by flag.
  Write(root, "etc/containerd/config.toml", "version = 3\n");
  options.kubelet_version = "v1.33.4";
  r = Doctor(root, options);
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kPass);
  CHECK(StatusOf(r, "kubelet") == CheckStatus::kWarn);
  CHECK(Find(r, "kubelet").evidence.find("v1beta2") != std::string::npos);
  options.kubelet_version = "1.31.0";
  CHECK(StatusOf(Doctor(root, options), "kubelet") == CheckStatus::kFail);
  // From 1.34: what the release serves, worded by minor.
  for (const auto& [version, apis] : std::vector<std::pair<std::string, std::string>>{
           {"1.34.1", "resource.k8s.io v1 (v1beta2 and v1beta1 opt-in); DRA gRPC v1, v1beta1"},
           {"1.36.0", "resource.k8s.io v1 (v1beta2 and v1beta1 opt-in); DRA gRPC v1, v1beta1"},
           {"v1.37.2", "resource.k8s.io v1 (v1beta2 and v1beta1 opt-in); DRA gRPC v1, v1beta1"},
           {"v1.38.0-beta.0",
            "resource.k8s.io v1 (v1beta2 opt-in; v1beta1 removed in 1.38); DRA gRPC v1, v1beta1"},
           {"1.39.0", "resource.k8s.io v1 (v1beta2 and v1beta1 removed); DRA gRPC v1, v1beta1"},
       }) {
    options.kubelet_version = version;
    INFO(version);
    r = Doctor(root, options);
    CHECK(StatusOf(r, "kubelet") == CheckStatus::kPass);
    std::string expected = "kubelet ";
    expected.append(version).append(" (--kubelet-version): ").append(apis);
    CHECK(Find(r, "kubelet").evidence == expected);
  }

  // Only a CRI-O config and an old CRI-O package.
  std::filesystem::remove(std::filesystem::path(root) / "etc/containerd/config.toml");
  Write(root, "var/lib/dpkg/status",
        "Package: cri-o\nStatus: install ok installed\nVersion: 1.27.1-1.1\n");
  Write(root, "etc/crio/crio.conf", "[crio.runtime]\n");
  r = Doctor(root, options);
  CHECK(StatusOf(r, "container-runtime") == CheckStatus::kFail);
  CHECK(Find(r, "container-runtime").evidence.find("CRI-O 1.27.1") != std::string::npos);
}

TEST_CASE("doctor reads the IOMMU state and CDI directory permissions", "[doctor]") {
  testing::TempDir dir;
  const std::string& root = dir.path();
  DoctorOptions options;
  options.probe_vendor_libraries = false;
  Write(root, "proc/cmdline", "ro quiet intel_iommu=on iommu=pt\n");
  CHECK(StatusOf(Doctor(root, options), "iommu") == CheckStatus::kWarn);  // no groups yet
  Write(root, "sys/kernel/iommu_groups/0/type", "DMA\n");
  CHECK(StatusOf(Doctor(root, options), "iommu") == CheckStatus::kPass);
  Write(root, "proc/cmdline", "ro intel_iommu=off\n");
  CHECK(StatusOf(Doctor(root, options), "iommu") == CheckStatus::kWarn);

  Write(root, "etc/cdi/.keep", "");
  Write(root, "var/run/cdi/.keep", "");
  CHECK(StatusOf(Doctor(root, options), "cdi-spec-dirs") == CheckStatus::kPass);
  if (::geteuid() != 0) {  // root writes anywhere
    REQUIRE(::chmod((root + "/var/run/cdi").c_str(), 0555) == 0);
    CHECK(StatusOf(Doctor(root, options), "cdi-spec-dirs") == CheckStatus::kFail);
    REQUIRE(::chmod((root + "/var/run/cdi").c_str(), 0755) == 0);
  }
}

TEST_CASE("doctor prints a line per check and a JSON summary", "[doctor]") {
  DoctorOptions options;
  options.probe_vendor_libraries = false;
  const DoctorReport r = Doctor(kHosts + "atlas800t-a2", options);
  const std::string text = FormatText(r);
  CHECK(text.starts_with("node atlas800t-a2\n"));
  CHECK(text.find("pass  kernel ") != std::string::npos);
  CHECK(text.find("warn  health ") != std::string::npos);
  const nlohmann::json doc = ToJson(r);
  CHECK(doc["node"] == "atlas800t-a2");
  REQUIRE(doc["checks"].size() == r.checks.size());
  CHECK(doc["checks"][0]["name"] == "kernel");
  CHECK(doc["checks"][0]["status"] == "pass");
  int total = 0;
  for (const char* s : {"pass", "warn", "fail", "skip"}) total += doc["summary"][s].get<int>();
  CHECK(total == static_cast<int>(r.checks.size()));
  CHECK(doc["summary"]["fail"] == 0);
}

TEST_CASE("doctor refuses a host root that is not a directory", "[doctor]") {
  const StatusOr<DoctorReport> r =
      RunChecks(discovery::HostRoot(kHosts + "no-such-host"), DoctorOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("no-such-host") != std::string::npos);
}

}  // namespace
}  // namespace xpu::doctor
