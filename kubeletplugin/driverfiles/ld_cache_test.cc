#include "kubeletplugin/driverfiles/ld_cache.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"

namespace xpu::driverfiles {
namespace {

using xpu::testing::ReadText;

const int32_t kNative = kLdCacheElfLibc6 | kLdCacheX8664;

TEST_CASE("ld cache: what we write reads back, entry for entry") {
  const std::vector<LdCacheEntry> entries = {
      {"libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", kNative},
      {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", kNative},
      {"libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
       kLdCacheElfLibc6 | kLdCacheAarch64}};
  StatusOr<std::vector<LdCacheEntry>> parsed = ParseLdCache(WriteLdCache(entries));
  REQUIRE_OK(parsed);
  CHECK(*parsed == entries);
}

// glibc's ldconfig and the machine's own cache: Debian's essential libc-bin has both.
TEST_CASE("ld cache: glibc's ldconfig reads the cache we write") {
  testing::TempDir dir;
  const std::string path = dir.path() + "/ld.so.cache";
  std::ofstream(path, std::ios::binary)
      << WriteLdCache({{"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", kNative}});
  const std::string out_path = dir.path() + "/out";
  REQUIRE(std::system(("/sbin/ldconfig -p -C " + path + " >" + out_path).c_str()) == 0);
  const std::string out = ReadText(out_path);
  CHECK(out.find("1 libs found") != std::string::npos);
  CHECK(out.find("libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1") !=
        std::string::npos);
}

TEST_CASE("ld cache: this machine's own cache lists libc for its ABI") {
  const std::string bytes = ReadText("/etc/ld.so.cache");
  StatusOr<std::vector<LdCacheEntry>> parsed = ParseLdCache(bytes);
  REQUIRE_OK(parsed);
  bool libc = false;
  for (const LdCacheEntry& e : *parsed) {
    libc = libc || (e.soname == "libc.so.6" && e.flags == NativeLdCacheFlags() &&
                    e.path.ends_with("/libc.so.6"));
  }
  CHECK(libc);
}

TEST_CASE("ld cache: an old-format table before the new one is skipped") {
  std::string old = "ld.so-1.7.0";
  old.push_back('\0');
  const uint32_t n = 1;
  old.append(reinterpret_cast<const char*>(&n), 4);
  old.append(12, '\0');                        // one old entry
  old.append((8 - old.size() % 8) % 8, '\0');  // aligned to 8
  const std::string fresh = WriteLdCache({{"libx.so.1", "/lib/libx.so.1", kNative}});
  // The new table's string offsets count from its own header.
  StatusOr<std::vector<LdCacheEntry>> parsed = ParseLdCache(old + fresh);
  REQUIRE_OK(parsed);
  REQUIRE(parsed->size() == 1);
  CHECK((*parsed)[0].path == "/lib/libx.so.1");
}

TEST_CASE("ld cache: bad input is refused with what is wrong") {
  CHECK(ParseLdCache("").status().message().find("not an ld.so cache") != std::string::npos);
  CHECK(ParseLdCache("hello world, this is not a cache at all.....")
            .status()
            .message()
            .find("not an ld.so cache") != std::string::npos);
  std::string cut = WriteLdCache({{"libx.so.1", "/lib/libx.so.1", kNative}});
  CHECK(ParseLdCache(cut.substr(0, 30)).status().message().find("cut short") != std::string::npos);
  CHECK(ParseLdCache(cut.substr(0, 60)).status().message().find("entries") != std::string::npos);
  // A string offset past the end.
  std::string bad = cut;
  const uint32_t far = 100000;
  bad.replace(48 + 4, 4, std::string(reinterpret_cast<const char*>(&far), 4));
  CHECK(ParseLdCache(bad).status().message().find("past the end") != std::string::npos);
  // An unterminated string.
  CHECK(ParseLdCache(cut.substr(0, cut.size() - 1)).status().message().find("not terminated") !=
        std::string::npos);
}

}  // namespace
}  // namespace xpu::driverfiles
