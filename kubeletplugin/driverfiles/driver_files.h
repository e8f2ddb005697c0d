// A vendor's user-space driver, found on the host so that a prepared claim's CDI spec can carry
// it: with it a container runs from an image that holds only the framework (PyTorch, the CANN
// toolkit, DTK) and no vendor runtime hook is needed (docs/kubelet-plugin.md, "Driver files").
//
// Each vendor has a recipe (driver_recipes.cc): where its kernel driver states its version, the
// libraries versioned by it ("libcuda.so.<version>", found through the host's loader cache and
// then the driver's library folders), the folders and files its stack reads (Ascend's
// driver/lib64, /usr/local/dcmi, hccn.conf), its management binaries, its firmware and sockets.
// FindDriverFiles turns a recipe into CDI edits: each file bind-mounted read-only at its host
// path, and one xpu-cdi-hook createContainer hook that recreates the host's soname links in the
// container and adds the library folders to the container's loader cache.
//
// Nothing is globbed but the firmware folder of the exact version: a library of another version
// beside the right one (a stale install) is never mounted. A required file that is missing (a
// partial install) or two version files that disagree (a driver upgraded under a loaded module)
// is a FailedPrecondition error naming the path, so a claim is refused rather than given a
// container that cannot use its device.
#ifndef XPU_KUBELETPLUGIN_DRIVERFILES_DRIVER_FILES_H_
#define XPU_KUBELETPLUGIN_DRIVERFILES_DRIVER_FILES_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kubeletplugin/cdi/cdi.h"

namespace xpu::driverfiles {

// Where the DaemonSet installs xpu-cdi-hook on every node (deploy/helm: plugin.cdi.hookDir).
inline constexpr std::string_view kDefaultHookPath = "/opt/xpu-dra/bin/xpu-cdi-hook";

enum class Mode { kAuto, kOff };

// Which vendors' specs carry their driver files (--cdi-driver-files, plugin.cdi.driverFiles):
// "auto" or "off" for every vendor, or "nvidia=off,huawei=auto" (a vendor not named: auto), or
// both ("off,nvidia=auto").
struct Policy {
  Mode fallback = Mode::kAuto;
  std::map<std::string, Mode, std::less<>> by_vendor;
  Mode For(std::string_view vendor) const;
  friend bool operator==(const Policy&, const Policy&) = default;
};
// An error names `flag` and the bad entry; vendor names are those of Vendors().
StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view flag);
std::string FormatPolicy(const Policy& policy);

// The vendors that have a recipe ("amd" has none: ROCm's user space lives in the image).
std::vector<std::string_view> Vendors();

// The vendor's driver as it is on the host.
struct DriverFiles {
  std::string vendor;
  // The kernel driver's version the files belong to ("570.158.01"); empty where the vendor's
  // recipe names no version file, or the host has none of them.
  std::string version;
  // Host paths (files and folders) the spec mounts, sorted.
  std::vector<std::string> mounted;
  // The folders the hook adds to the container's loader cache, and the soname links it makes
  // ("libcuda.so.570.158.01" -> "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), as in the hook's args.
  std::vector<std::string> ld_folders;
  std::vector<std::pair<std::string, std::string>> links;  // {target, link}
  // The mounts, environment and hook of the spec.
  cdi::ContainerEdits edits;
};

// What identifies the installed driver of `vendor` under `host_root`: the raw contents of its
// version files, and which of its daemons' sockets and IPC paths exist (a persistence daemon or
// an MPS control daemon started after the plugin). Cheap (a few small reads and stats): the cache
// (driver_files_cache.h) calls it on every prepare and locates the files again only when it
// changes.
std::string VersionKey(std::string_view vendor, const std::string& host_root);

// Locates the vendor's files under `host_root` ("/" on a node; a fixture in tests). A vendor
// without a recipe gets empty edits. `hook_path` is the host path of xpu-cdi-hook.
StatusOr<DriverFiles> FindDriverFiles(std::string_view vendor, const std::string& host_root,
                                      const std::string& hook_path);

// The version a vendor's version file states: "NVRM version: ... Kernel Module  570.158.01 ..."
// -> "570.158.01"; "Version=24.1.rc3" lines -> "24.1.rc3"; otherwise the trimmed text. Exposed
// for tests.
std::string ParseVersionFile(std::string_view text);

}  // namespace xpu::driverfiles

#endif  // XPU_KUBELETPLUGIN_DRIVERFILES_DRIVER_FILES_H_
