#include "e2e/kubesim/validate.h"

#include <string>

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

}  // namespace

Status ValidateResourceSlice(const nlohmann::json& slice) {
  auto parsed = api::FromJson<resource::ResourceSlice>(slice);
  if (!parsed.ok()) return Status(StatusCode::kInvalidArgument, parsed.status().message());
  return api::ValidateResourceSlice(*parsed, api::KubeVersion::k1_35);
}

FieldErrors ValidateObject(const ResourceType& type, const nlohmann::json& obj,
                           const nlohmann::json* old, bool status, api::KubeVersion version) {
  if (type.group != resource::kGroup) return {};
  if (type.resource == "resourceslices") {
    return Check<resource::ResourceSlice>(
        obj, old, [&](const auto& s) { return api::ResourceSliceErrors(s, version); },
        [&](const auto& o, const auto& s) {
          return api::ResourceSliceUpdateErrors(o, s, version);
        });
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
