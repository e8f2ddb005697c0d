#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xpu {
namespace {

Status ErrnoError(std::string_view op, const std::string& path, int err) {
  std::string message = std::string(op) + " " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return NotFoundError(std::move(message));
    case EACCES:
    case EPERM:
      return Status(StatusCode::kPermissionDenied, std::move(message));
    case ENOSPC:
    case EDQUOT:
      return Status(StatusCode::kResourceExhausted, std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

// Closes the descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports the close error, which for some file systems is the write error.
  int Close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

Status WriteTemp(const std::string& tmp, std::string_view contents, mode_t mode) {
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (fd.get() < 0) return ErrnoError("open", tmp, errno);
  // The umask may have narrowed the mode, and an old temp file keeps its mode on O_TRUNC.
  if (::fchmod(fd.get(), mode) != 0) return ErrnoError("chmod", tmp, errno);
  RETURN_IF_ERROR(WriteAll(fd.get(), contents, tmp));
  if (::fsync(fd.get()) != 0) return ErrnoError("fsync", tmp, errno);
  if (fd.Close() != 0) return ErrnoError("close", tmp, errno);
  return OkStatus();
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status SyncDirectory(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("open", dir, errno);
  if (::fsync(fd.get()) != 0) return ErrnoError("fsync", dir, errno);
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode) {
  const std::string tmp = path + ".tmp";
  Status status = WriteTemp(tmp, contents, mode);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("rename", tmp, errno);
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return SyncDirectory(DirectoryOf(path));
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("open", path, errno);
  std::string out;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status RemoveFileDurably(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return OkStatus();
    return ErrnoError("remove", path, errno);
  }
  return SyncDirectory(DirectoryOf(path));
}

Status MakeDirectories(const std::string& dir, mode_t mode) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return OkStatus();
    return FailedPreconditionError("create directory " + dir + ": not a directory");
  }
  if (errno != ENOENT) return ErrnoError("stat", dir, errno);
  const std::string parent = DirectoryOf(dir);
  if (parent != dir && parent != "." && parent != "/") {
    RETURN_IF_ERROR(MakeDirectories(parent, mode));
  }
  if (::mkdir(dir.c_str(), mode) != 0) {
    if (errno == EEXIST) return OkStatus();  // made meanwhile by someone else: theirs to mode
    return ErrnoError("mkdir", dir, errno);
  }
  // mkdir applies the umask; the mode is what the caller asked for.
  if (::chmod(dir.c_str(), mode) != 0) return ErrnoError("chmod", dir, errno);
  return OkStatus();
}

}  // namespace xpu
