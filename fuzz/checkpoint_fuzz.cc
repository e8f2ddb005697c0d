// The plugin's checkpoint file (kubeletplugin/checkpoint/checkpoint.h), read at every start. The
// input is the file; when it is JSON with a "data" member, it is also decoded with its checksum
// recomputed, so that the fuzzer gets past the CRC to the record itself.
//
// Invariant: a checkpoint that decodes encodes to a file that decodes to an equal checkpoint and
// encodes the same.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz/fuzz_util.h"
#include "kubeletplugin/checkpoint/checkpoint.h"

namespace {

namespace checkpoint = ::xpu::checkpoint;

void DecodeAndRoundTrip(const std::string& text) {
  xpu::StatusOr<checkpoint::Checkpoint> cp = checkpoint::Decode(text, "fuzz");
  if (!cp.ok()) return;
  const std::string encoded = checkpoint::Encode(*cp);
  xpu::StatusOr<checkpoint::Checkpoint> again = checkpoint::Decode(encoded, "fuzz");
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\n" + encoded);
  FUZZ_CHECK(*again == *cp, encoded);
  FUZZ_CHECK(checkpoint::Encode(*again) == encoded, encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(xpu::fuzz::AsText(data, size));
  DecodeAndRoundTrip(text);
  std::optional<nlohmann::json> doc = xpu::fuzz::ParseJson(text);
  if (!doc || !doc->is_object() || !doc->contains("data")) return 0;
  char checksum[9];
  std::snprintf(checksum, sizeof(checksum), "%08x",
                checkpoint::Crc32c(xpu::fuzz::Dump((*doc)["data"])));
  (*doc)["checksum"] = checksum;
  DecodeAndRoundTrip(xpu::fuzz::Dump(*doc));
  return 0;
}
