// File operations confined to a directory tree (a container's root): every path is resolved by
// the kernel as if the tree were "/" (openat2 with RESOLVE_IN_ROOT, Linux 5.6+), so no symlink
// and no ".." in the tree can lead outside it, and the last component of what is written is
// never followed. What an image holds cannot make the hook write on the host.
#ifndef XPU_KUBELETPLUGIN_CDIHOOK_IN_ROOT_H_
#define XPU_KUBELETPLUGIN_CDIHOOK_IN_ROOT_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu::cdihook {

class RootDir {
 public:
  // Opens `path`, which must be an existing directory other than the host's "/". Errors name it.
  static StatusOr<RootDir> Open(const std::string& path);
  RootDir(RootDir&& other) noexcept;
  RootDir& operator=(RootDir&&) = delete;
  RootDir(const RootDir&) = delete;
  ~RootDir();

  // `path` and the folders above it inside the tree, made (0755) where missing.
  Status MakeFolders(std::string_view path);
  // A symlink at `path` (absolute in the tree) to `target`, in place of a link or file that is
  // there (never of a folder). Its folder must exist. An equal link is left as it is.
  Status Symlink(std::string_view target, std::string_view path);
  // `content` into `path`, created or truncated with `mode`; its folder must exist; a symlink at
  // `path` is refused, not followed.
  Status WriteFile(std::string_view path, std::string_view content, unsigned mode);
  bool Exists(std::string_view path);
  // The content of the regular file at `path`, links followed inside the tree; NotFound when it
  // is missing, an error when it is not a regular file or is larger than `limit` bytes.
  StatusOr<std::string> ReadFile(std::string_view path, size_t limit);

  const std::string& path() const { return path_; }

 private:
  RootDir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  // An O_PATH descriptor of the folder `dir` (absolute in the tree), resolved in the tree.
  StatusOr<int> OpenFolder(std::string_view dir);

  int fd_ = -1;
  std::string path_;
};

}  // namespace xpu::cdihook

#endif  // XPU_KUBELETPLUGIN_CDIHOOK_IN_ROOT_H_
