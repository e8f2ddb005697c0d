// Comma-separated lists of names as users type them on command lines ("npu-0,npu-1"). Every
// item must be a non-empty name, given once: "npu-0,,npu-1" and "npu-0,npu-0" are mistakes to
// report, not to skip.
#ifndef XPU_BASE_NAME_LIST_H_
#define XPU_BASE_NAME_LIST_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu {

// The names of `csv` in order; "" is the empty list. Errors (invalid argument) name the list
// and the offending item: `empty name at position 2 of "npu-0,,npu-1"`,
// `"npu-0" is listed twice in "npu-0,npu-0"`.
StatusOr<std::vector<std::string>> SplitNameList(std::string_view csv);

// The inverse: `names` joined by `separator` ("npu-0,npu-1"; "" for none).
std::string JoinNames(const std::vector<std::string>& names, std::string_view separator = ",");

}  // namespace xpu

#endif  // XPU_BASE_NAME_LIST_H_
