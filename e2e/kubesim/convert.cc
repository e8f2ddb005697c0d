// The ResourceSlice `basic` wrap/unwrap and the DeviceRequest `exactly` flattening between
// resource.k8s.io v1beta1 and v1. The api/ module's resource conversion replaces this file.
#include "e2e/kubesim/convert.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;

bool IsV1beta1Resource(const ResourceType& type, const std::string& version) {
  return type.group == "resource.k8s.io" && version == "v1beta1";
}

// The DeviceClaim of a claim or of a template's embedded claim spec, or null.
json* DeviceClaim(const ResourceType& type, json& obj) {
  json* spec = obj.contains("spec") && obj["spec"].is_object() ? &obj["spec"] : nullptr;
  if (spec != nullptr && type.resource == "resourceclaimtemplates") {
    spec = spec->contains("spec") && (*spec)["spec"].is_object() ? &(*spec)["spec"] : nullptr;
  }
  if (spec == nullptr || !spec->contains("devices") || !(*spec)["devices"].is_object()) {
    return nullptr;
  }
  return &(*spec)["devices"];
}

void ForEachItem(json* parent, const char* key, void (*fn)(json&)) {
  if (parent == nullptr || !parent->contains(key) || !(*parent)[key].is_array()) return;
  for (auto& item : (*parent)[key]) {
    if (item.is_object()) fn(item);
  }
}

void UnwrapBasic(json& device) {
  if (!device.contains("basic") || !device["basic"].is_object()) return;
  json basic = std::move(device["basic"]);
  device.erase("basic");
  for (auto& [k, v] : basic.items()) device[k] = v;
}

void WrapBasic(json& device) {
  json basic = json::object();
  for (auto it = device.begin(); it != device.end(); ++it) {
    if (it.key() != "name") basic[it.key()] = it.value();
  }
  json out = {{"name", device.value("name", "")}, {"basic", basic}};
  device = std::move(out);
}

void NestExactly(json& request) {
  if (request.contains("firstAvailable")) return;
  json exactly = json::object();
  for (auto it = request.begin(); it != request.end(); ++it) {
    if (it.key() != "name") exactly[it.key()] = it.value();
  }
  json out = {{"name", request.value("name", "")}, {"exactly", exactly}};
  request = std::move(out);
}

void FlattenExactly(json& request) {
  if (!request.contains("exactly") || !request["exactly"].is_object()) return;
  json exactly = std::move(request["exactly"]);
  request.erase("exactly");
  for (auto& [k, v] : exactly.items()) request[k] = v;
}

json Convert(const ResourceType& type, const std::string& version, json obj, bool to_storage) {
  if (!obj.is_object()) return obj;
  obj["apiVersion"] = type.ApiVersion(to_storage ? type.versions.front() : version);
  if (!IsV1beta1Resource(type, version)) return obj;
  if (type.resource == "resourceslices") {
    json* spec = obj.contains("spec") && obj["spec"].is_object() ? &obj["spec"] : nullptr;
    ForEachItem(spec, "devices", to_storage ? UnwrapBasic : WrapBasic);
  } else if (type.resource == "resourceclaims" || type.resource == "resourceclaimtemplates") {
    ForEachItem(DeviceClaim(type, obj), "requests", to_storage ? NestExactly : FlattenExactly);
  }
  return obj;
}

}  // namespace

json ToStorage(const ResourceType& type, const std::string& version, json obj) {
  return Convert(type, version, std::move(obj), true);
}

json FromStorage(const ResourceType& type, const std::string& version, json obj) {
  return Convert(type, version, std::move(obj), false);
}

}  // namespace xpu::kubesim
