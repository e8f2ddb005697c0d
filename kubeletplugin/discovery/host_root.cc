#include "kubeletplugin/discovery/host_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/text.h"

namespace xpu::discovery {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) parts.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// Walks one component of a path: "." stays, ".." goes up (false above the root), a name goes
// down.
bool Walk(std::string_view part, std::vector<std::string>* parts) {
  if (part == "..") {
    if (parts->empty()) return false;
    parts->pop_back();
  } else if (part != ".") {
    parts->emplace_back(part);
  }
  return true;
}

Status ErrnoStatus(std::string_view verb, std::string_view rel, int err) {
  std::string cause = std::strerror(err);
  if (!cause.empty()) {
    cause[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(cause[0])));
  }
  std::string message = std::string(verb) + " /" + std::string(rel) + ": " + cause;
  if (err == ENOENT || err == ENOTDIR) return NotFoundError(std::move(message));
  return UnavailableError(std::move(message));
}

}  // namespace

StatusOr<std::string> CleanRelative(std::string_view path) {
  std::vector<std::string> out;
  for (const std::string& part : Split(path)) {
    if (!Walk(part, &out)) {
      return InvalidArgumentError("path " + std::string(path) + " escapes the host root");
    }
  }
  return Join(out, "/");
}

HostRoot::HostRoot(std::string root) : root_(root.empty() ? "/" : std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string HostRoot::Real(std::string_view clean_rel) const {
  if (clean_rel.empty()) return root_;
  return root_ == "/" ? "/" + std::string(clean_rel) : root_ + "/" + std::string(clean_rel);
}

StatusOr<std::string> HostRoot::Resolve(std::string_view rel) const {
  // `done` holds resolved components; `todo` the components still to walk (reversed).
  std::vector<std::string> done;
  std::vector<std::string> todo = Split(rel);
  std::reverse(todo.begin(), todo.end());
  int links = 0;
  while (!todo.empty()) {
    const std::string part = std::move(todo.back());
    todo.pop_back();
    if (!Walk(part, &done)) {
      return InvalidArgumentError("resolve /" + std::string(rel) + ": escapes the host root");
    }
    if (part == "." || part == "..") continue;
    const std::string real = Real(Join(done, "/"));
    struct stat st {};
    if (::lstat(real.c_str(), &st) != 0) return ErrnoStatus("resolve", Join(done, "/"), errno);
    if (!S_ISLNK(st.st_mode)) continue;
    if (++links > kMaxLinks) {
      return InvalidArgumentError("resolve /" + std::string(rel) + ": too many symbolic links");
    }
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    const ssize_t n = ::readlink(real.c_str(), target.data(), target.size());
    if (n < 0) return ErrnoStatus("readlink", Join(done, "/"), errno);
    target.resize(static_cast<size_t>(n));
    done.pop_back();
    if (target.starts_with("/")) done.clear();  // absolute: from the host root
    std::vector<std::string> more = Split(target);
    for (auto it = more.rbegin(); it != more.rend(); ++it) todo.push_back(std::move(*it));
  }
  return Join(done, "/");
}

StatusOr<std::string> HostRoot::ReadFile(std::string_view rel) const {
  ASSIGN_OR_RETURN(const std::string path, Resolve(rel));
  const int fd = ::open(Real(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("read", rel, errno);
  std::string data;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      if (err == EISDIR) {
        return InvalidArgumentError("read /" + std::string(rel) + ": is a directory");
      }
      return ErrnoStatus("read", rel, err);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > (1u << 20)) {
      ::close(fd);
      return InvalidArgumentError("read /" + std::string(rel) + ": larger than 1 MiB");
    }
  }
  ::close(fd);
  return data;
}

StatusOr<std::string> HostRoot::ReadTrimmed(std::string_view rel) const {
  ASSIGN_OR_RETURN(const std::string data, ReadFile(rel));
  return std::string(Trim(data));
}

bool HostRoot::Exists(std::string_view rel) const { return Resolve(rel).ok(); }

StatusOr<std::vector<std::string>> HostRoot::List(std::string_view rel) const {
  std::vector<std::string> names;
  StatusOr<std::string> path = Resolve(rel);
  if (!path.ok()) {
    if (path.status().code() == StatusCode::kNotFound) return names;
    return path.status();
  }
  DIR* dir = ::opendir(Real(*path).c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return names;
    return ErrnoStatus("list", rel, errno);
  }
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace xpu::discovery
