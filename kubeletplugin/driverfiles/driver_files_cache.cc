#include "kubeletplugin/driverfiles/driver_files_cache.h"

namespace xpu::driverfiles {

DriverFilesCache::DriverFilesCache(std::string host_root, std::string hook_path, Policy policy)
    : host_root_(std::move(host_root)),
      hook_path_(std::move(hook_path)),
      policy_(std::move(policy)) {}

StatusOr<std::shared_ptr<const DriverFiles>> DriverFilesCache::Get(std::string_view vendor) {
  if (policy_.For(vendor) == Mode::kOff) return std::shared_ptr<const DriverFiles>();
  std::string key = VersionKey(vendor, host_root_);
  MutexLock lock(mu_);
  if (const auto it = by_vendor_.find(vendor); it != by_vendor_.end() && it->second.key == key) {
    return it->second.files;
  }
  // Located under the lock: prepares are serialised by the driver anyway, and two callers never
  // walk the same folders twice.
  ++lookups_;
  ASSIGN_OR_RETURN(DriverFiles files, FindDriverFiles(vendor, host_root_, hook_path_));
  auto shared = std::make_shared<const DriverFiles>(std::move(files));
  by_vendor_[std::string(vendor)] = Entry{std::move(key), shared};
  return std::shared_ptr<const DriverFiles>(shared);
}

uint64_t DriverFilesCache::lookups() const {
  MutexLock lock(mu_);
  return lookups_;
}

}  // namespace xpu::driverfiles
