#include "kubeletplugin/discovery/host_root.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace xpu::discovery {
namespace {

namespace fs = std::filesystem;

TEST_CASE("CleanRelative refuses to climb above the start") {
  CHECK(*CleanRelative("a/./b/../c") == "a/c");
  CHECK(*CleanRelative("/a//b/") == "a/b");
  CHECK_FALSE(CleanRelative("..").ok());
  CHECK_FALSE(CleanRelative("a/../../b").ok());
}

TEST_CASE("HostRoot resolves links inside the root as a chroot would") {
  const fs::path dir =
      fs::temp_directory_path() / ("xpu-host-root-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "root/a/b");
  std::ofstream(dir / "root/a/b/file") << " text \n";
  std::ofstream(dir / "secret") << "outside\n";
  fs::create_symlink("b/file", dir / "root/a/rel");
  fs::create_symlink("/a/b", dir / "root/abs");
  fs::create_symlink("/", dir / "root/slash");
  fs::create_symlink("../../secret", dir / "root/a/up");
  fs::create_symlink((dir / "secret").string(), dir / "root/a/outside");
  fs::create_symlink("loop2", dir / "root/loop1");
  fs::create_symlink("loop1", dir / "root/loop2");
  const HostRoot host((dir / "root").string());

  CHECK(*host.Resolve("a/rel") == "a/b/file");
  CHECK(*host.ReadTrimmed("a/rel") == "text");
  CHECK(*host.Resolve("abs/file") == "a/b/file");
  CHECK(host.Resolve("slash")->empty());
  CHECK(*host.Resolve("slash/a/b") == "a/b");
  CHECK(host.Resolve("a/up").status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(host.Resolve("a/up").status().message(), Catch::Contains("escapes the host root"));
  // An absolute target restarts at the root: the outside file is looked up inside.
  CHECK(host.Resolve("a/outside").status().code() == StatusCode::kNotFound);
  CHECK(host.Resolve("..").status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(host.Resolve("loop1").status().message(), Catch::Contains("too many symbolic links"));
  CHECK(host.ReadFile("missing").status().code() == StatusCode::kNotFound);
  CHECK(host.ReadFile("missing").status().message() ==
        "resolve /missing: no such file or directory");
  CHECK_THAT(host.ReadFile("a/b").status().message(), Catch::Contains("read /a/b: is a directory"));
  CHECK(host.List("a")->size() == 4);
  CHECK(host.List("nothing")->empty());
  CHECK(host.Exists("a/rel"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xpu::discovery
