// A file under the system temp directory with the given contents, removed when it goes out of
// scope. For tests only.
#ifndef XPU_API_TESTING_TEMP_FILE_H_
#define XPU_API_TESTING_TEMP_FILE_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace xpu::api::testing {

class TempFile {
 public:
  explicit TempFile(const std::string& contents)
      : path_(std::filesystem::temp_directory_path() /
              ("xpu-api-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) +
               ".json")) {
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_TEMP_FILE_H_
