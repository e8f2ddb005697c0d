// A test's text files: ReadText reads a whole file ("" where it cannot be opened), WriteText
// writes one in place. For tests only; the code reads with ReadWholeFile and writes with
// WriteFileAtomically (base/atomic_file.h), which say why a file could not be read or written.
#ifndef XPU_BASE_TESTING_TEXT_FILE_H_
#define XPU_BASE_TESTING_TEXT_FILE_H_

#include <catch2/catch.hpp>
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

// Writes `text` to `path` (its folder must exist), truncating what was there.
inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

}  // namespace xpu::testing

#endif  // XPU_BASE_TESTING_TEXT_FILE_H_
