// Job traces: the CSV reader and writer, and the synthetic generator.
//
// The synthetic mix (SyntheticTrace; docs/placement-lab.md describes the same):
//   shape      weight   left out when
//   1          50       -
//   2          15       max_devices_per_node < 2
//   3           3       max_devices_per_node < 3
//   4          12       max_devices_per_node < 4
//   6           2       max_devices_per_node < 6
//   8          12       max_devices_per_node < 8
//   8+8         4       nodes < 2 or max_devices_per_node < 8
//   8+8+8+8     2       nodes < 4 or max_devices_per_node < 8
// The weights left are used as they are (a shape is drawn with weight / sum of the weights left),
// so a fleet of 4-device nodes draws 1, 2, 3 and 4 with 50, 15, 3 and 12 out of 80.
// max_devices_per_node and nodes below 1 count as 1; fleet_devices below 1 counts as 1.
//
// The draws, all from one splitmix64 stream seeded with `seed`:
//   1. for each job in order, the shape (next() % sum of the weights, against the cumulative
//      weights in the table's order), then the duration: Pareto with alpha 1.5 and x_m 60 s,
//      d = 60 * u^(-1/1.5), u uniform in (0, 1), capped at 24 h and rounded to whole seconds
//      (at least 1);
//   2. then the arrivals: a Poisson process at rate
//        lambda = load * fleet_devices / mean(devices * duration) jobs per second,
//      the mean taken over the jobs just drawn (so the trace offers `load` of the fleet's
//      devices), the first job at 0 and each next one -ln(u) / lambda seconds later; arrivals are
//      rounded to milliseconds (the running sum is kept unrounded).
// With partition_share > 0 and offers, step 1 first draws u for each job: u < partition_share
// makes it a partition job, whose profile is drawn (u x the sum of the offers' weights, against
// the cumulative weights in the offers' order); the duration is drawn as for any job. Only
// the partitionable devices serve partition jobs, so a partition job counts in the mean below as
// device share x duration x fleet_devices / partitionable_devices: the trace offers `load` of
// the partitionable devices to partition jobs as it offers `load` of the fleet to the others.
// u = ((next() >> 11) + 0.5) / 2^53, never 0 nor 1. No std:: distribution is used, so the trace
// depends only on the seed and the options (and on std::log and std::pow, which are correctly
// rounded or within an ulp on the usual libm; a differing last bit could only show where a value
// sits at a rounding boundary). A load that is not a positive number counts as 0.9.
#include "lab/trace.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include "base/text.h"

namespace xpu::lab {
namespace {
namespace trace_cc {

constexpr std::string_view kHeader = "#id,arrival,shape,duration";

std::string LineError(std::string_view source, int line, std::string_view column,
                      std::string_view what) {
  std::string out(source);
  out += ": line " + std::to_string(line);
  if (!column.empty()) {
    out += ", column ";
    out += column;
  }
  out += ": ";
  out += what;
  return out;
}

// Splits `text` at every `sep`; "a,,b" -> {"a", "", "b"}.
std::vector<std::string_view> SplitAt(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    if (at == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, at - start));
    start = at + 1;
  }
}

// A whole field as a double; nullopt for anything else (trailing text, empty, out of range).
std::optional<double> ParseDouble(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A whole field as a positive int; nullopt for anything else.
std::optional<int> ParseCount(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value <= 0) return std::nullopt;
  return value;
}

// Seconds: a finite number; "what" when not.
StatusOr<double> ParseSeconds(std::string_view field) {
  const auto value = ParseDouble(field);
  if (!value) return InvalidArgumentError(QuoteText(field) + " is not a number of seconds");
  if (!std::isfinite(*value)) {
    return InvalidArgumentError(QuoteText(field) + " is not a finite number of seconds");
  }
  return *value;
}

StatusOr<std::vector<int>> ParseShape(std::string_view field) {
  if (field.starts_with(kPartitionShapePrefix)) {
    const std::string_view profile = Trim(field.substr(kPartitionShapePrefix.size()));
    if (profile.empty() || profile.find_first_of(" \t") != std::string_view::npos) {
      return InvalidArgumentError(QuoteText(field) +
                                  " names no profile (partition:<profile>, \"partition:1g.18gb\")");
    }
    return std::vector<int>();
  }
  std::vector<int> parts;
  for (const auto part : SplitAt(field, '+')) {
    const auto count = ParseCount(Trim(part));
    if (!count) {
      return InvalidArgumentError(QuoteText(field) + " is not a device count (a positive integer)");
    }
    parts.push_back(*count);
  }
  for (const int p : parts) {
    if (p != parts.front()) {
      return InvalidArgumentError(
          QuoteText(field) +
          " has unequal parts (a gang is placed as nodes x devices per node: every part the same)");
    }
  }
  return parts;
}

// The shortest text that reads back as `value`, without an exponent where the value allows.
std::string SecondsText(double value) {
  std::array<char, 512> buf{};
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), value, std::chars_format::fixed);
  if (r.ec != std::errc()) r = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  return {buf.data(), r.ptr};
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): the 53 high bits, centred in their interval.
  double Unit() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

struct MixShape {
  int nodes;
  int per_node;
  int weight;
};

constexpr std::array<MixShape, 8> kMix = {
    {{1, 1, 50}, {1, 2, 15}, {1, 3, 3}, {1, 4, 12}, {1, 6, 2}, {1, 8, 12}, {2, 8, 4}, {4, 8, 2}}};
constexpr double kParetoAlpha = 1.5;
constexpr double kParetoMinSeconds = 60;
constexpr double kMaxDurationSeconds = 24 * 3600;
constexpr double kDefaultLoad = 0.9;

}  // namespace trace_cc
}  // namespace

StatusOr<std::vector<Job>> ParseTrace(std::string_view text, std::string_view source) {
  using trace_cc::LineError;
  std::vector<Job> jobs;
  std::map<std::string, int, std::less<>> first_line;              // id -> line
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  int line_number = 0;
  for (auto line : trace_cc::SplitAt(text, '\n')) {
    ++line_number;
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    const auto fields = trace_cc::SplitAt(line, ',');
    if (fields.size() != 4) {
      return InvalidArgumentError(LineError(
          source, line_number, "",
          "expected 4 columns (id,arrival,shape,duration), got " + std::to_string(fields.size())));
    }
    Job job;
    job.id = std::string(Trim(fields[0]));
    if (job.id.empty()) {
      return InvalidArgumentError(LineError(source, line_number, "id", "empty"));
    }
    if (auto [it, added] = first_line.emplace(job.id, line_number); !added) {
      return InvalidArgumentError(LineError(source, line_number, "id",
                                            "duplicate id " + QuoteText(job.id) +
                                                " (first on line " + std::to_string(it->second) +
                                                ")"));
    }
    const auto arrival = trace_cc::ParseSeconds(Trim(fields[1]));
    if (!arrival.ok()) {
      return InvalidArgumentError(
          LineError(source, line_number, "arrival", arrival.status().message()));
    }
    if (*arrival < 0) {
      return InvalidArgumentError(LineError(
          source, line_number, "arrival",
          QuoteText(Trim(fields[1])) + " is negative (seconds from the trace's start, >= 0)"));
    }
    job.arrival = *arrival + 0.0;  // -0 reads as 0
    auto parts = trace_cc::ParseShape(Trim(fields[2]));
    if (!parts.ok()) {
      return InvalidArgumentError(
          LineError(source, line_number, "shape", parts.status().message()));
    }
    job.parts = std::move(parts).value();
    if (job.parts.empty()) {
      job.profile = std::string(Trim(Trim(fields[2]).substr(kPartitionShapePrefix.size())));
    }
    const auto duration = trace_cc::ParseSeconds(Trim(fields[3]));
    if (!duration.ok()) {
      return InvalidArgumentError(
          LineError(source, line_number, "duration", duration.status().message()));
    }
    if (!(*duration > 0)) {
      return InvalidArgumentError(
          LineError(source, line_number, "duration",
                    QuoteText(Trim(fields[3])) + " is not positive (seconds, > 0)"));
    }
    job.duration = *duration;
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) {
    return InvalidArgumentError(std::string(source) +
                                ": no jobs (every line is blank or a # comment)");
  }
  return jobs;
}

std::vector<Job> SyntheticTrace(const SyntheticOptions& options) {
  std::vector<Job> jobs;
  if (options.jobs <= 0) return jobs;
  const int max_per_node = std::max(options.max_devices_per_node, 1);
  const int nodes = std::max(options.nodes, 1);
  const int fleet_devices = std::max(options.fleet_devices, 1);
  const double load = options.load > 0 ? options.load : trace_cc::kDefaultLoad;

  std::vector<trace_cc::MixShape> mix;
  uint64_t total_weight = 0;
  for (const auto& shape : trace_cc::kMix) {
    if (shape.per_node > max_per_node || shape.nodes > nodes) continue;
    mix.push_back(shape);
    total_weight += static_cast<uint64_t>(shape.weight);
  }

  double partition_weight = 0;
  for (const PartitionOffer& offer : options.partitions) {
    partition_weight += std::max(offer.weight, 0.0);
  }
  const bool partitions = options.partition_share > 0 && partition_weight > 0;
  const double partition_scale =
      static_cast<double>(fleet_devices) / std::max(options.partitionable_devices, 1);

  trace_cc::SplitMix64 rng(options.seed);
  jobs.reserve(static_cast<size_t>(options.jobs));
  int64_t device_seconds = 0;  // whole devices and whole seconds, so the sum is exact
  double partition_seconds = 0;
  for (int i = 0; i < options.jobs; ++i) {
    Job job;
    char id[32];
    std::snprintf(id, sizeof id, "job-%06d", i + 1);
    job.id = id;
    const PartitionOffer* offer = nullptr;
    if (partitions && rng.Unit() < options.partition_share) {
      double p = rng.Unit() * partition_weight;
      for (const PartitionOffer& o : options.partitions) {
        offer = &o;  // the last, should rounding leave p above every weight
        if (p < o.weight) break;
        p -= std::max(o.weight, 0.0);
      }
      job.profile = offer->profile;
    }
    uint64_t pick = offer == nullptr ? rng.Next() % total_weight : 0;
    for (const auto& shape : mix) {
      const auto weight = static_cast<uint64_t>(shape.weight);
      if (offer != nullptr) break;
      if (pick < weight) {
        job.parts.assign(static_cast<size_t>(shape.nodes), shape.per_node);
        break;
      }
      pick -= weight;
    }
    const double pareto =
        trace_cc::kParetoMinSeconds * std::pow(rng.Unit(), -1.0 / trace_cc::kParetoAlpha);
    job.duration = std::max(1.0, std::round(std::min(pareto, trace_cc::kMaxDurationSeconds)));
    if (offer != nullptr) {
      partition_seconds += offer->device_share * job.duration * partition_scale;
    } else {
      device_seconds += static_cast<int64_t>(job.devices()) * static_cast<int64_t>(job.duration);
    }
    jobs.push_back(std::move(job));
  }

  const double mean_device_seconds =
      (static_cast<double>(device_seconds) + partition_seconds) / static_cast<double>(jobs.size());
  const double rate = load * static_cast<double>(fleet_devices) / mean_device_seconds;
  double t = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i > 0) t += -std::log(rng.Unit()) / rate;
    jobs[i].arrival = std::round(t * 1000) / 1000;
  }
  return jobs;
}

std::string TraceCsv(const std::vector<Job>& jobs) {
  std::string out(trace_cc::kHeader);
  out += '\n';
  for (const auto& job : jobs) {
    out += job.id;
    out += ',';
    out += trace_cc::SecondsText(job.arrival);
    out += ',';
    if (job.partition()) out += std::string(kPartitionShapePrefix) + job.profile;
    for (size_t p = 0; p < job.parts.size(); ++p) {
      if (p > 0) out += '+';
      out += std::to_string(job.parts[p]);
    }
    out += ',';
    out += trace_cc::SecondsText(job.duration);
    out += '\n';
  }
  return out;
}

}  // namespace xpu::lab
