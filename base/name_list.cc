#include "base/name_list.h"

#include <algorithm>
#include <set>

namespace xpu {

StatusOr<std::vector<std::string>> SplitNameList(std::string_view csv) {
  std::vector<std::string> names;
  if (csv.empty()) return names;
  std::set<std::string_view> seen;
  size_t position = 0;
  for (size_t start = 0; start <= csv.size();) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    const std::string_view item = csv.substr(start, comma - start);
    start = comma + 1;
    ++position;
    const std::string quoted = "\"" + std::string(csv) + "\"";
    if (item.empty()) {
      return InvalidArgumentError("empty name at position " + std::to_string(position) + " of " +
                                  quoted);
    }
    if (!seen.insert(item).second) {
      return InvalidArgumentError("\"" + std::string(item) + "\" is listed twice in " + quoted);
    }
    names.emplace_back(item);
  }
  return names;
}

std::string JoinNames(const std::vector<std::string>& names, std::string_view separator) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out.append(separator);
    out.append(name);
  }
  return out;
}

}  // namespace xpu
