// The ldcache command of xpu-cdi-hook: in a container's root, the soname links of the mounted
// driver libraries, the library folders in the loader's configuration, and the loader's cache
// rebuilt, so that a program in any glibc image finds "libcuda.so.1" or "libascend_hal.so" by
// name without LD_LIBRARY_PATH, and one in a musl image through musl's path file
// (docs/kubelet-plugin.md, "Driver files").
#ifndef XPU_KUBELETPLUGIN_CDIHOOK_LDCACHE_H_
#define XPU_KUBELETPLUGIN_CDIHOOK_LDCACHE_H_

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kubeletplugin/cdihook/hook_args.h"
#include "kubeletplugin/cdihook/in_root.h"

namespace xpu::cdihook {

// Where the folders go: one file of ours beside the image's own.
inline constexpr std::string_view kConfFile = "/etc/ld.so.conf.d/00-xpu-dra.conf";

// Runs a program (argv[0] is its path) to completion; an error holds its exit and stderr.
using RunFn = std::function<Status(const std::vector<std::string>& argv)>;

// The links first (a folder's link whose folder is missing is made with it), then kConfFile
// (and /etc/ld.so.conf including /etc/ld.so.conf.d when the image has none), the folders in
// musl's path file where the image has a musl loader (musl_path.h), then `ldconfig -X -r ROOT` (-X:
// ldconfig makes no links of its own in folders that may be read-only mounts). Without folders no
// ldconfig runs. Errors name the path or the program.
Status RunLdcache(const HookArgs& args, RootDir& root, const RunFn& run);

// fork and exec with only PATH in the environment, stdin and stdout closed, stderr kept (up to
// 4 KiB) for the error.
Status RunProgram(const std::vector<std::string>& argv);

// args.ldconfig, or "<it>.real" when that exists (Debian's and Ubuntu's ldconfig is a wrapper
// script around ldconfig.real).
std::string LdconfigPath(const std::string& ldconfig);

}  // namespace xpu::cdihook

#endif  // XPU_KUBELETPLUGIN_CDIHOOK_LDCACHE_H_
