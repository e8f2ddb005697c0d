#include "controller/config.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "controller/testing/config_examples.h"

namespace xpu::controller {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

// A support rule; an empty range is absent.
SupportRule Rule(std::string vendor, std::string family, std::string model, std::string driver,
                 std::string firmware = "", std::string toolkit = "") {
  SupportRule rule;
  rule.vendor = std::move(vendor);
  rule.family = std::move(family);
  rule.model = std::move(model);
  if (!driver.empty()) rule.driver = VersionRange{std::move(driver)};
  if (!firmware.empty()) rule.firmware = VersionRange{std::move(firmware)};
  if (!toolkit.empty()) rule.toolkit = VersionRange{std::move(toolkit)};
  return rule;
}

Config MustParse(const std::string& text) {
  return xpu::testing::ParsedValue(ParseConfig(text), text);
}

std::string ParseError(const std::string& text) {
  return xpu::testing::ParseErrorMessage(ParseConfig(text), text);
}

constexpr const char* kFullYaml = R"(apiVersion: xpu.dra.dev/v1alpha1
kind: ControllerConfig
publishing: {mode: groups, groupSizes: [2, 4, 8, 16], unhealthyEffect: NoExecute}
vendorClasses: false
capabilityClasses:
- name: training-large-memory
  vendors: [nvidia, huawei]           # allowed, in order of preference
  minMemory: 64Gi
  precisions: [bf16]
  families: [hopper, ascend910b]
  models: []
  images: {nvidia: nvcr.io/nvidia/pytorch:24.05-py3, huawei: ascendhub.huawei.com/pytorch:8.0}
  extendedResourceName: example.com/training-large-memory
- name: inference
  minMemory: 16Gi
  precisions: [fp16, int8]
supportMatrix:
- {vendor: nvidia, family: hopper, driver: ">=535.0.0 <600.0.0", toolkit: ">=12.2.0"}
- vendor: huawei
  firmware: ">=7.1.0"
)";

Config FullYamlConfig() {
  Config want;
  want.mode = PublishMode::kGroups;
  want.group_sizes = {2, 4, 8, 16};
  want.unhealthy_effect = "NoExecute";
  want.vendor_classes = false;
  CapabilityClass large = testing::TrainingLargeMemoryClass();
  CapabilityClass inference;
  inference.name = "inference";
  inference.min_memory = "16Gi";
  inference.precisions = {"fp16", "int8"};
  want.capability_classes = {large, inference};
  want.support_matrix = {
      Rule("nvidia", "hopper", "", ">=535.0.0 <600.0.0", "", ">=12.2.0"),
      Rule("huawei", "", "", "", ">=7.1.0"),
  };
  return want;
}

TEST_CASE("ParseConfig reads every field of a YAML document") {
  CHECK(MustParse(kFullYaml) == FullYamlConfig());
}

TEST_CASE("ParseConfig reads the same document written as JSON") {
  const std::string json = R"({
    "apiVersion": "xpu.dra.dev/v1alpha1", "kind": "ControllerConfig",
    "publishing": {"mode": "groups", "groupSizes": [2, 4, 8, 16], "unhealthyEffect": "NoExecute"},
    "vendorClasses": false,
    "capabilityClasses": [
      {"name": "training-large-memory", "vendors": ["nvidia", "huawei"], "minMemory": "64Gi",
       "precisions": ["bf16"], "families": ["hopper", "ascend910b"], "models": [],
       "images": {"nvidia": "nvcr.io/nvidia/pytorch:24.05-py3",
                  "huawei": "ascendhub.huawei.com/pytorch:8.0"},
       "extendedResourceName": "example.com/training-large-memory"},
      {"name": "inference", "minMemory": "16Gi", "precisions": ["fp16", "int8"]}],
    "supportMatrix": [
      {"vendor": "nvidia", "family": "hopper", "driver": ">=535.0.0 <600.0.0",
       "toolkit": ">=12.2.0"},
      {"vendor": "huawei", "firmware": ">=7.1.0"}]
  })";
  CHECK(MustParse(json) == FullYamlConfig());
}

TEST_CASE("ParseConfig keeps images in file order") {
  const Config config = MustParse(R"(capabilityClasses:
- name: x
  images: {nvidia: b, amd: a, huawei: c}
)");
  REQUIRE(config.capability_classes.size() == 1);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"nvidia", "b"}, {"amd", "a"}, {"huawei", "c"}};
  CHECK(config.capability_classes[0].images == want);
}

TEST_CASE("ParseConfig gives absent members the Config defaults, not DefaultConfig") {
  const Config config = MustParse("vendorClasses: true\n");
  CHECK(config == Config{});
  CHECK(config.capability_classes.empty());
  CHECK(config.support_matrix.empty());
  CHECK_FALSE(config.mode.has_value());  // by Kubernetes version
  CHECK(config.group_sizes == std::vector<int>{2, 4, 8});
  CHECK(config.unhealthy_effect == "NoSchedule");

  CHECK(MustParse("") == Config{});
  CHECK(MustParse("{}") == Config{});
  CHECK(MustParse("# only a comment\n") == Config{});
  // A key with nothing after it is YAML null: absent, at every level.
  CHECK(MustParse("publishing:\ncapabilityClasses:\n") == Config{});
  CHECK(MustParse("apiVersion:\nkind:\npublishing: {mode: ~}\n") == Config{});
  CHECK(MustParse("{\"vendorClasses\": null, \"supportMatrix\": null}") == Config{});
  CHECK_THAT(ParseError("capabilityClasses: [{name: , vendors: [amd]}]\n"),
             StartsWith("capabilityClasses[0].name: required"));
  // publishing members one at a time.
  const Config groups = MustParse("publishing: {mode: groups}\n");
  CHECK(groups.mode == PublishMode::kGroups);
  CHECK(groups.group_sizes == std::vector<int>{2, 4, 8});
  // An explicit attributes is kept as set: it wins over the default of 1.36 and later.
  const Config attributes = MustParse("publishing: {mode: attributes}\n");
  CHECK(attributes.mode == PublishMode::kAttributes);
  CHECK(attributes != Config{});
}

TEST_CASE("ParseConfig reads minMemory written as a bare number") {
  const Config config = MustParse("capabilityClasses: [{name: x, minMemory: 1073741824}]\n");
  CHECK(config.capability_classes.at(0).min_memory == "1073741824");
}

TEST_CASE("ParseConfig names the field of every error") {
  const std::vector<xpu::testing::ParseErrorCase> cases = {
      // Shape and unknown members.
      {"capabilityClasses:\n- name: x\n  minMemroy: 64Gi\n",
       "capabilityClasses[0].minMemroy: unknown field"},
      {"publishing: {mode: attributes, groupSize: [2]}\n", "publishing.groupSize: unknown field"},
      {"vendorclasses: true\n", "vendorclasses: unknown field"},
      {"supportMatrix: [{vendor: nvidia, drivers: \">=1.0.0\"}]\n",
       "supportMatrix[0].drivers: unknown field"},
      {"apiVersion: xpu.dra.dev/v1\n",
       "apiVersion: expected \"xpu.dra.dev/v1alpha1\", got string \"xpu.dra.dev/v1\""},
      {"kind: NodeInventory\n", "kind: expected \"ControllerConfig\""},
      {"publishing: {mode: partitions}\n",
       "publishing.mode: unknown mode \"partitions\"; expected one of attributes, groups"},
      {"publishing: {groupSizes: [2, 1]}\n", "publishing.groupSizes[1]: group size 1 out of range"},
      {"publishing: {groupSizes: [2, 65]}\n",
       "publishing.groupSizes[1]: group size 65 out of range"},
      {"publishing: {groupSizes: [2, 4, 2]}\n", "publishing.groupSizes[2]: duplicate group size 2"},
      {"publishing: {groupSizes: [2, 99999999999]}\n",
       "publishing.groupSizes[1]: group size 99999999999 out of range"},
      {"publishing: {groupSizes: [2, four]}\n",
       "publishing.groupSizes[1]: expected an integer, got string \"four\""},
      {"publishing: {mode: groups, groupSizes: []}\n",
       "publishing.groupSizes: groups mode needs at least one size"},
      // Unset, the mode is groups from 1.36, which needs a size as much.
      {"publishing: {groupSizes: []}\n",
       "publishing.groupSizes: groups mode, the default from Kubernetes 1.36, needs at least one "
       "size; set publishing.mode: attributes to publish none"},
      {"publishing: {unhealthyEffect: NoExec}\n",
       "publishing.unhealthyEffect: unknown effect \"NoExec\""},
      {"vendorClasses: yes\n", "vendorClasses: expected a boolean, got string \"yes\""},
      {"capabilityClasses: {name: x}\n", "capabilityClasses: expected an array, got object"},
      {"capabilityClasses: [~]\n", "capabilityClasses[0]: expected an object, got null"},
      {"capabilityClasses: [{vendors: [nvidia]}]\n", "capabilityClasses[0].name: required"},
      {"capabilityClasses: [{name: Training}]\n", "capabilityClasses[0].name: \"Training\""},
      {"capabilityClasses: [{name: a}, {name: a}]\n",
       "capabilityClasses[1].name: \"a\" is already the name of capabilityClasses[0]"},
      {"capabilityClasses: [{name: nvidia.xpu.dra.dev}]\n",
       "capabilityClasses[0].name: \"nvidia.xpu.dra.dev\" is already the vendor class of nvidia"},
      {"capabilityClasses: [{name: mig.xpu.dra.dev}]\n",
       "capabilityClasses[0].name: \"mig.xpu.dra.dev\" is already the partition class of mig"},
      {"capabilityClasses: [{name: a, vendors: [amd]}, {name: a.amd}]\n",
       "capabilityClasses[1].name: \"a.amd\" is already the per-vendor class of "
       "capabilityClasses[0]"},
      {"capabilityClasses: [{name: x, vendors: [nvidia, intel]}]\n",
       "capabilityClasses[0].vendors[1]: unknown vendor \"intel\""},
      {"capabilityClasses: [{name: x, vendors: [amd, amd]}]\n",
       "capabilityClasses[0].vendors[1]: duplicate vendor \"amd\""},
      {"capabilityClasses: [{name: x, vendors: nvidia}]\n",
       "capabilityClasses[0].vendors: expected an array, got string \"nvidia\""},
      {"capabilityClasses: [{name: ok, minMemory: 1Gi}, {name: x, minMemory: 64GB}]\n",
       "capabilityClasses[1].minMemory: invalid quantity \"64GB\""},
      {"capabilityClasses: [{name: x, minMemory: -1Gi}]\n",
       "capabilityClasses[0].minMemory: \"-1Gi\" must not be negative"},
      {"capabilityClasses: [{name: x, minMemory: [64Gi]}]\n",
       "capabilityClasses[0].minMemory: expected a quantity string"},
      {"capabilityClasses: [{name: x, precisions: [bf16, fp32]}]\n",
       "capabilityClasses[0].precisions[1]: unknown precision \"fp32\"; expected one of bf16, "
       "fp16, fp8, int8"},
      {"capabilityClasses: [{name: x, precisions: [fp8, fp8]}]\n",
       "capabilityClasses[0].precisions[1]: duplicate precision"},
      {"capabilityClasses: [{name: x, families: [hopper, \"\"]}]\n",
       "capabilityClasses[0].families[1]: must not be empty"},
      {"capabilityClasses: [{name: x, models: [\"H'100\"]}]\n",
       "capabilityClasses[0].models[0]: \"H'100\" contains a quote"},
      {"capabilityClasses: [{name: x, families: [hopper, hopper]}]\n",
       "capabilityClasses[0].families[1]: duplicate \"hopper\""},
      {"capabilityClasses: [{name: x, vendors: [nvidia], images: {huawei: ascend:1}}]\n",
       "capabilityClasses[0].images.huawei: vendor \"huawei\" is not one of the class' vendors"},
      {"capabilityClasses: [{name: x, images: {intel: foo}}]\n",
       "capabilityClasses[0].images.intel: unknown vendor \"intel\""},
      {"capabilityClasses: [{name: x, images: {amd: \"\"}}]\n",
       "capabilityClasses[0].images.amd: must not be empty"},
      {"capabilityClasses: [{name: x, images: [amd]}]\n",
       "capabilityClasses[0].images: expected a map of vendor to image, got array"},
      {"capabilityClasses: [{name: x, images: {amd: 5}}]\n",
       "capabilityClasses[0].images.amd: expected a string, got number 5"},
      {"capabilityClasses: [{name: x, images: {amd: }}]\n",
       "capabilityClasses[0].images.amd: expected a string, got null"},
      {"capabilityClasses: [{name: x, extendedResourceName: foo}]\n",
       "capabilityClasses[0].extendedResourceName: \"foo\" is not an extended resource name"},
      {"capabilityClasses: [{name: x, extendedResourceName: kubernetes.io/foo}]\n",
       "capabilityClasses[0].extendedResourceName: \"kubernetes.io/foo\" is not"},
      {"capabilityClasses: [{name: x, extendedResourceName: example.com/a},"
       " {name: y, extendedResourceName: example.com/a}]\n",
       "capabilityClasses[1].extendedResourceName: \"example.com/a\" is already used by "
       "capabilityClasses[0]"},
      // Support matrix.
      {"supportMatrix: [{family: hopper, driver: \">=1.0.0\"}]\n",
       "supportMatrix[0].vendor: required"},
      {"supportMatrix: [{vendor: intel, driver: \">=1.0.0\"}]\n",
       "supportMatrix[0].vendor: unknown vendor \"intel\""},
      {"supportMatrix: [{vendor: nvidia, family: hopper}]\n",
       "supportMatrix[0]: needs at least one of driver, firmware, toolkit"},
      {"supportMatrix: [{vendor: nvidia, driver: \">=535.0\"}]\n",
       "supportMatrix[0].driver: comparator \">=535.0\": \"535.0\" is not a semantic version"},
      {"supportMatrix: [{vendor: nvidia, toolkit: \"~12.2.0\"}]\n",
       "supportMatrix[0].toolkit: comparator \"~12.2.0\": expected one of >=, >, <=, <, ="},
      {"supportMatrix: [{vendor: nvidia, firmware: 7}]\n",
       "supportMatrix[0].firmware: expected a string, got number 7"},
      {"supportMatrix:\n- {vendor: nvidia, family: hopper, driver: \">=1.0.0\"}\n"
       "- {vendor: nvidia, family: hopper, toolkit: \">=1.0.0\"}\n",
       "supportMatrix[1]: duplicate rule for nvidia/hopper (also supportMatrix[0])"},
      // Documents.
      {"capabilityClasses: [{name: x}]\ncapabilityClasses: []\n",
       "capabilityClasses: duplicate field"},
      {"- a\n- b\n", "expected an object, got array"},
      {"a: 1\n---\nb: 2\n", "expected one document, got 2"},
      {"capabilityClasses: [{name: x\n", "invalid YAML at line"},
      {"a: &x [*x]\n", "a[0][0]"},  // an alias to its own node
  };
  xpu::testing::CheckParseErrors(ParseError, cases);
}

TEST_CASE("ParseConfig resolves YAML scalars as YAML 1.2 core does") {
  // "on"/"yes" are strings (not booleans); quoted numbers are strings.
  CHECK_THAT(ParseError("vendorClasses: on\n"), Contains("got string \"on\""));
  CHECK_FALSE(MustParse("vendorClasses: False\n").vendor_classes);
  CHECK_THAT(ParseError("publishing: {groupSizes: [\"4\"]}\n"),
             Contains("expected an integer, got string \"4\""));
  CHECK_THAT(ParseError("publishing: {groupSizes: [4.5]}\n"),
             Contains("expected an integer, got number 4.5"));
}

TEST_CASE("DefaultConfig is the documented default and passes ValidateConfig") {
  const Config config = DefaultConfig();
  CHECK_FALSE(config.mode.has_value());  // by Kubernetes version
  CHECK(config.group_sizes == std::vector<int>{2, 4, 8});
  CHECK(config.unhealthy_effect == "NoSchedule");
  CHECK(config.vendor_classes);
  CHECK(config.support_matrix.empty());
  REQUIRE(config.capability_classes.size() == 3);
  const auto& large = config.capability_classes[0];
  CHECK(large.name == "training-large-memory");
  CHECK(large.vendors == std::vector<std::string>{"nvidia", "huawei", "amd", "hygon"});
  CHECK(large.min_memory == "64Gi");
  CHECK(large.precisions == std::vector<std::string>{"bf16"});
  const auto& standard = config.capability_classes[1];
  CHECK(standard.name == "training-standard");
  CHECK(standard.vendors.empty());  // any known vendor
  CHECK(standard.min_memory == "32Gi");
  CHECK(standard.precisions == std::vector<std::string>{"bf16", "fp16"});
  const auto& inference = config.capability_classes[2];
  CHECK(inference.name == "inference");
  CHECK(inference.vendors.empty());
  CHECK(inference.min_memory == "16Gi");
  CHECK(inference.precisions == std::vector<std::string>{"fp16", "int8"});
  for (const auto& c : config.capability_classes) {
    CHECK(c.images.empty());
    CHECK(c.families.empty());
    CHECK(c.models.empty());
    CHECK_FALSE(c.extended_resource_name);
  }
  CHECK(ValidateConfig(config).ok());
}

TEST_CASE("The docs' default config file parses to DefaultConfig") {
  const std::string text = R"(apiVersion: xpu.dra.dev/v1alpha1
kind: ControllerConfig
publishing: {groupSizes: [2, 4, 8], unhealthyEffect: NoSchedule}   # mode: by version
vendorClasses: true
capabilityClasses:
- {name: training-large-memory, vendors: [nvidia, huawei, amd, hygon], minMemory: 64Gi,
   precisions: [bf16]}
- {name: training-standard, minMemory: 32Gi, precisions: [bf16, fp16]}
- {name: inference, minMemory: 16Gi, precisions: [fp16, int8]}
)";
  CHECK(MustParse(text) == DefaultConfig());
}

TEST_CASE("The default publishing mode follows the Kubernetes version, and a configured one wins") {
  // Counters (DRAPartitionableDevices) are alpha and off before 1.36, beta and on from 1.36.
  CHECK(DefaultPublishMode(34) == PublishMode::kAttributes);
  CHECK(DefaultPublishMode(35) == PublishMode::kAttributes);
  CHECK(DefaultPublishMode(36) == PublishMode::kGroups);
  CHECK(DefaultPublishMode(37) == PublishMode::kGroups);
  CHECK(DefaultPublishMode(38) == PublishMode::kGroups);
  CHECK(DefaultPublishMode(40) == PublishMode::kGroups);  // a server newer than supported
  CHECK(DefaultPublishMode(33) == PublishMode::kAttributes);

  const Config unset = DefaultConfig();
  Config attributes = DefaultConfig();
  attributes.mode = PublishMode::kAttributes;
  Config groups = DefaultConfig();
  groups.mode = PublishMode::kGroups;
  for (int minor = kOldestKubeMinor; minor <= kNewestKubeMinor; ++minor) {
    INFO("1." << minor);
    CHECK(EffectiveMode(unset, minor) == DefaultPublishMode(minor));
    CHECK(EffectiveMode(attributes, minor) == PublishMode::kAttributes);
    CHECK(EffectiveMode(groups, minor) == PublishMode::kGroups);
    // WithEffectiveMode sets it and changes nothing else.
    Config resolved = WithEffectiveMode(unset, minor);
    CHECK(resolved.mode == DefaultPublishMode(minor));
    resolved.mode.reset();
    CHECK(resolved == unset);
    CHECK(WithEffectiveMode(attributes, minor) == attributes);
  }
  // As parsed: a file without a mode, and one with.
  CHECK(EffectiveMode(MustParse("vendorClasses: true\n"), 36) == PublishMode::kGroups);
  CHECK(EffectiveMode(MustParse("publishing: {mode: attributes}\n"), 37) ==
        PublishMode::kAttributes);
  CHECK(EffectiveMode(MustParse("publishing: {mode: groups}\n"), 34) == PublishMode::kGroups);
}

TEST_CASE("ParseKubeMinor reads the supported releases and names the flag otherwise") {
  CHECK(ParseKubeMinor("1.34", "--kubernetes-version").value() == 34);
  CHECK(ParseKubeMinor("1.35", "--kubernetes-version").value() == 35);
  CHECK(ParseKubeMinor("1.36", "--kubernetes-version").value() == 36);
  CHECK(ParseKubeMinor("1.37", "--kubernetes-version").value() == 37);
  CHECK(ParseKubeMinor("v1.36", "--kubernetes-version").value() == 36);
  CHECK(ParseKubeMinor("1.37.2", "--kubernetes-version").value() == 37);
  CHECK(ParseKubeMinor("1.38", "--kubernetes-version").value() == 38);
  CHECK(ParseKubeMinor("v1.38.0", "--kubernetes-version").value() == 38);
  CHECK(KubeShapes(34) == api::KubeVersion::k1_34);
  CHECK(KubeShapes(35) == api::KubeVersion::k1_35);
  CHECK(KubeShapes(36) == api::KubeVersion::k1_35);
  CHECK(KubeShapes(37) == api::KubeVersion::k1_35);
  // 1.38 adds no slice field and no limit the controller's shapes meet: 1.35's.
  CHECK(KubeShapes(38) == api::KubeVersion::k1_35);
  for (const char* bad : {"1.33", "1.39", "", "1", "1.", "2.35", "1.36.", "1.36.x", "1.36rc", "v",
                          "1.-36", "1.999999999999"}) {
    INFO(bad);
    const auto minor = ParseKubeMinor(bad, "--kubernetes-version");
    REQUIRE_FALSE(minor.ok());
    CHECK(minor.status().code() == StatusCode::kInvalidArgument);
    CHECK(minor.status().message() ==
          "--kubernetes-version: expected 1.34, 1.35, 1.36, 1.37 or 1.38, "
          "got \"" +
              std::string(bad) + "\"");
  }
}

TEST_CASE("KnownVendors and publish mode names") {
  CHECK(KnownVendors() == std::vector<std::string>{"nvidia", "huawei", "hygon", "cambricon",
                                                   "metax", "biren", "enflame", "mthreads", "amd"});
  CHECK(PublishModeName(PublishMode::kAttributes) == "attributes");
  CHECK(PublishModeName(PublishMode::kGroups) == "groups");
  CHECK(ParsePublishMode("attributes") == PublishMode::kAttributes);
  CHECK(ParsePublishMode("groups") == PublishMode::kGroups);
  CHECK_FALSE(ParsePublishMode("Groups"));
  CHECK_FALSE(ParsePublishMode(""));
}

api::InventoryDevice Device(std::string vendor, std::string family, std::string model) {
  api::InventoryDevice device;
  device.name = "gpu-0";
  device.vendor = std::move(vendor);
  device.model = std::move(model);
  if (!family.empty()) device.attributes["family"].string_value = std::move(family);
  return device;
}

void SetVersion(api::InventoryDevice& device, const std::string& name, std::string version) {
  device.attributes[name].version = std::move(version);
}

TEST_CASE("CheckSupport applies the most specific rule") {
  Config config;
  config.support_matrix = {
      Rule("nvidia", "", "", ">=500.0.0"),
      Rule("nvidia", "hopper", "", ">=535.0.0"),
      Rule("nvidia", "", "H200", ">=550.0.0"),
      Rule("nvidia", "hopper", "H100", ">=545.0.0"),
  };
  REQUIRE_OK(ValidateConfig(config));

  struct Case {
    std::string family;
    std::string model;
    std::string driver;
    std::string reason;  // empty: supported
  };
  const std::vector<Case> cases = {
      // Vendor-only rule for a family without its own rule.
      {"ampere", "A100", "510.0.0", ""},
      {"ampere", "A100", "470.0.0", "driverVersion 470.0.0 outside >=500.0.0 (nvidia)"},
      {"", "A100", "470.0.0", "driverVersion 470.0.0 outside >=500.0.0 (nvidia)"},
      // The family rule beats the vendor rule.
      {"hopper", "H800", "520.0.0", "driverVersion 520.0.0 outside >=535.0.0 (nvidia/hopper)"},
      {"hopper", "H800", "535.0.0", ""},
      // A model rule beats the family rule.
      {"hopper", "H200", "540.0.0", "driverVersion 540.0.0 outside >=550.0.0 (nvidia/H200)"},
      {"hopper", "H200", "550.1.0", ""},
      // Family and model beat a model alone.
      {"hopper", "H100", "540.0.0", "driverVersion 540.0.0 outside >=545.0.0 (nvidia/hopper/H100)"},
      {"hopper", "H100", "546.0.0", ""},
      // The family+model rule does not apply to another family.
      {"blackwell", "H100", "510.0.0", ""},
  };
  for (const auto& c : cases) {
    INFO(c.family << " " << c.model << " " << c.driver);
    api::InventoryDevice device = Device("nvidia", c.family, c.model);
    SetVersion(device, "driverVersion", c.driver);
    const SupportVerdict verdict = CheckSupport(config, device);
    CHECK(verdict.supported == c.reason.empty());
    CHECK(verdict.reason == c.reason);
  }
}

TEST_CASE("CheckSupport judges only what the device reports and its vendor's rules") {
  Config config;
  config.support_matrix = {
      Rule("huawei", "ascend910b", "", ">=24.1.0", ">=7.1.0 <8.0.0", ">=8.0.0"),
  };
  REQUIRE_OK(ValidateConfig(config));

  api::InventoryDevice device = Device("huawei", "ascend910b", "Ascend910B3");
  // No versions: nothing to judge.
  CHECK(CheckSupport(config, device).supported);
  SetVersion(device, "toolkitVersion", "8.0.0-rc3");
  SupportVerdict verdict = CheckSupport(config, device);
  CHECK_FALSE(verdict.supported);
  CHECK(verdict.reason == "toolkitVersion 8.0.0-rc3 outside >=8.0.0 (huawei/ascend910b)");
  SetVersion(device, "toolkitVersion", "8.0.0");
  CHECK(CheckSupport(config, device).supported);
  // Driver is judged before firmware and toolkit.
  SetVersion(device, "firmwareVersion", "8.1.0");
  SetVersion(device, "driverVersion", "24.1.0-rc2");
  verdict = CheckSupport(config, device);
  CHECK(verdict.reason == "driverVersion 24.1.0-rc2 outside >=24.1.0 (huawei/ascend910b)");
  SetVersion(device, "driverVersion", "24.1.0");
  verdict = CheckSupport(config, device);
  CHECK(verdict.reason == "firmwareVersion 8.1.0 outside >=7.1.0 <8.0.0 (huawei/ascend910b)");
  // A string attribute is not a version.
  device.attributes["firmwareVersion"] = api::InventoryAttribute{};
  device.attributes["firmwareVersion"].string_value = "garbage";
  CHECK(CheckSupport(config, device).supported);

  // Other vendors, and this vendor's other families, have no rule.
  api::InventoryDevice other = Device("nvidia", "hopper", "H100");
  SetVersion(other, "driverVersion", "1.0.0");
  CHECK(CheckSupport(config, other).supported);
  api::InventoryDevice older = Device("huawei", "ascend910", "Ascend910");
  SetVersion(older, "driverVersion", "1.0.0");
  CHECK(CheckSupport(config, older).supported);
  // A version that is not semver is outside every range.
  SetVersion(device, "firmwareVersion", "7.5.0.1.220");
  verdict = CheckSupport(config, device);
  CHECK_FALSE(verdict.supported);
  CHECK_THAT(verdict.reason, StartsWith("firmwareVersion 7.5.0.1.220 outside"));
}

TEST_CASE("CheckSupport does not depend on rule order") {
  std::vector<SupportRule> rules = {
      Rule("amd", "", "", ">=6.0.0"),
      Rule("amd", "cdna3", "", ">=6.2.0"),
      Rule("amd", "", "MI300X", ">=6.3.0"),
  };
  api::InventoryDevice device = Device("amd", "cdna3", "MI300X");
  SetVersion(device, "driverVersion", "6.2.5");
  std::sort(rules.begin(), rules.end(),
            [](const auto& a, const auto& b) { return a.family + a.model < b.family + b.model; });
  do {
    Config config;
    config.support_matrix = rules;
    const SupportVerdict verdict = CheckSupport(config, device);
    CHECK(verdict.reason == "driverVersion 6.2.5 outside >=6.3.0 (amd/MI300X)");
  } while (std::next_permutation(rules.begin(), rules.end(), [](const auto& a, const auto& b) {
    return a.family + a.model < b.family + b.model;
  }));
}

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/controller-config-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_CASE("LoadConfigFile reads a file and prefixes its errors") {
  TempFile good(kFullYaml);
  StatusOr<Config> config = LoadConfigFile(good.path());
  REQUIRE_OK(config);
  CHECK(*config == FullYamlConfig());

  TempFile bad("capabilityClasses: [{name: x, minMemory: 64GB}]\n");
  config = LoadConfigFile(bad.path());
  REQUIRE_FALSE(config.ok());
  CHECK(config.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(config.status().message(),
             StartsWith("read config " + bad.path() +
                        ": capabilityClasses[0].minMemory: invalid quantity \"64GB\""));

  config = LoadConfigFile("/nonexistent/controller.yaml");
  REQUIRE_FALSE(config.ok());
  CHECK(config.status().code() == StatusCode::kNotFound);
  CHECK(config.status().message() ==
        "read config /nonexistent/controller.yaml: No such file or directory");

  config = LoadConfigFile("/tmp");
  REQUIRE_FALSE(config.ok());
  CHECK_THAT(config.status().message(), StartsWith("read config /tmp: "));
}

}  // namespace
}  // namespace xpu::controller
