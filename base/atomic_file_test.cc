#include "base/atomic_file.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"

namespace xpu {
namespace {

namespace fs = std::filesystem;

unsigned ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("DirectoryOf") {
  CHECK(DirectoryOf("a/b/c") == "a/b");
  CHECK(DirectoryOf("c") == ".");
  CHECK(DirectoryOf("/c") == "/");
  CHECK(DirectoryOf("/var/run/cdi/x.json") == "/var/run/cdi");
}

TEST_CASE("WriteFileAtomically replaces the file with exactly the mode asked for") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  const std::string path = dir + "/f.json";
  REQUIRE_OK(WriteFileAtomically(path, "one", 0600));
  CHECK(ModeOf(path) == 0600);
  CHECK(*ReadWholeFile(path) == "one");
  REQUIRE_OK(WriteFileAtomically(path, "two", 0644));
  CHECK(ModeOf(path) == 0644);
  CHECK(*ReadWholeFile(path) == "two");
  CHECK_FALSE(fs::exists(path + ".tmp"));
  // A missing directory: the error names the temp file, nothing is left behind.
  const Status missing = WriteFileAtomically(dir + "/no/f.json", "x", 0644);
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message() == "open " + dir + "/no/f.json.tmp: No such file or directory");
}

TEST_CASE("ReadWholeFile, RemoveFileDurably and MakeDirectories") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  CHECK(ReadWholeFile(dir + "/none").status().code() == StatusCode::kNotFound);
  REQUIRE_OK(WriteFileAtomically(dir + "/f", std::string(40000, 'x'), 0644));
  CHECK(ReadWholeFile(dir + "/f")->size() == 40000);
  CHECK(RemoveFileDurably(dir + "/f").ok());
  CHECK(RemoveFileDurably(dir + "/f").ok());
  REQUIRE_OK(MakeDirectories(dir + "/a/b/c", 0700));
  CHECK(ModeOf(dir + "/a") == 0700);
  CHECK(ModeOf(dir + "/a/b/c") == 0700);
  CHECK(MakeDirectories(dir + "/a/b/c", 0755).ok());
  CHECK(ModeOf(dir + "/a/b/c") == 0700);  // an existing directory keeps its mode
  REQUIRE_OK(WriteFileAtomically(dir + "/file", "x", 0644));
  CHECK(MakeDirectories(dir + "/file", 0700).code() == StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace xpu
