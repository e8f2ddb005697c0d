#include "kubeletplugin/cdihook/ldcache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kubeletplugin/cdihook/musl_path.h"

namespace xpu::cdihook {
namespace {

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string LdconfigPath(const std::string& ldconfig) {
  struct stat st {};
  const std::string real = ldconfig + ".real";
  return ::stat(real.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? real : ldconfig;
}

Status RunLdcache(const HookArgs& args, RootDir& root, const RunFn& run) {
  for (const Link& link : args.links) {
    RETURN_IF_ERROR(root.MakeFolders(FolderOf(link.path)));
    RETURN_IF_ERROR(root.Symlink(link.target, link.path));
  }
  if (args.folders.empty()) return OkStatus();
  std::string conf = "# xpu-dra's driver files (xpu-cdi-hook)\n";
  for (const std::string& folder : args.folders) conf += folder + "\n";
  RETURN_IF_ERROR(root.MakeFolders(FolderOf(std::string(kConfFile))));
  RETURN_IF_ERROR(root.WriteFile(kConfFile, conf, 0644));
  if (!root.Exists("/etc/ld.so.conf")) {
    RETURN_IF_ERROR(root.WriteFile("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n", 0644));
  }
  RETURN_IF_ERROR(AddMuslPaths(args.folders, root));
  return run({LdconfigPath(args.ldconfig), "-X", "-r", root.path()});
}

Status RunProgram(const std::vector<std::string>& argv) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(err[1], 2);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    char path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    char* env[] = {path, nullptr};
    ::execve(args[0], args.data(), env);
    ::_exit(127);
  }
  ::close(err[1]);
  std::string output;
  char buf[512];
  ssize_t n = 0;
  while ((n = ::read(err[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0 && output.size() < 4096) output.append(buf, static_cast<size_t>(n));
  }
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return OkStatus();
  while (!output.empty() && output.back() == '\n') output.pop_back();
  const std::string how = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                            : "signal " + std::to_string(WTERMSIG(status));
  return InternalError(argv[0] + ": " + how + (output.empty() ? "" : ": " + output));
}

}  // namespace xpu::cdihook
