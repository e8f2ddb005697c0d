#include "base/text.h"

namespace xpu {

std::string Abbreviate(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so that no character is split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
  return std::string(text.substr(0, cut)) + " ... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace xpu
