// The main() of a generator of committed files (`gen-x DIR`: CRD manifests, fixtures, examples,
// goldens), each checked by a test against what the C++ code gives: the usual command line, and
// writing one file.
#ifndef XPU_API_TESTING_GENERATOR_H_
#define XPU_API_TESTING_GENERATOR_H_

#include <optional>
#include <string>
#include <string_view>

namespace xpu::api::testing {

// For `argc`/`argv` of main(): with --help or -h alone, prints `usage` and `help` on stdout and
// gives 0; with other than `args` arguments, or one starting with '-', prints `usage` on stderr
// and gives 2; otherwise nullopt, and main() goes on. `usage` is the whole first line, "usage:
// gen-x DIR\n".
std::optional<int> CheckGeneratorArgs(int argc, char** argv, int args, std::string_view usage,
                                      std::string_view help);

// Replaces the file at `path` with `contents` and prints the path on stdout. On failure prints
// "<tool>: write <path>: failed" on stderr and gives false.
bool WriteGeneratedFile(std::string_view tool, const std::string& path, std::string_view contents);

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_GENERATOR_H_
