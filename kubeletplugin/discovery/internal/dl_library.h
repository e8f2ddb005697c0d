// A dlopen'ed vendor library: found in a list of folders, then on the loader's default path, with
// RTLD_NOW | RTLD_LOCAL; closed when the object goes away. Symbols are looked up by name into typed
// function pointers. Not thread-safe; one probe owns one object.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_DL_LIBRARY_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_DL_LIBRARY_H_

#include <string>
#include <vector>

#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

class DlLibrary {
 public:
  DlLibrary() = default;
  ~DlLibrary();
  DlLibrary(const DlLibrary&) = delete;
  DlLibrary& operator=(const DlLibrary&) = delete;

  // Tries `<dir>/<file_name>` for each dir in order (skipping files that do not exist), then the
  // bare `file_name`. On failure returns false and sets *error to a message naming every place
  // tried and the loader's last complaint.
  bool Open(const std::string& file_name, const std::vector<std::string>& dirs, std::string* error);

  // The file dlopen loaded (from dlinfo/dladdr when it came from the default path).
  const std::string& path() const { return path_; }
  bool is_open() const { return handle_ != nullptr; }

  // The address of `name`, or nullptr.
  void* Symbol(const char* name) const;

  // Looks `name` up into *fn; on a miss appends `name` to *missing and leaves *fn null.
  template <typename Fn>
  void Bind(const char* name, Fn* fn, std::vector<std::string>* missing) const {
    *fn = reinterpret_cast<Fn>(Symbol(name));  // NOLINT(google-readability-casting): dlsym
    if (*fn == nullptr) missing->emplace_back(name);
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

// "load <path>: missing required symbol(s) a, b": why a library without `missing` is unusable.
std::string MissingSymbolsError(const std::string& path, const std::vector<std::string>& missing);

// Opens `file_name` (found in `dirs`, see DlLibrary::Open) into `lib` for the library called
// `name` ("nvml"), binds `api` with `bind(lib, api, &optional_missing)`, which returns the
// required symbols missing, and calls `init(api)`, which returns an error text ("" on success).
// status->loaded is set when all three went well; otherwise status->error says why.
template <typename Api, typename BindFn, typename InitFn>
void OpenVendorLibrary(const char* name, const std::string& file_name,
                       const std::vector<std::string>& dirs, DlLibrary* lib, Api* api,
                       LibraryStatus* status, BindFn bind, InitFn init) {
  status->name = name;
  if (!lib->Open(file_name, dirs, &status->error)) return;
  status->path = lib->path();
  const std::vector<std::string> required_missing = bind(*lib, api, &status->missing_symbols);
  if (!required_missing.empty()) {
    status->error = MissingSymbolsError(status->path, required_missing);
    return;
  }
  status->error = init(api);
  status->loaded = status->error.empty();
}

// A vendor library's facts: the library opened with `open` (OpenNvml, OpenDcmi) into a DlLibrary
// and an Api of this call, and, when it loaded, the rest read with `read(api, facts)`;
// facts.library says how opening went. The library is closed again on return.
template <typename Facts, typename Api>
Facts ProbeLibrary(const std::vector<std::string>& lib_dirs,
                   void (*open)(const std::vector<std::string>&, DlLibrary*, Api*, LibraryStatus*),
                   void (*read)(const Api& api, Facts& facts)) {
  Facts facts;
  DlLibrary lib;
  Api api;
  open(lib_dirs, &lib, &api, &facts.library);
  if (facts.library.loaded) read(api, facts);
  return facts;
}

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_DL_LIBRARY_H_
