#include "e2e/kubesim/http_query.h"

namespace xpu::kubesim {
namespace {
namespace http_query_cc {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace http_query_cc
}  // namespace

std::string PercentDecode(std::string_view s) {
  using http_query_cc::HexDigit;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 &&
               HexDigit(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view q) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= q.size()) {
    const auto amp = q.find('&', start);
    const auto part =
        q.substr(start, amp == std::string_view::npos ? q.size() - start : amp - start);
    if (!part.empty()) {
      const auto eq = part.find('=');
      out[PercentDecode(part.substr(0, eq))] =
          eq == std::string_view::npos ? "" : PercentDecode(part.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return out;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < path.size()) {
    const auto slash = path.find('/', start);
    const auto seg =
        path.substr(start, slash == std::string_view::npos ? path.size() - start : slash - start);
    if (!seg.empty()) out.push_back(PercentDecode(seg));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

}  // namespace xpu::kubesim
