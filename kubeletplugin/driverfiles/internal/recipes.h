// Each vendor's recipe of driver files: the facts FindDriverFiles (driver_files.h) works from.
// Where each fact comes from is in docs/kubelet-plugin.md ("Driver files").
#ifndef XPU_KUBELETPLUGIN_DRIVERFILES_INTERNAL_RECIPES_H_
#define XPU_KUBELETPLUGIN_DRIVERFILES_INTERNAL_RECIPES_H_

#include <string_view>
#include <vector>

namespace xpu::driverfiles::internal {

// Written as designated initializers: every field but the vendor may be left out.
struct Recipe {
  std::string_view vendor;
  // Host files stating the driver's version, in order: the first that exists gives it, and every
  // other that exists must state the same.
  std::vector<std::string_view> version_files{};
  // Libraries named "<name>.so.<version>" (the name without ".so"): looked up in the host's
  // loader cache, then in lib_dirs. The required ones missing is a partial install.
  std::vector<std::string_view> versioned_libs{};
  std::vector<std::string_view> required_libs{};
  // Libraries by exact file name ("libcndev.so"), looked up in lib_dirs; the file their links end
  // at is mounted.
  std::vector<std::string_view> libs{};
  std::vector<std::string_view> lib_dirs{};
  // Programs looked up in the usual bin and sbin folders.
  std::vector<std::string_view> binaries{};
  // Files or folders mounted as they are when present; the required ones must be.
  std::vector<std::string_view> paths{};
  std::vector<std::string_view> required_paths{};
  // Unix sockets under /run (also looked for under /var/run), mounted writable.
  std::vector<std::string_view> sockets{};
  // Other places a client talks to a host daemon through (NVIDIA's MPS pipe folder), mounted
  // writable when present.
  std::vector<std::string_view> ipc_paths{};
  // A firmware folder with "{version}" in it: its gsp*.bin files are mounted.
  std::string_view firmware{};
  // Folders (in the container, as on the host) the hook adds to the loader cache when present;
  // the folders of the libraries found are added too.
  std::vector<std::string_view> ld_folders{};
};

// The recipe of `vendor`, or null.
const Recipe* RecipeFor(std::string_view vendor);
const std::vector<Recipe>& Recipes();

}  // namespace xpu::driverfiles::internal

#endif  // XPU_KUBELETPLUGIN_DRIVERFILES_INTERNAL_RECIPES_H_
