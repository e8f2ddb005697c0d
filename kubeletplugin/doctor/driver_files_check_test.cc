#include "kubeletplugin/doctor/driver_files_check.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/testing/temp_dir.h"

namespace xpu::doctor {
namespace {

const std::string kDriverFileHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

bool Says(const CheckResult& r, const std::string& text) {
  INFO(r.evidence << " | " << r.hint);
  return (r.evidence + " " + r.hint).find(text) != std::string::npos;
}

TEST_CASE("driver-files check: the files of the kernel driver's version are there") {
  // A hook path that exists under the fixture stands for an installed xpu-cdi-hook.
  const CheckResult r =
      CheckDriverFiles(kDriverFileHosts + "hgx-h200", {"nvidia"}, {}, "/usr/bin/nvidia-smi");
  CHECK(r.name == "driver-files");
  CHECK(r.status == CheckStatus::kPass);
  CHECK(Says(r, "nvidia 570.158.01: "));
  CHECK(Says(r, "driver files"));
  CHECK(r.hint.empty());
}

TEST_CASE("driver-files check: xpu-cdi-hook missing is a warning naming its path") {
  const CheckResult r = CheckDriverFiles(kDriverFileHosts + "atlas800t-a2", {"huawei"}, {},
                                         "/opt/xpu-dra/bin/xpu-cdi-hook");
  CHECK(r.status == CheckStatus::kWarn);
  CHECK(Says(r, "huawei 24.1.rc3: "));
  CHECK(Says(r, "/opt/xpu-dra/bin/xpu-cdi-hook is missing"));
}

TEST_CASE("driver-files check: a partial install fails naming the missing library") {
  testing::TempDir host;
  std::filesystem::create_directories(host.path() + "/proc/driver/nvidia");
  std::ofstream(host.path() + "/proc/driver/nvidia/version")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.158.01  Release Build\n";
  const CheckResult r = CheckDriverFiles(host.path(), {"nvidia"}, {}, "/bin/sh");
  CHECK(r.status == CheckStatus::kFail);
  CHECK(Says(r, "libcuda.so.570.158.01 is missing"));
}

TEST_CASE("driver-files check: files off, a vendor hook, no devices") {
  driverfiles::Policy off{driverfiles::Mode::kOff, {}};
  const CheckResult r = CheckDriverFiles(kDriverFileHosts + "hgx-h200", {"nvidia"}, off, "/bin/sh");
  CHECK(r.status == CheckStatus::kWarn);
  CHECK(Says(r, "RuntimeClass nvidia"));

  testing::TempDir copy;
  std::filesystem::copy(
      kDriverFileHosts + "hgx-h200", copy.path(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  std::ofstream(copy.path() + "/usr/bin/nvidia-cdi-hook") << "#!/bin/sh\n";
  const CheckResult both =
      CheckDriverFiles(copy.path(), {"nvidia"}, {}, "/usr/bin/nvidia-cdi-hook");
  CHECK(both.status == CheckStatus::kPass);
  CHECK(Says(both, "nvidia's own runtime hook /usr/bin/nvidia-cdi-hook is installed too"));

  CHECK(CheckDriverFiles(kDriverFileHosts + "hgx-h200", {}, {}, "/bin/sh").status ==
        CheckStatus::kSkip);
}

}  // namespace
}  // namespace xpu::doctor
