#include "lab/stock_allocator.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace xpu::lab {
namespace {

// Names at namespace scope are unique within xpu_lab (a unity build); hence the Stock prefixes.

bool StockIsExecutableFile(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string StockErrno(int error) { return std::strerror(error); }

// "exit status N" or "killed by signal N" of a waitpid status.
std::string StockExitText(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

// Reaps `pid`, giving it up to `patience` to exit on its own before SIGKILL. The wait status.
int StockReap(pid_t pid, std::chrono::milliseconds patience) {
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;  // not our child any more (ECHILD)
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// Writes all of `data` to the pipe `fd`. A write to a pipe whose reader is gone raises SIGPIPE,
// which would kill the whole process; the child dying must instead come back as an error. So
// SIGPIPE is blocked in this thread only (pthread_sigmask: the signal of a failed write() is
// directed at the writing thread, and other threads' dispositions are left alone, unlike a
// process-wide SIG_IGN), the write then fails with EPIPE, and a SIGPIPE this write left pending is
// consumed with a zero-timeout sigtimedwait before the old mask is restored. One that was already
// pending before (someone else's) is left as it was.
int StockWriteAll(int fd, std::string_view data) {
  sigset_t sigpipe;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &sigpipe, &old_mask);
  int error = 0;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (error == EPIPE && !was_pending) {
    const timespec zero = {0, 0};
    while (::sigtimedwait(&sigpipe, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return error;
}

}  // namespace

StatusOr<std::string> FindStockAllocator(const std::string& flag) {
  const std::string hint =
      "build it with scripts/build-upstream (needs Go and the module proxy), or pass "
      "--stock-allocator";
  if (!flag.empty()) {
    if (StockIsExecutableFile(flag)) return flag;
    return NotFoundError("stock allocator " + flag +
                         " (--stock-allocator) is not an executable: " + hint);
  }
  const char* env = std::getenv("XPU_DRA_STOCK_ALLOCATOR");
  if (env != nullptr && *env != '\0') {
    if (StockIsExecutableFile(env)) return std::string(env);
    return NotFoundError("stock allocator " + std::string(env) +
                         " ($XPU_DRA_STOCK_ALLOCATOR) is not an executable: " + hint);
  }
  std::vector<std::string> looked;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) looked.push_back((self.parent_path() / "stock-allocator").string());
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string cache;
  if (xdg != nullptr && *xdg != '\0') {
    cache = xdg;
  } else if (home != nullptr && *home != '\0') {
    cache = std::string(home) + "/.cache";
  }
  if (!cache.empty()) {
    looked.push_back(cache + "/xpu-dra/upstream/" XPU_UPSTREAM_PINNED "/bin/stock-allocator");
  }
  std::string list;
  for (const std::string& path : looked) {
    if (StockIsExecutableFile(path)) return path;
    list += (list.empty() ? "" : ", ") + path;
  }
  return NotFoundError("no stock allocator (" +
                       (list.empty() ? std::string("no place to look") : "looked at " + list) +
                       "): " + hint);
}

StatusOr<std::unique_ptr<StockAllocator>> StockAllocator::Start(const std::string& binary) {
  const std::string what = "start stock allocator " + binary;
  std::unique_ptr<StockAllocator> s(new StockAllocator());
  s->binary_ = binary;
  // Every end is close-on-exec, so no other child (of any thread) inherits them; the dup2s of the
  // spawn give the child its own stdin and stdout without the flag.
  std::array<int, 2> in = {-1, -1};
  std::array<int, 2> out = {-1, -1};
  if (::pipe2(in.data(), O_CLOEXEC) != 0) {
    return InternalError(what + ": pipe: " + StockErrno(errno));
  }
  if (::pipe2(out.data(), O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(in[0]);
    ::close(in[1]);
    return InternalError(what + ": pipe: " + StockErrno(error));
  }
  s->to_child_ = in[1];
  s->from_child_ = out[0];
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::string arg0 = binary;
  std::array<char*, 2> argv = {arg0.data(), nullptr};
  // Go's collector lets the heap grow to twice what is live before it runs; the slice sets the
  // lab keeps (kMaxKeptSlices) then peaked at about 330 MB on 512 nodes in groups mode. A soft
  // limit makes it collect sooner (an operator's GOMEMLIMIT wins).
  std::string memory_limit = "GOMEMLIMIT=200MiB";
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("GOMEMLIMIT=")) memory_limit.clear();
    env.push_back(*e);
  }
  if (!memory_limit.empty()) env.push_back(memory_limit.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) return UnavailableError(what + ": " + StockErrno(rc));
  s->pid_ = pid;
  ASSIGN_OR_RETURN(const nlohmann::json answer, s->Call({{"op", "version"}}));
  const auto module = answer.find("module");
  const auto version = answer.find("version");
  if (module == answer.end() || !module->is_string() || version == answer.end() ||
      !version->is_string()) {
    return DataLossError(what + ": the version answer has no module and version: " + answer.dump());
  }
  s->version_ = module->get<std::string>() + " " + version->get<std::string>();
  return s;
}

StockAllocator::~StockAllocator() {
  if (to_child_ >= 0) ::close(to_child_);  // its end of input: it exits 0
  if (pid_ > 0) StockReap(pid_, std::chrono::seconds(5));
  if (from_child_ >= 0) ::close(from_child_);
}

StatusOr<nlohmann::json> StockAllocator::Call(const nlohmann::json& request) {
  const std::string op = request.value("op", "");
  const std::string what = "stock allocator " + binary_ + " (" + op + ")";
  if (pid_ <= 0) return FailedPreconditionError(what + ": it is not running");
  ++requests_;
  const int write_error = StockWriteAll(to_child_, request.dump() + "\n");
  if (write_error != 0 && write_error != EPIPE) {
    return UnavailableError(what + ": write: " + StockErrno(write_error));
  }
  // After EPIPE, read on: the child's stdout reaches end of file and the error names its exit.
  size_t newline = buffer_.find('\n');
  std::array<char, 65536> chunk{};
  while (newline == std::string::npos) {
    const ssize_t n = ::read(from_child_, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string cause = n < 0 ? "read: " + StockErrno(errno) : "it closed its output";
      const int status = StockReap(pid_, std::chrono::seconds(5));
      pid_ = -1;
      std::string message = what;
      message += ": " + cause + " (" + StockExitText(status) + ")";
      return UnavailableError(message);
    }
    const size_t searched = buffer_.size();
    buffer_.append(chunk.data(), static_cast<size_t>(n));
    newline = buffer_.find('\n', searched);
  }
  const std::string line = buffer_.substr(0, newline);
  buffer_.erase(0, newline + 1);
  nlohmann::json answer = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    return DataLossError(what + ": an answer that is not a JSON object: " + line.substr(0, 200));
  }
  if (const auto error = answer.find("error"); error != answer.end()) {
    return InvalidArgumentError("stock allocator: " +
                                (error->is_string() ? error->get<std::string>() : error->dump()));
  }
  return answer;
}

Status StockAllocator::SetClasses(const nlohmann::json& classes) {
  return Call({{"op", "classes"}, {"classes", classes}}).status();
}

Status StockAllocator::PutSlices(const std::string& key, const nlohmann::json& slices) {
  return Call({{"op", "slices"}, {"key", key}, {"slices", slices}}).status();
}

Status StockAllocator::ForgetSlices(const std::string& key) {
  return Call({{"op", "forget"}, {"key", key}}).status();
}

StatusOr<std::optional<std::vector<std::string>>> StockAllocator::Allocate(
    const std::string& key, const std::string& node, const std::vector<std::string>& allocated,
    const nlohmann::json& claim) {
  ASSIGN_OR_RETURN(auto results, AllocateResults(key, node, allocated, claim));
  if (!results.has_value()) return std::optional<std::vector<std::string>>();
  std::vector<std::string> names;
  names.reserve(results->size());
  for (AllocatedDevice& d : *results) names.push_back(std::move(d.device));
  return std::optional(std::move(names));
}

StatusOr<std::optional<std::vector<AllocatedDevice>>> StockAllocator::AllocateResults(
    const std::string& key, const std::string& node, const std::vector<std::string>& allocated,
    const nlohmann::json& claim) {
  ASSIGN_OR_RETURN(const nlohmann::json answer, Call({{"op", "allocate"},
                                                      {"slices", key},
                                                      {"node", node},
                                                      {"allocated", allocated},
                                                      {"claim", claim}}));
  const auto devices = answer.find("devices");
  if (devices == answer.end()) {
    return DataLossError("stock allocator " + binary_ + " (allocate): no devices in " +
                         answer.dump());
  }
  if (devices->is_null()) return std::optional<std::vector<AllocatedDevice>>();
  std::vector<AllocatedDevice> results;
  // Every field a string: the wire's device entry (lab/stock_allocator.h).
  auto field = [](const nlohmann::json& device, const char* name) -> const std::string* {
    const auto it = device.find(name);
    return it != device.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  if (devices->is_array()) {
    for (const nlohmann::json& device : *devices) {
      const std::string* request = field(device, "request");
      const std::string* driver = field(device, "driver");
      const std::string* pool = field(device, "pool");
      const std::string* name = field(device, "device");
      if (!device.is_object() || request == nullptr || driver == nullptr || pool == nullptr ||
          name == nullptr) {
        break;
      }
      results.push_back({*request, *driver, *pool, *name});
    }
    if (results.size() == devices->size()) return std::optional(std::move(results));
  }
  return DataLossError("stock allocator " + binary_ + " (allocate): bad devices in " +
                       answer.dump());
}

}  // namespace xpu::lab
