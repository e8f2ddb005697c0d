#include "base/flags.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <utility>

namespace xpu {

StatusOr<std::chrono::milliseconds> ParseDuration(const std::string& flag,
                                                  const std::string& value) {
  int64_t n = 0;
  const char* begin = value.data();
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(begin, end, n);
  if (ec != std::errc() || ptr == begin) {
    return InvalidArgumentError("parse flag " + flag + ": \"" + value + "\" is not a duration");
  }
  const std::string unit(ptr, end);
  int64_t scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1000;
  } else if (unit == "ms") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    return InvalidArgumentError("parse flag " + flag + ": \"" + value +
                                "\" has an unknown unit (ms, s, m, h)");
  }
  if (n <= 0) return InvalidArgumentError("parse flag " + flag + ": must be positive");
  if (n > INT64_MAX / scale) return InvalidArgumentError("parse flag " + flag + ": too large");
  return std::chrono::milliseconds(n * scale);
}

FlagReader::FlagReader(std::vector<std::string> args) : args_(std::move(args)) {}

bool FlagReader::Next() {
  if (help_ || next_ >= args_.size()) return false;
  flag_ = args_[next_++];
  has_inline_ = false;
  inline_value_.clear();
  if (const auto eq = flag_.find('='); flag_.starts_with("--") && eq != std::string::npos) {
    inline_value_ = flag_.substr(eq + 1);
    flag_.resize(eq);
    has_inline_ = true;
  }
  if (flag_ == "--help" || flag_ == "-h") {
    help_ = true;
    return false;
  }
  return true;
}

StatusOr<std::string> FlagReader::Value() {
  if (has_inline_) return inline_value_;
  if (next_ >= args_.size()) return InvalidArgumentError("parse flag " + flag_ + ": needs a value");
  return args_[next_++];
}

StatusOr<std::chrono::milliseconds> FlagReader::Duration() {
  ASSIGN_OR_RETURN(std::string v, Value());
  return ParseDuration(flag_, v);
}

StatusOr<int64_t> FlagReader::Int(int64_t min, int64_t max) {
  ASSIGN_OR_RETURN(std::string v, Value());
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size()) {
    return InvalidArgumentError("parse flag " + flag_ + ": \"" + v + "\" is not an integer");
  }
  if (n < min || n > max) {
    return InvalidArgumentError("parse flag " + flag_ + ": " + v + " is outside [" +
                                std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return n;
}

Status FlagReader::Unknown() const { return InvalidArgumentError("unknown flag " + flag_); }

FlagSetter StringFlag(std::string* out) {
  return [out](FlagReader& flags) -> Status {
    ASSIGN_OR_RETURN(*out, flags.Value());
    return OkStatus();
  };
}

FlagSetter DurationFlag(std::chrono::milliseconds* out) {
  return [out](FlagReader& flags) -> Status {
    ASSIGN_OR_RETURN(*out, flags.Duration());
    return OkStatus();
  };
}

FlagSetter BoolFlag(bool* out) {
  return [out](FlagReader& flags) -> Status {
    ASSIGN_OR_RETURN(const std::string v, flags.Value());
    if (v != "true" && v != "false") {
      return InvalidArgumentError("parse flag " + flags.flag() + ": want true or false, got " + v);
    }
    *out = v == "true";
    return OkStatus();
  };
}

FlagSetter ValueFlag(std::function<Status(const std::string& value)> set) {
  return [set = std::move(set)](FlagReader& flags) -> Status {
    ASSIGN_OR_RETURN(const std::string v, flags.Value());
    return set(v);
  };
}

StatusOr<bool> ParseFlagTable(const std::vector<std::string>& args,
                              const std::vector<Flag>& flags) {
  FlagReader reader(args);
  while (reader.Next()) {
    const auto flag = std::find_if(flags.begin(), flags.end(),
                                   [&](const Flag& f) { return reader.Is(f.name.c_str()); });
    if (flag == flags.end()) return reader.Unknown();
    RETURN_IF_ERROR(flag->set(reader));
  }
  return reader.help();
}

std::string FlagTableUsage(const std::vector<Flag>& flags, size_t column) {
  std::string out;
  auto add = [&](const std::string& label, std::string_view help) {
    out += "  " + label + std::string(label.size() < column ? column - label.size() : 2, ' ');
    for (size_t start = 0;;) {
      const size_t end = help.find('\n', start);
      out += help.substr(start, end - start);
      out += '\n';
      if (end == std::string_view::npos) break;
      out += std::string(column + 2, ' ');
      start = end + 1;
    }
  };
  for (const Flag& f : flags) add(f.value.empty() ? f.name : f.name + " " + f.value, f.help);
  add("--help", "print this help");
  return out;
}

Flag LogLevelFlag(std::string* level) {
  return {"--log-level", "LEVEL", "error, warning, info or debug (default info)",
          StringFlag(level)};
}

Flag KubeconfigFlag(std::string* file) {
  return {"--kubeconfig", "FILE",
          "API access (default: in-cluster service account, then\n"
          "$KUBECONFIG)",
          StringFlag(file)};
}

Flag QpsFlag(double* qps) {
  return {"--qps", "N", "client-side API rate limit (default 50; 0 disables)",
          IntFlag(qps, 0, 100'000)};
}

Flag BurstFlag(int* burst) {
  return {"--burst", "N", "API burst (default 100)", IntFlag(burst, 1, 100'000)};
}

Status CheckApiRate(double qps, int burst) {
  if (qps < 0) return InvalidArgumentError("--qps: must not be negative");
  if (burst < 1) return InvalidArgumentError("--burst: must be at least 1");
  return OkStatus();
}

Flag DriverNameFlag(std::string* name) {
  return {"--driver-name", "NAME", "DRA driver name (default xpu.dra.dev)", StringFlag(name)};
}

}  // namespace xpu
