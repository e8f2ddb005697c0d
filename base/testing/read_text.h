// ReadText: a whole file's bytes as a string, "" where it cannot be opened. For tests only; the
// code reads files with ReadWholeFile (base/atomic_file.h), which says why one could not be read.
#ifndef XPU_BASE_TESTING_READ_TEXT_H_
#define XPU_BASE_TESTING_READ_TEXT_H_

#include <fstream>
#include <sstream>
#include <string>

namespace xpu::testing {

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace xpu::testing

#endif  // XPU_BASE_TESTING_READ_TEXT_H_
