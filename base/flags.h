// Command-line flags for the binaries: `--name value` and `--name=value`, `--help`/`-h`, and the
// duration syntax ("500ms", "5s", "2m", "1h", or a bare number of seconds). Errors read
// "parse flag --name: <cause>" so a bad flag stops start-up with a clear message.
//
//   FlagReader flags(args);
//   while (flags.Next()) {
//     if (flags.Is("--node-name")) { ASSIGN_OR_RETURN(o.node_name, flags.Value()); }
//     else if (flags.Is("--rediscover")) { ASSIGN_OR_RETURN(o.rediscover, flags.Duration()); }
//     else return flags.Unknown();
//   }
#ifndef XPU_BASE_FLAGS_H_
#define XPU_BASE_FLAGS_H_

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace xpu {

// "500ms" -> 500 ms; `flag` names the flag in the error. Zero and negative are errors.
StatusOr<std::chrono::milliseconds> ParseDuration(const std::string& flag,
                                                  const std::string& value);

class FlagReader {
 public:
  explicit FlagReader(std::vector<std::string> args);

  // Moves to the next flag; false at the end or after --help (see help()).
  bool Next();
  bool Is(const char* name) const { return flag_ == name; }
  const std::string& flag() const { return flag_; }
  bool help() const { return help_; }

  // The flag's value: after '=' or the next argument.
  StatusOr<std::string> Value();
  StatusOr<std::chrono::milliseconds> Duration();
  StatusOr<int64_t> Int(int64_t min, int64_t max);
  // "unknown flag --x" for the current flag.
  Status Unknown() const;

 private:
  std::vector<std::string> args_;
  size_t next_ = 0;
  std::string flag_;
  std::string inline_value_;
  bool has_inline_ = false;
  bool help_ = false;
};

}  // namespace xpu

#endif  // XPU_BASE_FLAGS_H_
