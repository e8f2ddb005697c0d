// The DeviceClasses the controller keeps in the cluster: one per known vendor (when
// vendorClasses is on) and, per capability class, one for the class and one per allowed vendor.
// Selectors are CEL over this driver's attributes (dra-api.md §2.2):
//
//   huawei.xpu.dra.dev:          device.driver == 'xpu.dra.dev' &&
//                                device.attributes['xpu.dra.dev'].vendor == 'huawei'
//   training-large-memory:       driver, vendor in [...], memory >= minMemory, bf16 == true, ...
//   training-large-memory.huawei the same for one vendor (what `firstAvailable` lists use)
//
// Every class carries the label app.kubernetes.io/managed-by=xpu-dra-controller; the controller
// creates, updates and deletes only classes with that label. Images per vendor go into
// annotations `xpu.dra.dev/image.<vendor>`. Pure.
#ifndef XPU_CONTROLLER_DEVICE_CLASSES_H_
#define XPU_CONTROLLER_DEVICE_CLASSES_H_

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

// Whether the DeviceClass `class_name` of this config selects `device` (an inventory device),
// judged from the same fields its CEL selector is generated from: vendor, family, model, memory,
// precisions. nullopt for a class this config does not generate. The scheduler evaluates the CEL
// itself; this is for counting capacity ahead of it (gang placement).
std::optional<bool> DeviceInClass(const Config& config, std::string_view class_name,
                                  std::string_view driver, const api::InventoryDevice& device);

// "<vendor>.<driver>", e.g. "nvidia.xpu.dra.dev".
std::string VendorClassName(const api::VendorName& vendor, const api::DriverName& driver);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_DEVICE_CLASSES_H_
