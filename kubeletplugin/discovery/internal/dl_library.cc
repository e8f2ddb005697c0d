#include "kubeletplugin/discovery/internal/dl_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

namespace xpu::discovery {

DlLibrary::~DlLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

bool DlLibrary::Open(const std::string& file_name, const std::vector<std::string>& dirs,
                     std::string* error) {
  std::string tried;
  std::string last_error;
  bool present_but_broken = false;
  auto try_open = [&](const std::string& candidate) {
    dlerror();  // clear
    handle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) return true;
    const char* why = dlerror();
    last_error = why != nullptr ? why : "unknown dlopen error";
    return false;
  };
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    std::string candidate = dir;
    if (candidate.back() != '/') candidate += '/';
    candidate += file_name;
    tried += tried.empty() ? dir : ", " + dir;
    // A folder without the file is the normal case; only a file that is there but will not load
    // (wrong architecture, missing dependency) is worth the loader's message.
    if (access(candidate.c_str(), F_OK) != 0) continue;
    if (try_open(candidate)) {
      path_ = candidate;
      return true;
    }
    present_but_broken = true;
  }
  const std::string broken_error = last_error;  // from a file that is there but will not load
  if (try_open(file_name)) {
    // Where the loader found it: the link map names the file.
    link_map* map = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      path_ = map->l_name;
    } else {
      path_ = file_name;
    }
    return true;
  }
  tried += tried.empty() ? "the loader path" : " or the loader path";
  *error = "load " + file_name + ": " +
           (present_but_broken ? "cannot load from " : "not found in ") + tried + " (" +
           (present_but_broken ? broken_error : last_error) + ")";
  return false;
}

void* DlLibrary::Symbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

std::string MissingSymbolsError(const std::string& path, const std::vector<std::string>& missing) {
  std::string error = "load " + path + ": missing required symbol";
  if (missing.size() > 1) error += "s";
  for (size_t i = 0; i < missing.size(); ++i) error += (i == 0 ? " " : ", ") + missing[i];
  return error;
}

}  // namespace xpu::discovery
