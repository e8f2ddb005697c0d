#include "kubeletplugin/driverfiles/ld_cache.h"

#include <cstring>

namespace xpu::driverfiles {
namespace {

constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";  // magic + version, no NUL
constexpr std::string_view kOldMagic = "ld.so-1.7.0";           // followed by a NUL
constexpr size_t kNewHeader = 48;
constexpr size_t kNewEntry = 24;
constexpr size_t kOldHeader = 16;  // magic with its NUL (12), then uint32 nlibs
constexpr size_t kOldEntry = 12;

// Little-endian reads at `at`; the caller has checked the bounds. ld.so.cache is in the host's
// byte order, and the hosts we serve (x86-64, aarch64) are little-endian.
uint32_t U32(std::string_view b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

// The NUL-terminated string at `offset` of `b`.
StatusOr<std::string> StringAt(std::string_view b, uint32_t offset, std::string_view what) {
  if (offset >= b.size()) {
    return InvalidArgumentError(std::string(what) + " offset " + std::to_string(offset) +
                                " is past the end of the cache (" + std::to_string(b.size()) +
                                " bytes)");
  }
  const size_t end = b.find('\0', offset);
  if (end == std::string_view::npos) {
    return InvalidArgumentError(std::string(what) + " at offset " + std::to_string(offset) +
                                " is not terminated");
  }
  return std::string(b.substr(offset, end - offset));
}

// Where the new-format table starts: 0, or after an old-format table.
StatusOr<size_t> NewTableStart(std::string_view b) {
  if (b.starts_with(kNewMagic)) return size_t{0};
  if (b.size() < kOldHeader || !b.starts_with(kOldMagic) || b[kOldMagic.size()] != '\0') {
    return InvalidArgumentError("not an ld.so cache (no \"glibc-ld.so.cache1.1\" header)");
  }
  const uint64_t old_libs = U32(b, kOldMagic.size() + 1);
  const uint64_t end = kOldHeader + old_libs * kOldEntry;
  const uint64_t aligned = (end + 7) / 8 * 8;
  if (aligned >= b.size() || !b.substr(aligned).starts_with(kNewMagic)) {
    return InvalidArgumentError("an old-format ld.so cache without the new table (glibc < 2.3)");
  }
  return static_cast<size_t>(aligned);
}

}  // namespace

StatusOr<std::vector<LdCacheEntry>> ParseLdCache(std::string_view bytes) {
  ASSIGN_OR_RETURN(const size_t start, NewTableStart(bytes));
  const std::string_view b = bytes.substr(start);
  if (b.size() < kNewHeader) {
    return InvalidArgumentError("the cache header is cut short (" + std::to_string(b.size()) +
                                " bytes)");
  }
  const uint64_t count = U32(b, 20);
  if (kNewHeader + count * kNewEntry > b.size()) {
    return InvalidArgumentError("the cache says it has " + std::to_string(count) +
                                " entries, more than its " + std::to_string(b.size()) +
                                " bytes hold");
  }
  std::vector<LdCacheEntry> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = kNewHeader + i * kNewEntry;
    LdCacheEntry e;
    std::memcpy(&e.flags, b.data() + at, sizeof e.flags);
    const std::string where = "entry " + std::to_string(i);
    ASSIGN_OR_RETURN(e.soname, StringAt(b, U32(b, at + 4), where + " name"));
    ASSIGN_OR_RETURN(e.path, StringAt(b, U32(b, at + 8), where + " path"));
    out.push_back(std::move(e));
  }
  return out;
}

int32_t NativeLdCacheFlags() {
#if defined(__aarch64__)
  return kLdCacheElfLibc6 | kLdCacheAarch64;
#else
  return kLdCacheElfLibc6 | kLdCacheX8664;
#endif
}

std::string WriteLdCache(const std::vector<LdCacheEntry>& entries) {
  std::string strings;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  const size_t table_end = kNewHeader + entries.size() * kNewEntry;
  for (const LdCacheEntry& e : entries) {
    const auto key = static_cast<uint32_t>(table_end + strings.size());
    strings.append(e.soname).push_back('\0');
    const auto value = static_cast<uint32_t>(table_end + strings.size());
    strings.append(e.path).push_back('\0');
    offsets.emplace_back(key, value);
  }
  std::string out(kNewMagic);
  PutU32(out, static_cast<uint32_t>(entries.size()));
  PutU32(out, static_cast<uint32_t>(strings.size()));
  out.push_back('\x02');                   // flags: little-endian
  out.append(3, '\0');                     // padding
  out.append(4 * sizeof(uint32_t), '\0');  // extension offset (none) and unused words
  for (size_t i = 0; i < entries.size(); ++i) {
    PutU32(out, static_cast<uint32_t>(entries[i].flags));
    PutU32(out, offsets[i].first);
    PutU32(out, offsets[i].second);
    PutU32(out, 0);       // osversion
    out.append(8, '\0');  // hwcap
  }
  return out + strings;
}

}  // namespace xpu::driverfiles
