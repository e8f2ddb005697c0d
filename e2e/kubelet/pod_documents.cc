#include "e2e/kubelet/pod_documents.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "api/client/events.h"
#include "api/codec/codec.h"
#include "base/time.h"

namespace xpu::e2e {
namespace {

using nlohmann::json;

namespace pod_documents_cc {

namespace codec = api::codec;

// The pod conditions a running pod has, in the kubelet's order.
constexpr const char* kPodConditions[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                          "ContainersReady", "PodScheduled"};

// The array at object[key]; nullptr when absent or null; an error naming `where` when it is not
// an array.
StatusOr<const json*> ArrayAt(const json& object, const char* key, const std::string& where) {
  const json* member = Member(object, key);
  if (member == nullptr || member->is_null()) return static_cast<const json*>(nullptr);
  if (!member->is_array()) return InvalidArgumentError(where + ": expected an array");
  return member;
}

// `where`.name: "`name`" `problem`.
Status BadName(const std::string& where, const std::string& name, const char* problem) {
  return InvalidArgumentError(where + ".name: \"" + name + "\" " + problem);
}

json RunningContainerStatus(const json& container, const std::string& started_at) {
  return {{"name", StringAt(container, "name")},
          {"image", StringAt(container, "image")},
          {"imageID", ""},
          {"ready", true},
          {"started", true},
          {"restartCount", 0},
          {"state", {{"running", {{"startedAt", started_at}}}}},
          {"lastState", json::object()}};
}

// A running pod's conditions: ours True (keeping the transition time of one already True),
// others kept.
json RunningConditions(const json& status, const std::string& t) {
  std::map<std::string, std::string> true_since;
  json others = json::array();
  if (const json* conditions = Member(status, "conditions");
      conditions != nullptr && conditions->is_array()) {
    for (const json& c : *conditions) {
      const std::string type = StringAt(c, "type");
      if (std::find(std::begin(kPodConditions), std::end(kPodConditions), type) ==
          std::end(kPodConditions)) {
        if (c.is_object()) others.push_back(c);
        continue;
      }
      const std::string since = StringAt(c, "lastTransitionTime");
      if (StringAt(c, "status") == "True" && !since.empty()) true_since[type] = since;
    }
  }
  json conditions = json::array();
  for (const char* type : kPodConditions) {
    auto since = true_since.find(type);
    conditions.push_back({{"type", type},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", since != true_since.end() ? since->second : t}});
  }
  for (json& c : others) conditions.push_back(std::move(c));
  return conditions;
}

// A string that must not be empty (the names and uids of a pod record).
struct NonEmpty {
  Status Read(const codec::Field& f, std::string* out) const {
    RETURN_IF_ERROR(codec::Read(f, out));
    if (out->empty()) return f.Error("expected a non-empty string");
    return OkStatus();
  }
  json Write(const std::string& value) const { return value; }
};

// The members of a recorded device (KubeletDevice is the stand-in's; share_id is not recorded).
constexpr auto kDeviceFields = [](auto& v, auto& device) {
  v.Always("requestNames", device.request_names);
  v.Required("poolName", device.pool_name, NonEmpty{});
  v.Required("deviceName", device.device_name, NonEmpty{});
  v.Always("cdiDeviceIds", device.cdi_device_ids);
};

// A claim's devices, each with kDeviceFields.
struct RecordedDevices {
  Status Read(const codec::Field& f, std::vector<KubeletDevice>* out) const {
    if (!f.value->is_array()) return codec::Expected(f, "an array");
    out->clear();
    for (size_t i = 0; i < f.value->size(); ++i) {
      KubeletDevice device;
      RETURN_IF_ERROR(codec::ReadFields(f.Element(i), &device, kDeviceFields));
      out->push_back(std::move(device));
    }
    return OkStatus();
  }
  json Write(const std::vector<KubeletDevice>& devices) const {
    json out = json::array();
    for (const KubeletDevice& device : devices) {
      out.push_back(codec::WriteFields(device, kDeviceFields));
    }
    return out;
  }
};

}  // namespace pod_documents_cc
}  // namespace

// The pod record's field lists (see api/codec/codec.h), found by argument-dependent lookup.
template <typename V, api::codec::FieldsOf<ClaimRecord> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name, pod_documents_cc::NonEmpty{});
  v.Required("uid", self.uid, pod_documents_cc::NonEmpty{});
  v.Always("drivers", self.drivers);
  v.Always("devices", self.devices, pod_documents_cc::RecordedDevices{});
}

template <typename V, api::codec::FieldsOf<PodRecord> S>
void VisitFields(V& v, S& self) {
  v.Required("pod", self.pod, pod_documents_cc::NonEmpty{});
  v.Required("namespace", self.ns, pod_documents_cc::NonEmpty{});
  v.Required("uid", self.uid, pod_documents_cc::NonEmpty{});
  v.Required("claims", self.claims);
}

// JSON access that never throws: nullptr / "" when absent or of another type.
const json* Member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringAt(const json& object, const char* key) {
  const json* member = Member(object, key);
  return member != nullptr && member->is_string() ? member->get<std::string>() : "";
}

const json& Metadata(const json& object) {
  static const json kEmpty = json::object();
  const json* meta = Member(object, "metadata");
  return meta != nullptr ? *meta : kEmpty;
}

StatusOr<std::vector<PodClaimRef>> PodClaims(const json& pod) {
  using namespace pod_documents_cc;  // NOLINT(google-build-using-namespace): this file's helpers
  std::vector<PodClaimRef> out;
  const json* spec = Member(pod, "spec");
  if (spec == nullptr) return out;
  ASSIGN_OR_RETURN(const json* entries, ArrayAt(*spec, "resourceClaims", "spec.resourceClaims"));
  if (entries == nullptr) return out;

  struct Entry {
    std::string name;
    std::string claim;      // resourceClaimName
    std::string template_;  // resourceClaimTemplateName
  };
  std::vector<Entry> wanted;
  std::set<std::string> names;
  for (size_t i = 0; i < entries->size(); ++i) {
    const json& e = (*entries)[i];
    const std::string where = "spec.resourceClaims[" + std::to_string(i) + "]";
    Entry entry{StringAt(e, "name"), StringAt(e, "resourceClaimName"),
                StringAt(e, "resourceClaimTemplateName")};
    if (entry.name.empty()) return InvalidArgumentError(where + ".name: required");
    if (!names.insert(entry.name).second) {
      return BadName(where, entry.name, "is used twice");
    }
    if (entry.claim.empty() == entry.template_.empty()) {
      return InvalidArgumentError(
          where + " (" + entry.name +
          "): exactly one of resourceClaimName and resourceClaimTemplateName must be set");
    }
    wanted.push_back(std::move(entry));
  }

  // status.resourceClaimStatuses: name -> the generated claim (unset: none needed).
  std::map<std::string, std::optional<std::string>> generated;
  if (const json* status = Member(pod, "status"); status != nullptr) {
    ASSIGN_OR_RETURN(const json* statuses,
                     ArrayAt(*status, "resourceClaimStatuses", "status.resourceClaimStatuses"));
    for (size_t i = 0; statuses != nullptr && i < statuses->size(); ++i) {
      const json& s = (*statuses)[i];
      const std::string where = "status.resourceClaimStatuses[" + std::to_string(i) + "]";
      const std::string name = StringAt(s, "name");
      if (name.empty()) return InvalidArgumentError(where + ".name: required");
      if (names.count(name) == 0) {
        return BadName(where, name, "names no spec.resourceClaims entry");
      }
      const json* claim = Member(s, "resourceClaimName");
      if (claim != nullptr && !claim->is_null() && !claim->is_string()) {
        return InvalidArgumentError(where + ".resourceClaimName: expected a string");
      }
      std::optional<std::string> claim_name;
      if (claim != nullptr && claim->is_string() && !claim->get<std::string>().empty()) {
        claim_name = claim->get<std::string>();
      }
      if (!generated.emplace(name, claim_name).second) {
        return BadName(where, name, "is listed twice");
      }
    }
  }

  for (const Entry& entry : wanted) {
    if (!entry.claim.empty()) {
      out.push_back({entry.name, entry.claim});
      continue;
    }
    auto it = generated.find(entry.name);
    if (it == generated.end()) {
      return UnavailableError("waiting for the ResourceClaim of pod claim \"" + entry.name +
                              "\" (template " + entry.template_ +
                              "): not in status.resourceClaimStatuses yet");
    }
    if (it->second) out.push_back({entry.name, *it->second});
  }
  return out;
}

Status ClaimReadyFor(const api::resource::ResourceClaim& claim, const std::string& pod_uid) {
  const std::string what =
      "resourceclaim " + claim.metadata.namespace_name + "/" + claim.metadata.name;
  if (!claim.status.allocation) return UnavailableError(what + ": not allocated yet");
  const auto& reserved = claim.status.reserved_for;
  const bool for_pod = std::any_of(reserved.begin(), reserved.end(), [&](const auto& consumer) {
    return consumer.resource == "pods" && consumer.api_group.empty() && consumer.uid == pod_uid;
  });
  if (!for_pod) return UnavailableError(what + ": not reserved for pod uid " + pod_uid + " yet");
  return OkStatus();
}

std::vector<std::string> ClaimDrivers(const api::resource::ResourceClaim& claim) {
  std::set<std::string> drivers;
  if (claim.status.allocation) {
    for (const auto& result : claim.status.allocation->devices.results) {
      if (!result.driver.empty()) drivers.insert(result.driver);
    }
  }
  return {drivers.begin(), drivers.end()};
}

json ToJson(const PodRecord& record) { return api::codec::Encode(record); }

StatusOr<PodRecord> PodRecordFromJson(const json& object) {
  return api::codec::Decode<PodRecord>(object);
}

std::string PodRecordPath(const std::string& state_dir, const std::string& ns,
                          const std::string& name) {
  return state_dir + "/pods/" + ns + "_" + name + ".json";
}

std::vector<ClaimRecord> ClaimsToUnprepare(const PodRecord& leaving,
                                           const std::vector<PodRecord>& others) {
  std::set<std::string> used;
  for (const PodRecord& other : others) {
    if (other.uid == leaving.uid) continue;
    for (const ClaimRecord& claim : other.claims) used.insert(claim.uid);
  }
  std::vector<ClaimRecord> out;
  std::set<std::string> seen;
  for (const ClaimRecord& claim : leaving.claims) {
    if (used.count(claim.uid) == 0 && seen.insert(claim.uid).second) out.push_back(claim);
  }
  return out;
}

json RunningPodStatus(const json& pod, std::chrono::system_clock::time_point now,
                      const std::string& host_ip) {
  using namespace pod_documents_cc;  // NOLINT(google-build-using-namespace): this file's helpers
  json status = json::object();
  if (const json* current = Member(pod, "status"); current != nullptr && current->is_object()) {
    status = *current;
  }
  const std::string t = FormatTime(now);
  std::string started = StringAt(status, "startTime");
  if (started.empty()) started = t;
  status["phase"] = "Running";
  status["hostIP"] = host_ip;
  status["hostIPs"] = json::array({{{"ip", host_ip}}});
  status["startTime"] = started;

  status["conditions"] = RunningConditions(status, t);

  // Container statuses: keep a running container's startedAt.
  std::map<std::string, std::string> started_at;
  for (const char* key : {"containerStatuses", "initContainerStatuses"}) {
    const json* statuses = Member(status, key);
    if (statuses == nullptr || !statuses->is_array()) continue;
    for (const json& s : *statuses) {
      const json* state = Member(s, "state");
      const json* running = state != nullptr ? Member(*state, "running") : nullptr;
      const std::string at = running != nullptr ? StringAt(*running, "startedAt") : "";
      if (!at.empty()) started_at[key + std::string("/") + StringAt(s, "name")] = at;
    }
  }
  auto start_of = [&](const char* key, const std::string& name) {
    auto it = started_at.find(key + std::string("/") + name);
    return it != started_at.end() ? it->second : started;
  };
  const json* spec = Member(pod, "spec");
  json containers = json::array();
  if (const json* list = spec != nullptr ? Member(*spec, "containers") : nullptr;
      list != nullptr && list->is_array()) {
    for (const json& c : *list) {
      const std::string name = StringAt(c, "name");
      if (name.empty()) continue;
      containers.push_back(RunningContainerStatus(c, start_of("containerStatuses", name)));
    }
  }
  status["containerStatuses"] = std::move(containers);
  if (const json* list = spec != nullptr ? Member(*spec, "initContainers") : nullptr;
      list != nullptr && list->is_array() && !list->empty()) {
    json inits = json::array();
    for (const json& c : *list) {
      const std::string name = StringAt(c, "name");
      if (name.empty()) continue;
      if (StringAt(c, "restartPolicy") == "Always") {  // a sidecar keeps running
        inits.push_back(RunningContainerStatus(c, start_of("initContainerStatuses", name)));
        continue;
      }
      inits.push_back({{"name", name},
                       {"image", StringAt(c, "image")},
                       {"imageID", ""},
                       {"ready", true},
                       {"started", false},
                       {"restartCount", 0},
                       {"state",
                        {{"terminated",
                          {{"exitCode", 0},
                           {"reason", "Completed"},
                           {"startedAt", started},
                           {"finishedAt", started}}}}},
                       {"lastState", json::object()}});
    }
    status["initContainerStatuses"] = std::move(inits);
  }
  return status;
}

json PodEvent(const json& pod, const std::string& reason, const std::string& message,
              const std::string& node_name, std::chrono::system_clock::time_point now) {
  const json& meta = Metadata(pod);
  api::client::EventInfo info;
  info.about = {"v1", "Pod", StringAt(meta, "namespace"), StringAt(meta, "name"),
                StringAt(meta, "uid")};
  info.reason = reason;
  info.message = message;
  info.component = "xpu-node-agent";
  info.instance = node_name;
  info.host = node_name;
  return api::client::MakeEvent(info, now);
}

}  // namespace xpu::e2e
