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
  return {
      {.vendor = "nvidia",
       .version_files = {"/proc/driver/nvidia/version", "/sys/module/nvidia/version"},
       // libnvidia-container's compute and utility libraries; graphics and video are left out.
       .versioned_libs = {"libcuda", "libcudadebugger", "libnvidia-ml", "libnvidia-ptxjitcompiler",
                          "libnvidia-nvvm", "libnvidia-gpucomp", "libnvidia-allocator",
                          "libnvidia-cfg", "libnvidia-nscq", "libnvidia-opencl", "libnvidia-pkcs11",
                          "libnvidia-pkcs11-openssl3", "libnvidia-fatbinaryloader",
                          "libnvidia-compiler"},
       .required_libs = {"libcuda", "libnvidia-ml"},
       .lib_dirs = LibDirs(),
       .binaries = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                    "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"},
       .sockets = {"/run/nvidia-persistenced/socket", "/run/nvidia-fabricmanager/socket"},
       // The MPS control daemon's default pipe folder (CUDA_MPS_PIPE_DIRECTORY).
       .ipc_paths = {"/tmp/nvidia-mps"},
       .firmware = "/lib/firmware/nvidia/{version}"},
      {.vendor = "huawei",
       .version_files = {"/usr/local/Ascend/driver/version.info"},
       .binaries = {"npu-smi"},
       // The docker runtime's base list, the install facts CANN and HCCL read, and hccn_tool.
       .paths = {"/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/include",
                 "/usr/local/Ascend/driver/topo", "/usr/local/Ascend/driver/tools",
                 "/usr/local/Ascend/driver/version.info", "/usr/local/dcmi",
                 "/etc/ascend_install.info", "/etc/hccn.conf", "/etc/hccl_rootinfo.json",
                 "/var/queue_schedule"},
       .required_paths = {"/usr/local/Ascend/driver/lib64"},
       .ld_folders = {"/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/lib64/common",
                      "/usr/local/Ascend/driver/lib64/driver", "/usr/local/dcmi"}},
      {.vendor = "hygon",
       .version_files = {"/opt/hyhal/.info/version"},
       .paths = {"/opt/hyhal"},  // DTK 23.10 and later: hy-smi, the HAL libraries
       .required_paths = {"/opt/hyhal"},
       .ld_folders = {"/opt/hyhal/lib", "/opt/hyhal/lib64"}},
      {.vendor = "cambricon",
       .version_files = {"/sys/module/cambricon_drv/version"},
       .libs = {"libcndev.so"},
       .lib_dirs = LibDirs({"/usr/local/neuware/lib64"}),
       .binaries = {"cnmon"}},
      {.vendor = "metax",
       .version_files = {"/sys/module/metax/version"},
       .paths = {"/opt/mxdriver"},  // mx-smi and libmxsml
       .ld_folders = {"/opt/mxdriver/lib"}},
      {.vendor = "biren",
       .libs = {"libbiren-ml.so"},
       .lib_dirs = LibDirs({"/usr/lib"}),
       .binaries = {"brsmi"}},
      {.vendor = "enflame",
       .version_files = {"/sys/module/enflame/version"},
       .libs = {"libefml.so"},
       .lib_dirs = LibDirs({"/usr/lib"}),
       .binaries = {"efsmi"},
       .paths = {"/usr/local/efsmi"}},
      {.vendor = "mthreads",  // assumed: MTML and mthreads-gmi where the distribution keeps them
       .libs = {"libmtml.so"},
       .lib_dirs = LibDirs(),
       .binaries = {"mthreads-gmi"}},
  };
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
