#include "e2e/client/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace xpu::e2e {

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(const std::string& binary,
                                                            const std::vector<std::string>& args,
                                                            const std::string& log_path) {
  std::unique_ptr<ChildProcess> p(new ChildProcess());
  p->log_path_ = log_path;
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const int rc = ::posix_spawn(&p->pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    p->pid_ = -1;
    return InternalError("start " + binary + ": posix_spawn failed with " + std::to_string(rc));
  }
  return p;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) Kill();
}

int ChildProcess::Reap(bool block) {
  if (pid_ <= 0) return exit_code_;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (got != pid_) return -1;
  pid_ = -1;
  exit_code_ = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
               : WIFEXITED(status) ? WEXITSTATUS(status)
                                   : -1;
  return exit_code_;
}

int ChildProcess::Stop() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
  return Reap(true);
}

int ChildProcess::Kill() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
  return Reap(true);
}

int ChildProcess::Wait() { return Reap(true); }

bool ChildProcess::Running() {
  if (pid_ <= 0) return false;
  Reap(false);
  return pid_ > 0;
}

std::string ChildProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace xpu::e2e
