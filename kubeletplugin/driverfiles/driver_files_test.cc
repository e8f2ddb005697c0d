#include "kubeletplugin/driverfiles/driver_files.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/driverfiles/driver_files_cache.h"
#include "kubeletplugin/driverfiles/ld_cache.h"

namespace xpu::driverfiles {
namespace {

namespace fs = std::filesystem;

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";
const std::string kHook = "/opt/xpu-dra/bin/xpu-cdi-hook";
const std::string kLib = "/usr/lib/x86_64-linux-gnu";

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const cdi::Mount* MountAt(const DriverFiles& f, const std::string& path) {
  for (const cdi::Mount& m : f.edits.mounts) {
    if (m.container_path == path) return &m;
  }
  return nullptr;
}

// A small host tree in a temp dir.
struct Host {
  testing::TempDir dir;
  void File(const std::string& path, const std::string& content = "x") {
    fs::create_directories(fs::path(dir.path() + path).parent_path());
    std::ofstream(dir.path() + path, std::ios::binary) << content;
  }
  void Link(const std::string& path, const std::string& target) {
    fs::create_directories(fs::path(dir.path() + path).parent_path());
    fs::create_symlink(target, dir.path() + path);
  }
  void Nvidia(const std::string& version, const std::string& lib_dir = kLib) {
    File("/proc/driver/nvidia/version",
         "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version + "  Release Build\n");
    for (const std::string lib : {"libcuda", "libnvidia-ml"}) {
      std::string file = lib;  // libcuda.so.570.158.01
      file.append(".so.").append(version);
      const std::string soname = lib + ".so.1";
      const fs::path folder = fs::path(lib_dir);
      File((folder / file).string());
      fs::remove(fs::path(dir.path() + lib_dir) / soname);
      Link((folder / soname).string(), file);
    }
  }
};

TEST_CASE("driver files: hgx-h200 gets exactly its driver version's libraries, tools, firmware") {
  StatusOr<DriverFiles> f = FindDriverFiles("nvidia", kHosts + "hgx-h200", kHook);
  REQUIRE_OK(f);
  CHECK(f->version == "570.158.01");
  for (std::string lib : {"libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler", "libnvidia-nvvm",
                          "libnvidia-gpucomp"}) {
    CHECK(Has(f->mounted, kLib + "/" + lib.append(".so.570.158.01")));
  }
  // The stale library of an older driver beside it is not mounted; nor are soname links.
  CHECK_FALSE(Has(f->mounted, kLib + "/libcuda.so.535.104.05"));
  CHECK_FALSE(Has(f->mounted, kLib + "/libcuda.so.1"));
  CHECK(Has(f->mounted, "/usr/bin/nvidia-smi"));
  CHECK(Has(f->mounted, "/lib/firmware/nvidia/570.158.01/gsp_ga10x.bin"));
  CHECK(Has(f->mounted, "/lib/firmware/nvidia/570.158.01/gsp_tu10x.bin"));
  const cdi::Mount* lib = MountAt(*f, kLib + "/libcuda.so.570.158.01");
  REQUIRE(lib != nullptr);
  CHECK(lib->host_path == lib->container_path);
  CHECK(lib->options == std::vector<std::string>{"ro", "nosuid", "nodev", "bind"});
  const cdi::Mount* socket = MountAt(*f, "/run/nvidia-persistenced/socket");
  REQUIRE(socket != nullptr);
  CHECK_FALSE(Has(socket->options, "ro"));  // connect() needs to write to it
  CHECK(Has(socket->options, "noexec"));

  CHECK(f->ld_folders == std::vector<std::string>{kLib});
  const auto link = [&](const std::string& target, const std::string& name) {
    return std::find(f->links.begin(), f->links.end(),
                     std::pair<std::string, std::string>{target, kLib + "/" + name}) !=
           f->links.end();
  };
  CHECK(link("libcuda.so.570.158.01", "libcuda.so.1"));
  CHECK(link("libcuda.so.1", "libcuda.so"));
  CHECK(link("libnvidia-ml.so.570.158.01", "libnvidia-ml.so.1"));
  CHECK(link("libnvidia-nvvm.so.570.158.01", "libnvidia-nvvm.so.4"));

  REQUIRE(f->edits.hooks.size() == 1);
  const cdi::Hook& hook = f->edits.hooks[0];
  CHECK(hook.hook_name == "createContainer");
  CHECK(hook.path == kHook);
  CHECK(hook.args[0] == "xpu-cdi-hook");
  CHECK(hook.args[1] == "ldcache");
  CHECK(Has(hook.args, "--folder"));
  CHECK(Has(hook.args, "libcuda.so.570.158.01::" + kLib + "/libcuda.so.1"));
  CHECK_FALSE(hook.env.empty());  // never the container's environment
  CHECK(hook.timeout.value_or(0) > 0);
}

TEST_CASE("driver files: an Ascend host gets the driver's folders, npu-smi and its files") {
  StatusOr<DriverFiles> f = FindDriverFiles("huawei", kHosts + "atlas800t-a2", kHook);
  REQUIRE_OK(f);
  CHECK(f->version == "24.1.rc3");
  for (const std::string p :
       {"/usr/local/Ascend/driver/lib64", "/usr/local/dcmi", "/usr/local/bin/npu-smi",
        "/etc/ascend_install.info", "/usr/local/Ascend/driver/version.info", "/etc/hccn.conf",
        "/usr/local/Ascend/driver/tools"}) {
    CHECK(Has(f->mounted, p));
  }
  CHECK(f->ld_folders == std::vector<std::string>{"/usr/local/Ascend/driver/lib64",
                                                  "/usr/local/Ascend/driver/lib64/common",
                                                  "/usr/local/Ascend/driver/lib64/driver",
                                                  "/usr/local/dcmi"});
  REQUIRE(f->edits.hooks.size() == 1);
}

TEST_CASE("driver files: every vendor's fixture host is served") {
  const std::vector<std::pair<std::string, std::string>> hosts = {
      {"hygon", "hygon-dcu-8"},  {"cambricon", "cambricon-mlu370-x8"},
      {"metax", "metax-c500-8"}, {"enflame", "enflame-s60-8"},
      {"nvidia", "gb200-tray"},  {"nvidia", "pcie-2numa-8gpu"},
      {"huawei", "atlas800t-a3"}};
  for (const auto& [vendor, host] : hosts) {
    INFO(host);
    StatusOr<DriverFiles> f = FindDriverFiles(vendor, kHosts + host, kHook);
    REQUIRE_OK(f);
    CHECK_FALSE(f->mounted.empty());
  }
  StatusOr<DriverFiles> hy = FindDriverFiles("hygon", kHosts + "hygon-dcu-8", kHook);
  CHECK(Has(hy->mounted, "/opt/hyhal"));
  CHECK(Has(hy->ld_folders, "/opt/hyhal/lib"));
  StatusOr<DriverFiles> ef = FindDriverFiles("enflame", kHosts + "enflame-s60-8", kHook);
  // The library its link names, mounted where the link points.
  CHECK(Has(ef->mounted, "/usr/lib/libefml.so"));
  StatusOr<DriverFiles> gb = FindDriverFiles("nvidia", kHosts + "gb200-tray", kHook);
  CHECK(Has(gb->mounted, "/usr/lib/aarch64-linux-gnu/libcuda.so.570.158.01"));
}

TEST_CASE("driver files: a vendor without a recipe gets nothing") {
  StatusOr<DriverFiles> f = FindDriverFiles("amd", kHosts + "hgx-h200", kHook);
  REQUIRE_OK(f);
  CHECK(f->edits.empty());
}

TEST_CASE("driver files: a partial install is refused, naming the missing library") {
  Host h;
  h.File("/proc/driver/nvidia/version",
         "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
         "575.51.03  Release Build\n");
  h.File(kLib + "/libnvidia-ml.so.575.51.03");
  h.File(kLib + "/libcuda.so.570.158.01");  // the old driver's, not this one's
  StatusOr<DriverFiles> f = FindDriverFiles("nvidia", h.dir.path(), kHook);
  REQUIRE(f.status().code() == StatusCode::kFailedPrecondition);
  CHECK(f.status().message().find("libcuda.so.575.51.03 is missing") != std::string::npos);

  Host no_hyhal;
  no_hyhal.File("/opt/hyhal.txt");
  StatusOr<DriverFiles> hy = FindDriverFiles("hygon", no_hyhal.dir.path(), kHook);
  CHECK(hy.status().message().find("/opt/hyhal is missing") != std::string::npos);
}

TEST_CASE("driver files: version files that disagree are refused, naming both") {
  Host h;
  h.Nvidia("575.51.03");
  h.File("/sys/module/nvidia/version", "570.158.01\n");
  StatusOr<DriverFiles> f = FindDriverFiles("nvidia", h.dir.path(), kHook);
  REQUIRE(f.status().code() == StatusCode::kFailedPrecondition);
  const std::string m = f.status().message();
  CHECK(m.find("/proc/driver/nvidia/version says 575.51.03") != std::string::npos);
  CHECK(m.find("/sys/module/nvidia/version says 570.158.01") != std::string::npos);

  Host none;
  none.File(kLib + "/libcuda.so.1");
  StatusOr<DriverFiles> unversioned = FindDriverFiles("nvidia", none.dir.path(), kHook);
  CHECK(unversioned.status().message().find("no version") != std::string::npos);
}

TEST_CASE("driver files: the loader cache points at a folder outside the usual ones") {
  Host h;
  h.Nvidia("570.158.01", "/opt/nvidia/lib");
  const int32_t native = NativeLdCacheFlags();
  h.File("/etc/ld.so.cache",
         WriteLdCache({{"libcuda.so.1", "/opt/nvidia/lib/libcuda.so.1", native},
                       {"libnvidia-ml.so.1", "/opt/nvidia/lib/libnvidia-ml.so.1", native}}));
  StatusOr<DriverFiles> f = FindDriverFiles("nvidia", h.dir.path(), kHook);
  REQUIRE_OK(f);
  CHECK(Has(f->mounted, "/opt/nvidia/lib/libcuda.so.570.158.01"));
  CHECK(f->ld_folders == std::vector<std::string>{"/opt/nvidia/lib"});
  // A cache of another ABI only is no help, and a corrupt one is ignored: the folders are searched.
  h.File("/etc/ld.so.cache", "garbage");
  CHECK(FindDriverFiles("nvidia", h.dir.path(), kHook).status().message().find("missing") !=
        std::string::npos);
}

TEST_CASE("driver files cache: located once per driver version, and an upgrade is seen") {
  Host h;
  h.Nvidia("570.158.01");
  DriverFilesCache cache(h.dir.path(), kHook, Policy{});
  StatusOr<std::shared_ptr<const DriverFiles>> first = cache.Get("nvidia");
  REQUIRE_OK(first);
  StatusOr<std::shared_ptr<const DriverFiles>> again = cache.Get("nvidia");
  REQUIRE_OK(again);
  CHECK(first->get() == again->get());
  CHECK(cache.lookups() == 1);

  // The driver upgraded under the running plugin: new prepares get the new files; what was
  // handed out before is unchanged.
  h.Nvidia("575.51.03");
  StatusOr<std::shared_ptr<const DriverFiles>> upgraded = cache.Get("nvidia");
  REQUIRE_OK(upgraded);
  CHECK((*upgraded)->version == "575.51.03");
  CHECK(Has((*upgraded)->mounted, kLib + "/libcuda.so.575.51.03"));
  CHECK((*first)->version == "570.158.01");
  CHECK(cache.lookups() == 2);

  // A partial install is not cached: once fixed, the next Get succeeds.
  h.File("/proc/driver/nvidia/version", "NVRM version: Kernel Module  580.1.2  Release\n");
  CHECK_FALSE(cache.Get("nvidia").ok());
  h.Nvidia("580.1.2");
  CHECK(cache.Get("nvidia").ok());

  DriverFilesCache off(h.dir.path(), kHook, Policy{Mode::kOff, {}});
  StatusOr<std::shared_ptr<const DriverFiles>> none = off.Get("nvidia");
  REQUIRE_OK(none);
  CHECK(*none == nullptr);
}

TEST_CASE("driver files: daemons' sockets and the MPS pipe folder, as the daemons come and go") {
  Host nvidia_host;
  nvidia_host.Nvidia("570.158.01");
  const std::string root = nvidia_host.dir.path();
  DriverFilesCache files(root, kHook, Policy{});
  const auto located = [&] {
    StatusOr<std::shared_ptr<const DriverFiles>> got = files.Get("nvidia");
    REQUIRE_OK(got);
    return *got;
  };
  const std::shared_ptr<const DriverFiles> before = located();
  CHECK(MountAt(*before, "/tmp/nvidia-mps") == nullptr);
  CHECK(MountAt(*before, "/run/nvidia-persistenced/socket") == nullptr);

  // The MPS control daemon and the persistence daemon start under the running plugin (the
  // socket under /var/run only, as on a host where /var/run is not a link to /run).
  fs::create_directories(root + "/tmp/nvidia-mps");
  nvidia_host.File("/var/run/nvidia-persistenced/socket");
  const std::shared_ptr<const DriverFiles> after = located();
  CHECK(files.lookups() == 2);
  const cdi::Mount* mps = MountAt(*after, "/tmp/nvidia-mps");
  REQUIRE(mps != nullptr);
  CHECK(mps->host_path == "/tmp/nvidia-mps");
  CHECK_FALSE(Has(mps->options, "ro"));  // clients make their pipes in it
  CHECK(Has(mps->options, "nosuid"));
  CHECK(MountAt(*after, "/var/run/nvidia-persistenced/socket") != nullptr);
  CHECK(MountAt(*before, "/tmp/nvidia-mps") == nullptr);  // handed out before: unchanged

  // Unchanged since: served from the cache. The MPS daemon stops: located again, without it.
  CHECK(located() == after);
  CHECK(files.lookups() == 2);
  fs::remove_all(root + "/tmp/nvidia-mps");
  CHECK(MountAt(*located(), "/tmp/nvidia-mps") == nullptr);
  CHECK(files.lookups() == 3);
}

TEST_CASE("driver files policy: all, per vendor, and errors naming the flag") {
  StatusOr<Policy> p = ParsePolicy("auto", "--cdi-driver-files");
  REQUIRE_OK(p);
  CHECK(p->For("nvidia") == Mode::kAuto);
  p = ParsePolicy("off", "--cdi-driver-files");
  CHECK(p->For("huawei") == Mode::kOff);
  p = ParsePolicy("nvidia=off, huawei=auto", "--cdi-driver-files");
  REQUIRE_OK(p);
  CHECK(p->For("nvidia") == Mode::kOff);
  CHECK(p->For("hygon") == Mode::kAuto);
  p = ParsePolicy("off,nvidia=auto", "--cdi-driver-files");
  CHECK(p->For("nvidia") == Mode::kAuto);
  CHECK(p->For("cambricon") == Mode::kOff);
  CHECK(FormatPolicy(*p) == "off,nvidia=auto");
  CHECK(ParsePolicy("sometimes", "--cdi-driver-files").status().message() ==
        "--cdi-driver-files: \"sometimes\": the mode is auto or off");
  CHECK(ParsePolicy("acme=off", "--cdi-driver-files")
            .status()
            .message()
            .find("unknown vendor \"acme\"") != std::string::npos);
}

TEST_CASE("driver files: version file formats") {
  CHECK(ParseVersionFile("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  "
                         "Release Build  (dvs-builder@U16)  Tue\n") == "570.158.01");
  CHECK(ParseVersionFile("Version=24.1.rc3\nascendhal_version=7.35.23\n") == "24.1.rc3");
  CHECK(ParseVersionFile(" 6.3.8-V1.5.2\n") == "6.3.8-V1.5.2");
}

}  // namespace
}  // namespace xpu::driverfiles
