// The DeviceClass sync on in-memory objects: the plan, and its writes through FakeObjects.
#include "controller/class_sync.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "api/client/testing/fake_objects.h"
#include "base/testing/require_ok.h"
#include "controller/device_classes.h"

namespace xpu::controller {
namespace {

using api::client::ObjectKey;
using api::client::testing::FakeObjects;
using api::client::testing::FakeVerb;
using api::resource::DeviceClass;

DeviceClass Class(const std::string& name, const std::string& expression, bool ours = true) {
  DeviceClass c;
  c.metadata.name = name;
  if (ours) c.metadata.labels[std::string(kManagedByLabel)] = std::string(kManagedByValue);
  api::resource::DeviceSelector selector;
  selector.cel.emplace();
  selector.cel->expression = expression;
  c.spec.selectors.push_back(selector);
  return c;
}

std::vector<std::string> ClassNames(const std::vector<DeviceClass>& classes) {
  std::vector<std::string> names;
  for (const DeviceClass& c : classes) names.push_back(c.metadata.name);
  return names;
}

TEST_CASE(
    "class sync plan: create what is missing, update what differs, delete what is not wanted") {
  const std::vector<DeviceClass> desired = {Class("b", "true"), Class("a", "x"), Class("c", "y")};
  std::vector<DeviceClass> managed = {Class("a", "x"), Class("c", "old"), Class("z", "gone")};
  managed[1].metadata.resource_version = "7";
  const ClassSyncPlan plan = PlanClassSync(desired, managed);
  CHECK(ClassNames(plan.creates) == std::vector<std::string>{"b"});
  CHECK(ClassNames(plan.updates) == std::vector<std::string>{"c"});
  CHECK(plan.updates[0].spec.selectors[0].cel->expression == "y");
  CHECK(plan.updates[0].metadata.resource_version == "7");  // the update's precondition
  CHECK(ClassNames(plan.deletes) == std::vector<std::string>{"z"});
  CHECK(PlanClassSync(desired, {Class("a", "x"), Class("b", "true"), Class("c", "y")}).Empty());
  CHECK_FALSE(UpdatedClass(Class("a", "x"), Class("a", "x")).has_value());
}

TEST_CASE("class sync apply: writes through the typed writer, ours only, with preconditions") {
  FakeObjects<DeviceClass> classes("deviceclasses");
  classes.Put(Class("c", "old"));
  classes.Put(Class("z", "gone"));
  classes.Put(Class("b", "someone else's", false));  // not in the informer: not ours
  std::vector<DeviceClass> managed = {*classes.Find(ObjectKey::Cluster("c")),
                                      *classes.Find(ObjectKey::Cluster("z"))};
  const ClassSyncPlan plan =
      PlanClassSync({Class("a", "x"), Class("b", "true"), Class("c", "y")}, managed);
  std::map<std::string, int> writes;
  std::vector<std::string> warnings;
  ClassSyncHooks hooks;
  hooks.observe = [&](std::string_view verb, const Status& s) {
    writes[std::string(verb) + (s.ok() ? "" : ":" + std::string(StatusCodeName(s.code())))]++;
  };
  hooks.warn = [&](const std::string& m) { warnings.push_back(m); };
  REQUIRE_OK(ApplyClassSync(plan, classes, hooks));
  CHECK(classes.Find(ObjectKey::Cluster("a"))->spec.selectors[0].cel->expression == "x");
  CHECK(classes.Find(ObjectKey::Cluster("c"))->spec.selectors[0].cel->expression == "y");
  CHECK_FALSE(classes.Find(ObjectKey::Cluster("z")).has_value());
  CHECK(classes.Find(ObjectKey::Cluster("b"))->spec.selectors[0].cel->expression ==
        "someone else's");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("deviceclass b exists and is not managed by xpu-dra-controller") == 0);
  CHECK(writes == std::map<std::string, int>{
                      {"create", 1}, {"create:already exists", 1}, {"update", 1}, {"delete", 1}});
}

TEST_CASE("class sync apply: ours found on create is updated, stale deletes and errors reported") {
  FakeObjects<DeviceClass> classes("deviceclasses");
  classes.Put(Class("a", "old"));  // ours, not yet seen by the informer
  const DeviceClass seen = [&] {
    classes.Put(Class("z", "gone"));
    return *classes.Find(ObjectKey::Cluster("z"));
  }();
  // z is recreated after the informer saw it: another uid.
  REQUIRE_OK(classes.Delete(ObjectKey::Cluster("z"), {}));
  classes.Put(Class("z", "new"));
  ClassSyncPlan plan;
  plan.creates = {Class("a", "x"), Class("q", "y")};
  plan.deletes = {seen};
  classes.FailNext(FakeVerb::kCreate, Status(StatusCode::kAlreadyExists, "a exists"));
  classes.FailNext(FakeVerb::kCreate, UnavailableError("503"));
  const Status s = ApplyClassSync(plan, classes, {});
  CHECK(s.code() == StatusCode::kUnavailable);  // the first error; the rest still tried
  CHECK(classes.Find(ObjectKey::Cluster("a"))->spec.selectors[0].cel->expression == "x");
  CHECK_FALSE(classes.Find(ObjectKey::Cluster("q")).has_value());
  CHECK(classes.Find(ObjectKey::Cluster("z"))->spec.selectors[0].cel->expression ==
        "new");  // precondition held
}

TEST_CASE("class sync apply: nothing is written once it may not write") {
  FakeObjects<DeviceClass> classes("deviceclasses");
  ClassSyncPlan plan;
  plan.creates = {Class("a", "x")};
  ClassSyncHooks hooks;
  hooks.allowed = [] { return false; };
  CHECK(ApplyClassSync(plan, classes, hooks).ok());
  CHECK(classes.calls(FakeVerb::kCreate) == 0);
}

}  // namespace
}  // namespace xpu::controller
