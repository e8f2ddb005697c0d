// Reading a host's files under a configurable root (`--host-root`, "/" on a real node, a fixture
// tree in tests). Every path a caller gives is relative to the root ("sys/bus/pci/devices");
// symlinks are resolved as the kernel would inside a chroot at the root: an absolute target
// restarts at the root, and a ".." that would climb above the root is refused, so nothing outside
// the root is ever read. Errors name the host path ("read /sys/.../numa_node: permission denied").
// Thread-compatible; no exception escapes.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_HOST_ROOT_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_HOST_ROOT_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::discovery {

class HostRoot {
 public:
  // `root` is a directory; "" means "/".
  explicit HostRoot(std::string root);

  const std::string& root() const { return root_; }

  // The path `rel` after resolving every symlink inside the root, as a clean relative path
  // ("sys/devices/pci0000:10/0000:10:01.0"; "" is the root itself). Fails when `rel` or a link
  // target climbs above the root, a link loops, or a component is missing (not-found).
  StatusOr<std::string> Resolve(std::string_view rel) const;

  // The file's contents. Not-found when it does not exist; invalid-argument when it is a
  // directory; other errors with the OS cause. The message names "/<rel>".
  StatusOr<std::string> ReadFile(std::string_view rel) const;
  // ReadFile, trimmed of surrounding whitespace.
  StatusOr<std::string> ReadTrimmed(std::string_view rel) const;

  // Whether something (any file type) exists at `rel`, following links inside the root.
  bool Exists(std::string_view rel) const;

  // Names in the directory `rel`, sorted; empty when it does not exist.
  StatusOr<std::vector<std::string>> List(std::string_view rel) const;

 private:
  std::string Real(std::string_view clean_rel) const;  // the OS path of a resolved path

  std::string root_;
};

// "a/b/../c" -> "a/c"; fails on a ".." above the start.
StatusOr<std::string> CleanRelative(std::string_view path);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_HOST_ROOT_H_
