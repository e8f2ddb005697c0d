#include "kubeletplugin/cdihook/in_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace xpu::cdihook {
namespace {

// glibc 2.36 has no wrapper for openat2.
int OpenAt2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how));
}

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

std::string Errno(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

// {folder, name} of an absolute path in the tree: "/a/b" -> {"/a", "b"}, "/b" -> {"/", "b"}.
std::pair<std::string, std::string> Split(std::string_view path) {
  const size_t slash = path.rfind('/');
  return {slash == 0 ? std::string("/") : std::string(path.substr(0, slash)),
          std::string(path.substr(slash + 1))};
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

StatusOr<RootDir> RootDir::Open(const std::string& path) {
  std::array<char, PATH_MAX> real{};
  if (::realpath(path.c_str(), real.data()) == nullptr) {
    return NotFoundError(Errno("container root", path));
  }
  if (std::string_view(real.data()) == "/") {
    return InvalidArgumentError("container root " + path + " is the host's /: refused");
  }
  const int fd = ::open(real.data(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return NotFoundError(Errno("open container root", path));
  return RootDir(fd, real.data());
}

RootDir::RootDir(RootDir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

RootDir::~RootDir() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<int> RootDir::OpenFolder(std::string_view dir) {
  const std::string rel = dir == "/" ? std::string(".") : std::string(dir.substr(1));
  const int fd = OpenAt2(fd_, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, kInRoot);
  if (fd < 0) return NotFoundError(Errno("open folder", path_ + std::string(dir)));
  return fd;
}

bool RootDir::Exists(std::string_view path) {
  const int fd = OpenAt2(fd_, std::string(path.substr(1)), O_PATH | O_CLOEXEC, kInRoot);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

StatusOr<std::string> RootDir::ReadFile(std::string_view path, size_t limit) {
  const std::string shown = path_ + std::string(path);
  const Fd file(OpenAt2(fd_, std::string(path.substr(1)), O_RDONLY | O_CLOEXEC, kInRoot));
  if (file.get() < 0) {
    return errno == ENOENT ? NotFoundError(Errno("read", shown))
                           : InternalError(Errno("read", shown));
  }
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) return InternalError(Errno("stat", shown));
  if (!S_ISREG(st.st_mode)) return FailedPreconditionError("read " + shown + ": not a file");
  std::string content;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(file.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InternalError(Errno("read", shown));
    if (n == 0) break;
    content.append(buf.data(), static_cast<size_t>(n));
    if (content.size() > limit) {
      return FailedPreconditionError("read " + shown + ": larger than " + std::to_string(limit) +
                                     " bytes");
    }
  }
  return content;
}

Status RootDir::MakeFolders(std::string_view path) {
  size_t at = 1;
  while (at <= path.size()) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const auto [parent, name] = Split(path.substr(0, slash));
    ASSIGN_OR_RETURN(const int raw, OpenFolder(parent));
    const Fd dir(raw);
    if (::mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
      return InternalError(Errno("make folder", path_ + std::string(path.substr(0, slash))));
    }
    at = slash + 1;
  }
  ASSIGN_OR_RETURN(const int check, OpenFolder(path));  // a folder now (a file there fails)
  ::close(check);
  return OkStatus();
}

Status RootDir::Symlink(std::string_view target, std::string_view path) {
  const auto [parent, name] = Split(path);
  ASSIGN_OR_RETURN(const int raw, OpenFolder(parent));
  const Fd dir(raw);
  const std::string shown = path_ + std::string(path);
  struct stat st {};
  if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return FailedPreconditionError("link " + shown + ": a folder is there");
    }
    if (S_ISLNK(st.st_mode)) {
      std::array<char, PATH_MAX> now{};
      const ssize_t n = ::readlinkat(dir.get(), name.c_str(), now.data(), now.size() - 1);
      if (n >= 0 && std::string_view(now.data(), static_cast<size_t>(n)) == target) {
        return OkStatus();
      }
    }
    if (::unlinkat(dir.get(), name.c_str(), 0) != 0) return InternalError(Errno("replace", shown));
  }
  if (::symlinkat(std::string(target).c_str(), dir.get(), name.c_str()) != 0) {
    return InternalError(Errno("link", shown));
  }
  return OkStatus();
}

Status RootDir::WriteFile(std::string_view path, std::string_view content, unsigned mode) {
  const auto [parent, name] = Split(path);
  ASSIGN_OR_RETURN(const int raw, OpenFolder(parent));
  const Fd dir(raw);
  const std::string shown = path_ + std::string(path);
  const Fd file(::openat(dir.get(), name.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (file.get() < 0) return InternalError(Errno("write", shown));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(file.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return InternalError(Errno("write", shown));
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(file.get(), mode) != 0) return InternalError(Errno("chmod", shown));
  return OkStatus();
}

}  // namespace xpu::cdihook
