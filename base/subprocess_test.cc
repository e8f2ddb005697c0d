// RunProgram against the system's own small programs (/bin/sh, /bin/cat): input and output, the
// environment, failures with their stderr, and the time limit.
#include "base/subprocess.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"

namespace xpu {
namespace {

StatusOr<std::string> Sh(const std::string& script, const SubprocessOptions& options = {}) {
  return RunProgram("/bin/sh", {"sh", "-c", script}, options);
}

TEST_CASE("subprocess: stdin in, stdout out, larger than a pipe's buffer") {
  const std::string big(300'000, 'x');
  auto out = RunProgram("/bin/cat", {"cat"}, {.input = big});
  REQUIRE_OK(out);
  CHECK(*out == big);
  auto empty = RunProgram("/bin/cat", {"cat"});
  REQUIRE_OK(empty);
  CHECK(empty->empty());
}

TEST_CASE("subprocess: the arguments reach the program as given, with no shell") {
  auto out =
      RunProgram("/bin/sh", {"sh", "-c", "printf '%s|' \"$@\"", "prog", "a b", "$HOME", ";"});
  REQUIRE_OK(out);
  CHECK(*out == "a b|$HOME|;|");
}

TEST_CASE("subprocess: the environment is ours with the given entries over it") {
  REQUIRE(setenv("XPU_SUBPROCESS_KEPT", "kept", 1) == 0);
  REQUIRE(setenv("XPU_SUBPROCESS_SET", "old", 1) == 0);
  auto out = Sh("echo \"$XPU_SUBPROCESS_KEPT $XPU_SUBPROCESS_SET $XPU_SUBPROCESS_NEW\"",
                {.env = {"XPU_SUBPROCESS_SET=new", "XPU_SUBPROCESS_NEW={\"a\": 1}"}});
  REQUIRE_OK(out);
  CHECK(*out == "kept new {\"a\": 1}\n");
}

TEST_CASE("subprocess: a failure says how it ended, with the end of its stderr") {
  auto failed = Sh("echo 'to stdout'; echo 'login expired' >&2; exit 3");
  CHECK(failed.status().code() == StatusCode::kUnavailable);
  CHECK(failed.status().message() == "run /bin/sh: exit status 3: login expired");
  auto killed = Sh("kill -9 $$");
  CHECK(killed.status().message() == "run /bin/sh: killed by a signal");
  auto missing = RunProgram("/nonexistent/plugin", {"plugin"});
  CHECK(missing.status().code() == StatusCode::kUnavailable);
  CHECK(missing.status().message() == "run /nonexistent/plugin: No such file or directory");
  // Passed through, stderr is not collected: the message has only the status.
  auto through = Sh("echo 'a hint for the user' >&2; exit 1", {.inherit_stderr = true});
  CHECK(through.status().message() == "run /bin/sh: exit status 1");
}

TEST_CASE("subprocess: past its time limit the program is killed") {
  // `exec` so that the killed process is the one holding the pipes.
  auto slow = Sh("exec sleep 30", {.timeout = std::chrono::milliseconds(200)});
  CHECK(slow.status().code() == StatusCode::kDeadlineExceeded);
  CHECK(slow.status().message() == "run /bin/sh: still running after 200 ms; killed");
  auto quick = Sh("echo done", {.timeout = std::chrono::seconds(30)});
  REQUIRE_OK(quick);
  CHECK(*quick == "done\n");
}

TEST_CASE("subprocess: programs are found on PATH") {
  const char* saved = std::getenv("PATH");
  const std::string old = saved != nullptr ? saved : "";
  REQUIRE(setenv("PATH", "/nonexistent:/bin", 1) == 0);
  CHECK(FindOnPath("sh") == std::optional<std::string>("/bin/sh"));
  CHECK(FindOnPath("no-such-program-xpu") == std::nullopt);
  REQUIRE(setenv("PATH", old.c_str(), 1) == 0);
}

}  // namespace
}  // namespace xpu
