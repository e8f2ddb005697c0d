// Where an OCI hook finds the container's root file system: the runtime hands the hook the
// container's state on stdin (OCI runtime spec, "State": ociVersion, id, status, pid, bundle,
// annotations); the root is root.path of <bundle>/config.json, relative to the bundle unless
// absolute. crun also puts it in the state as "root", which is used when present.
#ifndef XPU_KUBELETPLUGIN_CDIHOOK_CONTAINER_ROOT_H_
#define XPU_KUBELETPLUGIN_CDIHOOK_CONTAINER_ROOT_H_

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu::cdihook {

// The contents of a file, by path (the real filesystem, or a table in tests).
using ReadFn = std::function<StatusOr<std::string>(const std::string& path)>;

// The root's path as the state and the bundle name it. Errors name what is missing or wrong:
// state that is not JSON, no bundle, a config.json that cannot be read or has no root.path.
StatusOr<std::string> ContainerRootPath(std::string_view state_json, const ReadFn& read);

// Reads a whole file; errors name the path.
StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace xpu::cdihook

#endif  // XPU_KUBELETPLUGIN_CDIHOOK_CONTAINER_ROOT_H_
