// The loader's cache (/etc/ld.so.cache) as glibc's ldconfig writes it: which folder holds each
// shared library the dynamic loader finds by name. The driver-file lookup reads the host's cache
// first, as the vendors' own container tooling does (docs/kubelet-plugin.md, "Driver files").
//
// Format (glibc's dl-cache.h, restated in docs/kubelet-plugin.md): the "new" layout, a 48-byte
// header "glibc-ld.so.cache" "1.1", the entry count and the string table's length, then 24-byte
// entries {int32 flags, uint32 key, uint32 value, uint32 osversion, uint64 hwcap} whose key (the
// soname) and value (the path) are offsets from the start of that header. Older caches put an
// "ld.so-1.7.0" table (12-byte entries) first and the new layout after it, 8-byte aligned; both
// are read. Pure: bytes in, entries out.
#ifndef XPU_KUBELETPLUGIN_DRIVERFILES_LD_CACHE_H_
#define XPU_KUBELETPLUGIN_DRIVERFILES_LD_CACHE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::driverfiles {

// Entry flags (glibc's ldconfig.h): the library type in the low byte, the ABI in the next.
inline constexpr int32_t kLdCacheElfLibc6 = 0x0003;
inline constexpr int32_t kLdCacheX8664 = 0x0300;
inline constexpr int32_t kLdCacheAarch64 = 0x0a00;

struct LdCacheEntry {
  std::string soname;  // "libcuda.so.1"
  std::string path;    // "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  int32_t flags = 0;
  friend bool operator==(const LdCacheEntry&, const LdCacheEntry&) = default;
};

// The entries of a cache file, in file order. A file that is not an ld.so cache, or one whose
// counts or offsets run past its end, is an InvalidArgument error naming what is wrong; glibc
// hwcaps subdirectory entries are kept like the others.
StatusOr<std::vector<LdCacheEntry>> ParseLdCache(std::string_view bytes);

// The flags of a 64-bit glibc library of the machine this is built for (x86-64 or aarch64).
int32_t NativeLdCacheFlags();

// The bytes of a new-format cache holding `entries` (with their own flags), as ldconfig lays it
// out. For tests and fixtures.
std::string WriteLdCache(const std::vector<LdCacheEntry>& entries);

}  // namespace xpu::driverfiles

#endif  // XPU_KUBELETPLUGIN_DRIVERFILES_LD_CACHE_H_
