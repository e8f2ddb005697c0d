#include "controller/device_classes.h"

#include <algorithm>
#include <utility>

#include "api/quantity.h"

namespace xpu::controller {
namespace {

constexpr std::string_view kImageAnnotationPrefix = "xpu.dra.dev/image.";
constexpr std::string_view kVendorsAnnotation = "xpu.dra.dev/vendors";

std::string ListLiteral(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i == 0 ? "" : ", ") + CelLiteral(values[i]);
  return out + "]";
}

api::resource::DeviceClass NewClass(std::string name, std::string expression) {
  api::resource::DeviceClass cls;
  cls.metadata.name = std::move(name);
  cls.metadata.labels[std::string(kManagedByLabel)] = std::string(kManagedByValue);
  api::resource::DeviceSelector selector;
  selector.cel.emplace();
  selector.cel->expression = std::move(expression);
  cls.spec.selectors.push_back(std::move(selector));
  return cls;
}

// The selector of a capability class restricted to `vendors` (none: any vendor). Whole devices
// only: never a partition device, which may have the memory a class asks for.
std::string CapabilitySelector(const CapabilityClass& c, const std::vector<std::string>& vendors,
                               std::string_view driver) {
  CelSelector s(driver);
  if (!vendors.empty()) s.AttributeIn("vendor", vendors);
  if (!c.families.empty()) s.AttributeIn("family", c.families);
  if (!c.models.empty()) s.AttributeIn("model", c.models);
  if (!c.min_memory.empty()) {
    // The canonical spelling ("1536Mi" for "1.5Gi"); config validation has parsed it already.
    StatusOr<api::Quantity> q = api::Quantity::Parse(c.min_memory);
    s.MemoryAtLeast(q.ok() ? q->String() : c.min_memory);
  }
  for (const auto& precision : c.precisions) s.AttributeTrue(precision);
  s.AttributeAbsent(kPartitionKindAttribute);
  return s.Expression();
}

std::string JoinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

std::string CelLiteral(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

CelSelector::CelSelector(std::string_view driver)
    : attributes_("device.attributes[" + CelLiteral(driver) + "]"),
      capacity_("device.capacity[" + CelLiteral(driver) + "]") {
  clauses_.push_back("device.driver == " + CelLiteral(driver));
}

void CelSelector::AttributeIs(std::string_view name, std::string_view value) {
  Guarded(name, attributes_ + "." + std::string(name) + " == " + CelLiteral(value));
}

void CelSelector::AttributeIntIs(std::string_view name, int64_t value) {
  Guarded(name, attributes_ + "." + std::string(name) + " == " + std::to_string(value));
}

void CelSelector::AttributeIn(std::string_view name, const std::vector<std::string>& values) {
  if (values.size() == 1) return AttributeIs(name, values[0]);
  Guarded(name, attributes_ + "." + std::string(name) + " in " + ListLiteral(values));
}

void CelSelector::AttributeNotIn(std::string_view name, const std::vector<std::string>& values) {
  // A device without the attribute is not one of the values: it passes.
  clauses_.push_back("(!(" + CelLiteral(name) + " in " + attributes_ + ") || !(" + attributes_ +
                     "." + std::string(name) + " in " + ListLiteral(values) + "))");
}

void CelSelector::AttributeStartsWith(std::string_view name, std::string_view prefix) {
  Guarded(name, attributes_ + "." + std::string(name) + ".startsWith(" + CelLiteral(prefix) + ")");
}

void CelSelector::AttributeTrue(std::string_view name) {
  Guarded(name, attributes_ + "." + std::string(name));
}

void CelSelector::AttributeAbsent(std::string_view name) {
  clauses_.push_back("!(" + CelLiteral(name) + " in " + attributes_ + ")");
}

void CelSelector::MemoryAtLeast(std::string_view quantity) {
  clauses_.push_back("'memory' in " + capacity_ + " && " + capacity_ +
                     ".memory.compareTo(quantity(" + CelLiteral(quantity) + ")) >= 0");
}

std::string CelSelector::Expression() const {
  std::string out;
  for (const auto& clause : clauses_) out += (out.empty() ? "" : " && ") + clause;
  return out;
}

void CelSelector::Guarded(std::string_view name, const std::string& test) {
  clauses_.push_back("(" + CelLiteral(name) + " in " + attributes_ + " && " + test + ")");
}

std::string GangClassName(std::string_view driver) { return "gang." + std::string(driver); }

std::string PartitionClassName(std::string_view kind, std::string_view driver) {
  return std::string(kind) + "." + std::string(driver);
}

namespace {

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string StringAttribute(const api::InventoryDevice& device, const std::string& name) {
  auto it = device.attributes.find(name);
  return it != device.attributes.end() && it->second.string_value ? *it->second.string_value : "";
}

bool CapabilityAdmits(const CapabilityClass& c, const std::vector<std::string>& vendors,
                      const api::InventoryDevice& device) {
  if (!vendors.empty() && !Contains(vendors, device.vendor)) return false;
  if (!c.families.empty() && !Contains(c.families, StringAttribute(device, "family"))) {
    return false;
  }
  if (!c.models.empty() && !Contains(c.models, device.model)) return false;
  if (!c.min_memory.empty()) {
    StatusOr<api::Quantity> want = api::Quantity::Parse(c.min_memory);
    StatusOr<api::Quantity> have = api::Quantity::Parse(device.memory);
    if (!want.ok() || !have.ok() || *have < *want) return false;
  }
  for (const std::string& precision : c.precisions) {
    auto it = device.attributes.find(precision);
    if (it == device.attributes.end() || it->second.bool_value != true) return false;
  }
  return true;
}

}  // namespace

std::optional<bool> DeviceInClass(const Config& config, std::string_view class_name,
                                  std::string_view driver, const api::InventoryDevice& device) {
  if (config.vendor_classes) {
    for (const std::string& vendor : KnownVendors()) {
      if (class_name == VendorClassName(api::VendorName(vendor), api::DriverName(driver))) {
        return device.vendor == vendor;
      }
    }
  }
  for (const CapabilityClass& c : config.capability_classes) {
    if (class_name == c.name) return CapabilityAdmits(c, c.vendors, device);
    const std::vector<std::string>& allowed = c.vendors.empty() ? KnownVendors() : c.vendors;
    for (const std::string& vendor : allowed) {
      if (class_name == c.name + "." + vendor) return CapabilityAdmits(c, {vendor}, device);
    }
  }
  return std::nullopt;
}

std::string VendorClassName(const api::VendorName& vendor, const api::DriverName& driver) {
  return vendor.value() + "." + driver.value();
}

std::vector<api::resource::DeviceClass> DesiredDeviceClasses(const Config& config,
                                                             std::string_view driver) {
  std::vector<api::resource::DeviceClass> classes;
  if (config.vendor_classes) {
    for (const auto& vendor : KnownVendors()) {
      CelSelector s(driver);
      s.AttributeIs("vendor", vendor);
      s.AttributeAbsent(kPartitionKindAttribute);  // partitions carry no vendor; said outright
      classes.push_back(NewClass(VendorClassName(api::VendorName(vendor), api::DriverName(driver)),
                                 s.Expression()));
    }
  }
  for (const CapabilityClass& c : config.capability_classes) {
    const std::vector<std::string>& allowed = c.vendors.empty() ? KnownVendors() : c.vendors;

    api::resource::DeviceClass cls = NewClass(c.name, CapabilitySelector(c, c.vendors, driver));
    cls.metadata.annotations[std::string(kVendorsAnnotation)] = JoinComma(allowed);
    for (const auto& [vendor, image] : c.images) {
      cls.metadata.annotations[std::string(kImageAnnotationPrefix) + vendor] = image;
    }
    cls.spec.extended_resource_name = c.extended_resource_name;
    classes.push_back(std::move(cls));

    // One class per allowed vendor, for the `firstAvailable` subrequests of rendered claims.
    for (const auto& vendor : allowed) {
      api::resource::DeviceClass per_vendor =
          NewClass(c.name + "." + vendor, CapabilitySelector(c, {vendor}, driver));
      per_vendor.metadata.annotations[std::string(kVendorsAnnotation)] = vendor;
      for (const auto& [image_vendor, image] : c.images) {
        if (image_vendor == vendor) {
          per_vendor.metadata.annotations[std::string(kImageAnnotationPrefix) + vendor] = image;
        }
      }
      classes.push_back(std::move(per_vendor));
    }
  }
  // The partition devices of each kind (controller/partitions.h), whatever their vendor: the kind
  // says which vendor's partitions they are.
  for (const std::string& kind : api::PartitionKinds()) {
    CelSelector s(driver);
    s.AttributeIs(kPartitionKindAttribute, kind);
    classes.push_back(NewClass(PartitionClassName(kind, driver), s.Expression()));
  }
  // The gang devices (controller/gangs.h), which the shared claim of each gang asks for.
  classes.push_back(NewClass(GangClassName(driver),
                             "device.driver == " + CelLiteral(driver) + " && 'gangNodes' in " +
                                 "device.attributes[" + CelLiteral(driver) + "]"));
  // Sorted by name; ValidateConfig rejects colliding names, and should two collide anyway (a
  // driver name other than the one it checks against) the first one made is kept.
  std::stable_sort(classes.begin(), classes.end(),
                   [](const auto& a, const auto& b) { return a.metadata.name < b.metadata.name; });
  classes.erase(
      std::unique(classes.begin(), classes.end(),
                  [](const auto& a, const auto& b) { return a.metadata.name == b.metadata.name; }),
      classes.end());
  return classes;
}

}  // namespace xpu::controller
