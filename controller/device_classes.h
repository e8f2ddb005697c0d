// The DeviceClasses the controller keeps in the cluster: one per known vendor (when
// vendorClasses is on); per capability class, one for the class and one per allowed vendor; one
// per partition kind; and the class of gang devices. Selectors are CEL over this driver's
// attributes (docs/reference/dra-api.md §2.2):
//
//   huawei.xpu.dra.dev:          device.driver == 'xpu.dra.dev' &&
//                                device.attributes['xpu.dra.dev'].vendor == 'huawei' &&
//                                !('partitionKind' in device.attributes['xpu.dra.dev'])
//   training-large-memory:       driver, vendor in [...], memory >= minMemory, bf16 == true, ...,
//                                no partitionKind
//   training-large-memory.huawei the same for one vendor (what `firstAvailable` lists use)
//   mig.xpu.dra.dev:             device.driver == 'xpu.dra.dev' &&
//                                device.attributes['xpu.dra.dev'].partitionKind == 'mig'
//
// Whole-device classes (vendor and capability classes) never select a partition device
// (controller/partitions.h): partitions carry no vendor, family or model, and every whole-device
// selector also requires that the device has no `partitionKind`, so that a capability class
// without a vendor, family or precision filter does not match them either. A partition class
// (`<kind>.<driver>`: mig, vnpu, vhcu) selects only the partition devices of its kind; a claim
// narrows it further with `profile`, `parent` or `placement`.
//
// Every class carries the label app.kubernetes.io/managed-by=xpu-dra-controller; the controller
// creates, updates and deletes only classes with that label. Images per vendor go into
// annotations `xpu.dra.dev/image.<vendor>`. Pure.
#ifndef XPU_CONTROLLER_DEVICE_CLASSES_H_
#define XPU_CONTROLLER_DEVICE_CLASSES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/ids.h"
#include "api/node_inventory.h"
#include "api/resource.h"
#include "controller/config.h"

namespace xpu::controller {

inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "xpu-dra-controller";

// The classes `config` asks for, sorted by name; metadata has name, labels and annotations only.
std::vector<api::resource::DeviceClass> DesiredDeviceClasses(const Config& config,
                                                             std::string_view driver);

// The class of gang devices (controller/gangs.h): "gang.<driver>", selecting the devices that
// carry the attribute gangNodes.
std::string GangClassName(std::string_view driver);

// The class of the partition devices of one kind (api::PartitionKinds(): "mig", "vnpu",
// "vhcu"): "<kind>.<driver>", e.g. "mig.xpu.dra.dev", selecting the devices whose attribute
// partitionKind is `kind`.
std::string PartitionClassName(std::string_view kind, std::string_view driver);

// The attribute that marks a partition device and names its kind.
inline constexpr std::string_view kPartitionKindAttribute = "partitionKind";

// Whether the DeviceClass `class_name` of this config selects `device` (an inventory device),
// judged from the same fields its CEL selector is generated from: vendor, family, model, memory,
// precisions. nullopt for a class this config does not generate, and for the partition and gang
// classes, whose devices are not inventory devices. The scheduler evaluates the CEL itself; this
// is for counting capacity ahead of it (gang placement).
std::optional<bool> DeviceInClass(const Config& config, std::string_view class_name,
                                  std::string_view driver, const api::InventoryDevice& device);

// A CEL string literal ('...', quotes and backslashes escaped).
std::string CelLiteral(std::string_view text);

// Builds a DeviceClass or request selector over one driver's attributes: clauses joined by &&,
// the first one `device.driver == '<driver>'`. Every attribute or capacity access sits behind an
// `in` test: a device that lacks it then simply does not match, where a bare access would be a
// runtime error that aborts the scheduler's allocation (docs/reference/dra-api.md §2.2).
class CelSelector {
 public:
  explicit CelSelector(std::string_view driver);
  void AttributeIs(std::string_view name, std::string_view value);
  void AttributeIntIs(std::string_view name, int64_t value);
  // `name` in [values]; one value reads as ==.
  void AttributeIn(std::string_view name, const std::vector<std::string>& values);
  // `name` not in [values]; a device without the attribute passes.
  void AttributeNotIn(std::string_view name, const std::vector<std::string>& values);
  void AttributeStartsWith(std::string_view name, std::string_view prefix);
  void AttributeTrue(std::string_view name);    // a bool attribute that must be true
  void AttributeAbsent(std::string_view name);  // the device does not have the attribute
  void MemoryAtLeast(std::string_view quantity);
  std::string Expression() const;

 private:
  void Guarded(std::string_view name, const std::string& test);

  std::string attributes_;
  std::string capacity_;
  std::vector<std::string> clauses_;
};

// "<vendor>.<driver>", e.g. "nvidia.xpu.dra.dev".
std::string VendorClassName(const api::VendorName& vendor, const api::DriverName& driver);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_DEVICE_CLASSES_H_
