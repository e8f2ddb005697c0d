#include "base/subprocess.h"

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
#include <set>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace xpu {
namespace {

using Clock = std::chrono::steady_clock;

// How much of a failed program's stderr goes into the error.
constexpr size_t kMaxStderr = 2048;

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
// instead of killing us.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old_, nullptr); }
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

 private:
  struct sigaction old_ = {};
};

// Our environment with `extra` ("NAME=value") set over it.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::set<std::string> overridden;
  for (const std::string& e : extra) overridden.insert(e.substr(0, e.find('=')));
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (overridden.count(entry.substr(0, entry.find('='))) == 0) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Reads what is ready on `fd` into `sink`; closes it at the end of the stream.
void Drain(const pollfd& polled, int& fd, std::string& sink) {
  if (polled.revents == 0) return;
  char buffer[65536];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n > 0) {
    sink.append(buffer, static_cast<size_t>(n));
  } else if (n == 0 || errno != EINTR) {
    Pipes::Close(fd);
  }
}

int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

StatusOr<std::string> RunProgram(const std::string& exe, const std::vector<std::string>& argv,
                                 const SubprocessOptions& options) {
  const std::string what = "run " + exe;
  Pipes p;
  for (size_t i = 0; i < p.fds.size(); i += 2) {
    if (::pipe2(&p.fds[i], O_CLOEXEC) != 0) {
      return InternalError(what + ": pipe: " + std::strerror(errno));
    }
  }
  auto& [in_r, in_w, out_r, out_w, err_r, err_w] = p.fds;
  if (options.inherit_stdin) Pipes::Close(in_w);
  if (options.inherit_stderr) Pipes::Close(err_r);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!options.inherit_stdin) posix_spawn_file_actions_adddup2(&actions, in_r, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_w, STDOUT_FILENO);
  if (!options.inherit_stderr) posix_spawn_file_actions_adddup2(&actions, err_w, STDERR_FILENO);
  const std::vector<std::string> env = ChildEnvironment(options.env);
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);
  pid_t pid = 0;
  const int spawn_error =
      ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  Pipes::Close(in_r);
  Pipes::Close(out_w);
  Pipes::Close(err_w);
  if (spawn_error != 0) return UnavailableError(what + ": " + std::strerror(spawn_error));

  // Feed stdin while draining stdout and stderr, so that neither side blocks on a full pipe.
  IgnoreSigpipe ignore_sigpipe;
  std::string_view input = options.input;
  if (options.inherit_stdin) input = {};
  const std::optional<Clock::time_point> deadline =
      options.timeout.count() > 0 ? std::optional(Clock::now() + options.timeout) : std::nullopt;
  std::string output;
  std::string errors;
  size_t written = 0;
  if (input.empty()) {
    Pipes::Close(in_w);
  } else if (::fcntl(in_w, F_SETFL, O_NONBLOCK) != 0) {
    // A blocking write of more than the pipe holds would wait for a child blocked on its full
    // stdout, which only we drain.
    ::kill(pid, SIGKILL);
    Reap(pid);
    return InternalError(what + ": make stdin non-blocking: " + std::strerror(errno));
  }
  while (in_w >= 0 || out_r >= 0 || err_r >= 0) {
    int wait_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) {
        ::kill(pid, SIGKILL);
        Reap(pid);
        return Status(StatusCode::kDeadlineExceeded, what + ": still running after " +
                                                         std::to_string(options.timeout.count()) +
                                                         " ms; killed");
      }
      wait_ms = static_cast<int>(left.count());
    }
    std::array<pollfd, 3> polls = {{{in_w, POLLOUT, 0}, {out_r, POLLIN, 0}, {err_r, POLLIN, 0}}};
    const int ready = ::poll(polls.data(), polls.size(), wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      ::kill(pid, SIGKILL);
      Reap(pid);
      return InternalError(what + ": poll: " + std::strerror(errno));
    }
    if (polls[0].revents != 0) {
      const ssize_t n = ::write(in_w, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EINTR && errno != EAGAIN) || written == input.size()) {
        Pipes::Close(in_w);
      }
    }
    Drain(polls[1], out_r, output);
    Drain(polls[2], err_r, errors);
  }
  const int status = Reap(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!errors.empty() && errors.back() == '\n') errors.pop_back();
    if (errors.size() > kMaxStderr) errors = "..." + errors.substr(errors.size() - kMaxStderr);
    return UnavailableError(what + ": " +
                            (WIFEXITED(status)
                                 ? "exit status " + std::to_string(WEXITSTATUS(status))
                                 : std::string("killed by a signal")) +
                            (errors.empty() ? "" : ": " + errors));
  }
  return output;
}

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

}  // namespace xpu
