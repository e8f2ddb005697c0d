#include "kubeletplugin/discovery/versions.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/validation.h"
#include "base/text.h"
#include "kubeletplugin/discovery/host_files.h"

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

struct VersionFile {
  std::string_view component;  // status.versions key
  std::string_view path;
  std::string_view key;  // "Version" for key=value files; empty: the whole file
  char sep = '=';
  std::string_view role;  // "driver", "firmware", "toolkit" (the device attribute it feeds)
};

// Version files per vendor (docs/reference/hardware.md §1.5 for Ascend; the others as
// scripts/gen-host-fixtures lays them out, paths marked assumed there), one row a file.
struct VendorVersionFile {
  std::string_view vendor;
  VersionFile file;
};

constexpr std::array<VendorVersionFile, 15> kVersionFiles = {{
    {"huawei", {"driver", "usr/local/Ascend/driver/version.info", "Version", '=', "driver"}},
    {"huawei", {"firmware", "usr/local/Ascend/firmware/version.info", "Version", '=', "firmware"}},
    {"nvidia", {"driver", "proc/driver/nvidia/version", "", '=', "driver"}},
    {"nvidia", {"driver", "sys/module/nvidia/version", "", '=', "driver"}},
    {"hygon", {"driver", "sys/module/hydcu/version", "", '=', "driver"}},
    {"hygon", {"hyhal", "opt/hyhal/.info/version", "", '=', ""}},
    {"hygon", {"dtk", "opt/dtk/.info/version", "", '=', "toolkit"}},
    {"cambricon", {"driver", "sys/module/cambricon_drv/version", "", '=', "driver"}},
    {"cambricon", {"neuware", "usr/local/neuware/version", "", '=', "toolkit"}},
    {"metax", {"driver", "sys/module/metax/version", "", '=', "driver"}},
    {"metax", {"maca", "opt/maca/Version.txt", "", '=', "toolkit"}},
    {"enflame", {"driver", "sys/module/enflame/version", "", '=', "driver"}},
    {"enflame", {"topsrider", "usr/local/topsrider/version", "", '=', "toolkit"}},
    {"amd", {"driver", "sys/module/amdgpu/version", "", '=', "driver"}},
    {"amd", {"rocm", "opt/rocm/.info/version", "", '=', "toolkit"}},
}};

std::vector<VersionFile> VersionFiles(std::string_view vendor) {
  std::vector<VersionFile> out;
  for (const VendorVersionFile& row : kVersionFiles) {
    if (row.vendor == vendor) out.push_back(row.file);
  }
  return out;
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.158.01  Release Build ..." -> "570.158.01".
std::string NvidiaProcVersion(std::string_view text) {
  const size_t at = text.find("Kernel Module");
  if (at == std::string_view::npos) return "";
  std::string_view rest = Trim(text.substr(at + 13));
  return std::string(rest.substr(0, std::min(rest.find(' '), rest.size())));
}

// The CANN toolkit: ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info, `version=`.
std::optional<std::string> AscendToolkit(const HostRoot& host, std::vector<std::string>& problems) {
  constexpr std::string_view kDir = "usr/local/Ascend/ascend-toolkit/latest";
  StatusOr<std::vector<std::string>> arches = host.List(kDir);
  if (!arches.ok()) {
    problems.push_back(arches.status().message());
    return std::nullopt;
  }
  for (const std::string& arch : *arches) {
    const std::string path = std::string(kDir) + "/" + arch + "/ascend_toolkit_install.info";
    if (std::optional<std::string> text = ReadOptional(host, path, problems)) {
      std::string v = KeyValue(*text, "version", '=');
      if (!v.empty()) return v;
    }
  }
  return std::nullopt;
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

std::map<std::string, std::string> ReadVersions(const HostRoot& host, std::string_view vendor,
                                                api::NodeInventoryStatus& status,
                                                std::vector<std::string>& problems) {
  std::map<std::string, std::string> by_role;
  const auto add = [&](std::string_view component, std::string_view role, std::string raw) {
    if (raw.empty() || raw.size() > 128 || status.versions.contains(std::string(component))) return;
    api::ComponentVersion v;
    v.raw = raw;
    v.semver = NormalizeSemver(raw);
    status.versions[std::string(component)] = v;
    if (!role.empty()) by_role.emplace(std::string(role), std::move(raw));
  };
  for (const VersionFile& f : VersionFiles(vendor)) {
    std::optional<std::string> text = ReadOptional(host, f.path, problems);
    if (!text) continue;
    std::string raw;
    if (f.path == "proc/driver/nvidia/version") {
      raw = NvidiaProcVersion(*text);
    } else if (!f.key.empty()) {
      raw = KeyValue(*text, f.key, f.sep);
    } else {
      raw = std::string(Trim(*text));
      raw = raw.substr(0, raw.find('\n'));
    }
    add(f.component, f.role, raw);
  }
  if (vendor == "huawei") {
    if (std::optional<std::string> cann = AscendToolkit(host, problems)) {
      add("cann", "toolkit", *cann);
    }
  }
  return by_role;
}

}  // namespace xpu::discovery
