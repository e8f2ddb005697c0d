// The recipes. NVIDIA's and Ascend's follow the vendors' own container tooling (NVIDIA's
// container toolkit, its CDI generation and libnvidia-container's library list; Ascend's docker
// runtime and its mount lists); the others what their device plugins mount. Paths no public
// source states are marked "assumed" here and in docs/kubelet-plugin.md.
#include "kubeletplugin/driverfiles/internal/recipes.h"

#include <algorithm>
#include <initializer_list>

namespace xpu::driverfiles::internal {
namespace {

// `first`, then the folders a glibc distribution keeps 64-bit libraries in (Debian multiarch,
// RHEL lib64, Debian's NVIDIA packages).
std::vector<std::string_view> LibDirs(std::initializer_list<std::string_view> first = {}) {
  std::vector<std::string_view> dirs(first);
  for (const std::string_view d :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/lib64",
        "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib/aarch64-linux-gnu/nvidia/current",
        "/usr/lib"}) {
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  }
  return dirs;
}

std::vector<Recipe> Build() {
  std::vector<Recipe> r;
  {
    Recipe nv;
    nv.vendor = "nvidia";
    nv.version_files = {"/proc/driver/nvidia/version", "/sys/module/nvidia/version"};
    // libnvidia-container's compute and utility libraries; graphics and video are left out.
    nv.versioned_libs = {"libcuda",
                         "libcudadebugger",
                         "libnvidia-ml",
                         "libnvidia-ptxjitcompiler",
                         "libnvidia-nvvm",
                         "libnvidia-gpucomp",
                         "libnvidia-allocator",
                         "libnvidia-cfg",
                         "libnvidia-nscq",
                         "libnvidia-opencl",
                         "libnvidia-pkcs11",
                         "libnvidia-pkcs11-openssl3",
                         "libnvidia-fatbinaryloader",
                         "libnvidia-compiler"};
    nv.required_libs = {"libcuda", "libnvidia-ml"};
    nv.lib_dirs = LibDirs();
    nv.binaries = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                   "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};
    nv.sockets = {"/run/nvidia-persistenced/socket", "/run/nvidia-fabricmanager/socket"};
    nv.firmware = "/lib/firmware/nvidia/{version}";
    r.push_back(nv);
  }
  {
    Recipe hw;
    hw.vendor = "huawei";
    hw.version_files = {"/usr/local/Ascend/driver/version.info"};
    // The docker runtime's base list, the install facts CANN and HCCL read, and hccn_tool.
    hw.paths = {"/usr/local/Ascend/driver/lib64",
                "/usr/local/Ascend/driver/include",
                "/usr/local/Ascend/driver/topo",
                "/usr/local/Ascend/driver/tools",
                "/usr/local/Ascend/driver/version.info",
                "/usr/local/dcmi",
                "/etc/ascend_install.info",
                "/etc/hccn.conf",
                "/etc/hccl_rootinfo.json",
                "/var/queue_schedule"};
    hw.required_paths = {"/usr/local/Ascend/driver/lib64"};
    hw.binaries = {"npu-smi"};
    hw.ld_folders = {"/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/lib64/common",
                     "/usr/local/Ascend/driver/lib64/driver", "/usr/local/dcmi"};
    r.push_back(hw);
  }
  {
    Recipe hy;
    hy.vendor = "hygon";
    hy.version_files = {"/opt/hyhal/.info/version"};
    hy.paths = {"/opt/hyhal"};  // DTK 23.10 and later: hy-smi, the HAL libraries
    hy.required_paths = {"/opt/hyhal"};
    hy.ld_folders = {"/opt/hyhal/lib", "/opt/hyhal/lib64"};
    r.push_back(hy);
  }
  {
    Recipe mlu;
    mlu.vendor = "cambricon";
    mlu.version_files = {"/sys/module/cambricon_drv/version"};
    mlu.libs = {"libcndev.so"};
    mlu.lib_dirs = LibDirs({"/usr/local/neuware/lib64"});
    mlu.binaries = {"cnmon"};
    r.push_back(mlu);
  }
  {
    Recipe mx;
    mx.vendor = "metax";
    mx.version_files = {"/sys/module/metax/version"};
    mx.paths = {"/opt/mxdriver"};  // mx-smi and libmxsml
    mx.ld_folders = {"/opt/mxdriver/lib"};
    r.push_back(mx);
  }
  {
    Recipe br;
    br.vendor = "biren";
    br.libs = {"libbiren-ml.so"};
    br.lib_dirs = LibDirs({"/usr/lib"});
    br.binaries = {"brsmi"};
    r.push_back(br);
  }
  {
    Recipe ef;
    ef.vendor = "enflame";
    ef.version_files = {"/sys/module/enflame/version"};
    ef.libs = {"libefml.so"};
    ef.lib_dirs = LibDirs({"/usr/lib"});
    ef.paths = {"/usr/local/efsmi"};
    ef.binaries = {"efsmi"};
    r.push_back(ef);
  }
  {
    Recipe mt;
    mt.vendor = "mthreads";  // assumed: MTML and mthreads-gmi where the distribution keeps them
    mt.libs = {"libmtml.so"};
    mt.lib_dirs = LibDirs();
    mt.binaries = {"mthreads-gmi"};
    r.push_back(mt);
  }
  return r;
}

}  // namespace

const std::vector<Recipe>& Recipes() {
  static const std::vector<Recipe> recipes = Build();
  return recipes;
}

const Recipe* RecipeFor(std::string_view vendor) {
  const auto& all = Recipes();
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const Recipe& r) { return r.vendor == vendor; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace xpu::driverfiles::internal
