// The loader cache reader (kubeletplugin/driverfiles/ld_cache.h): /etc/ld.so.cache is read from
// the host (or a fixture) and any byte may be wrong in it.
//
// Invariants: parsing never crashes or reads past the input; what it accepts, written again
// with WriteLdCache and read back, gives the same entries.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "kubeletplugin/driverfiles/ld_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const xpu::StatusOr<std::vector<xpu::driverfiles::LdCacheEntry>> parsed =
      xpu::driverfiles::ParseLdCache(xpu::fuzz::AsText(data, size));
  if (!parsed.ok()) return 0;
  const xpu::StatusOr<std::vector<xpu::driverfiles::LdCacheEntry>> again =
      xpu::driverfiles::ParseLdCache(xpu::driverfiles::WriteLdCache(*parsed));
  FUZZ_CHECK(again.ok() && *again == *parsed, "a cache written again reads differently");
  return 0;
}
