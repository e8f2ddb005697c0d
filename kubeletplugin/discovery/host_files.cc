#include "kubeletplugin/discovery/host_files.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <system_error>

#include "base/status.h"
#include "base/text.h"

namespace xpu::discovery {

std::optional<int64_t> ParseInt(std::string_view text) {
  text = Trim(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string KeyValue(std::string_view text, std::string_view key, char sep) {
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    std::string_view line = Trim(text.substr(start, nl - start));
    start = nl + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    line = Trim(line);
    if (!line.empty() && line.front() == sep) {
      line.remove_prefix(1);
      return std::string(Trim(line));
    }
    if (sep == ' ') return std::string(line);
  }
  return "";
}

std::optional<std::string> ReadOptional(const HostRoot& host, std::string_view rel,
                                        std::vector<std::string>& problems) {
  StatusOr<std::string> text = host.ReadFile(rel);
  if (text.ok()) return std::move(text).value();
  if (text.status().code() != StatusCode::kNotFound) {
    problems.push_back(text.status().message());
  }
  return std::nullopt;
}

std::optional<int> NvidiaMinor(const HostRoot& host, const std::string& bdf,
                               std::vector<std::string>& problems) {
  std::optional<std::string> text =
      ReadOptional(host, "proc/driver/nvidia/gpus/" + bdf + "/information", problems);
  if (!text) return std::nullopt;
  const std::optional<int64_t> minor = ParseInt(KeyValue(*text, "Device Minor", ':'));
  if (!minor || *minor < 0 || *minor > 255) return std::nullopt;
  return static_cast<int>(*minor);
}

std::map<int, std::string> HccnAddresses(const HostRoot& host, std::vector<std::string>& problems) {
  std::map<int, std::string> out;
  std::optional<std::string> text = ReadOptional(host, "etc/hccn.conf", problems);
  if (!text) return out;
  size_t start = 0;
  while (start < text->size()) {
    const size_t nl = std::min(text->find('\n', start), text->size());
    const std::string_view line = Trim(std::string_view{*text}.substr(start, nl - start));
    start = nl + 1;
    if (!line.starts_with("address_")) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::optional<int64_t> id = ParseInt(line.substr(8, eq - 8));
    const std::string_view ip = Trim(line.substr(eq + 1));
    if (id && *id >= 0 && *id < 1024 && !ip.empty() && ip.size() <= 45) {
      out[static_cast<int>(*id)] = ip;
    }
  }
  return out;
}

std::map<int, KfdNode> ReadKfd(const HostRoot& host, std::vector<std::string>& problems) {
  std::map<int, KfdNode> nodes;
  constexpr std::string_view kNodes = "sys/class/kfd/kfd/topology/nodes";
  StatusOr<std::vector<std::string>> ids = host.List(kNodes);
  if (!ids.ok()) {
    problems.push_back(ids.status().message());
    return nodes;
  }
  for (const std::string& id_text : *ids) {
    const std::optional<int64_t> id = ParseInt(id_text);
    if (!id) continue;
    const std::string dir = std::string(kNodes) + "/" + id_text;
    std::optional<std::string> props = ReadOptional(host, dir + "/properties", problems);
    if (!props) continue;
    const std::optional<int64_t> location = ParseInt(KeyValue(*props, "location_id", ' '));
    const std::optional<int64_t> domain = ParseInt(KeyValue(*props, "domain", ' '));
    const std::optional<int64_t> simd = ParseInt(KeyValue(*props, "simd_count", ' '));
    if (!location || !domain || !simd || *simd == 0) continue;  // a CPU node
    KfdNode node;
    char bdf[16];
    std::snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", static_cast<unsigned>(*domain & 0xffff),
                  static_cast<unsigned>((*location >> 8) & 0xff),
                  static_cast<unsigned>((*location >> 3) & 0x1f),
                  static_cast<unsigned>(*location & 7));
    node.bdf = bdf;
    node.local_mem = ParseInt(KeyValue(*props, "local_mem_size", ' ')).value_or(0);
    node.hive = KeyValue(*props, "hive_id", ' ');
    StatusOr<std::vector<std::string>> links = host.List(dir + "/io_links");
    if (links.ok()) {
      for (const std::string& l : *links) {
        std::optional<std::string> lp = ReadOptional(
            host, std::string(dir).append("/io_links/").append(l).append("/properties"), problems);
        if (!lp) continue;
        const std::optional<int64_t> type = ParseInt(KeyValue(*lp, "type", ' '));
        const std::optional<int64_t> to = ParseInt(KeyValue(*lp, "node_to", ' '));
        const std::optional<int64_t> bw = ParseInt(KeyValue(*lp, "max_bandwidth", ' '));
        if (type == 11 && to) {  // 11 = XGMI (docs/reference/hardware.md §3.8)
          node.xgmi.emplace_back(static_cast<int>(*to),
                                 bw && *bw > 0 ? static_cast<double>(*bw) / 1000 : 50);
        }
      }
    }
    nodes[static_cast<int>(*id)] = std::move(node);
  }
  return nodes;
}

}  // namespace xpu::discovery
