// xpu-cdi-hook's inputs (kubeletplugin/cdihook/): its arguments, which a CDI spec file on the
// node names, and the container state a runtime hands it on stdin. The input is the arguments
// separated by newlines, then a line "--state--", then the state JSON.
//
// Invariants: parsing never crashes; every folder and link it accepts is an absolute, clean path
// without a NUL or a newline, and every link target a plain file name, so nothing it accepts can
// name a place outside the container's root or break the ld.so.conf file; a state it reads names
// an absolute root path when it names one through the bundle.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "kubeletplugin/cdihook/container_root.h"
#include "kubeletplugin/cdihook/hook_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = xpu::fuzz::AsText(data, size);
  const std::vector<std::string_view> halves = xpu::fuzz::Split(input, "\n--state--\n", 2);
  std::vector<std::string> args;
  for (const std::string_view a : xpu::fuzz::Split(halves[0], "\n", 64)) args.emplace_back(a);
  const xpu::StatusOr<xpu::cdihook::HookArgs> parsed = xpu::cdihook::ParseHookArgs(args);
  if (parsed.ok()) {
    for (const std::string& f : parsed->folders) {
      FUZZ_CHECK(xpu::cdihook::CheckContainerPath(f, "folder").ok(), f);
    }
    for (const xpu::cdihook::Link& l : parsed->links) {
      FUZZ_CHECK(xpu::cdihook::CheckContainerPath(l.path, "link").ok(), l.path);
      FUZZ_CHECK(!l.target.empty() && l.target.find('/') == std::string::npos && l.target != ".." &&
                     l.target != "." && l.target.find('\n') == std::string::npos,
                 l.target);
    }
  }
  if (halves.size() == 2) {
    const xpu::cdihook::ReadFn read = [](const std::string& path) -> xpu::StatusOr<std::string> {
      if (path == "/bundle/config.json") return std::string(R"({"root":{"path":"rootfs"}})");
      return xpu::NotFoundError("read " + path);
    };
    const xpu::StatusOr<std::string> root = xpu::cdihook::ContainerRootPath(halves[1], read);
    if (root.ok()) FUZZ_CHECK(!root->empty(), "an empty root path");
  }
  return 0;
}
