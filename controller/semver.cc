#include "controller/semver.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/text.h"

namespace xpu::controller {
namespace {

struct Semver {
  uint64_t major = 0, minor = 0, patch = 0;
  std::vector<std::string> prerelease;
};

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsIdentifierChars(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Strict semver 2.0.0; `why` says what is wrong.
std::optional<Semver> ParseSemver(std::string_view text, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<Semver> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  std::string_view core = text;
  std::string_view pre;
  std::string_view build;
  bool has_pre = false;
  if (size_t plus = core.find('+'); plus != std::string_view::npos) {
    build = core.substr(plus + 1);
    core = core.substr(0, plus);
    for (auto id : Split(build, '.')) {
      if (!IsIdentifierChars(id)) return fail("bad build metadata \"" + std::string(build) + "\"");
    }
  }
  if (size_t dash = core.find('-'); dash != std::string_view::npos) {
    pre = core.substr(dash + 1);
    core = core.substr(0, dash);
    has_pre = true;
  }
  const auto numbers = Split(core, '.');
  if (numbers.size() != 3) return fail("expected MAJOR.MINOR.PATCH");
  Semver v;
  uint64_t* out[] = {&v.major, &v.minor, &v.patch};
  for (size_t i = 0; i < 3; ++i) {
    const std::string_view n = numbers[i];
    if (!IsDigits(n)) return fail("expected MAJOR.MINOR.PATCH of non-negative integers");
    if (n.size() > 1 && n[0] == '0') return fail("leading zero in \"" + std::string(n) + "\"");
    auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), *out[i]);
    if (ec != std::errc() || ptr != n.data() + n.size()) return fail("number too large");
  }
  if (has_pre) {
    for (auto id : Split(pre, '.')) {
      if (!IsIdentifierChars(id)) return fail("bad pre-release \"" + std::string(pre) + "\"");
      if (IsDigits(id) && id.size() > 1 && id[0] == '0') {
        return fail("leading zero in pre-release identifier \"" + std::string(id) + "\"");
      }
      v.prerelease.emplace_back(id);
    }
  }
  return v;
}

// Precedence per semver.org §11: build metadata is ignored.
int CompareIdentifiers(const std::string& a, const std::string& b) {
  const bool an = IsDigits(a);
  const bool bn = IsDigits(b);
  if (an && bn) {
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
  }
  if (an != bn) return an ? -1 : 1;  // numeric identifiers have lower precedence
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

int Compare(const Semver& a, const Semver& b) {
  for (auto [x, y] :
       {std::pair{a.major, b.major}, std::pair{a.minor, b.minor}, std::pair{a.patch, b.patch}}) {
    if (x != y) return x < y ? -1 : 1;
  }
  if (a.prerelease.empty() || b.prerelease.empty()) {
    if (a.prerelease.empty() && b.prerelease.empty()) return 0;
    return a.prerelease.empty() ? 1 : -1;  // a pre-release orders before its release
  }
  const size_t n = std::min(a.prerelease.size(), b.prerelease.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = CompareIdentifiers(a.prerelease[i], b.prerelease[i]); c != 0) return c;
  }
  if (a.prerelease.size() == b.prerelease.size()) return 0;
  return a.prerelease.size() < b.prerelease.size() ? -1 : 1;
}

enum class Op { kGe, kGt, kLe, kLt, kEq };

struct Comparator {
  Op op = Op::kEq;
  Semver version;
};

bool Holds(const Comparator& c, const Semver& v) {
  const int cmp = Compare(v, c.version);
  switch (c.op) {
    case Op::kGe:
      return cmp >= 0;
    case Op::kGt:
      return cmp > 0;
    case Op::kLe:
      return cmp <= 0;
    case Op::kLt:
      return cmp < 0;
    case Op::kEq:
      return cmp == 0;
  }
  return false;
}

bool IsSeparator(char c) { return c == ' ' || c == ',' || c == '\t'; }

// Comparators are an operator, optional blanks, and a version: ">=535.0.0" or ">= 535.0.0".
StatusOr<std::vector<Comparator>> ParseRange(std::string_view text) {
  std::vector<Comparator> out;
  size_t i = 0;
  while (true) {
    while (i < text.size() && IsSeparator(text[i])) ++i;
    if (i == text.size()) break;
    const size_t start = i;
    while (i < text.size() && (text[i] == '<' || text[i] == '>' || text[i] == '=')) ++i;
    const std::string_view op_text = text.substr(start, i - start);
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const size_t version_start = i;
    while (i < text.size() && !IsSeparator(text[i])) ++i;
    const std::string_view version = text.substr(version_start, i - version_start);
    const std::string comparator(text.substr(start, i - start));
    Comparator c;
    if (op_text == ">=") {
      c.op = Op::kGe;
    } else if (op_text == ">") {
      c.op = Op::kGt;
    } else if (op_text == "<=") {
      c.op = Op::kLe;
    } else if (op_text == "<") {
      c.op = Op::kLt;
    } else if (op_text == "=") {
      c.op = Op::kEq;
    } else {
      return InvalidArgumentError("comparator " + QuoteText(comparator) +
                                  ": expected one of >=, >, <=, <, = before the version");
    }
    if (version.empty()) {
      return InvalidArgumentError("comparator " + QuoteText(comparator) + ": missing version");
    }
    std::string why;
    std::optional<Semver> v = ParseSemver(version, &why);
    if (!v) {
      return InvalidArgumentError("comparator " + QuoteText(comparator) + ": " +
                                  QuoteText(version) + " is not a semantic version (" + why + ")");
    }
    c.version = std::move(*v);
    out.push_back(std::move(c));
  }
  if (out.empty()) return InvalidArgumentError("empty version range");
  return out;
}

}  // namespace

Status ValidateVersionRange(std::string_view text) { return ParseRange(text).status(); }

bool InRange(const VersionRange& range, std::string_view version) {
  StatusOr<std::vector<Comparator>> comparators = ParseRange(range.text);
  if (!comparators.ok()) return false;
  std::optional<Semver> v = ParseSemver(version, nullptr);
  if (!v) return false;
  return std::all_of(comparators->begin(), comparators->end(),
                     [&](const Comparator& c) { return Holds(c, *v); });
}

}  // namespace xpu::controller
