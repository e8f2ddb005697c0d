#include "kubeletplugin/cdihook/hook_args.h"

namespace xpu::cdihook {
namespace {

bool HasBadByte(std::string_view s) {
  return s.find('\0') != std::string_view::npos || s.find('\n') != std::string_view::npos;
}

Status CheckFileName(std::string_view name, std::string_view what) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      HasBadByte(name)) {
    return InvalidArgumentError(std::string(what) + ": \"" + std::string(name) +
                                "\" is not a plain file name");
  }
  return OkStatus();
}

}  // namespace

Status CheckContainerPath(std::string_view path, std::string_view what) {
  const std::string shown = "\"" + std::string(path) + "\"";
  if (path.empty() || path.front() != '/') {
    return InvalidArgumentError(std::string(what) + ": " + shown + " is not an absolute path");
  }
  if (HasBadByte(path)) {
    return InvalidArgumentError(std::string(what) + ": " + shown + " holds a NUL or a newline");
  }
  if (path == "/") return InvalidArgumentError(std::string(what) + ": the root itself");
  size_t at = 1;
  while (at <= path.size()) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string_view part = path.substr(at, slash - at);
    if (part.empty() || part == "." || part == "..") {
      return InvalidArgumentError(std::string(what) + ": " + shown +
                                  " is not a clean path (empty, \".\" or \"..\" component)");
    }
    at = slash + 1;
  }
  return OkStatus();
}

StatusOr<HookArgs> ParseHookArgs(const std::vector<std::string>& args) {
  if (args.empty()) return InvalidArgumentError("no command (xpu-cdi-hook ldcache ...)");
  HookArgs out;
  out.command = args[0];
  if (out.command != "ldcache") {
    return InvalidArgumentError("unknown command \"" + out.command + "\" (ldcache)");
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag != "--folder" && flag != "--link" && flag != "--ldconfig") {
      return InvalidArgumentError("unknown argument \"" + flag +
                                  "\" (--folder, --link, --ldconfig)");
    }
    if (i + 1 >= args.size()) return InvalidArgumentError(flag + ": needs a value");
    const std::string& value = args[++i];
    if (flag == "--folder") {
      RETURN_IF_ERROR(CheckContainerPath(value, "--folder"));
      out.folders.push_back(value);
    } else if (flag == "--ldconfig") {
      RETURN_IF_ERROR(CheckContainerPath(value, "--ldconfig"));
      out.ldconfig = value;
    } else {
      const size_t sep = value.find("::");
      if (sep == std::string::npos) {
        return InvalidArgumentError("--link: \"" + value + "\" is not TARGET::LINK");
      }
      Link link{value.substr(0, sep), value.substr(sep + 2)};
      RETURN_IF_ERROR(CheckFileName(link.target, "--link target"));
      RETURN_IF_ERROR(CheckContainerPath(link.path, "--link"));
      out.links.push_back(std::move(link));
    }
  }
  return out;
}

std::string HookUsage() {
  return "usage: xpu-cdi-hook ldcache [--folder DIR]... [--link TARGET::LINK]... "
         "[--ldconfig PATH]\n"
         "\n"
         "An OCI createContainer hook named by xpu-dra's CDI specs. It reads the container's\n"
         "state on stdin, finds the container's root in the bundle's config.json, then inside\n"
         "that root only: makes each soname link LINK -> TARGET, adds each DIR to the loader's\n"
         "configuration (/etc/ld.so.conf.d/00-xpu-dra.conf) and rebuilds /etc/ld.so.cache with\n"
         "the host's ldconfig (-r ROOT; default /sbin/ldconfig). It never writes outside the\n"
         "container's root.\n";
}

}  // namespace xpu::cdihook
