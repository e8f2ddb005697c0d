// xpu-cdi-hook's command line, as the CDI specs of prepared claims write it
// (kubeletplugin/driverfiles/driver_files.h):
//
//   xpu-cdi-hook ldcache [--folder DIR]... [--link TARGET::LINK]... [--ldconfig PATH]
//
// DIR and LINK are absolute paths in the container; TARGET is a file name in LINK's folder (the
// soname links of a library: "libcuda.so.570.158.01::/usr/lib/x86_64-linux-gnu/libcuda.so.1").
// PATH is the host's ldconfig (default /sbin/ldconfig; "<PATH>.real" when there is one, as on
// Debian and Ubuntu, where ldconfig is a wrapper script). Pure: no file is touched.
#ifndef XPU_KUBELETPLUGIN_CDIHOOK_HOOK_ARGS_H_
#define XPU_KUBELETPLUGIN_CDIHOOK_HOOK_ARGS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xpu::cdihook {

struct Link {
  std::string target;  // a file name: "libcuda.so.570.158.01"
  std::string path;    // absolute, in the container: "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  friend bool operator==(const Link&, const Link&) = default;
};

struct HookArgs {
  std::string command;  // "ldcache"
  std::vector<std::string> folders;
  std::vector<Link> links;
  std::string ldconfig = "/sbin/ldconfig";
  friend bool operator==(const HookArgs&, const HookArgs&) = default;
};

// `args` without the program name. Errors are InvalidArgument naming the argument: an unknown
// command or flag, a flag without its value, a path that is not absolute, that holds "..", "."
// or an empty component, a NUL or a newline (it would break the ld.so.conf file), or a link
// target that is not a plain file name.
StatusOr<HookArgs> ParseHookArgs(const std::vector<std::string>& args);

// The usage text (--help).
std::string HookUsage();

// A path in the container that the hook may touch: absolute, clean, no NUL or newline.
Status CheckContainerPath(std::string_view path, std::string_view what);

}  // namespace xpu::cdihook

#endif  // XPU_KUBELETPLUGIN_CDIHOOK_HOOK_ARGS_H_
