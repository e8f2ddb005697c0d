// Command-line flags for the binaries: `--name value` and `--name=value`, `--help`/`-h`, and the
// duration syntax ("500ms", "5s", "2m", "1h", or a bare number of seconds). Errors read
// "parse flag --name: <cause>" so a bad flag stops start-up with a clear message.
//
// A daemon lists its flags once, in a table that gives both the parser and the usage text:
//
//   std::vector<Flag> Flags(Options* o) {
//     return {{"--node-name", "NAME", "this node", StringFlag(&o->node_name)},
//             {"--rediscover", "DURATION", "rediscovery period\n(default 60s)",
//              DurationFlag(&o->rediscover)}};
//   }
//   ASSIGN_OR_RETURN(*help, ParseFlagTable(args, Flags(&o)));
//   std::string usage = header + FlagTableUsage(Flags(&unused), 24);
#ifndef XPU_BASE_FLAGS_H_
#define XPU_BASE_FLAGS_H_

#include <chrono>
#include <cstdint>
#include <functional>
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

// Reads the current flag's value (FlagReader::Value and friends) and stores it.
using FlagSetter = std::function<Status(FlagReader&)>;

// One row of a flag table.
struct Flag {
  std::string name;   // "--node-name"
  std::string value;  // the value's placeholder in the usage text: "NAME"
  std::string help;   // a '\n' starts a continuation line, aligned under the first
  FlagSetter set;
};

FlagSetter StringFlag(std::string* out);
FlagSetter DurationFlag(std::chrono::milliseconds* out);
// "true" or "false".
FlagSetter BoolFlag(bool* out);
// An integer in [min, max], stored as T.
template <typename T>
FlagSetter IntFlag(T* out, int64_t min, int64_t max) {
  return [out, min, max](FlagReader& flags) -> Status {
    ASSIGN_OR_RETURN(const int64_t n, flags.Int(min, max));
    *out = static_cast<T>(n);
    return OkStatus();
  };
}
// Hands the value to `set`, which stores it or says why it cannot.
FlagSetter ValueFlag(std::function<Status(const std::string& value)> set);

// Rows the daemons share, with the same text in every --help.
Flag LogLevelFlag(std::string* level);   // --log-level LEVEL
Flag KubeconfigFlag(std::string* file);  // --kubeconfig FILE (in-cluster, then $KUBECONFIG)
Flag DriverNameFlag(std::string* name);  // --driver-name NAME
// --qps N and --burst N: the client-side API rate limit (0 disables it) and its burst.
Flag QpsFlag(double* qps);
Flag BurstFlag(int* burst);
// The options' check of the same two values, set by flags or in code.
Status CheckApiRate(double qps, int burst);

// Reads `args` (argv without the program name) with the table's setters; a flag not in the table
// is "unknown flag --x". Returns true for --help, after which nothing more is read.
StatusOr<bool> ParseFlagTable(const std::vector<std::string>& args, const std::vector<Flag>& flags);

// The table's lines of a usage text, then --help's: "  --name VALUE", padded to `column`
// characters (two spaces after a longer one), then the help.
std::string FlagTableUsage(const std::vector<Flag>& flags, size_t column);

}  // namespace xpu

#endif  // XPU_BASE_FLAGS_H_
