// TempDir: a fresh directory under the system temp dir, removed with its contents at scope end.
// For tests only.
#ifndef XPU_BASE_TESTING_TEMP_DIR_H_
#define XPU_BASE_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

#include "base/testing/text_file.h"

namespace xpu::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "xpu_test.XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  const std::string& path() const { return path_; }

  // The path of `name` (a relative path) inside the directory.
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

  // Writes `contents` to `name` inside the directory (its folder must exist); returns its path.
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string file = Path(name);
    WriteText(file, contents);
    return file;
  }

 private:
  std::string path_;
};

}  // namespace xpu::testing

#endif  // XPU_BASE_TESTING_TEMP_DIR_H_
