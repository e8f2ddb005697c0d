#include "api/validation.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace xpu::api {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

using Validator = Status (*)(std::string_view, std::string_view);

// A validator, values it accepts, and values it rejects with a part of the message.
struct ValidatorCase {
  const char* validator_name;
  Validator validator;
  std::vector<std::string> valid;
  std::vector<std::pair<std::string, std::string>> invalid;
};

std::string Repeat(char c, size_t n) { return std::string(n, c); }

// A DNS subdomain shape of n bytes: labels of at most 63 bytes joined by '.'.
std::string Subdomain(size_t n) {
  std::string out;
  char c = 'a';
  while (out.size() < n) {
    if (!out.empty()) out += '.';
    size_t len = std::min<size_t>(63, n - out.size());
    if (n - out.size() - len == 1) --len;  // never end with '.'
    out += Repeat(c++, len);
  }
  return out;
}

#define V(f) #f, f

TEST_CASE("Subdomain helper builds the boundary lengths") {
  CHECK(Subdomain(253).size() == 253);
  CHECK(Subdomain(254).size() == 254);
  for (size_t n : {1, 63, 64, 65, 253, 254}) {
    const std::string s = Subdomain(n);
    CHECK(s.size() == n);
    CHECK(s.back() != '.');
    CHECK(s.find("..") == std::string::npos);
  }
}

TEST_CASE("validators accept valid values and name field, value and rule otherwise") {
  const std::string kRule = "must consist of";
  const std::vector<ValidatorCase> cases = {
      // DNS label.
      {V(ValidateDnsLabel),
       {"gpu-0", "a", "0", Repeat('a', 63)},
       {
           {Repeat('a', 64), "must be at most 63 bytes, got 64"},
           {"", "must not be empty"},
           {"GPU_0", "must consist of lower-case letters, digits and '-'"},
           {"-gpu", kRule},
           {"gpu-", kRule},
           {"gpu.0", kRule},
       }},
      // DNS subdomain.
      {V(ValidateDnsSubdomain),
       // The labels inside are not capped.
       {"gpu.example.com", Subdomain(253), Repeat('a', 64) + ".com"},
       {
           {Subdomain(254), "must be at most 253 bytes, got 254"},
           {"a..b", "must consist of DNS labels"},
           {".a", kRule},
           {"a.", kRule},
           {"Example.com", kRule},
           {"", "must not be empty"},
       }},
      // C identifier.
      {V(ValidateCIdentifier),
       {"_x1", "Model", Repeat('x', 100)},
       {
           {"1x", "must be a C identifier"},
           {"a-b", "must be a C identifier"},
           {"", "must not be empty"},
       }},
      // Qualified (attribute and capacity) names.
      {V(ValidateQualifiedName),
       // Upper case in the domain is tolerated, as for drivers.
       {"index", Repeat('x', 32), "resource.kubernetes.io/pcieRoot", "gpu.example.com/model",
        Subdomain(63) + "/x", "Example.COM/x"},
       {
           {Repeat('x', 33), "must be at most 32 bytes, got 33"},
           {Subdomain(64) + "/x", "the domain before '/' must be at most 63 bytes, got 64"},
           {"a/b/c", "must contain at most one '/'"},
           {"/model", "the domain before '/' must not be empty"},
           {"example.com/", "the name after '/' must not be empty"},
           {"exa_mple.com/x", "the domain before '/' must consist of DNS"},
           {"example.com/1x", "the name after '/' must be a C identifier"},
           {"example.com/" + Repeat('x', 33),
            "the name after '/' must be at most 32 bytes, got 33"},
           {"pcie-root", "must be a C identifier"},
           {"", "must not be empty"},
       }},
      {V(ValidateFullyQualifiedName),
       {"resource.kubernetes.io/pcieRoot"},
       {
           {"pcieRoot", "must be <domain>/<name> with the domain"},
           {"x/1a", "the name after '/' must be a C identifier"},
           {"", "must not be empty"},
       }},
      // Label keys and values.
      {V(ValidateLabelKey),
       {"app", "example.com/my-key", "kubernetes.io/Key_1.x", Repeat('k', 63),
        Subdomain(253) + "/a"},
       {
           {Repeat('k', 64), "the name must be at most 63 bytes, got 64"},
           {Subdomain(254) + "/a", "the prefix before '/' must be at most 253 bytes, got 254"},
           {"/a", "the prefix before '/' must not be empty"},
           {"a/", "the name must not be empty"},
           {"-a", "the name must consist of letters, digits, '-', '_' and '.'"},
           {"a/b/c", "must contain at most one '/'"},
           {"Example.com/a", "the prefix before '/' must consist of DNS labels"},
           {"", "must not be empty"},
       }},
      {V(ValidateLabelValue),
       {"", "v1.0_rc-1", Repeat('v', 63)},
       {
           {Repeat('v', 64), "must be at most 63 bytes, got 64"},
           {"-x", "or be empty"},
           {"a b", kRule},
       }},
      // Pool, driver and node names.
      {V(ValidatePoolName),
       {"node-1", "node-1/gpus", "a.b/c.d/e", Subdomain(253)},
       {
           {Subdomain(254), "must be at most 253 bytes, got 254"},
           {"a//b", "must be DNS subdomains joined by '/': part \"\""},
           {"/a", "part \"\""},
           {"node-1/Node_1", "part \"Node_1\" must consist of DNS labels"},
           {"", "must not be empty"},
       }},
      {V(ValidateDriverName),
       {"gpu.example.com", Subdomain(63), "GPU.Example.com"},
       {
           {Subdomain(64), "must be at most 63 bytes, got 64"},
           {"gpu_example.com", "must consist of DNS labels"},
           {"", "must not be empty"},
       }},
      {V(ValidateNodeName),
       {"worker-1.cluster.local"},
       {
           {"Worker-1", "must consist of DNS labels"},
           {Subdomain(254), "must be at most 253 bytes, got 254"},
       }},
      // Attribute values.
      {V(ValidateAttributeString),
       {"", "any thing: \xc3\xbc", Repeat('s', 64)},
       {
           {Repeat('s', 65), "must be at most 64 bytes, got 65"},
       }},
      {V(ValidateVersionAttribute),
       {"1.2.3", "0.0.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x.7.z.92",
        "1.0.0-x-y-z.--", "1.0.0-alpha+001", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85",
        "999999999999999999.999999999999999999.999999999999999999",
        "1.2.3-999999999999999999.1234567890123456789a", "1.2.3+12345678901234567890",
        "1.2.3-" + Repeat('a', 58)},
       {
           {"1.2.3-" + Repeat('a', 59), "must be at most 64 bytes, got 65"},
           {"v1.2.3", "must not start with \"v\""},
           {"1.2", "must start with MAJOR.MINOR.PATCH"},
           {"1.2.3.4", "must start with MAJOR.MINOR.PATCH"},
           {"1..3", "must start with MAJOR.MINOR.PATCH"},
           {"1.2.3 ", "must start with MAJOR.MINOR.PATCH"},
           {"-1.2.3", "must start with MAJOR.MINOR.PATCH"},
           {"01.2.3", "must not have leading zeros"},
           {"1.2.03", "must not have leading zeros"},
           // 1.38 allows at most 18 digits in a number (1.37 any number).
           {"1000000000000000000.0.0", "MAJOR, MINOR and PATCH must have at most 18 digits"},
           {"1.1000000000000000000.0", "MAJOR, MINOR and PATCH must have at most 18 digits"},
           {"1.0.18446744073709551615", "MAJOR, MINOR and PATCH must have at most 18 digits"},
           {"1.2.3-1000000000000000000",
            "numeric pre-release identifier \"1000000000000000000\" must have at most 18 digits"},
           {"1.2.3-rc.1000000000000000000+b", "pre-release identifier \"1000000000000000000\""},
           {"1.2.3-01", "numeric pre-release identifier \"01\""},
           {"1.2.3-", "pre-release identifiers after '-'"},
           {"1.2.3-a..b", "pre-release identifiers after '-'"},
           {"1.2.3-a_b", "pre-release identifiers after '-'"},
           {"1.2.3+", "build identifiers after '+'"},
           {"1.2.3+a_b", "build identifiers after '+'"},
           {"1.2.3-a+b+c", "build identifiers after '+'"},
           {"", "must not be empty"},
       }},
      {V(ValidateUuid),
       {"123e4567-e89b-12d3-a456-426614174000"},
       {
           {"123E4567-E89B-12D3-A456-426614174000", "must be a lower-case UUID"},
           {"123e4567e89b12d3a456426614174000", "must be a lower-case UUID"},
           {"123e4567-e89b-12d3-a456-42661417400g", "must be a lower-case UUID"},
           {"", "must be a lower-case UUID"},
       }},
  };
  for (const ValidatorCase& c : cases) {
    for (const std::string& value : c.valid) {
      INFO(c.validator_name << "(\"" << value << "\")");
      const Status status = c.validator(value, "spec.x");
      CHECK(status.ok());
      CHECK(status.message().empty());
    }
    for (const auto& [value, why] : c.invalid) {
      INFO(c.validator_name << "(\"" << value << "\")");
      const Status status = c.validator(value, "spec.x");
      REQUIRE_FALSE(status.ok());
      CHECK(status.code() == StatusCode::kInvalidArgument);
      CHECK_THAT(status.message(), StartsWith("spec.x: \""));
      CHECK_THAT(status.message(), Contains("\" is not "));
      CHECK_THAT(status.message(), Contains(why));
    }
  }
}

TEST_CASE("validation messages read field: value is not rule") {
  CHECK(ValidateDnsLabel("GPU_0", "spec.devices[3].name").message() ==
        "spec.devices[3].name: \"GPU_0\" is not a DNS label: must consist of lower-case letters, "
        "digits and '-', and start and end with a letter or digit (e.g. \"gpu-0\")");
  CHECK(ValidateDriverName("", "spec.driver").message() ==
        "spec.driver: \"\" is not a driver name: must not be empty");
  // Without a field the message starts with the value.
  CHECK(ValidateUuid("x", "").message() ==
        "\"x\" is not a UUID: must be a lower-case UUID in 8-4-4-4-12 hex form, e.g. "
        "\"123e4567-e89b-12d3-a456-426614174000\"");
  // Long values are cut, quotes and control characters escaped.
  const Status long_value = ValidateDnsLabel(Repeat('a', 300), "name");
  CHECK(long_value.message() == "name: \"" + Repeat('a', 64) +
                                    "...\" is not a DNS label: must be at most 63 bytes, got 300");
  CHECK(ValidateDnsLabel("a\"b\n", "name")
            .message()
            .starts_with("name: \"a\\\"b\\x0a\" is not a DNS label"));
}

TEST_CASE("predicates agree with the validators") {
  for (const char* value : {"gpu-0", "gpu.0", "gpu.example.com", "gpu..example.com",
                            "driverVersion", "driver-version", "Model", ""}) {
    INFO(value);
    CHECK(IsDnsLabel(value) == ValidateDnsLabel(value, "").ok());
    CHECK(IsDnsSubdomain(value) == ValidateDnsSubdomain(value, "").ok());
    CHECK(IsCIdentifier(value) == ValidateCIdentifier(value, "").ok());
  }
}

#define LIMIT(m) #m, &Limits::m

TEST_CASE("LimitsFor gives the per-release resource.k8s.io limits") {
  const Limits v134 = LimitsFor(KubeVersion::k1_34);
  const Limits v135 = LimitsFor(KubeVersion::k1_35);
  constexpr int kNone = Limits::kNoLimit;
  // Each limit in 1.34, then in 1.35.
  const std::vector<std::tuple<const char*, int Limits::*, int, int>> limits = {
      {LIMIT(max_devices_per_slice), 128, 128},
      {LIMIT(max_devices_per_slice_with_taints_or_counters), 128, 64},
      {LIMIT(max_attributes_and_capacities_per_device), 32, 32},
      {LIMIT(max_taints_per_device), 4, 16},
      {LIMIT(max_shared_counters_per_slice), 32, kNone},
      {LIMIT(max_counter_sets_per_slice), kNone, 8},
      {LIMIT(max_counters_per_counter_set), kNone, 32},
      {LIMIT(max_counters_per_device), 32, kNone},
      {LIMIT(max_device_counters_per_slice), 1024, kNone},
      {LIMIT(max_counter_consumptions_per_device), kNone, 2},
      {LIMIT(max_counters_per_counter_consumption), kNone, 32},
      {LIMIT(max_binding_conditions_per_device), 4, 4},
      {LIMIT(max_device_requests), 32, 32},
      {LIMIT(max_first_available_subrequests), 8, 8},
      {LIMIT(max_device_tolerations), 16, 16},
      {LIMIT(max_cel_expression_bytes), 10240, 10240},
      {LIMIT(max_reserved_for), 256, 256},
  };
  for (const auto& [name, limit, in_134, in_135] : limits) {
    INFO(name);
    CHECK(v134.*limit == in_134);
    CHECK(v135.*limit == in_135);
  }
  CHECK(v134.slice_may_mix_devices_and_counters);
  CHECK_FALSE(v135.slice_may_mix_devices_and_counters);
  CHECK_FALSE(v134.counter_sets_pool_wide);
  CHECK(v135.counter_sets_pool_wide);
  CHECK_FALSE(v134.taint_effect_none_allowed);
  CHECK(v135.taint_effect_none_allowed);
}

}  // namespace
}  // namespace xpu::api
