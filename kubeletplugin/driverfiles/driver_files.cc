#include "kubeletplugin/driverfiles/driver_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/driverfiles/internal/recipes.h"
#include "kubeletplugin/driverfiles/ld_cache.h"

namespace xpu::driverfiles {
namespace {

using internal::Recipe;

constexpr std::array<std::string_view, 6> kBinDirs = {
    "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"};
constexpr std::string_view kLdCache = "/etc/ld.so.cache";
// Every hook gets an environment of its own: a hook without one may inherit the container's
// (runc before 1.3), and with it an image's LD_PRELOAD.
constexpr std::string_view kHookEnv = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
constexpr int64_t kHookTimeoutSeconds = 30;

// The pieces one after the other (string, string_view or C string), in one allocation's worth.
template <typename... Pieces>
std::string Cat(const Pieces&... pieces) {
  std::string out;
  (out.append(pieces), ...);
  return out;
}

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// The host's view of one folder: its entries and, for symlinks, their targets.
class Host {
 public:
  explicit Host(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    if (root_ == "/") root_.clear();
  }

  std::string Real(std::string_view path) const { return root_ + std::string(path); }

  // lstat: a dangling link (a fixture's link into a build tree) still counts.
  bool Present(std::string_view path) const {
    struct stat st {};
    return ::lstat(Real(path).c_str(), &st) == 0;
  }
  bool IsDir(std::string_view path) const {
    struct stat st {};
    return ::stat(Real(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  // The link's target, or "" when `path` is not a symlink.
  std::string LinkTarget(const std::string& path) const {
    std::array<char, 4096> buf{};
    const ssize_t n = ::readlink(Real(path).c_str(), buf.data(), buf.size() - 1);
    return n <= 0 ? std::string() : std::string(buf.data(), static_cast<size_t>(n));
  }
  // Sorted entry names of a folder; empty when it is not one. Read once per folder.
  const std::vector<std::string>& List(const std::string& dir) {
    auto [it, fresh] = listed_.try_emplace(dir);
    if (!fresh) return it->second;
    if (DIR* d = ::opendir(Real(dir).c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string_view name = e->d_name;
        if (name != "." && name != "..") it->second.emplace_back(name);
      }
      ::closedir(d);
    }
    std::sort(it->second.begin(), it->second.end());
    return it->second;
  }

 private:
  std::string root_;
  std::map<std::string, std::vector<std::string>> listed_;
};

// Follows `name`'s links while they stay in `dir`: the file they end at (a link leaving the
// folder is mounted as it is, and the runtime follows it).
std::string EndInDir(Host& host, const std::string& dir, std::string name) {
  for (int hop = 0; hop < 8; ++hop) {
    const std::string target = host.LinkTarget(Cat(dir, "/", name));
    if (target.empty() || target.find('/') != std::string::npos) return name;
    if (!host.Present(Cat(dir, "/", target))) return name;
    name = target;
  }
  return name;
}

// What the recipe gave so far.
struct Found {
  std::vector<cdi::Mount> mounts;
  std::set<std::string> mounted;
  std::vector<std::string> ld_folders;
  std::vector<std::pair<std::string, std::string>> links;

  void Mount(const std::string& path, std::vector<std::string> options) {
    if (!mounted.insert(path).second) return;
    mounts.push_back(cdi::Mount{path, path, std::move(options), ""});
  }
  void ReadOnly(const std::string& path) { Mount(path, {"ro", "nosuid", "nodev", "bind"}); }
  void Folder(const std::string& dir) {
    if (std::find(ld_folders.begin(), ld_folders.end(), dir) == ld_folders.end()) {
      ld_folders.push_back(dir);
    }
  }
};

// Mounts the library dir/name (the file its links end at) and notes the folder's links to it
// that share its stem ("libcuda.so.1", "libcuda.so" for libcuda.so.570.158.01).
void AddLibrary(Host& host, const std::string& dir, const std::string& name, Found& found) {
  const std::string file = EndInDir(host, dir, name);
  found.ReadOnly(dir + "/" + file);
  found.Folder(dir);
  const std::string stem = file.substr(0, file.find(".so") + 3);
  for (const std::string& entry : host.List(dir)) {
    if (entry == file || !entry.starts_with(stem)) continue;
    const std::string target = host.LinkTarget(Cat(dir, "/", entry));
    if (target.empty() || target.find('/') != std::string::npos) continue;
    if (EndInDir(host, dir, entry) != file) continue;
    const std::pair<std::string, std::string> link{target, Cat(dir, "/", entry)};
    if (std::find(found.links.begin(), found.links.end(), link) == found.links.end()) {
      found.links.push_back(link);
    }
  }
}

// Folders of the loader cache's native entries named "<base>.so<...>", in cache order.
std::vector<std::string> CachedDirs(const std::vector<LdCacheEntry>& cache, std::string_view base) {
  std::vector<std::string> dirs;
  const std::string prefix = std::string(base) + ".so";
  for (const LdCacheEntry& e : cache) {
    if (e.flags != NativeLdCacheFlags() || !e.soname.starts_with(prefix)) continue;
    const size_t slash = e.path.rfind('/');
    if (slash == std::string::npos || slash == 0) continue;
    std::string dir = e.path.substr(0, slash);
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
  }
  return dirs;
}

std::string JoinDirs(const std::vector<std::string_view>& dirs) {
  std::string out;
  for (const std::string_view d : dirs) {
    if (!out.empty()) out += ", ";
    out += d;
  }
  return out;
}

// The version the recipe's files state, checked for agreement.
StatusOr<std::string> ReadVersion(const Recipe& recipe, const discovery::HostRoot& root) {
  std::string version;
  std::string first;
  for (const std::string_view file : recipe.version_files) {
    StatusOr<std::string> text = root.ReadFile(file.substr(1));
    if (!text.ok()) continue;
    const std::string v = ParseVersionFile(*text);
    if (v.empty()) continue;
    if (version.empty()) {
      version = v;
      first = std::string(file);
    } else if (v != version) {
      return FailedPreconditionError(
          Cat(recipe.vendor, " driver: ", first, " says ", version, " but ", file, " says ", v,
              ": the installed driver is not the one loaded (reload the module or reboot)"));
    }
  }
  return version;
}

Status AddVersionedLibraries(const Recipe& recipe, const std::string& version,
                             const std::vector<LdCacheEntry>& cache, Host& host, Found& found) {
  if (recipe.versioned_libs.empty()) return OkStatus();
  if (version.empty()) {
    return FailedPreconditionError(std::string(recipe.vendor) + " driver: no version in " +
                                   JoinDirs(recipe.version_files) +
                                   ", so its versioned libraries cannot be chosen");
  }
  for (const std::string_view base : recipe.versioned_libs) {
    const std::string name = std::string(base) + ".so." + version;
    std::vector<std::string> dirs = CachedDirs(cache, base);
    for (const std::string_view d : recipe.lib_dirs) {
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.emplace_back(d);
    }
    const auto at = std::find_if(dirs.begin(), dirs.end(), [&](const std::string& d) {
      return host.Present(Cat(d, "/", name));
    });
    if (at != dirs.end()) {
      AddLibrary(host, *at, name, found);
      continue;
    }
    const bool required = std::find(recipe.required_libs.begin(), recipe.required_libs.end(),
                                    base) != recipe.required_libs.end();
    if (required) {
      return FailedPreconditionError(Cat(
          recipe.vendor, " driver ", version, ": ", name, " is missing: not in the loader cache (",
          kLdCache, ") nor in ", JoinDirs(recipe.lib_dirs), " (a partial driver install?)"));
    }
  }
  return OkStatus();
}

void AddNamedLibraries(const Recipe& recipe, Host& host, Found& found) {
  for (const std::string_view lib : recipe.libs) {
    for (const std::string_view dir : recipe.lib_dirs) {
      if (host.Present(std::string(dir) + "/" + std::string(lib))) {
        AddLibrary(host, std::string(dir), std::string(lib), found);
        break;
      }
    }
  }
}

// The recipe's sockets (each where it is first found: /run, then /var/run) and IPC paths that
// exist on the host now. A daemon started or stopped after the plugin changes them.
std::vector<std::string> PresentIpcPaths(const Recipe& recipe, const Host& host) {
  std::vector<std::string> out;
  for (const std::string_view socket : recipe.sockets) {
    for (const std::string& path : {std::string(socket), "/var" + std::string(socket)}) {
      if (!host.Present(path)) continue;
      out.push_back(path);
      break;
    }
  }
  for (const std::string_view path : recipe.ipc_paths) {
    if (host.Present(path)) out.emplace_back(path);
  }
  return out;
}

Status AddPathsAndPrograms(const Recipe& recipe, const std::string& version, Host& host,
                           Found& found) {
  for (const std::string_view path : recipe.required_paths) {
    if (!host.Present(path)) {
      return FailedPreconditionError(std::string(recipe.vendor) + " driver: " + std::string(path) +
                                     " is missing (a partial driver install?)");
    }
  }
  for (const std::string_view path : recipe.paths) {
    if (host.Present(path)) found.ReadOnly(std::string(path));
  }
  for (const std::string_view program : recipe.binaries) {
    for (const std::string_view dir : kBinDirs) {
      const std::string path = std::string(dir) + "/" + std::string(program);
      if (host.Present(path)) {
        found.ReadOnly(path);
        break;
      }
    }
  }
  for (const std::string& path : PresentIpcPaths(recipe, host)) {
    found.Mount(path, {"nosuid", "nodev", "noexec", "bind"});  // connect() needs them writable
  }
  if (!recipe.firmware.empty() && !version.empty()) {
    std::string dir(recipe.firmware);
    dir.replace(dir.find("{version}"), 9, version);
    for (const std::string& entry : host.List(dir)) {
      if (entry.starts_with("gsp") && entry.ends_with(".bin")) found.ReadOnly(Cat(dir, "/", entry));
    }
  }
  for (const std::string_view dir : recipe.ld_folders) {
    if (host.IsDir(dir)) found.Folder(std::string(dir));
  }
  return OkStatus();
}

cdi::Hook LdCacheHook(const std::string& hook_path, const Found& found) {
  cdi::Hook hook;
  hook.hook_name = "createContainer";
  hook.path = hook_path;
  hook.args = {"xpu-cdi-hook", "ldcache"};
  for (const std::string& dir : found.ld_folders) {
    hook.args.insert(hook.args.end(), {"--folder", dir});
  }
  for (const auto& [target, link] : found.links) {
    hook.args.insert(hook.args.end(), {"--link", Cat(target, "::", link)});
  }
  hook.env = {std::string(kHookEnv)};
  hook.timeout = kHookTimeoutSeconds;
  return hook;
}

}  // namespace

Mode Policy::For(std::string_view vendor) const {
  const auto it = by_vendor.find(vendor);
  return it == by_vendor.end() ? fallback : it->second;
}

StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view flag) {
  Policy policy;
  const auto mode_of = [&](std::string_view word, std::string_view entry) -> StatusOr<Mode> {
    if (word == "auto") return Mode::kAuto;
    if (word == "off") return Mode::kOff;
    return InvalidArgumentError(std::string(flag) + ": \"" + std::string(entry) +
                                "\": the mode is auto or off");
  };
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string entry = Trim(text.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      ASSIGN_OR_RETURN(policy.fallback, mode_of(entry, entry));
      continue;
    }
    const std::string vendor = Trim(entry.substr(0, eq));
    if (internal::RecipeFor(vendor) == nullptr) {
      return InvalidArgumentError(Cat(flag, ": \"", entry, "\": unknown vendor \"", vendor,
                                      "\" (one of ", JoinDirs(Vendors()), ")"));
    }
    ASSIGN_OR_RETURN(policy.by_vendor[vendor], mode_of(Trim(entry.substr(eq + 1)), entry));
  }
  return policy;
}

std::string FormatPolicy(const Policy& policy) {
  std::string out = policy.fallback == Mode::kAuto ? "auto" : "off";
  for (const auto& [vendor, mode] : policy.by_vendor) {
    out += "," + vendor + "=" + (mode == Mode::kAuto ? "auto" : "off");
  }
  return out;
}

std::vector<std::string_view> Vendors() {
  std::vector<std::string_view> out;
  for (const Recipe& r : internal::Recipes()) out.push_back(r.vendor);
  return out;
}

std::string ParseVersionFile(std::string_view text) {
  // NVIDIA: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.158.01  Release Build ...", and
  // the open modules' "... Open Kernel Module for x86_64  570.158.01  Release Build ...".
  if (const size_t at = text.find("Kernel Module"); at != std::string_view::npos) {
    // The first word after it that starts with a digit ("x86_64" does not).
    size_t i = at;
    while (i < text.size() && text[i] != '\n') {
      while (i < text.size() && text[i] == ' ') ++i;
      size_t end = i;
      while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
      if (end > i && text[i] >= '0' && text[i] <= '9') return std::string(text.substr(i, end - i));
      i = end;
    }
    return "";
  }
  size_t line_start = 0;
  while (line_start < text.size()) {
    const size_t nl = std::min(text.find('\n', line_start), text.size());
    const std::string_view line = text.substr(line_start, nl - line_start);
    if (line.starts_with("Version=")) return Trim(line.substr(8));
    line_start = nl + 1;
  }
  return Trim(text);
}

std::string VersionKey(std::string_view vendor, const std::string& host_root) {
  const Recipe* recipe = internal::RecipeFor(vendor);
  if (recipe == nullptr) return "";
  const discovery::HostRoot root(host_root);
  std::string key;
  for (const std::string_view file : recipe->version_files) {
    key.append(file).push_back('\n');
    if (StatusOr<std::string> text = root.ReadFile(file.substr(1)); text.ok()) key += *text;
    key.push_back('\0');
  }
  for (const std::string& path : PresentIpcPaths(*recipe, Host(host_root))) {
    key.append(path).push_back('\0');
  }
  return key;
}

StatusOr<DriverFiles> FindDriverFiles(std::string_view vendor, const std::string& host_root,
                                      const std::string& hook_path) {
  DriverFiles out;
  out.vendor = std::string(vendor);
  const Recipe* recipe = internal::RecipeFor(vendor);
  if (recipe == nullptr) return out;
  const discovery::HostRoot root(host_root);
  ASSIGN_OR_RETURN(out.version, ReadVersion(*recipe, root));

  std::vector<LdCacheEntry> cache;
  if (StatusOr<std::string> bytes = root.ReadFile(kLdCache.substr(1)); bytes.ok()) {
    // An unreadable cache only costs the cache's hints: the library folders are searched next.
    if (StatusOr<std::vector<LdCacheEntry>> parsed = ParseLdCache(*bytes); parsed.ok()) {
      cache = std::move(parsed).value();
    }
  }
  Host host(host_root);
  Found found;
  RETURN_IF_ERROR(AddVersionedLibraries(*recipe, out.version, cache, host, found));
  AddNamedLibraries(*recipe, host, found);
  RETURN_IF_ERROR(AddPathsAndPrograms(*recipe, out.version, host, found));

  std::sort(found.mounts.begin(), found.mounts.end(), [](const cdi::Mount& a, const cdi::Mount& b) {
    return a.container_path < b.container_path;
  });
  out.mounted.assign(found.mounted.begin(), found.mounted.end());
  out.edits.mounts = std::move(found.mounts);
  if (!found.ld_folders.empty() || !found.links.empty()) {
    out.edits.hooks.push_back(LdCacheHook(hook_path, found));
  }
  out.ld_folders = std::move(found.ld_folders);
  out.links = std::move(found.links);
  return out;
}

}  // namespace xpu::driverfiles
