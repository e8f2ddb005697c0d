// The musl loader's search path, for images built on musl (Alpine): musl reads no ld.so.cache,
// only LD_LIBRARY_PATH and then /etc/ld-musl-<arch>.path, a list of folders separated by newlines
// or colons that replaces its default "/lib:/usr/local/lib:/usr/lib" when the file exists. The
// hook adds the driver's library folders to that file (docs/kubelet-plugin.md, "Driver files").
// The vendors' libraries are glibc builds: a musl image still needs a glibc compatibility layer
// (Alpine's gcompat) to load them; what the hook gives it is that they are found by name.
#ifndef XPU_KUBELETPLUGIN_CDIHOOK_MUSL_PATH_H_
#define XPU_KUBELETPLUGIN_CDIHOOK_MUSL_PATH_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kubeletplugin/cdihook/in_root.h"

namespace xpu::cdihook {

// This machine's musl architecture name ("x86_64", "aarch64"): containers run the host's.
std::string_view MuslArch();
// "/lib/ld-musl-<arch>.so.1" and "/etc/ld-musl-<arch>.path".
std::string MuslLoader(std::string_view arch);
std::string MuslPathFile(std::string_view arch);

// The path file's new content: the image's own list (musl's default when it has no file) with
// `folders` after it, those it lists already left out, so the image's own libraries come first
// and a second run changes nothing. Equal to `existing` when nothing is added.
std::string MuslPathContent(const std::optional<std::string>& existing,
                            const std::vector<std::string>& folders);

// In an image with a musl loader for `arch`, writes the path file (0644) when its content
// changes; in any other image, does nothing. Errors name the file.
Status AddMuslPaths(const std::vector<std::string>& folders, RootDir& root,
                    std::string_view arch = MuslArch());

}  // namespace xpu::cdihook

#endif  // XPU_KUBELETPLUGIN_CDIHOOK_MUSL_PATH_H_
