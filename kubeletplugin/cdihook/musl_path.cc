#include "kubeletplugin/cdihook/musl_path.h"

#include <algorithm>

namespace xpu::cdihook {
namespace {

// musl's search path when the image has no path file (its ldso/dynlink.c).
constexpr std::string_view kMuslDefault = "/lib\n/usr/local/lib\n/usr/lib\n";

// The largest path file read: a list of folders is a few hundred bytes.
constexpr size_t kMaxPathFile = size_t{64} * 1024;

std::vector<std::string> Entries(std::string_view text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find_first_of(":\n", at), text.size());
    if (end > at) out.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::string_view MuslArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
#error "xpu-cdi-hook: no musl architecture name for this target"
#endif
}

std::string MuslLoader(std::string_view arch) {
  return "/lib/ld-musl-" + std::string(arch) + ".so.1";
}

std::string MuslPathFile(std::string_view arch) {
  return "/etc/ld-musl-" + std::string(arch) + ".path";
}

std::string MuslPathContent(const std::optional<std::string>& existing,
                            const std::vector<std::string>& folders) {
  std::string content = existing.value_or(std::string(kMuslDefault));
  std::vector<std::string> listed = Entries(content);
  for (const std::string& folder : folders) {
    if (std::find(listed.begin(), listed.end(), folder) != listed.end()) continue;
    if (!content.empty() && content.back() != '\n') content.push_back('\n');
    content += folder + "\n";
    listed.push_back(folder);
  }
  return content;
}

Status AddMuslPaths(const std::vector<std::string>& folders, RootDir& root, std::string_view arch) {
  if (folders.empty() || !root.Exists(MuslLoader(arch))) return OkStatus();
  const std::string file = MuslPathFile(arch);
  std::optional<std::string> existing;
  if (StatusOr<std::string> read = root.ReadFile(file, kMaxPathFile); read.ok()) {
    existing = *std::move(read);
  } else if (read.status().code() != StatusCode::kNotFound) {
    return read.status();
  }
  const std::string content = MuslPathContent(existing, folders);
  if (existing == content) return OkStatus();
  RETURN_IF_ERROR(root.MakeFolders("/etc"));
  return root.WriteFile(file, content, 0644);
}

}  // namespace xpu::cdihook
