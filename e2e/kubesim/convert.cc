// kube-sim's side of version conversion: the resource.k8s.io shapes are converted by the api/
// module (api::resource::ConvertResource), the same code the driver uses; other groups serve
// one version and only need their apiVersion set.
#include "e2e/kubesim/convert.h"

#include <utility>

#include "api/resource.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;

json Convert(const ResourceType& type, const std::string& from, const std::string& to, json obj) {
  if (!obj.is_object()) return obj;
  obj["apiVersion"] = type.ApiVersion(from);
  if (!obj.contains("kind")) obj["kind"] = type.kind;
  if (from != to) {
    if (auto target = api::resource::ParseApiVersion(type.ApiVersion(to))) {
      StatusOr<json> converted = api::resource::ConvertResource(obj, *target);
      if (converted.ok()) return *std::move(converted);
    }
  }
  obj["apiVersion"] = type.ApiVersion(to);
  return obj;
}

}  // namespace

json ToStorage(const ResourceType& type, const std::string& version, json obj) {
  return Convert(type, version, type.versions.front(), std::move(obj));
}

json FromStorage(const ResourceType& type, const std::string& version, json obj) {
  return Convert(type, type.versions.front(), version, std::move(obj));
}

}  // namespace xpu::kubesim
