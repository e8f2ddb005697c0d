#include "api/validation.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace xpu::api {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

using Validator = Status (*)(std::string_view, std::string_view);

struct Case {
  const char* validator_name;
  Validator validator;
  std::string value;
  // Empty when the value is valid; else a part of the message.
  std::string why;
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
  const std::vector<Case> cases = {
      // DNS label.
      {V(ValidateDnsLabel), "gpu-0", ""},
      {V(ValidateDnsLabel), "a", ""},
      {V(ValidateDnsLabel), "0", ""},
      {V(ValidateDnsLabel), Repeat('a', 63), ""},
      {V(ValidateDnsLabel), Repeat('a', 64), "must be at most 63 bytes, got 64"},
      {V(ValidateDnsLabel), "", "must not be empty"},
      {V(ValidateDnsLabel), "GPU_0", "must consist of lower-case letters, digits and '-'"},
      {V(ValidateDnsLabel), "-gpu", kRule},
      {V(ValidateDnsLabel), "gpu-", kRule},
      {V(ValidateDnsLabel), "gpu.0", kRule},
      // DNS subdomain.
      {V(ValidateDnsSubdomain), "gpu.example.com", ""},
      {V(ValidateDnsSubdomain), Subdomain(253), ""},
      {V(ValidateDnsSubdomain), Subdomain(254), "must be at most 253 bytes, got 254"},
      {V(ValidateDnsSubdomain), Repeat('a', 64) + ".com", ""},  // labels inside are not capped
      {V(ValidateDnsSubdomain), "a..b", "must consist of DNS labels"},
      {V(ValidateDnsSubdomain), ".a", kRule},
      {V(ValidateDnsSubdomain), "a.", kRule},
      {V(ValidateDnsSubdomain), "Example.com", kRule},
      {V(ValidateDnsSubdomain), "", "must not be empty"},
      // C identifier.
      {V(ValidateCIdentifier), "_x1", ""},
      {V(ValidateCIdentifier), "Model", ""},
      {V(ValidateCIdentifier), Repeat('x', 100), ""},
      {V(ValidateCIdentifier), "1x", "must be a C identifier"},
      {V(ValidateCIdentifier), "a-b", "must be a C identifier"},
      {V(ValidateCIdentifier), "", "must not be empty"},
      // Qualified (attribute and capacity) names.
      {V(ValidateQualifiedName), "index", ""},
      {V(ValidateQualifiedName), Repeat('x', 32), ""},
      {V(ValidateQualifiedName), Repeat('x', 33), "must be at most 32 bytes, got 33"},
      {V(ValidateQualifiedName), "resource.kubernetes.io/pcieRoot", ""},
      {V(ValidateQualifiedName), "gpu.example.com/model", ""},
      {V(ValidateQualifiedName), Subdomain(63) + "/x", ""},
      {V(ValidateQualifiedName), Subdomain(64) + "/x",
       "the domain before '/' must be at most 63 bytes, got 64"},
      {V(ValidateQualifiedName), "Example.COM/x", ""},  // upper case tolerated, as for drivers
      {V(ValidateQualifiedName), "a/b/c", "must contain at most one '/'"},
      {V(ValidateQualifiedName), "/model", "the domain before '/' must not be empty"},
      {V(ValidateQualifiedName), "example.com/", "the name after '/' must not be empty"},
      {V(ValidateQualifiedName), "exa_mple.com/x", "the domain before '/' must consist of DNS"},
      {V(ValidateQualifiedName), "example.com/1x", "the name after '/' must be a C identifier"},
      {V(ValidateQualifiedName), "example.com/" + Repeat('x', 33),
       "the name after '/' must be at most 32 bytes, got 33"},
      {V(ValidateQualifiedName), "pcie-root", "must be a C identifier"},
      {V(ValidateQualifiedName), "", "must not be empty"},
      {V(ValidateFullyQualifiedName), "resource.kubernetes.io/pcieRoot", ""},
      {V(ValidateFullyQualifiedName), "pcieRoot", "must be <domain>/<name> with the domain"},
      {V(ValidateFullyQualifiedName), "x/1a", "the name after '/' must be a C identifier"},
      {V(ValidateFullyQualifiedName), "", "must not be empty"},
      // Label keys and values.
      {V(ValidateLabelKey), "app", ""},
      {V(ValidateLabelKey), "example.com/my-key", ""},
      {V(ValidateLabelKey), "kubernetes.io/Key_1.x", ""},
      {V(ValidateLabelKey), Repeat('k', 63), ""},
      {V(ValidateLabelKey), Repeat('k', 64), "the name must be at most 63 bytes, got 64"},
      {V(ValidateLabelKey), Subdomain(253) + "/a", ""},
      {V(ValidateLabelKey), Subdomain(254) + "/a",
       "the prefix before '/' must be at most 253 bytes, got 254"},
      {V(ValidateLabelKey), "/a", "the prefix before '/' must not be empty"},
      {V(ValidateLabelKey), "a/", "the name must not be empty"},
      {V(ValidateLabelKey), "-a", "the name must consist of letters, digits, '-', '_' and '.'"},
      {V(ValidateLabelKey), "a/b/c", "must contain at most one '/'"},
      {V(ValidateLabelKey), "Example.com/a", "the prefix before '/' must consist of DNS labels"},
      {V(ValidateLabelKey), "", "must not be empty"},
      {V(ValidateLabelValue), "", ""},
      {V(ValidateLabelValue), "v1.0_rc-1", ""},
      {V(ValidateLabelValue), Repeat('v', 63), ""},
      {V(ValidateLabelValue), Repeat('v', 64), "must be at most 63 bytes, got 64"},
      {V(ValidateLabelValue), "-x", "or be empty"},
      {V(ValidateLabelValue), "a b", kRule},
      // Pool, driver and node names.
      {V(ValidatePoolName), "node-1", ""},
      {V(ValidatePoolName), "node-1/gpus", ""},
      {V(ValidatePoolName), "a.b/c.d/e", ""},
      {V(ValidatePoolName), Subdomain(253), ""},
      {V(ValidatePoolName), Subdomain(254), "must be at most 253 bytes, got 254"},
      {V(ValidatePoolName), "a//b", "must be DNS subdomains joined by '/': part \"\""},
      {V(ValidatePoolName), "/a", "part \"\""},
      {V(ValidatePoolName), "node-1/Node_1", "part \"Node_1\" must consist of DNS labels"},
      {V(ValidatePoolName), "", "must not be empty"},
      {V(ValidateDriverName), "gpu.example.com", ""},
      {V(ValidateDriverName), Subdomain(63), ""},
      {V(ValidateDriverName), Subdomain(64), "must be at most 63 bytes, got 64"},
      {V(ValidateDriverName), "GPU.Example.com", ""},
      {V(ValidateDriverName), "gpu_example.com", "must consist of DNS labels"},
      {V(ValidateDriverName), "", "must not be empty"},
      {V(ValidateNodeName), "worker-1.cluster.local", ""},
      {V(ValidateNodeName), "Worker-1", "must consist of DNS labels"},
      {V(ValidateNodeName), Subdomain(254), "must be at most 253 bytes, got 254"},
      // Attribute values.
      {V(ValidateAttributeString), "", ""},
      {V(ValidateAttributeString), "any thing: \xc3\xbc", ""},
      {V(ValidateAttributeString), Repeat('s', 64), ""},
      {V(ValidateAttributeString), Repeat('s', 65), "must be at most 64 bytes, got 65"},
      {V(ValidateVersionAttribute), "1.2.3", ""},
      {V(ValidateVersionAttribute), "0.0.0", ""},
      {V(ValidateVersionAttribute), "1.0.0-alpha", ""},
      {V(ValidateVersionAttribute), "1.0.0-alpha.1", ""},
      {V(ValidateVersionAttribute), "1.0.0-0.3.7", ""},
      {V(ValidateVersionAttribute), "1.0.0-x.7.z.92", ""},
      {V(ValidateVersionAttribute), "1.0.0-x-y-z.--", ""},
      {V(ValidateVersionAttribute), "1.0.0-alpha+001", ""},
      {V(ValidateVersionAttribute), "1.0.0+20130313144700", ""},
      {V(ValidateVersionAttribute), "1.0.0-beta+exp.sha.5114f85", ""},
      {V(ValidateVersionAttribute), "18446744073709551615.0.0", ""},
      {V(ValidateVersionAttribute), "1.2.3-" + Repeat('a', 58), ""},
      {V(ValidateVersionAttribute), "1.2.3-" + Repeat('a', 59), "must be at most 64 bytes, got 65"},
      {V(ValidateVersionAttribute), "v1.2.3", "must not start with \"v\""},
      {V(ValidateVersionAttribute), "1.2", "must start with MAJOR.MINOR.PATCH"},
      {V(ValidateVersionAttribute), "1.2.3.4", "must start with MAJOR.MINOR.PATCH"},
      {V(ValidateVersionAttribute), "1..3", "must start with MAJOR.MINOR.PATCH"},
      {V(ValidateVersionAttribute), "1.2.3 ", "must start with MAJOR.MINOR.PATCH"},
      {V(ValidateVersionAttribute), "-1.2.3", "must start with MAJOR.MINOR.PATCH"},
      {V(ValidateVersionAttribute), "01.2.3", "must not have leading zeros"},
      {V(ValidateVersionAttribute), "1.2.03", "must not have leading zeros"},
      {V(ValidateVersionAttribute), "18446744073709551616.0.0", "must fit in 64 bits"},
      {V(ValidateVersionAttribute), "1.2.3-01", "numeric pre-release identifier \"01\""},
      {V(ValidateVersionAttribute), "1.2.3-", "pre-release identifiers after '-'"},
      {V(ValidateVersionAttribute), "1.2.3-a..b", "pre-release identifiers after '-'"},
      {V(ValidateVersionAttribute), "1.2.3-a_b", "pre-release identifiers after '-'"},
      {V(ValidateVersionAttribute), "1.2.3+", "build identifiers after '+'"},
      {V(ValidateVersionAttribute), "1.2.3+a_b", "build identifiers after '+'"},
      {V(ValidateVersionAttribute), "1.2.3-a+b+c", "build identifiers after '+'"},
      {V(ValidateVersionAttribute), "", "must not be empty"},
      {V(ValidateUuid), "123e4567-e89b-12d3-a456-426614174000", ""},
      {V(ValidateUuid), "123E4567-E89B-12D3-A456-426614174000", "must be a lower-case UUID"},
      {V(ValidateUuid), "123e4567e89b12d3a456426614174000", "must be a lower-case UUID"},
      {V(ValidateUuid), "123e4567-e89b-12d3-a456-42661417400g", "must be a lower-case UUID"},
      {V(ValidateUuid), "", "must be a lower-case UUID"},
  };
  for (const Case& c : cases) {
    INFO(c.validator_name << "(\"" << c.value << "\")");
    const Status status = c.validator(c.value, "spec.x");
    if (c.why.empty()) {
      CHECK(status.ok());
      CHECK(status.message().empty());
    } else {
      REQUIRE_FALSE(status.ok());
      CHECK(status.code() == StatusCode::kInvalidArgument);
      CHECK_THAT(status.message(), StartsWith("spec.x: \""));
      CHECK_THAT(status.message(), Contains("\" is not "));
      CHECK_THAT(status.message(), Contains(c.why));
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
  CHECK(IsDnsLabel("gpu-0"));
  CHECK_FALSE(IsDnsLabel("gpu.0"));
  CHECK(IsDnsSubdomain("gpu.example.com"));
  CHECK_FALSE(IsDnsSubdomain("gpu..example.com"));
  CHECK(IsCIdentifier("driverVersion"));
  CHECK_FALSE(IsCIdentifier("driver-version"));
  CHECK_FALSE(IsCIdentifier(""));
}

TEST_CASE("LimitsFor gives the per-release resource.k8s.io limits") {
  const Limits v134 = LimitsFor(KubeVersion::k1_34);
  CHECK(v134.max_devices_per_slice == 128);
  CHECK(v134.max_devices_per_slice_with_taints_or_counters == 128);
  CHECK(v134.max_attributes_and_capacities_per_device == 32);
  CHECK(v134.max_taints_per_device == 4);
  CHECK(v134.max_shared_counters_per_slice == 32);
  CHECK(v134.max_counter_sets_per_slice == Limits::kNoLimit);
  CHECK(v134.max_counters_per_device == 32);
  CHECK(v134.max_device_counters_per_slice == 1024);
  CHECK(v134.max_counter_consumptions_per_device == Limits::kNoLimit);
  CHECK(v134.slice_may_mix_devices_and_counters);
  CHECK_FALSE(v134.counter_sets_pool_wide);
  CHECK_FALSE(v134.taint_effect_none_allowed);
  CHECK(v134.max_binding_conditions_per_device == 4);
  CHECK(v134.max_device_requests == 32);
  CHECK(v134.max_first_available_subrequests == 8);
  CHECK(v134.max_cel_expression_bytes == 10240);
  CHECK(v134.max_reserved_for == 256);

  const Limits v135 = LimitsFor(KubeVersion::k1_35);
  CHECK(v135.max_devices_per_slice == 128);
  CHECK(v135.max_devices_per_slice_with_taints_or_counters == 64);
  CHECK(v135.max_attributes_and_capacities_per_device == 32);
  CHECK(v135.max_taints_per_device == 16);
  CHECK(v135.max_shared_counters_per_slice == Limits::kNoLimit);
  CHECK(v135.max_counter_sets_per_slice == 8);
  CHECK(v135.max_counters_per_counter_set == 32);
  CHECK(v135.max_counters_per_device == Limits::kNoLimit);
  CHECK(v135.max_device_counters_per_slice == Limits::kNoLimit);
  CHECK(v135.max_counter_consumptions_per_device == 2);
  CHECK(v135.max_counters_per_counter_consumption == 32);
  CHECK_FALSE(v135.slice_may_mix_devices_and_counters);
  CHECK(v135.counter_sets_pool_wide);
  CHECK(v135.taint_effect_none_allowed);
  CHECK(v135.max_device_tolerations == 16);
}

}  // namespace
}  // namespace xpu::api
