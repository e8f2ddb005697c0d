// Conversion of the wire form between resource.k8s.io versions. It works on JSON rather than on
// the structs so that members this code does not know travel along untouched. Every conversion
// goes through the v1 layout; v1beta2 only differs in apiVersion.
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "api/resource.h"

namespace xpu::api::resource {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kKinds = {"ResourceSlice", "DeviceClass", "ResourceClaim",
                                                    "ResourceClaimTemplate"};

Status NotAn(const std::string& path, std::string_view what) {
  return InvalidArgumentError(path + ": expected " + std::string(what));
}

// Calls `fn(element, path)` for each element of obj[key] when that is present; fails if it is
// not an array of objects.
template <typename Fn>
Status ForEachObject(json& obj, std::string_view key, const std::string& path, Fn fn) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return OkStatus();
  const std::string list_path = path.empty() ? std::string(key) : path + "." + std::string(key);
  if (!it->is_array()) return NotAn(list_path, "an array");
  for (size_t i = 0; i < it->size(); ++i) {
    json& element = (*it)[i];
    const std::string element_path = list_path + "[" + std::to_string(i) + "]";
    if (!element.is_object()) return NotAn(element_path, "an object");
    RETURN_IF_ERROR(fn(element, element_path));
  }
  return OkStatus();
}

// obj[key] when it is an object; nullptr when absent; an error otherwise.
StatusOr<json*> ObjectMember(json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return static_cast<json*>(nullptr);
  if (!it->is_object()) return NotAn(path + "." + std::string(key), "an object");
  return &*it;
}

// Moves every member of `from` but those in `keep` into `to`; members already in `to` win.
void MoveMembers(json& from, json& to, std::initializer_list<std::string_view> keep) {
  for (auto it = from.begin(); it != from.end();) {
    const std::string key = it.key();
    bool kept = false;
    for (std::string_view k : keep) kept = kept || k == key;
    if (kept) {
      ++it;
      continue;
    }
    if (!to.contains(key)) to[key] = std::move(it.value());
    it = from.erase(it);
  }
}

// Moves the members of the object obj[key], when present, up into obj.
Status Unnest(json& obj, std::string_view key, const std::string& path) {
  ASSIGN_OR_RETURN(json * inner, ObjectMember(obj, key, path));
  if (inner == nullptr) return OkStatus();
  json body = std::move(*inner);
  obj.erase(key);
  MoveMembers(body, obj, {});
  return OkStatus();
}

// v1beta1 Device {name, basic{...}} -> v1 Device {name, ...}.
Status DeviceToV1(json& device, const std::string& path) { return Unnest(device, "basic", path); }

// v1 Device -> v1beta1 Device: everything but the name goes under `basic`.
Status DeviceToV1beta1(json& device, const std::string& /*path*/) {
  json basic = json::object();
  MoveMembers(device, basic, {"name"});
  device["basic"] = std::move(basic);
  return OkStatus();
}

// A flat v1beta1 request -> v1: without firstAvailable, the request fields go under `exactly`.
Status RequestToV1(json& request, const std::string& /*path*/) {
  if (request.contains("firstAvailable")) return OkStatus();
  json exactly = json::object();
  MoveMembers(request, exactly, {"name"});
  if (!exactly.empty()) request["exactly"] = std::move(exactly);
  return OkStatus();
}

Status RequestToV1beta1(json& request, const std::string& path) {
  return Unnest(request, "exactly", path);
}

// Applies `request_fn` to spec.devices.requests of a ResourceClaimSpec.
template <typename Fn>
Status ConvertClaimSpec(json& obj, std::string_view key, const std::string& path, Fn request_fn) {
  ASSIGN_OR_RETURN(json * spec, ObjectMember(obj, key, path));
  if (spec == nullptr) return OkStatus();
  const std::string spec_path = path.empty() ? std::string(key) : path + "." + std::string(key);
  ASSIGN_OR_RETURN(json * devices, ObjectMember(*spec, "devices", spec_path));
  if (devices == nullptr) return OkStatus();
  return ForEachObject(*devices, "requests", spec_path + ".devices", request_fn);
}

// Converts the body of one object of `kind` between v1 and v1beta1 (to_v1: v1beta1 -> v1).
Status ConvertBody(json& obj, std::string_view kind, bool to_v1, const std::string& path) {
  if (kind == "ResourceSlice") {
    ASSIGN_OR_RETURN(json * spec, ObjectMember(obj, "spec", path));
    if (spec == nullptr) return OkStatus();
    const std::string spec_path = path.empty() ? "spec" : path + ".spec";
    if (!to_v1) return ForEachObject(*spec, "devices", spec_path, DeviceToV1beta1);
    // v1beta1 has plain fields where v1 has pointers: the zero value means unset.
    if (auto it = spec->find("nodeName");
        it != spec->end() && it->is_string() && it->get_ref<const std::string&>().empty()) {
      spec->erase(it);
    }
    if (auto it = spec->find("allNodes");
        it != spec->end() && it->is_boolean() && !it->get<bool>()) {
      spec->erase(it);
    }
    return ForEachObject(*spec, "devices", spec_path, DeviceToV1);
  }
  const auto request_fn = to_v1 ? RequestToV1 : RequestToV1beta1;
  if (kind == "ResourceClaim") return ConvertClaimSpec(obj, "spec", path, request_fn);
  if (kind == "ResourceClaimTemplate") {
    ASSIGN_OR_RETURN(json * spec, ObjectMember(obj, "spec", path));
    if (spec == nullptr) return OkStatus();
    return ConvertClaimSpec(*spec, "spec", path.empty() ? "spec" : path + ".spec", request_fn);
  }
  return OkStatus();  // DeviceClass has the same layout in all three versions.
}

Status Convert(json& obj, std::string_view kind, ResourceVersion from, ResourceVersion to,
               const std::string& path) {
  if (from == to) return OkStatus();
  if (from == ResourceVersion::kV1beta1) RETURN_IF_ERROR(ConvertBody(obj, kind, true, path));
  if (to == ResourceVersion::kV1beta1) RETURN_IF_ERROR(ConvertBody(obj, kind, false, path));
  return OkStatus();
}

}  // namespace

StatusOr<json> ConvertResource(const json& object, ResourceVersion to) {
  if (!object.is_object()) return InvalidArgumentError("convert resource: expected an object");
  const auto api_version = object.find("apiVersion");
  const auto kind_it = object.find("kind");
  if (api_version == object.end() || !api_version->is_string() || kind_it == object.end() ||
      !kind_it->is_string()) {
    return InvalidArgumentError("convert resource: apiVersion and kind must be strings");
  }
  const std::string& api = api_version->get_ref<const std::string&>();
  const std::optional<ResourceVersion> from = ParseApiVersion(api);
  if (!from) {
    return InvalidArgumentError("convert resource: apiVersion: unknown version \"" + api +
                                "\"; expected resource.k8s.io/v1, v1beta2 or v1beta1");
  }
  std::string kind = kind_it->get<std::string>();
  const bool is_list = kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0;
  if (is_list) kind.resize(kind.size() - 4);
  bool known = false;
  for (std::string_view k : kKinds) known = known || k == kind;
  if (!known) {
    return InvalidArgumentError("convert resource: kind: unknown kind \"" +
                                kind_it->get<std::string>() + "\"");
  }

  json out = object;
  out["apiVersion"] = std::string(ApiVersionOf(to));
  Status status;
  if (is_list) {
    status = ForEachObject(out, "items", "", [&](json& item, const std::string& path) {
      if (item.contains("apiVersion")) item["apiVersion"] = std::string(ApiVersionOf(to));
      return Convert(item, kind, *from, to, path);
    });
  } else {
    status = Convert(out, kind, *from, to, "");
  }
  if (!status.ok()) return status.WithContext("convert " + kind_it->get<std::string>());
  return out;
}

}  // namespace xpu::api::resource
