// xpu-cdi-hook: the OCI createContainer hook that xpu-dra's CDI specs name (hook_args.h).
// Statically linked, so that it runs from the host folder the DaemonSet installs it in whatever
// the host's libraries.
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "kubeletplugin/cdihook/container_root.h"
#include "kubeletplugin/cdihook/hook_args.h"
#include "kubeletplugin/cdihook/in_root.h"
#include "kubeletplugin/cdihook/ldcache.h"

namespace {

int Fail(const xpu::Status& s) {
  std::cerr << "xpu-cdi-hook: " << s.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << xpu::cdihook::HookUsage();
    return 0;
  }
  xpu::StatusOr<xpu::cdihook::HookArgs> parsed = xpu::cdihook::ParseHookArgs(args);
  if (!parsed.ok()) {
    std::cerr << xpu::cdihook::HookUsage();
    return Fail(parsed.status());
  }
  const std::string state(std::istreambuf_iterator<char>(std::cin), {});
  xpu::StatusOr<std::string> root_path =
      xpu::cdihook::ContainerRootPath(state, xpu::cdihook::ReadWholeFile);
  if (!root_path.ok()) return Fail(root_path.status());
  xpu::StatusOr<xpu::cdihook::RootDir> root = xpu::cdihook::RootDir::Open(*root_path);
  if (!root.ok()) return Fail(root.status());
  if (xpu::Status s = xpu::cdihook::RunLdcache(*parsed, *root, xpu::cdihook::RunProgram); !s.ok()) {
    return Fail(s);
  }
  return 0;
}
