#include "e2e/kubesim/validate.h"

#include <string>

#include "api/accelerator_gang.h"
#include "api/node_inventory.h"
#include "api/openapi_schema.h"
#include "api/resource.h"
#include "api/resource_validation.h"

namespace xpu::kubesim {
namespace {

using api::FieldErrors;
namespace resource = api::resource;

// A FromJson shape error "path: message" as one error at `path`.
FieldErrors ShapeError(const Status& status) {
  const std::string& message = status.message();
  const auto colon = message.find(": ");
  if (colon == std::string::npos || message.find(' ') < colon) {
    return {api::FieldError{api::FieldErrorType::kInvalid, "", "Invalid value: " + message}};
  }
  return {api::FieldError{api::FieldErrorType::kInvalid, message.substr(0, colon),
                          "Invalid value: " + message.substr(colon + 2)}};
}

template <typename T, typename Create, typename Update>
FieldErrors Check(const nlohmann::json& obj, const nlohmann::json* old, Create create,
                  Update update) {
  auto parsed = api::FromJson<T>(obj);
  if (!parsed.ok()) return ShapeError(parsed.status());
  if (old == nullptr) return create(*parsed);
  auto parsed_old = api::FromJson<T>(*old);
  // A stored object that no longer parses is checked like a new one.
  if (!parsed_old.ok()) return create(*parsed);
  return update(*parsed_old, *parsed);
}

// The structural-schema pruning of apiextensions: unknown members of objects go, except where the
// schema preserves them; the root's apiVersion, kind and metadata are kept.
void Prune(nlohmann::json* value, const nlohmann::json& schema, bool root) {
  if (schema.value("x-kubernetes-preserve-unknown-fields", false)) return;
  if (value->is_array()) {
    if (const auto items = schema.find("items"); items != schema.end()) {
      for (auto& item : *value) Prune(&item, *items, false);
    }
    return;
  }
  if (!value->is_object()) return;
  const auto properties = schema.find("properties");
  const auto additional = schema.find("additionalProperties");
  for (auto it = value->begin(); it != value->end();) {
    const std::string& key = it.key();
    if (root && (key == "apiVersion" || key == "kind" || key == "metadata")) {
      ++it;
      continue;
    }
    const nlohmann::json* member = nullptr;
    if (properties != schema.end() && properties->contains(key)) {
      member = &(*properties)[key];
    } else if (additional != schema.end() && additional->is_object()) {
      member = &*additional;
    }
    if (member == nullptr) {
      it = value->erase(it);
      continue;
    }
    Prune(&it.value(), *member, false);
    ++it;
  }
}

const nlohmann::json* CrdSchema(const ResourceType& type) {
  static const nlohmann::json inventory = api::NodeInventorySchema();
  static const nlohmann::json gang = api::AcceleratorGangSchema();
  if (type.group != api::kXpuGroup) return nullptr;
  if (type.resource == "nodeinventories") return &inventory;
  if (type.resource == "acceleratorgangs") return &gang;
  return nullptr;
}

}  // namespace

void PruneUnknownFields(const ResourceType& type, nlohmann::json* obj) {
  if (const nlohmann::json* schema = CrdSchema(type); schema != nullptr) Prune(obj, *schema, true);
}

Status ValidateResourceSlice(const nlohmann::json& slice) {
  auto parsed = api::FromJson<resource::ResourceSlice>(slice);
  if (!parsed.ok()) return Status(StatusCode::kInvalidArgument, parsed.status().message());
  return api::ValidateResourceSlice(*parsed, api::KubeVersion::k1_35);
}

FieldErrors ValidateObject(const ResourceType& type, const nlohmann::json& obj,
                           const nlohmann::json* old, bool status, api::KubeVersion version) {
  if (const nlohmann::json* schema = CrdSchema(type); schema != nullptr) {
    const Status s = api::ValidateAgainstSchema(obj, *schema);
    return s.ok() ? FieldErrors{} : ShapeError(s);
  }
  if (type.group != resource::kGroup) return {};
  if (type.resource == "resourceslices") {
    FieldErrors errors = Check<resource::ResourceSlice>(
        obj, old, [&](const auto& s) { return api::ResourceSliceErrors(s, version); },
        [&](const auto& o, const auto& s) {
          return api::ResourceSliceUpdateErrors(o, s, version);
        });
    // What the decoded spec cannot show: from 1.35 the API server counts a `devices` member that
    // is present, even `[]`, as set beside `sharedCounters`.
    const auto spec = obj.value("spec", nlohmann::json::object());
    if (version != api::KubeVersion::k1_34 && spec.contains("devices") && spec["devices"].empty() &&
        !spec.value("sharedCounters", nlohmann::json::array()).empty()) {
      errors.push_back(
          {api::FieldErrorType::kInvalid, "spec",
           "Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"});
    }
    return errors;
  }
  if (type.resource == "deviceclasses") {
    auto errors = [&](const resource::DeviceClass& c) {
      return api::DeviceClassErrors(c, version);
    };
    return Check<resource::DeviceClass>(obj, old, errors,
                                        [&](const auto&, const auto& c) { return errors(c); });
  }
  if (type.resource == "resourceclaims") {
    return Check<resource::ResourceClaim>(
        obj, old, [&](const auto& c) { return api::ResourceClaimErrors(c, version); },
        [&](const auto& o, const auto& c) {
          return status ? api::ResourceClaimStatusUpdateErrors(o, c, version)
                        : api::ResourceClaimUpdateErrors(o, c, version);
        });
  }
  if (type.resource == "resourceclaimtemplates") {
    return Check<resource::ResourceClaimTemplate>(
        obj, old, [&](const auto& t) { return api::ResourceClaimTemplateErrors(t, version); },
        [&](const auto& o, const auto& t) {
          return api::ResourceClaimTemplateUpdateErrors(o, t, version);
        });
  }
  return {};
}

}  // namespace xpu::kubesim
