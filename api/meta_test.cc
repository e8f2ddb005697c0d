#include "api/meta.h"

#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"

namespace xpu::api {
namespace {

using nlohmann::json;

json FullMeta() {
  return json::parse(R"({
    "name": "slice-a", "generateName": "node-1-gpu.example.com-", "namespace": "default",
    "uid": "6c6f0a3e-0000-4000-8000-00000000000a", "resourceVersion": "42", "generation": 3,
    "creationTimestamp": "2025-01-01T00:00:00Z", "deletionTimestamp": "2025-01-02T00:00:00Z",
    "labels": {"a": "1"}, "annotations": {"note": "x"},
    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                         "uid": "u-1", "controller": true, "blockOwnerDeletion": false}],
    "finalizers": ["example.com/keep"]})");
}

TEST_CASE("ObjectMeta round-trips every field") {
  const json doc = FullMeta();
  StatusOr<ObjectMeta> meta = FromJson<ObjectMeta>(doc);
  REQUIRE_OK(meta);
  CHECK(meta->name == "slice-a");
  CHECK(meta->namespace_name == "default");
  CHECK(meta->generation == 3);
  CHECK(meta->deletion_timestamp == "2025-01-02T00:00:00Z");
  REQUIRE(meta->owner_references.size() == 1);
  CHECK(meta->owner_references[0].controller == true);
  CHECK(meta->owner_references[0].block_owner_deletion == false);
  CHECK(ToJson(*meta) == doc);
}

TEST_CASE("ObjectMeta keeps unknown members, also in owner references") {
  json doc = FullMeta();
  doc["managedFields"] = json::array({{{"manager", "kubectl"}, {"operation", "Update"}}});
  doc["deletionGracePeriodSeconds"] = 30;
  doc["ownerReferences"][0]["futureField"] = {{"x", 1}};
  StatusOr<ObjectMeta> meta = FromJson<ObjectMeta>(doc);
  REQUIRE_OK(meta);
  CHECK(meta->unknown.contains("managedFields"));
  CHECK(meta->owner_references[0].unknown == json{{"futureField", {{"x", 1}}}});
  CHECK(ToJson(*meta) == doc);
}

TEST_CASE("ObjectMeta treats null as unset and leaves empty fields out") {
  StatusOr<ObjectMeta> meta =
      FromJson<ObjectMeta>(json{{"name", "a"}, {"creationTimestamp", nullptr}});
  REQUIRE_OK(meta);
  CHECK(ToJson(*meta) == json{{"name", "a"}});
  CHECK(ToJson(ObjectMeta{}) == json::object());
}

TEST_CASE("ObjectMeta errors name the field") {
  auto error = [](const json& doc) { return FromJson<ObjectMeta>(doc).status().message(); };
  CHECK(error(json::array()) == "expected an object, got array");
  CHECK(error({{"name", 5}}) == "name: expected a string, got number 5");
  CHECK(error({{"generation", "3"}}) == "generation: expected an integer, got string \"3\"");
  CHECK(error({{"labels", {{"a", 1}}}}) == "labels.a: expected a string, got number 1");
  CHECK(error({{"ownerReferences", {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n"}}}}}) ==
        "ownerReferences[0].uid: missing required field");
  CHECK(error({{"finalizers", "x"}}) == "finalizers: expected an array, got string \"x\"");
  CHECK(FromJson<ObjectMeta>(json{{"name", 1}}).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("List envelopes decode their items and name the failing item") {
  const json doc = json::parse(R"({"apiVersion": "v1", "kind": "List",
    "metadata": {"resourceVersion": "7", "continue": "token"},
    "items": [{"name": "a"}, {"name": "b"}]})");
  StatusOr<List<ObjectMeta>> list = ListFromJson<ObjectMeta>(doc);
  REQUIRE_OK(list);
  CHECK(list->type.kind == "List");
  CHECK(list->metadata.resource_version == "7");
  CHECK(list->metadata.continue_token == "token");
  REQUIRE(list->items.size() == 2);
  CHECK(list->items[1].name == "b");
  CHECK(ToJson(*list) == doc);

  json bad = doc;
  bad["items"][1]["name"] = false;
  CHECK(ListFromJson<ObjectMeta>(bad).status().message() ==
        "items[1]: name: expected a string, got boolean false");
}

TEST_CASE("WatchEvent reads every event type") {
  for (const char* type : {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}) {
    const json doc = {{"type", type}, {"object", {{"kind", "X"}}}};
    StatusOr<WatchEvent> event = FromJson<WatchEvent>(doc);
    REQUIRE_OK(event);
    CHECK(WatchEventTypeName(event->type) == type);
    CHECK(ToJson(*event) == doc);
  }
  CHECK(FromJson<WatchEvent>(json{{"type", "RENAMED"}, {"object", json::object()}})
            .status()
            .message() ==
        "type: unknown watch event type \"RENAMED\"; expected one of ADDED, MODIFIED, DELETED, "
        "BOOKMARK, ERROR");
  CHECK(FromJson<WatchEvent>(json{{"type", "ADDED"}}).status().message() ==
        "object: missing required field");
}

TEST_CASE("ApiStatus round-trips a conflict answer") {
  const json doc = json::parse(R"({"apiVersion": "v1", "kind": "Status", "metadata": {},
    "status": "Failure", "reason": "Conflict", "code": 409,
    "message": "Operation cannot be fulfilled on resourceslices \"a\": the object has been modified",
    "details": {"name": "a", "group": "resource.k8s.io", "kind": "resourceslices",
                "causes": [{"reason": "FieldValueInvalid"}]}})");
  StatusOr<ApiStatus> status = FromJson<ApiStatus>(doc);
  REQUIRE_OK(status);
  CHECK(status->code == 409);
  CHECK(status->reason == "Conflict");
  REQUIRE(status->details.has_value());
  CHECK(status->details->group == "resource.k8s.io");
  CHECK(ToJson(*status) == doc);
  CHECK(FromJson<ApiStatus>(json{{"kind", "Pod"}}).status().message() ==
        "kind: expected \"Status\", got string \"Pod\"");
}

TEST_CASE("CarryTransitionTime: the time moves only with the status, within one type") {
  const Condition previous{.type = "Ready",
                           .status = "True",
                           .observed_generation = {},
                           .last_transition_time = "2026-01-01T00:00:00Z",
                           .reason = "Up",
                           .message = "",
                           .unknown = nullptr};
  Condition same = previous;
  same.last_transition_time = "2026-02-01T00:00:00Z";
  same.message = "new message";
  CarryTransitionTime(previous, &same);
  CHECK(same.last_transition_time == "2026-01-01T00:00:00Z");
  CHECK(same.message == "new message");
  Condition flipped = same;
  flipped.status = "False";
  flipped.last_transition_time = "2026-03-01T00:00:00Z";
  CarryTransitionTime(previous, &flipped);
  CHECK(flipped.last_transition_time == "2026-03-01T00:00:00Z");
  Condition other = previous;
  other.type = "Healthy";
  other.last_transition_time = "2026-04-01T00:00:00Z";
  CarryTransitionTime(previous, &other);
  CHECK(other.last_transition_time == "2026-04-01T00:00:00Z");
}

}  // namespace
}  // namespace xpu::api
