#include "controller/device_classes.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "api/resource_validation.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "controller/reference_servers.h"
#include "controller/slices.h"
#include "controller/testing/config_examples.h"
#include "controller/testing/slice_examples.h"

namespace xpu::controller {
namespace {

using Catch::Matchers::Contains;

using testing::kDriver;

std::map<std::string, api::resource::DeviceClass> ByName(
    const std::vector<api::resource::DeviceClass>& classes) {
  std::map<std::string, api::resource::DeviceClass> out;
  for (const auto& cls : classes) out[cls.metadata.name] = cls;
  return out;
}

std::vector<std::string> Names(const std::vector<api::resource::DeviceClass>& classes) {
  std::vector<std::string> names;
  for (const auto& cls : classes) names.push_back(cls.metadata.name);
  return names;
}

const std::string& Expression(const api::resource::DeviceClass& cls) {
  REQUIRE(cls.spec.selectors.size() == 1);
  REQUIRE(cls.spec.selectors[0].cel);
  return cls.spec.selectors[0].cel->expression;
}

// Every attribute or capacity access ("<map>.<name>") comes after an `in` test of that name in
// the same map, so that CEL never fails on a device lacking it.
void CheckGuarded(const std::string& expression, std::string_view driver) {
  for (const std::string& map : {"device.attributes['" + std::string(driver) + "']",
                                 "device.capacity['" + std::string(driver) + "']"}) {
    size_t pos = 0;
    while ((pos = expression.find(map + ".", pos)) != std::string::npos) {
      size_t end = pos + map.size() + 1;
      while (
          end < expression.size() &&
          (std::isalnum(static_cast<unsigned char>(expression[end])) || expression[end] == '_')) {
        ++end;
      }
      const std::string name = expression.substr(pos + map.size() + 1, end - pos - map.size() - 1);
      std::string guard = "'" + name + "' in ";
      guard += map;
      guard += " && ";
      INFO(expression << "\naccess of " << name << " at " << pos);
      const size_t guard_pos = expression.rfind(guard, pos);
      CHECK(guard_pos != std::string::npos);
      CHECK(guard_pos + guard.size() == pos);
      pos = end;
    }
  }
}

Config ClassesConfig() {
  Config config;
  CapabilityClass large = testing::TrainingLargeMemoryClass();
  large.precisions.emplace_back("fp8");
  large.models = {"H200", "Ascend910B3"};
  CapabilityClass any;
  any.name = "any-accelerator";
  CapabilityClass small;
  small.name = "small";
  small.vendors = {"amd"};
  small.min_memory = "1.5Gi";
  config.capability_classes = {large, any, small};
  SupportRule rule;
  rule.vendor = "nvidia";
  rule.family = "hopper";
  rule.driver = VersionRange{">=535.0.0"};
  config.support_matrix = {rule};
  REQUIRE_OK(ValidateConfig(config));
  return config;
}

TEST_CASE("VendorClassName is vendor.driver") {
  CHECK(VendorClassName(api::VendorName("nvidia"), api::DriverName("xpu.dra.dev")) ==
        "nvidia.xpu.dra.dev");
  CHECK(VendorClassName(api::VendorName("huawei"), api::DriverName("npu.example.com")) ==
        "huawei.npu.example.com");
}

TEST_CASE("DesiredDeviceClasses of the default config") {
  const auto classes = DesiredDeviceClasses(DefaultConfig(), kDriver);
  const auto names = Names(classes);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  // 9 vendor classes; training-large-memory and 4 per-vendor classes; training-standard and
  // inference, each with one per known vendor; 3 partition classes; the gang class.
  CHECK(classes.size() == 9 + 5 + 10 + 10 + 3 + 1);
  const auto by_name = ByName(classes);
  for (const auto& vendor : KnownVendors()) {
    CHECK(by_name.count(vendor + ".xpu.dra.dev") == 1);
    CHECK(by_name.count("training-standard." + vendor) == 1);
    CHECK(by_name.count("inference." + vendor) == 1);
  }
  for (const char* vendor : {"nvidia", "huawei", "amd", "hygon"}) {
    CHECK(by_name.count(std::string("training-large-memory.") + vendor) == 1);
  }
  CHECK(by_name.count("training-large-memory.cambricon") == 0);

  for (const auto& cls : classes) {
    INFO(cls.metadata.name);
    CHECK(cls.metadata.labels == std::map<std::string, std::string>{
                                     {"app.kubernetes.io/managed-by", "xpu-dra-controller"}});
    CHECK(cls.metadata.namespace_name.empty());
    CHECK(cls.metadata.uid.empty());
    CHECK(cls.spec.config.empty());
    CHECK_FALSE(cls.spec.extended_resource_name);
    const Status status = api::ValidateDeviceClass(cls, api::KubeVersion::k1_34);
    INFO(status.ToString());
    CHECK(status.ok());
    const std::string& expression = Expression(cls);
    CHECK(expression.size() <= 10240);
    CHECK(expression.starts_with("device.driver == 'xpu.dra.dev'"));
    CheckGuarded(expression, kDriver);
  }

  CHECK(Expression(by_name.at("huawei.xpu.dra.dev")) ==
        "device.driver == 'xpu.dra.dev' && ('vendor' in device.attributes['xpu.dra.dev'] && "
        "device.attributes['xpu.dra.dev'].vendor == 'huawei') && "
        "!('partitionKind' in device.attributes['xpu.dra.dev'])");
  CHECK(by_name.at("huawei.xpu.dra.dev").metadata.annotations.empty());

  const auto& large = by_name.at("training-large-memory");
  CHECK(Expression(large) ==
        "device.driver == 'xpu.dra.dev' && ('vendor' in device.attributes['xpu.dra.dev'] && "
        "device.attributes['xpu.dra.dev'].vendor in ['nvidia', 'huawei', 'amd', 'hygon']) && "
        "'memory' in device.capacity['xpu.dra.dev'] && "
        "device.capacity['xpu.dra.dev'].memory.compareTo(quantity('64Gi')) >= 0 && "
        "('bf16' in device.attributes['xpu.dra.dev'] && device.attributes['xpu.dra.dev'].bf16) && "
        "!('partitionKind' in device.attributes['xpu.dra.dev'])");
  CHECK(large.metadata.annotations ==
        std::map<std::string, std::string>{{"xpu.dra.dev/vendors", "nvidia,huawei,amd,hygon"}});

  const auto& large_amd = by_name.at("training-large-memory.amd");
  CHECK_THAT(Expression(large_amd), Contains("device.attributes['xpu.dra.dev'].vendor == 'amd')"));
  CHECK(large_amd.metadata.annotations ==
        std::map<std::string, std::string>{{"xpu.dra.dev/vendors", "amd"}});

  // Any vendor: no vendor clause in the class itself, all known vendors in the annotation.
  const auto& standard = by_name.at("training-standard");
  CHECK_THAT(Expression(standard), !Contains("vendor"));
  CHECK_THAT(Expression(standard), Contains("quantity('32Gi')"));
  CHECK_THAT(Expression(standard), Contains("device.attributes['xpu.dra.dev'].bf16)"));
  CHECK_THAT(Expression(standard), Contains("device.attributes['xpu.dra.dev'].fp16)"));
  CHECK(standard.metadata.annotations.at("xpu.dra.dev/vendors") ==
        "nvidia,huawei,hygon,cambricon,metax,biren,enflame,mthreads,amd");
  const auto& inference_metax = by_name.at("inference.metax");
  CHECK_THAT(Expression(inference_metax), Contains(".vendor == 'metax'"));
  CHECK_THAT(Expression(inference_metax), Contains("quantity('16Gi')"));
  CHECK_THAT(Expression(inference_metax), Contains(".int8)"));
}

TEST_CASE("DesiredDeviceClasses of a full config") {
  const Config config = ClassesConfig();
  const auto classes = DesiredDeviceClasses(config, kDriver);
  const auto names = Names(classes);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(classes.size() == 9 + 3 + 10 + 2 + 3 + 1);
  const auto by_name = ByName(classes);

  const auto& large = by_name.at("training-large-memory");
  const std::string& e = Expression(large);
  CHECK_THAT(e, Contains("device.driver == 'xpu.dra.dev'"));
  CHECK_THAT(e, Contains("('vendor' in device.attributes['xpu.dra.dev'] && "
                         "device.attributes['xpu.dra.dev'].vendor in ['nvidia', 'huawei'])"));
  CHECK_THAT(e, Contains("('family' in device.attributes['xpu.dra.dev'] && "
                         "device.attributes['xpu.dra.dev'].family in ['hopper', 'ascend910b'])"));
  CHECK_THAT(e, Contains("('model' in device.attributes['xpu.dra.dev'] && "
                         "device.attributes['xpu.dra.dev'].model in ['H200', 'Ascend910B3'])"));
  CHECK_THAT(e, Contains("'memory' in device.capacity['xpu.dra.dev'] && "
                         "device.capacity['xpu.dra.dev'].memory.compareTo(quantity('64Gi')) >= 0"));
  CHECK_THAT(e, Contains("('bf16' in device.attributes['xpu.dra.dev'] && "
                         "device.attributes['xpu.dra.dev'].bf16)"));
  CHECK_THAT(e, Contains("('fp8' in device.attributes['xpu.dra.dev'] && "
                         "device.attributes['xpu.dra.dev'].fp8)"));
  CHECK(large.spec.extended_resource_name == "example.com/training-large-memory");
  CHECK(large.metadata.annotations ==
        std::map<std::string, std::string>{
            {"xpu.dra.dev/vendors", "nvidia,huawei"},
            {"xpu.dra.dev/image.nvidia", "nvcr.io/nvidia/pytorch:24.05-py3"},
            {"xpu.dra.dev/image.huawei", "ascendhub.huawei.com/pytorch:8.0"}});

  // Per-vendor classes: one vendor, that vendor's image, no extended resource name.
  const auto& huawei = by_name.at("training-large-memory.huawei");
  const std::string& h = Expression(huawei);
  CHECK_THAT(h, Contains("device.attributes['xpu.dra.dev'].vendor == 'huawei')"));
  CHECK_THAT(h, !Contains("'nvidia'"));
  CHECK_THAT(h, Contains(".family in ['hopper', 'ascend910b']"));
  CHECK_THAT(h, Contains(".fp8)"));
  CHECK_FALSE(huawei.spec.extended_resource_name);
  CHECK(huawei.metadata.annotations ==
        std::map<std::string, std::string>{
            {"xpu.dra.dev/vendors", "huawei"},
            {"xpu.dra.dev/image.huawei", "ascendhub.huawei.com/pytorch:8.0"}});

  // A class without filters selects every whole device of the driver.
  CHECK(Expression(by_name.at("any-accelerator")) ==
        "device.driver == 'xpu.dra.dev' && !('partitionKind' in device.attributes['xpu.dra.dev'])");
  CHECK(by_name.count("any-accelerator.enflame") == 1);
  // The quantity in its canonical spelling.
  CHECK_THAT(Expression(by_name.at("small")), Contains("quantity('1536Mi')"));
  CHECK(by_name.count("small.amd") == 1);
  CHECK(by_name.count("small.nvidia") == 0);

  for (const auto& cls : classes) {
    INFO(cls.metadata.name);
    const Status status = api::ValidateDeviceClass(cls, api::KubeVersion::k1_34);
    INFO(status.ToString());
    CHECK(status.ok());
    CHECK(api::ValidateDeviceClass(cls, api::KubeVersion::k1_35).ok());
    CHECK(cls.metadata.labels.at(std::string(kManagedByLabel)) == kManagedByValue);
    CheckGuarded(Expression(cls), kDriver);
  }
}

TEST_CASE("DesiredDeviceClasses without vendor classes, for another driver name") {
  Config config = ClassesConfig();
  config.vendor_classes = false;
  const std::string driver = "accel.example.com";
  const auto classes = DesiredDeviceClasses(config, driver);
  CHECK(classes.size() == 3 + 10 + 2 + 3 + 1);
  for (const auto& cls : classes) {
    INFO(cls.metadata.name);
    CHECK_THAT(cls.metadata.name, !Contains("xpu.dra.dev"));
    CHECK(Expression(cls).starts_with("device.driver == 'accel.example.com'"));
    CHECK_THAT(Expression(cls), !Contains("xpu.dra.dev"));
    CheckGuarded(Expression(cls), driver);
  }
  Config empty;
  empty.vendor_classes = false;
  // Only the class of gang devices and the partition classes.
  const auto only = DesiredDeviceClasses(empty, driver);
  REQUIRE(Names(only) == std::vector<std::string>{"gang.accel.example.com", "mig.accel.example.com",
                                                  "vhcu.accel.example.com",
                                                  "vnpu.accel.example.com"});
  CHECK(Expression(only[0]) ==
        "device.driver == 'accel.example.com' && 'gangNodes' in "
        "device.attributes['accel.example.com']");
  CHECK(Expression(only[1]) ==
        "device.driver == 'accel.example.com' && ('partitionKind' in "
        "device.attributes['accel.example.com'] && "
        "device.attributes['accel.example.com'].partitionKind == 'mig')");
}

TEST_CASE("The largest selector a valid config allows stays below 10 KiB") {
  CapabilityClass c;
  c.name = "big";
  c.min_memory = "9223372036854775807";
  c.precisions = {"bf16", "fp16", "fp8", "int8"};
  for (int i = 0; i < 32; ++i) {
    c.families.push_back(std::string(62, 'f') + std::to_string(10 + i));
    c.models.push_back(std::string(62, 'm') + std::to_string(10 + i));
  }
  c.vendors = KnownVendors();
  Config config;
  config.vendor_classes = false;
  config.capability_classes = {c};
  INFO(ValidateConfig(config).ToString());
  REQUIRE_OK(ValidateConfig(config));
  // The longest driver name (63 bytes).
  const std::string driver = std::string(59, 'd') + ".com";
  REQUIRE(driver.size() == 63);
  for (const auto& cls : DesiredDeviceClasses(config, driver)) {
    INFO(cls.metadata.name << ": " << Expression(cls).size() << " bytes");
    CHECK(Expression(cls).size() <= 10240);
    CHECK(api::ValidateDeviceClass(cls, api::KubeVersion::k1_34).ok());
  }
}

// The top-level conjuncts of a selector: the expression split at each `&&` outside parentheses
// and string literals. The whole expression is true only when every one of them is.
std::vector<std::string> Conjuncts(const std::string& expression) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < expression.size(); ++i) {
    const char c = expression[i];
    if (quoted) {
      current += c;
      if (c == '\\' && i + 1 < expression.size()) {
        current += expression[++i];
      } else if (c == '\'') {
        quoted = false;
      }
      continue;
    }
    if (c == '\'') quoted = true;
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (depth == 0 && expression.compare(i, 4, " && ") == 0) {
      out.push_back(current);
      current.clear();
      i += 3;
      continue;
    }
    current += c;
  }
  out.push_back(current);
  return out;
}

// A node of each partition kind, as the controller publishes it: an HGX H200 with MIG on gpu-0
// and gpu-1 (an instance existing on gpu-1), an Atlas 800T A2 with vNPU templates on npu-0, and
// a Hygon DCU server with vHCUs on its first device.
std::vector<api::resource::Device> PartitionedNodes() {
  std::vector<api::resource::Device> devices;
  auto publish = [&](const std::string& server, const std::vector<int>& which,
                     const api::InventoryPartitioning& p) {
    const ReferenceServer* reference = FindReferenceServer(server);
    REQUIRE(reference != nullptr);
    api::NodeInventory inventory = reference->inventory;
    for (int i : which) inventory.status.devices.at(static_cast<size_t>(i)).partitioning = p;
    if (p.kind == "mig") {
      inventory.status.devices.at(1).partitioning->partitions.push_back(
          {"3g.71gb", 4, 0, "MIG-6f2d1c3e-0000-4000-8000-000000000001", 2, nullptr});
    }
    INFO(server << ": " << api::ValidateNodeInventory(inventory).ToString());
    REQUIRE_OK(api::ValidateNodeInventory(inventory));
    auto pool = BuildPool(inventory, {"n-" + server, "uid-" + server, {}}, DefaultConfig(),
                          PublishOptions{});
    REQUIRE_OK(pool);
    for (const auto& slice : pool->slices) {
      devices.insert(devices.end(), slice.devices.begin(), slice.devices.end());
    }
  };
  publish("hgx-h200", {0, 1}, api::testing::H200MigPartitioning());
  auto counted = [](const std::string& kind, const std::string& counter, int64_t total,
                    const std::string& name, int64_t units) {
    api::InventoryPartitioning p;
    p.kind = kind;
    p.enabled = true;
    p.capacity = {{counter, total}, {"memory-gib", 64}};
    api::PartitionProfile profile;
    profile.name = name;
    profile.memory = "16Gi";
    profile.counters = {{counter, units}, {"memory-gib", 16}};
    p.profiles = {profile};
    return p;
  };
  publish("atlas800t-a2", {0}, counted("vnpu", "aicore", 20, "vir05_1c_16g", 5));
  publish("hygon-dcu-8", {0}, counted("vhcu", "compute", 60, "vhcu-15cu-16g", 15));
  return devices;
}

std::string KindOf(const api::resource::Device& d) {
  auto it = d.attributes.find(std::string(kPartitionKindAttribute));
  return it == d.attributes.end() || !it->second.string_value ? "" : *it->second.string_value;
}

TEST_CASE("PartitionClassName is kind.driver") {
  CHECK(PartitionClassName("mig", "xpu.dra.dev") == "mig.xpu.dra.dev");
  CHECK(PartitionClassName("vnpu", "npu.example.com") == "vnpu.npu.example.com");
  CHECK(Conjuncts("a && (b && 'x && y') && c") ==
        std::vector<std::string>{"a", "(b && 'x && y')", "c"});
  CHECK(Conjuncts("a == 'it\\'s && so' && b") ==
        std::vector<std::string>{"a == 'it\\'s && so'", "b"});
}

TEST_CASE("Partition classes select partitions of their kind, and whole-device classes never do") {
  const std::string attrs = "device.attributes['xpu.dra.dev']";
  const std::string no_partition = "!('partitionKind' in " + attrs + ")";

  // What the controller publishes: every partition device carries its kind and none of the
  // attributes whole-device or gang classes select on; no whole device carries a kind.
  const std::vector<api::resource::Device> devices = PartitionedNodes();
  std::map<std::string, int> per_kind;
  int whole = 0;
  for (const auto& d : devices) {
    INFO(d.name);
    const std::string kind = KindOf(d);
    if (kind.empty()) {
      CHECK_FALSE(d.attributes.contains("partitionKind"));
      CHECK(d.attributes.contains("vendor"));
      ++whole;
      continue;
    }
    ++per_kind[kind];
    for (const char* absent : {"vendor", "family", "model", "gangNodes"}) {
      INFO(absent);
      CHECK_FALSE(d.attributes.contains(absent));
    }
    for (const auto& precision : {"bf16", "fp16", "fp8", "int8"}) {
      CHECK_FALSE(d.attributes.contains(precision));
    }
  }
  CHECK(whole == 8 + 8 + 8);
  // gpu-0: every placement; gpu-1: the 3g.71gb at slots 4-7, and the 4 + 2 + 2 + 1 + 1
  // placements of slots 0-3.
  CHECK(per_kind.at("mig") == 18 + 11);
  CHECK(per_kind.at("vnpu") == 4);  // 20 AI cores / 5, 64 GiB / 16
  CHECK(per_kind.at("vhcu") == 4);  // 60 compute units / 15, 64 GiB / 16

  for (const Config& config : {DefaultConfig(), ClassesConfig()}) {
    const auto classes = DesiredDeviceClasses(config, kDriver);
    const auto by_name = ByName(classes);
    // One class per partition kind: the driver and the kind, nothing else, so that it selects
    // every partition device of that kind and nothing else.
    for (const std::string& kind : api::PartitionKinds()) {
      const std::string name = kind + ".xpu.dra.dev";
      INFO(name);
      REQUIRE(by_name.contains(name));
      const auto& cls = by_name.at(name);
      std::string kind_test = "('partitionKind' in ";
      kind_test.append(attrs).append(" && ").append(attrs).append(".partitionKind == '");
      kind_test.append(kind).append("')");
      CHECK(Conjuncts(Expression(cls)) ==
            std::vector<std::string>{"device.driver == 'xpu.dra.dev'", kind_test});
      CHECK(cls.metadata.labels.at(std::string(kManagedByLabel)) == kManagedByValue);
      CHECK(cls.metadata.annotations.empty());
      CHECK_FALSE(cls.spec.extended_resource_name);
      CHECK(api::ValidateDeviceClass(cls, api::KubeVersion::k1_34).ok());
      CHECK(api::ValidateDeviceClass(cls, api::KubeVersion::k1_35).ok());
      CheckGuarded(Expression(cls), kDriver);
      // Not a class of inventory devices: nothing to count ahead of the scheduler.
      CHECK_FALSE(DeviceInClass(config, name, kDriver, api::InventoryDevice{}).has_value());
    }
    // Every other class but the gang class is a whole-device class: a conjunct of its selector
    // is false on every device with a partitionKind, so no partition device matches it.
    int whole_classes = 0;
    for (const auto& cls : classes) {
      const std::string& name = cls.metadata.name;
      INFO(name << ": " << Expression(cls));
      if (name == GangClassName(kDriver)) {
        // Gang devices only: partitions never carry gangNodes (checked above).
        CHECK(Conjuncts(Expression(cls)).back() == "'gangNodes' in " + attrs);
        continue;
      }
      const bool partition_class =
          std::any_of(api::PartitionKinds().begin(), api::PartitionKinds().end(),
                      [&](const std::string& kind) { return name == kind + ".xpu.dra.dev"; });
      if (partition_class) continue;
      ++whole_classes;
      const auto conjuncts = Conjuncts(Expression(cls));
      CHECK(std::find(conjuncts.begin(), conjuncts.end(), no_partition) != conjuncts.end());
      CHECK_THAT(Expression(cls), !Contains(".partitionKind"));
    }
    CHECK(whole_classes == static_cast<int>(classes.size()) - 3 - 1);
  }
}

TEST_CASE("DesiredDeviceClasses is deterministic") {
  const Config config = ClassesConfig();
  CHECK(DesiredDeviceClasses(config, kDriver) == DesiredDeviceClasses(config, kDriver));
}

}  // namespace
}  // namespace xpu::controller
