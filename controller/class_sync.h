// The DeviceClass sync as compute-then-act. PlanClassSync (pure) compares the classes the config
// asks for (device_classes.h) with the controller's own classes in the cluster and lists the
// creates, updates and deletes; ApplyClassSync makes them through a typed writer
// (api/client/objects.h), so both are tested without a server.
//
// Only classes labelled app.kubernetes.io/managed-by=xpu-dra-controller are ever updated or
// deleted. A create that finds the name taken re-reads the class: ours (not yet in the informer)
// is updated, anyone else's is left alone with a warning. Deletes carry the uid and
// resourceVersion seen as preconditions, so a class recreated meanwhile is not removed.
#ifndef XPU_CONTROLLER_CLASS_SYNC_H_
#define XPU_CONTROLLER_CLASS_SYNC_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/client/objects.h"
#include "api/resource.h"
#include "base/status.h"

namespace xpu::controller {

struct ClassSyncPlan {
  std::vector<api::resource::DeviceClass> creates;  // desired, not among ours
  std::vector<api::resource::DeviceClass> updates;  // ours, with the desired spec, labels and
                                                    // annotations (resourceVersion kept)
  std::vector<api::resource::DeviceClass> deletes;  // ours, no longer desired
  bool Empty() const { return creates.empty() && updates.empty() && deletes.empty(); }
};

// `managed`: the controller's classes as its informer holds them. Sorted by name within each list.
ClassSyncPlan PlanClassSync(const std::vector<api::resource::DeviceClass>& desired,
                            const std::vector<api::resource::DeviceClass>& managed);

// `current` with the spec, labels and annotations of `want`; nullopt when it already has them.
std::optional<api::resource::DeviceClass> UpdatedClass(api::resource::DeviceClass current,
                                                       const api::resource::DeviceClass& want);

struct ClassSyncHooks {
  std::function<bool()> allowed;  // asked before each write (leadership); empty: always
  // After each write: "create", "update" or "delete", and its status.
  std::function<void(std::string_view verb, const Status& status)> observe;
  std::function<void(const std::string& message)> warn;
};

// Makes every write of `plan` that it may; returns the first error (the others are still tried).
Status ApplyClassSync(const ClassSyncPlan& plan,
                      api::client::Objects<api::resource::DeviceClass>& classes,
                      const ClassSyncHooks& hooks);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_CLASS_SYNC_H_
