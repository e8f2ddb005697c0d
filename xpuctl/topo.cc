// xpuctl topo: a node's topology or a fabric as Graphviz DOT, or SVG rendered by graphviz's `dot`.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "topology/dot.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

// The first executable `program` in $PATH.
std::optional<std::string> FindOnPath(std::string_view program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string_view dirs = path;
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const std::string candidate =
        (dir.empty() ? "." : std::string(dir)) + "/" + std::string(program);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

// Owns the file descriptors of a child's standard streams on our side.
struct Pipes {
  std::array<int, 6> fds = {-1, -1, -1, -1, -1, -1};  // stdin r/w, stdout r/w, stderr r/w
  ~Pipes() {
    for (int fd : fds) Close(fd);
  }
  static void Close(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Ignores SIGPIPE while in scope, so that a child exiting early makes write() fail with EPIPE
// instead of killing xpuctl.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ = {};
};

// Runs `exe` with `argv`, `input` on its stdin; returns its stdout. No shell is involved.
StatusOr<std::string> RunFilter(const std::string& exe, const std::vector<std::string>& argv,
                                std::string_view input) {
  const std::string what = "run " + exe;
  Pipes p;
  for (size_t i = 0; i < p.fds.size(); i += 2) {
    if (::pipe2(&p.fds[i], O_CLOEXEC) != 0) {
      return InternalError(what + ": pipe: " + std::strerror(errno));
    }
  }
  auto& [in_r, in_w, out_r, out_w, err_r, err_w] = p.fds;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_w, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_w, STDERR_FILENO);
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  Pipes::Close(in_r);
  Pipes::Close(out_w);
  Pipes::Close(err_w);
  if (spawn_error != 0) return UnavailableError(what + ": " + std::strerror(spawn_error));

  // Feed stdin while draining stdout and stderr, so that neither side blocks on a full pipe.
  IgnoreSigpipe ignore_sigpipe;
  std::string output;
  std::string errors;
  size_t written = 0;
  auto drain = [](const pollfd& polled, int& fd, std::string& sink) {
    if (polled.revents == 0) return;
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      sink.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      Pipes::Close(fd);
    }
  };
  if (input.empty()) Pipes::Close(in_w);
  while (in_w >= 0 || out_r >= 0 || err_r >= 0) {
    std::array<pollfd, 3> polls = {{{in_w, POLLOUT, 0}, {out_r, POLLIN, 0}, {err_r, POLLIN, 0}}};
    if (::poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return InternalError(what + ": poll: " + std::strerror(errno));
    }
    if (polls[0].revents != 0) {
      const ssize_t n = ::write(in_w, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EINTR && errno != EAGAIN) || written == input.size()) {
        Pipes::Close(in_w);
      }
    }
    drain(polls[1], out_r, output);
    drain(polls[2], err_r, errors);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!errors.empty() && errors.back() == '\n') errors.pop_back();
    return UnavailableError(what + ": " +
                            (WIFEXITED(status)
                                 ? "exit status " + std::to_string(WEXITSTATUS(status))
                                 : std::string("killed by a signal")) +
                            (errors.empty() ? "" : ": " + errors));
  }
  return output;
}

// The DOT picture of --topology, --inventory or --fabric, with --highlight filled.
StatusOr<std::string> Draw(const Flags& flags) {
  const int given = static_cast<int>(flags.contains("topology")) +
                    static_cast<int>(flags.contains("inventory")) +
                    static_cast<int>(flags.contains("fabric"));
  if (given != 1) {
    return InvalidArgumentError("exactly one of --topology, --inventory and --fabric is required");
  }
  if (flags.contains("fabric")) {
    ASSIGN_OR_RETURN(const FabricInput input, LoadFabric(flags));
    ASSIGN_OR_RETURN(const std::vector<int> highlight, NodesFlag(flags, "highlight", input.fabric));
    return topology::ToDot(input.fabric, highlight);
  }
  ASSIGN_OR_RETURN(const topology::Node node, LoadNode(flags));
  ASSIGN_OR_RETURN(const topology::DeviceSet highlight, DevicesFlag(flags, "highlight", node));
  return topology::ToDot(node, highlight);
}

}  // namespace

StatusOr<int> RunTopo(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "format", {"dot", "svg"}));
  ASSIGN_OR_RETURN(std::string text, Draw(flags));
  if (format == "svg") {
    const std::optional<std::string> dot = FindOnPath("dot");
    if (!dot) return FailedPreconditionError("graphviz 'dot' not found on PATH; use --format dot");
    ASSIGN_OR_RETURN(text, RunFilter(*dot, {"dot", "-Tsvg"}, text));
  }
  return WriteOutput(flags, out, text);
}

}  // namespace xpu::cli::internal
