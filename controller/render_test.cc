#include "controller/render.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "controller/node_groups.h"
#include "controller/reference_servers.h"

namespace xpu::controller {
namespace {

CapabilityRequest Request(std::string capability_class, int64_t count,
                          std::string topology = "single-node") {
  CapabilityRequest r;
  r.name = "job";
  r.capability_class = std::move(capability_class);
  r.count = count;
  r.topology = std::move(topology);
  return r;
}

// The default config plus a class `name` over Ascend families.
RenderOptions AscendOnly(const std::string& name, std::vector<std::string> families) {
  RenderOptions options;
  CapabilityClass c;
  c.name = name;
  c.vendors = {"huawei"};
  c.families = std::move(families);
  options.config.capability_classes.push_back(c);
  return options;
}

const VendorRender* Part(const Rendered& r, std::string_view vendor) {
  for (const VendorRender& v : r.vendors) {
    if (v.vendor == vendor) return &v;
  }
  return nullptr;
}

bool Has(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST_CASE("every reference server is built in and parses", "[render]") {
  REQUIRE(EmbeddedServerCount() >= 11);
  CHECK(static_cast<int>(ReferenceServers().size()) == EmbeddedServerCount());
  REQUIRE(FindReferenceServer("atlas800-9000") != nullptr);
  CHECK(FindReferenceServer("atlas800-9000")->inventory.status.devices.size() == 8);
  CHECK(FindReferenceServer("no-such-server") == nullptr);
}

TEST_CASE("a single-node request lists the vendors in preference order with their constraints",
          "[render]") {
  CapabilityRequest r = Request("training-large-memory", 8);
  r.precision = "bf16";
  StatusOr<Rendered> out = Render(r, RenderOptions{});
  REQUIRE_OK(out);
  REQUIRE(out->vendors.size() == 3);
  CHECK(out->vendors[0].vendor == "nvidia");
  CHECK(out->vendors[1].vendor == "huawei");
  CHECK(out->vendors[2].vendor == "hygon");
  // 8 of an A2 or of one Box16 area keep the rules; 8 A3 dies do only as whole modules, which no
  // matchAttribute says: the A3 model is left out, by name.
  const VendorRender* huawei = Part(*out, "huawei");
  REQUIRE(huawei->subrequests.size() == 1);
  CHECK(huawei->subrequests[0].constraint == "scaleUpDomain");
  CHECK(huawei->excluded_models == std::vector<std::string>{"Ascend910C"});
  CHECK(Has(huawei->servers, "atlas200t-a2-box16"));
  CHECK_FALSE(Has(huawei->servers, "atlas800t-a3"));

  const nlohmann::json& tpl = out->objects.at(0);
  CHECK(tpl["kind"] == "ResourceClaimTemplate");
  const nlohmann::json& request = tpl["spec"]["spec"]["devices"]["requests"][0];
  REQUIRE(request["firstAvailable"].size() == 3);
  CHECK(request["firstAvailable"][1]["deviceClassName"] == "training-large-memory.huawei");
  CHECK(request["firstAvailable"][1]["count"] == 8);
  const std::string cel = request["firstAvailable"][1]["selectors"][0]["cel"]["expression"];
  CHECK(cel.find(".bf16") != std::string::npos);
  CHECK(cel.find("'Ascend910C'") != std::string::npos);
  const nlohmann::json& constraints = tpl["spec"]["spec"]["devices"]["constraints"];
  REQUIRE(constraints.size() == 1);
  CHECK(constraints[0]["requests"][0] == "accelerators/huawei");
  CHECK(constraints[0]["matchAttribute"] == "xpu.dra.dev/scaleUpDomain");

  int flavors = 0;
  std::set<std::string> legacy;
  for (const nlohmann::json& o : out->objects) {
    if (o["kind"] == "ResourceFlavor") ++flavors;
    if (o["kind"] == "DeviceClass") legacy.insert(o["spec"]["extendedResourceName"]);
  }
  CHECK(flavors == 3);
  CHECK(legacy.contains("nvidia.com/gpu"));
  CHECK(legacy.contains("huawei.com/Ascend910"));
  CHECK(legacy.contains("hygon.com/dcunum"));
}

TEST_CASE("a count the 910 rings forbid leaves the Atlas 800 9000 out, by model", "[render]") {
  // inference admits the 910 (32 GiB) too: 3 NPUs break its ring rule, 4 keep it in one ring.
  StatusOr<Rendered> three = Render(Request("inference", 3), RenderOptions{.vendors = {"huawei"}});
  REQUIRE_OK(three);
  CHECK(Has(Part(*three, "huawei")->excluded_models, "Ascend910"));
  CHECK_FALSE(Has(Part(*three, "huawei")->servers, "atlas800-9000"));
  StatusOr<Rendered> four = Render(Request("inference", 4), RenderOptions{.vendors = {"huawei"}});
  REQUIRE_OK(four);
  CHECK(Has(Part(*four, "huawei")->servers, "atlas800-9000"));
  CHECK_FALSE(Has(Part(*four, "huawei")->excluded_models, "Ascend910"));
  CHECK(Part(*four, "huawei")->subrequests.at(0).constraint == "scaleUpDomain");

  // Only the 910: no vendor can serve 3, and the error says so on the count.
  StatusOr<Rendered> only = Render(Request("ring910", 3), AscendOnly("ring910", {"ascend910"}));
  REQUIRE_FALSE(only.ok());
  CHECK(only.status().message().starts_with("accelerator.count: 3 devices"));
  CHECK(only.status().message().find("atlas800-9000 allows 1, 2, 4, 8") != std::string::npos);
}

TEST_CASE("A3 dies: a pair by module, four by NUMA node (two whole modules)", "[render]") {
  const RenderOptions attributes = AscendOnly("a3", {"ascend910c"});
  StatusOr<Rendered> pair = Render(Request("a3", 2), attributes);
  REQUIRE_OK(pair);
  CHECK(Part(*pair, "huawei")->subrequests.at(0).constraint == "module");

  // No module or scaleUpDomain value holds four dies that are two whole modules; a NUMA node
  // holds exactly two modules, so every four sharing one keep the rules.
  StatusOr<Rendered> four = Render(Request("a3", 4), attributes);
  REQUIRE_OK(four);
  CHECK(Part(*four, "huawei")->subrequests.at(0).constraint == "numaNode");

  RenderOptions groups = attributes;
  groups.config.mode = PublishMode::kGroups;
  StatusOr<Rendered> grouped = Render(Request("a3", 4), groups);
  REQUIRE_OK(grouped);
  CHECK(Part(*grouped, "huawei")->subrequests.at(0).group_size == 4);
  const nlohmann::json& sub =
      grouped->objects[0]["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"][0];
  CHECK(sub["count"] == 1);
  CHECK(std::string(sub["selectors"][0]["cel"]["expression"]).find(".groupSize == 4") !=
        std::string::npos);
}

TEST_CASE("render errors name the field", "[render]") {
  StatusOr<Rendered> cls = Render(Request("no-such-class", 1), RenderOptions{});
  REQUIRE_FALSE(cls.ok());
  CHECK(cls.status().message().starts_with("accelerator.class: unknown capability class"));
  CHECK(cls.status().message().find("no-such-class") != std::string::npos);

  CapabilityRequest fp8 = Request("inference", 1);
  fp8.precision = "fp8";
  StatusOr<Rendered> precision = Render(fp8, RenderOptions{.vendors = {"cambricon"}});
  REQUIRE_FALSE(precision.ok());
  CHECK(precision.status().message().starts_with("accelerator.precision:"));

  CapabilityRequest partial = Request("training-large-memory", 1);
  partial.images = {{"nvidia", "nvcr.io/nvidia/pytorch:25.01-py3"}};
  StatusOr<Rendered> images = Render(partial, RenderOptions{});
  REQUIRE_FALSE(images.ok());
  CHECK(images.status().message().starts_with("images.huawei:"));
  partial.images["huawei"] = "ascend/pytorch:a2";
  partial.images["hygon"] = "hygon/pytorch:dtk";
  StatusOr<Rendered> all = Render(partial, RenderOptions{});
  REQUIRE_OK(all);
  CHECK(all->objects[0]["metadata"]["annotations"]["xpu.dra.dev/image.huawei"] ==
        "ascend/pytorch:a2");

  StatusOr<Rendered> vendor =
      Render(Request("training-large-memory", 1), RenderOptions{.vendors = {"cambricon"}});
  REQUIRE_FALSE(vendor.ok());
  CHECK(vendor.status().message().starts_with("--vendor:"));
}

TEST_CASE("a multi-node request becomes a gang of whole servers", "[render]") {
  StatusOr<Rendered> out = Render(Request("training-large-memory", 32, "multi-node"), {});
  REQUIRE_OK(out);
  const nlohmann::json& gang = out->objects.at(0);
  CHECK(gang["kind"] == "AcceleratorGang");
  CHECK(gang["spec"]["nodes"] == 4);
  CHECK(gang["spec"]["devicesPerNode"] == 8);
  CHECK(gang["spec"]["capabilityClass"] == "training-large-memory");

  StatusOr<Rendered> one = Render(Request("training-large-memory", 8, "multi-node"),
                                  RenderOptions{.vendors = {"huawei"}});
  REQUIRE_OK(one);
  CHECK(one->objects[0]["spec"]["deviceClassName"] == "training-large-memory.huawei");
}

TEST_CASE("requests are read with errors naming the field", "[render]") {
  StatusOr<CapabilityRequest> ok = ParseCapabilityRequest(
      "name: a\nnamespace: ml\naccelerator: {class: inference, count: 2, precision: int8}\n");
  REQUIRE_OK(ok);
  CHECK(ok->ns == "ml");
  CHECK(ok->topology == "single-node");
  CHECK(ok->precision == "int8");
  const std::pair<std::string_view, std::string_view> bad[] = {
      {"name: a\naccelerator: {class: inference}\n", "accelerator"},
      {"name: a\naccelerator: {class: inference, count: 0}\n", "accelerator.count"},
      {"name: a\naccelerator: {class: x, count: 1, topology: rack}\n", "accelerator.topology"},
      {"name: A_b\naccelerator: {class: x, count: 1}\n", "name"},
      {"name: a\naccelerator: {class: x, count: 6, topology: multi-node, devicesPerNode: 4}\n",
       "accelerator.devicesPerNode"},
      {"name: a\naccelerator: {class: x, count: 1}\nimages: {acme: x}\n", "images.acme"},
      {"name: a\naccelerator: {class: x, count: 1, colour: red}\n", "accelerator"},
  };
  for (const auto& [text, field] : bad) {
    StatusOr<CapabilityRequest> r = ParseCapabilityRequest(text);
    INFO(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().starts_with(field));
  }
}

TEST_CASE("a node group's template is what its server publishes", "[render]") {
  StatusOr<NodeGroupProfile> a2 = ParseNodeGroupProfile(
      "name: a2\nmodel: atlas800t-a2\nlabels: {topology.xpu.dra.dev/leaf: leaf-a}\nmaxSize: 4\n",
      "");
  REQUIRE_OK(a2);
  StatusOr<DesiredPool> pool = TemplatePool(*a2, DefaultConfig(), PublishOptions{});
  REQUIRE_OK(pool);
  CHECK(pool->devices == 8);
  const auto& attrs = pool->slices.at(0).devices.at(0).attributes;
  REQUIRE(attrs.contains("leaf"));
  CHECK(attrs.at("leaf").string_value == "leaf-a");
  const nlohmann::json list = TemplateObjects(*a2, *pool, "xpu.dra.dev");
  const nlohmann::json& items = list["items"];
  CHECK(items[0]["kind"] == "ResourceSlice");
  CHECK(items[0]["spec"]["nodeName"] == "a2-template");
  const nlohmann::json& md = items[items.size() - 2];
  CHECK(md["kind"] == "MachineDeployment");
  CHECK(md["metadata"]["annotations"]["capacity.cluster-autoscaler.kubernetes.io/dra-driver"] ==
        "xpu.dra.dev");
  CHECK(md["metadata"]["annotations"]["capacity.cluster-autoscaler.kubernetes.io/gpu-count"] ==
        "8");
  bool pci = false;
  for (const TemplateBinding& b : TemplateBindings(*pool, "xpu.dra.dev")) {
    pci = pci || (b.attribute == "resource.kubernetes.io/pciBusID" && b.devices == 8);
  }
  CHECK(pci);

  // A relative inventory path is read next to the profile.
  const xpu::testing::TempDir temp;
  const std::filesystem::path dir = temp.path();
  std::filesystem::copy_file(XPU_SOURCE_DIR "/e2e/fixtures/hosts-expected/hgx-h200.json",
                             dir / "h200.json", std::filesystem::copy_options::overwrite_existing);
  StatusOr<NodeGroupProfile> file =
      ParseNodeGroupProfile("name: h\ninventory: h200.json\nmaxSize: 2\n", dir.string());
  REQUIRE_OK(file);
  CHECK(file->inventory.status.devices.size() == 8);

  const std::pair<std::string_view, std::string_view> bad[] = {
      {"name: g\nmodel: nope\nmaxSize: 1\n", "model: unknown server model"},
      {"name: g\nmodel: hgx-h200\ninventory: x.json\nmaxSize: 1\n", "model: give exactly one"},
      {"name: g\nmodel: hgx-h200\nminSize: 3\nmaxSize: 1\n", "maxSize:"},
      {"name: g\ninventory: missing.json\nmaxSize: 1\n", "inventory: read"},
  };
  for (const auto& [text, want] : bad) {
    StatusOr<NodeGroupProfile> p = ParseNodeGroupProfile(text, dir.string());
    INFO(text);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().message().starts_with(want));
  }
}

}  // namespace
}  // namespace xpu::controller
