// DeviceClass, ResourceClaim and ResourceClaimTemplate validation
// (api/resource_claim_validation.cc), and the version and timestamp helpers.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "api/resource.h"
#include "api/resource_validation.h"
#include "api/testing/field_error_checks.h"
#include "api/validation.h"

namespace xpu::api {
namespace {

using testing::CheckErrorCases;
using testing::Dump;
using testing::ErrorCase;
using testing::Has;

// ---- DeviceClass ----

resource::DeviceClass ValidClass() {
  resource::DeviceClass c;
  c.metadata.name = "gpu.example.com";
  c.spec.selectors.push_back({resource::CelDeviceSelector{"device.driver == \"gpu.example.com\"",
                                                          nlohmann::json::object()},
                              nlohmann::json::object()});
  resource::DeviceClassConfiguration config;
  config.opaque = resource::OpaqueDeviceConfiguration{
      "gpu.example.com",
      {{"apiVersion", "gpu.example.com/v1"}, {"kind", "Config"}},
      nlohmann::json::object()};
  c.spec.config.push_back(config);
  return c;
}

TEST_CASE("DeviceClassErrors, one broken rule per case") {
  CHECK(DeviceClassErrors(ValidClass(), KubeVersion::k1_35).empty());
  using C = resource::DeviceClass;
  const std::vector<ErrorCase<C>> cases = {
      {"name", [](C& c) { c.metadata.name = "GPU"; }, "metadata.name", FieldErrorType::kInvalid},
      {"name required", [](C& c) { c.metadata.name.clear(); }, "metadata.name",
       FieldErrorType::kRequired},
      {"too many selectors", [](C& c) { c.spec.selectors.assign(33, c.spec.selectors[0]); },
       "spec.selectors", FieldErrorType::kTooMany},
      {"selector without cel", [](C& c) { c.spec.selectors[0].cel.reset(); },
       "spec.selectors[0].cel", FieldErrorType::kRequired},
      {"cel too long", [](C& c) { c.spec.selectors[0].cel->expression = std::string(10241, 'x'); },
       "spec.selectors[0].cel.expression", FieldErrorType::kTooLong},
      {"too many configs", [](C& c) { c.spec.config.assign(33, c.spec.config[0]); }, "spec.config",
       FieldErrorType::kTooMany},
      {"config without opaque", [](C& c) { c.spec.config[0].opaque.reset(); },
       "spec.config[0].opaque", FieldErrorType::kRequired},
      {"opaque driver", [](C& c) { c.spec.config[0].opaque->driver = "not a driver"; },
       "spec.config[0].opaque.driver", FieldErrorType::kInvalid},
      {"parameters not an object",
       [](C& c) { c.spec.config[0].opaque->parameters = nlohmann::json::array(); },
       "spec.config[0].opaque.parameters", FieldErrorType::kInvalid},
      {"parameters too large",
       [](C& c) { c.spec.config[0].opaque->parameters["blob"] = std::string(10240, 'x'); },
       "spec.config[0].opaque.parameters", FieldErrorType::kTooLong},
      {"extended resource name", [](C& c) { c.spec.extended_resource_name = "kubernetes.io/gpu"; },
       "spec.extendedResourceName", FieldErrorType::kInvalid},
  };
  CheckErrorCases(ValidClass(), cases, [](const C& c) {
    CHECK(ValidateDeviceClass(c, KubeVersion::k1_35).code() == StatusCode::kInvalidArgument);
    return DeviceClassErrors(c, KubeVersion::k1_35);
  });
  auto ok = ValidClass();
  ok.spec.extended_resource_name = "example.com/gpu";
  CHECK(ValidateDeviceClass(ok, KubeVersion::k1_35).ok());
}

// ---- ResourceClaim ----

resource::ResourceClaim ValidClaim() {
  resource::ResourceClaim c;
  c.metadata.name = "claim-1";
  c.metadata.namespace_name = "default";
  resource::DeviceRequest gpu;
  gpu.name = "gpu";
  gpu.exactly.emplace();
  gpu.exactly->device_class_name = "gpu.example.com";
  gpu.exactly->count = 2;
  resource::DeviceRequest nic;
  nic.name = "nic";
  for (const char* sub : {"fast", "slow"}) {
    resource::DeviceSubRequest s;
    s.name = sub;
    s.device_class_name = "nic.example.com";
    nic.first_available.push_back(s);
  }
  c.spec.devices.requests = {gpu, nic};
  resource::DeviceConstraint constraint;
  constraint.requests = {"gpu", "nic/fast"};
  constraint.match_attribute = "resource.kubernetes.io/pcieRoot";
  c.spec.devices.constraints = {constraint};
  resource::DeviceClaimConfiguration config;
  config.requests = {"gpu"};
  config.opaque = resource::OpaqueDeviceConfiguration{
      "gpu.example.com", {{"kind", "Config"}}, nlohmann::json::object()};
  c.spec.devices.config = {config};
  return c;
}

// The first request's only toleration, made for a case to fill in.
resource::DeviceToleration& OnlyToleration(resource::ResourceClaim& c) {
  std::vector<resource::DeviceToleration>& tolerations =
      c.spec.devices.requests[0].exactly->tolerations;
  tolerations.resize(1);
  return tolerations[0];
}

TEST_CASE("ResourceClaimErrors, one broken rule per case") {
  CHECK(ResourceClaimErrors(ValidClaim(), KubeVersion::k1_35).empty());
  using C = resource::ResourceClaim;
  const std::string r0 = "spec.devices.requests[0]";
  const std::string r1 = "spec.devices.requests[1]";
  const std::vector<ErrorCase<C>> cases = {
      {"namespace required", [](C& c) { c.metadata.namespace_name.clear(); }, "metadata.namespace",
       FieldErrorType::kRequired},
      {"too many requests",
       [](C& c) {
         auto r = c.spec.devices.requests[0];
         c.spec.devices.requests.clear();
         for (int i = 0; i < 33; ++i) {
           r.name = "r" + std::to_string(i);
           c.spec.devices.requests.push_back(r);
         }
         c.spec.devices.constraints.clear();
         c.spec.devices.config.clear();
       },
       "spec.devices.requests", FieldErrorType::kTooMany},
      {"request name", [](C& c) { c.spec.devices.requests[0].name = "GPU"; }, r0 + ".name",
       FieldErrorType::kInvalid},
      {"request name required", [](C& c) { c.spec.devices.requests[0].name.clear(); }, r0 + ".name",
       FieldErrorType::kRequired},
      {"request names unique", [](C& c) { c.spec.devices.requests[1].name = "gpu"; }, r1,
       FieldErrorType::kDuplicate},
      {"neither exactly nor firstAvailable",
       [](C& c) { c.spec.devices.requests[0].exactly.reset(); }, r0, FieldErrorType::kRequired},
      {"both exactly and firstAvailable",
       [](C& c) {
         c.spec.devices.requests[0].first_available = c.spec.devices.requests[1].first_available;
       },
       r0, FieldErrorType::kInvalid},
      {"class name required",
       [](C& c) { c.spec.devices.requests[0].exactly->device_class_name.clear(); },
       r0 + ".exactly.deviceClassName", FieldErrorType::kRequired},
      {"class name subdomain",
       [](C& c) { c.spec.devices.requests[0].exactly->device_class_name = "GPU_class"; },
       r0 + ".exactly.deviceClassName", FieldErrorType::kInvalid},
      {"allocation mode",
       [](C& c) { c.spec.devices.requests[0].exactly->allocation_mode = "Some"; },
       r0 + ".exactly.allocationMode", FieldErrorType::kNotSupported},
      {"All with a count",
       [](C& c) { c.spec.devices.requests[0].exactly->allocation_mode = "All"; },
       r0 + ".exactly.count", FieldErrorType::kInvalid},
      {"negative count", [](C& c) { c.spec.devices.requests[0].exactly->count = -1; },
       r0 + ".exactly.count", FieldErrorType::kInvalid},
      {"cel too long",
       [](C& c) {
         c.spec.devices.requests[0].exactly->selectors.push_back(
             {resource::CelDeviceSelector{std::string(10241, 'x'), nlohmann::json::object()},
              nlohmann::json::object()});
       },
       r0 + ".exactly.selectors[0].cel.expression", FieldErrorType::kTooLong},
      {"too many tolerations",
       [](C& c) { c.spec.devices.requests[0].exactly->tolerations.resize(17); },
       r0 + ".exactly.tolerations", FieldErrorType::kTooMany},
      {"toleration operator", [](C& c) { OnlyToleration(c).operator_name = "Like"; },
       r0 + ".exactly.tolerations[0].operator", FieldErrorType::kNotSupported},
      {"Exists with a value",
       [](C& c) {
         resource::DeviceToleration& t = OnlyToleration(c);
         t.operator_name = "Exists";
         t.value = "x";
       },
       r0 + ".exactly.tolerations[0].value", FieldErrorType::kInvalid},
      {"toleration effect", [](C& c) { OnlyToleration(c).effect = "PreferNoSchedule"; },
       r0 + ".exactly.tolerations[0].effect", FieldErrorType::kNotSupported},
      {"capacity request quantity",
       [](C& c) {
         c.spec.devices.requests[0].exactly->capacity.emplace();
         c.spec.devices.requests[0].exactly->capacity->requests["memory"] = "lots";
       },
       r0 + ".exactly.capacity.requests[\"memory\"]", FieldErrorType::kInvalid},
      {"too many subrequests",
       [](C& c) {
         auto& subs = c.spec.devices.requests[1].first_available;
         for (int i = 0; i < 7; ++i) {
           subs.push_back(subs[0]);
           subs.back().name = "s" + std::to_string(i);
         }
       },
       r1 + ".firstAvailable", FieldErrorType::kTooMany},
      {"subrequest names unique",
       [](C& c) { c.spec.devices.requests[1].first_available[1].name = "fast"; },
       r1 + ".firstAvailable[1]", FieldErrorType::kDuplicate},
      {"subrequest class",
       [](C& c) { c.spec.devices.requests[1].first_available[0].device_class_name.clear(); },
       r1 + ".firstAvailable[0].deviceClassName", FieldErrorType::kRequired},
      {"constraint unknown request", [](C& c) { c.spec.devices.constraints[0].requests = {"tpu"}; },
       "spec.devices.constraints[0].requests[0]", FieldErrorType::kInvalid},
      {"constraint unknown subrequest",
       [](C& c) { c.spec.devices.constraints[0].requests = {"nic/medium"}; },
       "spec.devices.constraints[0].requests[0]", FieldErrorType::kInvalid},
      {"constraint duplicate request",
       [](C& c) {
         c.spec.devices.constraints[0].requests = {"gpu", "gpu"};
       },
       "spec.devices.constraints[0].requests[1]", FieldErrorType::kDuplicate},
      {"matchAttribute needs a domain",
       [](C& c) { c.spec.devices.constraints[0].match_attribute = "pcieRoot"; },
       "spec.devices.constraints[0].matchAttribute", FieldErrorType::kInvalid},
      {"constraint needs an attribute",
       [](C& c) { c.spec.devices.constraints[0].match_attribute.reset(); },
       "spec.devices.constraints[0]", FieldErrorType::kRequired},
      {"match and distinct",
       [](C& c) { c.spec.devices.constraints[0].distinct_attribute = "example.com/a"; },
       "spec.devices.constraints[0]", FieldErrorType::kInvalid},
      {"too many constraints",
       [](C& c) { c.spec.devices.constraints.assign(33, c.spec.devices.constraints[0]); },
       "spec.devices.constraints", FieldErrorType::kTooMany},
      {"config unknown request", [](C& c) { c.spec.devices.config[0].requests = {"x"}; },
       "spec.devices.config[0].requests[0]", FieldErrorType::kInvalid},
      {"config without opaque", [](C& c) { c.spec.devices.config[0].opaque.reset(); },
       "spec.devices.config[0].opaque", FieldErrorType::kRequired},
      {"config driver required", [](C& c) { c.spec.devices.config[0].opaque->driver.clear(); },
       "spec.devices.config[0].opaque.driver", FieldErrorType::kRequired},
      {"config parameters null",
       [](C& c) { c.spec.devices.config[0].opaque->parameters = nullptr; },
       "spec.devices.config[0].opaque.parameters", FieldErrorType::kRequired},
      {"too many configs", [](C& c) { c.spec.devices.config.assign(33, c.spec.devices.config[0]); },
       "spec.devices.config", FieldErrorType::kTooMany},
  };
  CheckErrorCases(ValidClaim(), cases,
                  [](const C& c) { return ResourceClaimErrors(c, KubeVersion::k1_35); });
}

TEST_CASE("ResourceClaimErrors: the None toleration effect is 1.35+") {
  auto c = ValidClaim();
  OnlyToleration(c).effect = "None";
  CHECK(ResourceClaimErrors(c, KubeVersion::k1_35).empty());
  CHECK(Has(ResourceClaimErrors(c, KubeVersion::k1_34),
            "spec.devices.requests[0].exactly.tolerations[0].effect",
            FieldErrorType::kNotSupported));
}

TEST_CASE("ResourceClaimUpdateErrors: the spec is immutable") {
  const auto old_claim = ValidClaim();
  CHECK(ResourceClaimUpdateErrors(old_claim, old_claim, KubeVersion::k1_35).empty());
  auto claim = old_claim;
  claim.metadata.labels["x"] = "y";
  CHECK(ResourceClaimUpdateErrors(old_claim, claim, KubeVersion::k1_35).empty());
  claim.spec.devices.requests[0].exactly->count = 3;
  CHECK(Has(ResourceClaimUpdateErrors(old_claim, claim, KubeVersion::k1_35), "spec",
            FieldErrorType::kInvalid));
}

resource::DeviceRequestAllocationResult Result(const std::string& request,
                                               const std::string& device) {
  resource::DeviceRequestAllocationResult r;
  r.request = request;
  r.driver = "gpu.example.com";
  r.pool = "node-1";
  r.device = device;
  return r;
}

TEST_CASE("ResourceClaimStatusUpdateErrors, one broken rule per case") {
  const auto old_claim = ValidClaim();
  auto allocated = ValidClaim();
  allocated.status.allocation.emplace();
  allocated.status.allocation->devices.results = {Result("gpu", "gpu-0"),
                                                  Result("nic/fast", "nic-0")};
  allocated.status.reserved_for = {{"", "pods", "pod-1", "uid-1", nlohmann::json::object()}};
  resource::AllocatedDeviceStatus device;
  device.driver = "gpu.example.com";
  device.pool = "node-1";
  device.device = "gpu-0";
  allocated.status.devices = {device};
  {
    const FieldErrors errors =
        ResourceClaimStatusUpdateErrors(old_claim, allocated, KubeVersion::k1_35);
    INFO(Dump(errors));
    CHECK(errors.empty());
  }
  using C = resource::ResourceClaim;
  const std::string r0 = "status.allocation.devices.results[0]";
  const std::vector<ErrorCase<C>> cases = {
      {"result request", [](C& c) { c.status.allocation->devices.results[0].request = "x"; },
       r0 + ".request", FieldErrorType::kInvalid},
      {"result driver", [](C& c) { c.status.allocation->devices.results[0].driver.clear(); },
       r0 + ".driver", FieldErrorType::kRequired},
      {"result pool", [](C& c) { c.status.allocation->devices.results[0].pool = "a//b"; },
       r0 + ".pool", FieldErrorType::kInvalid},
      {"result device", [](C& c) { c.status.allocation->devices.results[0].device = "GPU"; },
       r0 + ".device", FieldErrorType::kInvalid},
      {"result shareID",
       [](C& c) { c.status.allocation->devices.results[0].share_id = "not-a-uuid"; },
       r0 + ".shareID", FieldErrorType::kInvalid},
      {"config source",
       [](C& c) {
         resource::DeviceAllocationConfiguration config;
         config.source = "FromNowhere";
         config.opaque = c.spec.devices.config[0].opaque;
         c.status.allocation->devices.config = {config};
       },
       "status.allocation.devices.config[0].source", FieldErrorType::kNotSupported},
      {"reservedFor without allocation", [](C& c) { c.status.allocation.reset(); },
       "status.reservedFor", FieldErrorType::kForbidden},
      {"reservedFor uid", [](C& c) { c.status.reserved_for[0].uid.clear(); },
       "status.reservedFor[0].uid", FieldErrorType::kRequired},
      {"reservedFor too many",
       [](C& c) { c.status.reserved_for.resize(257, c.status.reserved_for[0]); },
       "status.reservedFor", FieldErrorType::kTooMany},
      {"device not allocated", [](C& c) { c.status.devices[0].device = "gpu-9"; },
       "status.devices[0]", FieldErrorType::kInvalid},
      {"device conditions", [](C& c) { c.status.devices[0].conditions.resize(9); },
       "status.devices[0].conditions", FieldErrorType::kTooMany},
      {"device data not an object", [](C& c) { c.status.devices[0].data = nlohmann::json("text"); },
       "status.devices[0].data", FieldErrorType::kInvalid},
      {"network ips",
       [](C& c) {
         c.status.devices[0].network_data.emplace();
         c.status.devices[0].network_data->ips = {"10.0.0.1"};
       },
       "status.devices[0].networkData.ips[0]", FieldErrorType::kInvalid},
      {"network interface name",
       [](C& c) {
         c.status.devices[0].network_data.emplace();
         c.status.devices[0].network_data->interface_name = std::string(257, 'e');
       },
       "status.devices[0].networkData.interfaceName", FieldErrorType::kTooLong},
  };
  CheckErrorCases(allocated, cases, [&](const C& c) {
    return ResourceClaimStatusUpdateErrors(old_claim, c, KubeVersion::k1_35);
  });
  SECTION("the allocation is immutable once set") {
    auto c = allocated;
    c.status.allocation->devices.results[0].device = "gpu-1";
    CHECK(Has(ResourceClaimStatusUpdateErrors(allocated, c, KubeVersion::k1_35),
              "status.allocation", FieldErrorType::kInvalid));
  }
}

TEST_CASE("ResourceClaimTemplateErrors checks the template metadata and the claim spec") {
  resource::ResourceClaimTemplate t;
  t.metadata.name = "template-1";
  t.metadata.namespace_name = "default";
  t.spec.spec = ValidClaim().spec;
  t.spec.metadata.labels["app"] = "demo";
  CHECK(ValidateResourceClaimTemplate(t, KubeVersion::k1_35).ok());
  auto bad = t;
  bad.spec.metadata.labels["app"] = "not valid";
  CHECK(Has(ResourceClaimTemplateErrors(bad, KubeVersion::k1_35), "spec.metadata.labels[\"app\"]",
            FieldErrorType::kInvalid));
  bad = t;
  bad.spec.spec.devices.requests[0].name = "GPU";
  CHECK(Has(ResourceClaimTemplateErrors(bad, KubeVersion::k1_35),
            "spec.spec.devices.requests[0].name", FieldErrorType::kInvalid));
  CHECK(Has(ResourceClaimTemplateUpdateErrors(t, bad, KubeVersion::k1_35), "spec",
            FieldErrorType::kInvalid));
  CHECK(ResourceClaimTemplateUpdateErrors(t, t, KubeVersion::k1_35).empty());
}

TEST_CASE("ParseKubeVersion and KubeVersionName") {
  CHECK(ParseKubeVersion("1.34") == KubeVersion::k1_34);
  CHECK(ParseKubeVersion("v1.35.0") == KubeVersion::k1_35);
  CHECK(!ParseKubeVersion("1.33").has_value());
  CHECK(KubeVersionName(KubeVersion::k1_34) == "1.34");
}

TEST_CASE("ValidateTimestamp accepts RFC 3339 times") {
  CHECK(ValidateTimestamp("2026-01-02T03:04:05Z", "t").ok());
  CHECK(ValidateTimestamp("2026-01-02T03:04:05.123+01:00", "t").ok());
  CHECK(!ValidateTimestamp("2026-01-02 03:04:05", "t").ok());
  CHECK(!ValidateTimestamp("2026-01-02T03:04:05", "t").ok());
}

}  // namespace
}  // namespace xpu::api
