#include "controller/class_sync.h"

#include <map>
#include <utility>

#include "controller/device_classes.h"

namespace xpu::controller {

using api::client::ObjectKey;
namespace {

using api::resource::DeviceClass;

bool IsOurs(const DeviceClass& c) {
  const auto label = c.metadata.labels.find(std::string(kManagedByLabel));
  return label != c.metadata.labels.end() && label->second == kManagedByValue;
}

}  // namespace

std::optional<DeviceClass> UpdatedClass(DeviceClass current, const DeviceClass& want) {
  if (current.spec == want.spec && current.metadata.labels == want.metadata.labels &&
      current.metadata.annotations == want.metadata.annotations) {
    return std::nullopt;
  }
  current.spec = want.spec;
  current.metadata.labels = want.metadata.labels;
  current.metadata.annotations = want.metadata.annotations;
  return current;
}

ClassSyncPlan PlanClassSync(const std::vector<DeviceClass>& desired,
                            const std::vector<DeviceClass>& managed) {
  std::map<std::string, const DeviceClass*> ours;
  for (const DeviceClass& c : managed) ours[c.metadata.name] = &c;
  std::map<std::string, const DeviceClass*> wanted;
  for (const DeviceClass& c : desired) wanted[c.metadata.name] = &c;
  ClassSyncPlan plan;
  for (const auto& [name, want] : wanted) {
    const auto it = ours.find(name);
    if (it == ours.end()) {
      plan.creates.push_back(*want);
    } else if (std::optional<DeviceClass> updated = UpdatedClass(*it->second, *want)) {
      plan.updates.push_back(std::move(*updated));
    }
  }
  for (const auto& [name, current] : ours) {
    if (!wanted.contains(name)) plan.deletes.push_back(*current);
  }
  return plan;
}

Status ApplyClassSync(const ClassSyncPlan& plan, api::client::Objects<DeviceClass>& classes,
                      const ClassSyncHooks& hooks) {
  Status first;
  const auto allowed = [&] { return !hooks.allowed || hooks.allowed(); };
  const auto done = [&](std::string_view verb, const Status& s) {
    if (hooks.observe) hooks.observe(verb, s);
    if (!s.ok() && first.ok()) first = s;
  };
  const auto update = [&](const DeviceClass& c) { done("update", classes.Update(c).status()); };
  for (const DeviceClass& want : plan.creates) {
    if (!allowed()) return first;
    Status created = classes.Create(want).status();
    if (created.code() != StatusCode::kAlreadyExists) {
      done("create", created);
      continue;
    }
    if (hooks.observe) hooks.observe("create", created);
    // Ours but not yet in the informer, or someone else's: only ours is touched.
    StatusOr<DeviceClass> current = classes.Get(ObjectKey::Cluster(want.metadata.name));
    if (!current.ok()) {
      // One that does not even decode is not ours to fix.
      if (current.status().code() != StatusCode::kDataLoss && first.ok()) first = current.status();
      continue;
    }
    if (!IsOurs(*current)) {
      if (hooks.warn) {
        hooks.warn("deviceclass " + want.metadata.name + " exists and is not managed by " +
                   std::string(kManagedByValue) + "; left alone");
      }
      continue;
    }
    if (std::optional<DeviceClass> updated = UpdatedClass(*current, want)) update(*updated);
  }
  for (const DeviceClass& c : plan.updates) {
    if (!allowed()) return first;
    update(c);
  }
  for (const DeviceClass& c : plan.deletes) {
    if (!allowed()) return first;
    api::client::DeleteOptions preconditions;
    preconditions.uid = c.metadata.uid;
    preconditions.resource_version = c.metadata.resource_version;
    Status s = classes.Delete(ObjectKey::Cluster(c.metadata.name), preconditions);
    if (hooks.observe) hooks.observe("delete", s);
    if (!s.ok() && s.code() != StatusCode::kNotFound && first.ok()) first = s;
  }
  return first;
}

}  // namespace xpu::controller
