#include "kubeletplugin/discovery/versions.h"

#include <cctype>
#include <string>
#include <vector>

#include "api/validation.h"

namespace xpu::discovery {
namespace {

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "04" -> "4", "0" -> "0".
std::string StripZeros(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  return std::string(digits);
}

// A pre-release identifier: [0-9a-z-]+, numeric ones without leading zeros.
std::string Identifier(std::string_view part) {
  std::string out;
  for (char c : part) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-') out += static_cast<char>(std::tolower(u));
  }
  return IsDigits(out) ? StripZeros(out) : out;
}

}  // namespace

std::string NormalizeSemver(std::string_view raw) {
  // The last whitespace-separated word that starts with a digit.
  std::string_view word;
  size_t i = 0;
  while (i < raw.size()) {
    while (i < raw.size() && std::isspace(static_cast<unsigned char>(raw[i]))) ++i;
    const size_t start = i;
    while (i < raw.size() && !std::isspace(static_cast<unsigned char>(raw[i]))) ++i;
    if (i > start && std::isdigit(static_cast<unsigned char>(raw[start]))) {
      word = raw.substr(start, i - start);
    }
  }
  word = word.substr(0, word.find('+'));  // build metadata is not kept
  if (word.empty()) return "";
  // Leading numeric components separated by '.'; the rest is the pre-release.
  std::vector<std::string> numbers;
  size_t pos = 0;
  while (pos < word.size()) {
    size_t end = pos;
    while (end < word.size() && std::isdigit(static_cast<unsigned char>(word[end]))) ++end;
    if (end == pos) break;
    const bool ends_component = end == word.size() || word[end] == '.' || word[end] == '-';
    if (!ends_component) break;  // "1rc2": not a number component
    numbers.push_back(StripZeros(word.substr(pos, end - pos)));
    pos = end;
    if (pos < word.size() && word[pos] == '.') {
      ++pos;
      continue;
    }
    break;
  }
  if (numbers.empty()) return "";
  std::string rest(word.substr(pos));
  if (!rest.empty() && (rest.front() == '-' || rest.front() == '.')) rest.erase(0, 1);
  while (numbers.size() < 3) numbers.emplace_back("0");
  std::string out = numbers[0] + "." + numbers[1] + "." + numbers[2];
  std::string pre;
  size_t start = 0;
  while (start <= rest.size() && !rest.empty()) {
    const size_t dot = std::min(rest.find('.', start), rest.size());
    const std::string id = Identifier(std::string_view{rest}.substr(start, dot - start));
    if (!id.empty()) pre += (pre.empty() ? "" : ".") + id;
    start = dot + 1;
  }
  if (!pre.empty()) out += "-" + pre;
  // Only what the API takes as a version attribute (at most 64 bytes, numbers within 64 bits):
  // anything else would make the inventory and the slices invalid, so it is no version at all.
  if (!api::ValidateVersionAttribute(out, "version").ok()) return "";
  return out;
}

}  // namespace xpu::discovery
