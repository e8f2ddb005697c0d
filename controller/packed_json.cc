#include "controller/packed_json.h"

#include <zlib.h>

namespace xpu::controller {

PackedJson::PackedJson(std::string_view text) : text_size_(text.size()) {
  uLongf bound = compressBound(static_cast<uLong>(text.size()));
  packed_.resize(bound);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): zlib's byte pointers
  const int rc = compress2(reinterpret_cast<Bytef*>(packed_.data()), &bound,
                           // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
                           reinterpret_cast<const Bytef*>(text.data()),
                           static_cast<uLong>(text.size()), Z_BEST_SPEED);
  if (rc != Z_OK) {  // only Z_MEM_ERROR is possible here: keep the text as it is, marked
    packed_.assign(text);
    deflated_ = false;
    return;
  }
  packed_.resize(bound);
  packed_.shrink_to_fit();
}

std::string PackedJson::Text() const {
  if (!deflated_) return packed_;
  std::string text(text_size_, '\0');
  uLongf size = static_cast<uLongf>(text_size_);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): zlib's byte pointers
  const int rc = uncompress(reinterpret_cast<Bytef*>(text.data()), &size,
                            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
                            reinterpret_cast<const Bytef*>(packed_.data()),
                            static_cast<uLong>(packed_.size()));
  if (rc != Z_OK || size != text_size_) return {};
  return text;
}

}  // namespace xpu::controller
