// Text shown back to callers: input echoed in an error must not grow the answer without bound.
#ifndef XPU_BASE_TEXT_H_
#define XPU_BASE_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace xpu {

// `text` when it has at most `max` bytes; else its first `max` bytes and " ... (N bytes)",
// N being the whole length. Cuts at a byte boundary, never inside a UTF-8 sequence.
std::string Abbreviate(std::string_view text, size_t max);

}  // namespace xpu

#endif  // XPU_BASE_TEXT_H_
