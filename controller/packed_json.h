// A JSON text kept deflated (zlib) until it is read. The controller holds one stored form per
// NodeInventory and ResourceSlice of the fleet and decodes one only when a pool is synced or a
// gang offer is computed; deflated, an 18 kB inventory of an 8-GPU node takes about 2 kB
// (docs/performance.md, "Controller": where the memory goes). Immutable once made; copying it
// copies the deflated bytes.
#ifndef XPU_CONTROLLER_PACKED_JSON_H_
#define XPU_CONTROLLER_PACKED_JSON_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace xpu::controller {

class PackedJson {
 public:
  PackedJson() = default;
  // Deflates `text` (the fastest level: inflating is what a sync pays for, and both are cheap
  // beside parsing).
  explicit PackedJson(std::string_view text);

  // The text as it was given. An empty text when the packed bytes do not inflate, which the
  // caller's parser reports as malformed (it cannot happen to bytes this class deflated).
  std::string Text() const;
  // The text's length, and what is kept for it.
  size_t text_size() const { return text_size_; }
  size_t packed_size() const { return packed_.size(); }

 private:
  std::string packed_;
  size_t text_size_ = 0;
  bool deflated_ = true;  // false only when deflating failed (no memory): the text as given
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_PACKED_JSON_H_
