// The driver files of each vendor, located once per installed driver version and shared by every
// claim prepared meanwhile: Get reads only the vendor's version files and looks for its daemons'
// sockets (VersionKey), and locates the files again when they changed (a driver upgraded under
// the running plugin, a daemon started or stopped). Claims prepared
// before keep the spec they were given (the checkpoint records it) until they are unprepared.
// An error (a partial install) is not kept: the next Get looks again. Thread-safe.
#ifndef XPU_KUBELETPLUGIN_DRIVERFILES_DRIVER_FILES_CACHE_H_
#define XPU_KUBELETPLUGIN_DRIVERFILES_DRIVER_FILES_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"
#include "kubeletplugin/driverfiles/driver_files.h"

namespace xpu::driverfiles {

class DriverFilesCache {
 public:
  DriverFilesCache(std::string host_root, std::string hook_path, Policy policy);

  // The vendor's files; null when the policy turns them off for it.
  StatusOr<std::shared_ptr<const DriverFiles>> Get(std::string_view vendor) EXCLUDES(mu_);

  const Policy& policy() const { return policy_; }
  const std::string& hook_path() const { return hook_path_; }
  // How many times files were located (not served from the cache).
  uint64_t lookups() const EXCLUDES(mu_);

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const DriverFiles> files;
  };
  const std::string host_root_;
  const std::string hook_path_;
  const Policy policy_;
  mutable Mutex mu_;
  std::map<std::string, Entry, std::less<>> by_vendor_ GUARDED_BY(mu_);
  uint64_t lookups_ GUARDED_BY(mu_) = 0;
};

}  // namespace xpu::driverfiles

#endif  // XPU_KUBELETPLUGIN_DRIVERFILES_DRIVER_FILES_CACHE_H_
