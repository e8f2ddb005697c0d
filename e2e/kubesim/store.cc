#include "e2e/kubesim/store.h"

#include <ctime>
#include <initializer_list>
#include <utility>

#include "base/text.h"
#include "e2e/kubesim/validate.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;

// The value at `path` through nested objects, or null where a step is missing or not an object:
// a body is outside input, so no shape is assumed (json_pointer lookups throw on an array step).
const json* MemberAt(const json& root, std::initializer_list<const char*> path) {
  const json* at = &root;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string Now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NameOf(const json& obj) {
  const auto& meta = obj.value("metadata", json::object());
  return meta.is_object() ? meta.value("name", "") : "";
}

json SpecOf(const json& obj) { return obj.contains("spec") ? obj["spec"] : json(); }

Status NotFound(const ResourceType& t, const std::string& name) {
  return Status(StatusCode::kNotFound, t.QualifiedName() + " \"" + name + "\" not found");
}

Status ConflictModified(const ResourceType& t, const std::string& name) {
  return Status(StatusCode::kAborted,
                "Operation cannot be fulfilled on " + t.QualifiedName() + " \"" + name +
                    "\": the object has been modified; please apply your changes to the latest "
                    "version and try again");
}

}  // namespace

bool MatchesFilter(const WatchFilter& filter, const json& obj) {
  if (!filter.ns.empty()) {
    const auto& meta = obj.value("metadata", json::object());
    if (meta.value("namespace", "") != filter.ns) return false;
  }
  return filter.labels.MatchesLabels(obj) && filter.fields.MatchesFields(obj);
}

Store::Store(StoreOptions options)
    : options_(std::move(options)),
      objects_(options_.types.size()),
      random_(options_.seed != 0 ? options_.seed : std::random_device{}()) {}

std::optional<size_t> Store::FindType(const std::string& group, const std::string& resource) const {
  for (size_t i = 0; i < options_.types.size(); ++i) {
    if (options_.types[i].group == group && options_.types[i].resource == resource) return i;
  }
  return std::nullopt;
}

bool Store::NamespaceExistsLocked(const std::string& ns) const {
  for (size_t i = 0; i < options_.types.size(); ++i) {
    if (options_.types[i].group.empty() && options_.types[i].resource == "namespaces") {
      return objects_[i].count(Key("", ns)) != 0;
    }
  }
  return false;
}

std::string Store::NewUidLocked() {
  // RFC 4122 version 4: random bits with the version and variant fields set.
  const uint64_t hi = (random_() & ~0xf000ULL) | 0x4000ULL;
  const uint64_t lo = (random_() & ~(3ULL << 62)) | (2ULL << 62);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

void Store::RecordLocked(size_t type, const char* event_type, const json& obj, const json& old) {
  history_.push_back(Event{resource_version_, type, event_type, obj, old});
  while (history_.size() > options_.history) {
    compacted_ = history_.front().resource_version;
    history_.pop_front();
  }
  changed_.NotifyAll();
}

// The real server's registry check on a new claim or claim template: admin access to devices
// only in a namespace labelled resource.kubernetes.io/admin-access: "true".
api::FieldErrors Store::AdminAccessErrorsLocked(size_t type, const std::string& ns,
                                                const json& obj) const {
  const auto& t = options_.types[type];
  if (t.group != "resource.k8s.io" ||
      (t.resource != "resourceclaims" && t.resource != "resourceclaimtemplates")) {
    return {};
  }
  const json* spec = MemberAt(obj, {"spec"});
  if (spec != nullptr && t.resource == "resourceclaimtemplates") spec = MemberAt(*spec, {"spec"});
  const json* requests = spec == nullptr ? nullptr : MemberAt(*spec, {"devices", "requests"});
  std::string field;
  for (size_t i = 0;
       requests != nullptr && requests->is_array() && i < requests->size() && field.empty(); ++i) {
    const json* admin = MemberAt((*requests)[i], {"exactly", "adminAccess"});
    if (admin != nullptr && *admin == true) {
      field = "spec.devices.requests[" + std::to_string(i) + "].adminAccess";
    }
  }
  if (field.empty()) return {};
  for (size_t i = 0; i < options_.types.size(); ++i) {
    if (!options_.types[i].group.empty() || options_.types[i].resource != "namespaces") continue;
    const auto it = objects_[i].find(Key("", ns));
    const json* label =
        it == objects_[i].end()
            ? nullptr
            : MemberAt(it->second, {"metadata", "labels", "resource.kubernetes.io/admin-access"});
    if (label != nullptr && *label == "true") return {};
  }
  return {api::FieldError{api::FieldErrorType::kForbidden, field,
                          "Forbidden: admin access to devices requires the "
                          "`resource.kubernetes.io/admin-access: true` label on the containing "
                          "namespace"}};
}

Status Store::Validate(size_t type, const json& obj, const json* old, bool status,
                       api::FieldErrors* causes, api::FieldErrors more) const {
  const auto& t = options_.types[type];
  api::FieldErrors errors = std::move(more);
  for (auto& e : ValidateObject(t, obj, old, status, options_.kube_version)) {
    errors.push_back(std::move(e));
  }
  if (errors.empty()) return OkStatus();
  // The API server's message: `<Kind>.<group> "<name>" is invalid: [<field>: <detail>, ...]`.
  Status s(StatusCode::kInvalidArgument, t.kind + (t.group.empty() ? "" : "." + t.group) + " \"" +
                                             NameOf(obj) +
                                             "\" is invalid: " + api::JoinFieldErrors(errors));
  if (causes != nullptr) *causes = std::move(errors);
  return s;
}

StatusOr<json> Store::Create(size_t type, const std::string& ns, json obj, api::FieldErrors* causes,
                             const FeatureGates& gates) {
  const auto& t = options_.types[type];
  if (!obj.is_object()) return Status(StatusCode::kFailedPrecondition, "the body is not an object");
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = json::object();
  auto& meta = obj["metadata"];
  if (t.namespaced) {
    const std::string body_ns = meta.value("namespace", "");
    if (!body_ns.empty() && body_ns != ns) {
      return Status(StatusCode::kFailedPrecondition,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  // The real server's storage refuses this with a plain error, answered as 500.
  if (!meta.value("resourceVersion", "").empty()) {
    return Status(StatusCode::kInternal,
                  "resourceVersion should not be set on objects to be created");
  }
  MutexLock lock(mu_);
  if (t.namespaced && !NamespaceExistsLocked(ns)) {
    return Status(StatusCode::kNotFound, "namespaces \"" + ns + "\" not found");
  }
  if (meta.value("name", "").empty()) {
    const std::string prefix = meta.value("generateName", "");
    if (prefix.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    t.kind +
                        " \"\" is invalid: metadata.name: Required value: name or "
                        "generateName is required");
    }
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string name;
    do {
      name = prefix;
      for (int i = 0; i < 5; ++i) name += kAlphabet[random_() % (sizeof kAlphabet - 1)];
    } while (objects_[type].count(Key(t.namespaced ? ns : "", name)) != 0);
    meta["name"] = name;
  }
  const std::string name = meta["name"].get<std::string>();
  const std::string key = Key(t.namespaced ? ns : "", name);
  if (t.has_status) obj.erase("status");
  PruneUnknownFields(t, &obj);
  DropDisabledFields(t, gates, &obj, nullptr);
  RETURN_IF_ERROR(
      Validate(type, obj, nullptr, false, causes, AdminAccessErrorsLocked(type, ns, obj)));
  if (objects_[type].count(key) != 0) {
    return Status(StatusCode::kAlreadyExists,
                  t.QualifiedName() + " \"" + name + "\" already exists");
  }
  meta["uid"] = NewUidLocked();
  meta["creationTimestamp"] = Now();
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta["resourceVersion"] = std::to_string(++resource_version_);
  if (t.group.empty() && t.resource == "namespaces") obj["status"] = {{"phase", "Active"}};
  objects_[type][key] = obj;
  RecordLocked(type, "ADDED", obj);
  return obj;
}

StatusOr<json> Store::Get(size_t type, const std::string& ns, const std::string& name) const {
  const auto& t = options_.types[type];
  MutexLock lock(mu_);
  auto it = objects_[type].find(Key(t.namespaced ? ns : "", name));
  if (it == objects_[type].end()) return NotFound(t, name);
  return it->second;
}

StatusOr<Store::Undo> Store::UndoSinceLocked(size_t type, int64_t resource_version) const {
  if (resource_version < compacted_) {
    return Status(StatusCode::kOutOfRange, "The resourceVersion for the provided list is too old.");
  }
  // Newest first: the last assignment to a key is its oldest change after the version, whose
  // old object is the key's state at the version.
  Undo undo;
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (it->resource_version <= resource_version) break;
    if (it->type_index != type) continue;
    const auto& meta = it->object["metadata"];
    const std::string key = Key(meta.value("namespace", ""), meta.value("name", ""));
    undo[key] = it->type == "ADDED" ? nullptr : &it->old_object;
  }
  return undo;
}

StatusOr<ListResult> Store::List(size_t type, const std::string& ns,
                                 const ListOptions& options) const {
  const auto& t = options_.types[type];
  std::string after;
  int64_t token_rv = 0;
  if (!options.continue_token.empty()) {
    auto token = HexDecode(options.continue_token);
    if (!token) return Status(StatusCode::kFailedPrecondition, "invalid continue token");
    // {"rv": N, "start": "ns/name"}; a bare key (older tokens) continues at the current state.
    json parsed = json::parse(*token, nullptr, false);
    if (parsed.is_object() && parsed.contains("start") && parsed["start"].is_string() &&
        parsed.contains("rv") && parsed["rv"].is_number_integer()) {
      after = parsed["start"].get<std::string>();
      token_rv = parsed["rv"].get<int64_t>();
    } else {
      after = *token;
    }
  }
  int64_t requested = 0;
  if (!options.resource_version.empty()) {
    try {
      size_t used = 0;
      requested = std::stoll(options.resource_version, &used);
      if (used != options.resource_version.size() || requested < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      return Status(StatusCode::kFailedPrecondition,
                    "invalid resourceVersion: \"" + options.resource_version + "\"");
    }
  }
  const std::string& match = options.resource_version_match;
  if (!match.empty()) {
    if (options.resource_version.empty()) {
      return Status(StatusCode::kFailedPrecondition,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided");
    }
    if (match != "Exact" && match != "NotOlderThan") {
      return Status(StatusCode::kFailedPrecondition,
                    "resourceVersionMatch: Unsupported value: \"" + match +
                        "\": supported values: \"Exact\", \"NotOlderThan\"");
    }
    if (match == "Exact" && requested == 0) {
      return Status(StatusCode::kFailedPrecondition,
                    "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"");
    }
    if (!options.continue_token.empty()) {
      return Status(StatusCode::kFailedPrecondition,
                    "resourceVersionMatch is forbidden when continue is provided");
    }
  }
  WatchFilter filter{type, t.namespaced ? ns : "", options.labels, options.fields};
  MutexLock lock(mu_);
  if (requested > resource_version_) {
    return Status(StatusCode::kDeadlineExceeded,
                  "Too large resource version: " + std::to_string(requested) +
                      ", current: " + std::to_string(resource_version_));
  }
  ListResult result;
  result.resource_version = resource_version_;
  const Objects& objects = objects_[type];
  Undo undo;
  int64_t at = 0;
  if (token_rv > 0 && token_rv < resource_version_) at = token_rv;
  if (match == "Exact" && requested < resource_version_) at = requested;
  if (at > 0) {
    auto changes = UndoSinceLocked(type, at);
    if (!changes.ok()) {
      if (token_rv > 0) {
        return Status(StatusCode::kOutOfRange,
                      "The provided continue parameter is too old to display a consistent list "
                      "result. You can start a new list without the continue parameter.");
      }
      return changes.status();
    }
    undo = *std::move(changes);
    result.resource_version = at;
  }
  // The objects at the list's version, in key order after `after`: the current ones merged with
  // the undone changes.
  auto now = after.empty() ? objects.begin() : objects.upper_bound(after);
  auto then = after.empty() ? undo.begin() : undo.upper_bound(after);
  std::string last;
  while (now != objects.end() || then != undo.end()) {
    const json* object = nullptr;
    std::string key;
    if (then != undo.end() && (now == objects.end() || then->first <= now->first)) {
      if (now != objects.end() && now->first == then->first) ++now;
      key = then->first;
      object = then->second;
      ++then;
    } else {
      key = now->first;
      object = &now->second;
      ++now;
    }
    if (object == nullptr || !MatchesFilter(filter, *object)) continue;
    if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
      result.continue_token =
          HexEncode(json{{"rv", result.resource_version}, {"start", last}}.dump());
      break;
    }
    result.items.push_back(*object);
    last = std::move(key);
  }
  return result;
}

StatusOr<json> Store::Update(size_t type, const std::string& ns, const std::string& name, json obj,
                             bool status, api::FieldErrors* causes, const FeatureGates& gates) {
  const auto& t = options_.types[type];
  if (!obj.is_object()) return Status(StatusCode::kFailedPrecondition, "the body is not an object");
  const json meta_in = obj.value("metadata", json::object());
  if (!meta_in.is_object() || meta_in.value("name", "") != name) {
    return Status(StatusCode::kFailedPrecondition,
                  "the name of the object (" +
                      (meta_in.is_object() ? meta_in.value("name", "") : "") +
                      ") does not match the name on the URL (" + name + ")");
  }
  MutexLock lock(mu_);
  const std::string key = Key(t.namespaced ? ns : "", name);
  auto it = objects_[type].find(key);
  if (it == objects_[type].end()) return NotFound(t, name);
  const json& old = it->second;
  const std::string rv = meta_in.value("resourceVersion", "");
  if (!rv.empty() && rv != old["metadata"]["resourceVersion"]) return ConflictModified(t, name);
  const std::string uid = meta_in.value("uid", "");
  if (!uid.empty() && uid != old["metadata"]["uid"]) {
    return Status(StatusCode::kAborted,
                  "Precondition failed: UID in precondition: " + uid +
                      ", UID in object meta: " + old["metadata"]["uid"].get<std::string>());
  }
  json next;
  if (status) {
    next = old;
    if (obj.contains("status")) {
      next["status"] = obj["status"];
    } else {
      next.erase("status");
    }
  } else {
    next = std::move(obj);
    // Before the generation check, as the API server's PrepareForUpdate does.
    DropDisabledFields(t, gates, &next, &old);
    for (const char* field : {"uid", "creationTimestamp", "generation", "deletionTimestamp",
                              "namespace", "resourceVersion"}) {
      if (old["metadata"].contains(field)) {
        next["metadata"][field] = old["metadata"][field];
      } else {
        next["metadata"].erase(field);
      }
    }
    if (t.has_status) {
      if (old.contains("status")) {
        next["status"] = old["status"];
      } else {
        next.erase("status");
      }
    }
    if (SpecOf(next) != SpecOf(old)) {
      next["metadata"]["generation"] = old["metadata"].value("generation", 0) + 1;
    }
  }
  PruneUnknownFields(t, &next);
  if (next == old) return old;  // a no-op update keeps the resourceVersion, as etcd does
  RETURN_IF_ERROR(Validate(type, next, &old, status, causes));
  next["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  const bool finalized = next["metadata"].contains("deletionTimestamp") &&
                         next["metadata"].value("finalizers", json::array()).empty();
  json previous = std::move(it->second);
  it->second = next;
  RecordLocked(type, "MODIFIED", next, previous);
  if (finalized) RemoveLocked(type, key);
  return next;
}

void Store::RemoveLocked(size_t type, const std::string& key) {
  // Deletes the object, then (as the garbage collector and namespace controller would)
  // everything it owns and, for a namespace, everything in it.
  std::vector<std::pair<size_t, std::string>> queue = {{type, key}};
  while (!queue.empty()) {
    auto [ty, k] = queue.back();
    queue.pop_back();
    auto it = objects_[ty].find(k);
    if (it == objects_[ty].end()) continue;
    json obj = std::move(it->second);
    objects_[ty].erase(it);
    json previous = obj;
    obj["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    RecordLocked(ty, "DELETED", obj, previous);
    const std::string uid = obj["metadata"].value("uid", "");
    const bool is_namespace =
        options_.types[ty].group.empty() && options_.types[ty].resource == "namespaces";
    for (size_t other = 0; other < objects_.size(); ++other) {
      for (const auto& [other_key, candidate] : objects_[other]) {
        const auto& meta = candidate["metadata"];
        bool owned = is_namespace && options_.types[other].namespaced &&
                     meta.value("namespace", "") == NameOf(obj);
        for (const auto& ref : meta.value("ownerReferences", json::array())) {
          if (ref.is_object() && ref.value("uid", "") == uid) owned = true;
        }
        if (owned) queue.emplace_back(other, other_key);
      }
    }
  }
}

StatusOr<json> Store::Delete(size_t type, const std::string& ns, const std::string& name,
                             const Preconditions& preconditions) {
  const auto& t = options_.types[type];
  MutexLock lock(mu_);
  return DeleteLocked(type, Key(t.namespaced ? ns : "", name), preconditions);
}

StatusOr<std::vector<json>> Store::DeleteCollection(size_t type, const std::string& ns,
                                                    const ListOptions& options) {
  const auto& t = options_.types[type];
  const WatchFilter filter{type, t.namespaced ? ns : "", options.labels, options.fields};
  MutexLock lock(mu_);
  std::vector<std::string> keys;
  for (const auto& [key, obj] : objects_[type]) {
    if (MatchesFilter(filter, obj)) keys.push_back(key);
  }
  std::vector<json> deleted;
  for (const auto& key : keys) {
    // An earlier delete may have garbage-collected a later one.
    if (objects_[type].count(key) == 0) continue;
    auto obj = DeleteLocked(type, key, {});
    if (!obj.ok()) return obj.status();
    deleted.push_back(*std::move(obj));
  }
  return deleted;
}

StatusOr<json> Store::DeleteLocked(size_t type, const std::string& key,
                                   const Preconditions& preconditions) {
  const auto& t = options_.types[type];
  auto it = objects_[type].find(key);
  if (it == objects_[type].end()) return NotFound(t, key.substr(key.find('/') + 1));
  const auto& meta = it->second["metadata"];
  if (preconditions.uid && *preconditions.uid != meta.value("uid", "")) {
    return Status(StatusCode::kAborted,
                  "Precondition failed: UID in precondition: " + *preconditions.uid +
                      ", UID in object meta: " + meta.value("uid", ""));
  }
  if (preconditions.resource_version &&
      *preconditions.resource_version != meta.value("resourceVersion", "")) {
    return Status(
        StatusCode::kAborted,
        "Precondition failed: ResourceVersion in precondition: " + *preconditions.resource_version +
            ", ResourceVersion in object meta: " + meta.value("resourceVersion", ""));
  }
  if (!meta.value("finalizers", json::array()).empty()) {
    // Finalizers hold the object: mark it and let the last finalizer removal delete it.
    if (meta.contains("deletionTimestamp")) return it->second;
    json previous = it->second;
    it->second["metadata"]["deletionTimestamp"] = Now();
    it->second["metadata"]["deletionGracePeriodSeconds"] = 0;
    it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    RecordLocked(type, "MODIFIED", it->second, previous);
    return it->second;
  }
  json last = it->second;
  RemoveLocked(type, key);
  last["metadata"]["resourceVersion"] = std::to_string(resource_version_);
  return last;
}

int64_t Store::ResourceVersion() const {
  MutexLock lock(mu_);
  return resource_version_;
}

StatusOr<EventBatch> Store::WaitForEvents(const WatchFilter& filter, int64_t after,
                                          std::chrono::steady_clock::time_point deadline) const {
  MutexLock lock(mu_);
  EventBatch batch;
  while (true) {
    if (shutdown_) return Status(StatusCode::kCancelled, "kube-sim is shutting down");
    if (after < compacted_) {
      return Status(StatusCode::kOutOfRange, "too old resource version: " + std::to_string(after) +
                                                 " (" + std::to_string(compacted_ + 1) + ")");
    }
    for (const auto& e : history_) {
      if (e.resource_version <= after || e.type_index != filter.type_index) continue;
      const bool now_matches = MatchesFilter(filter, e.object);
      if (e.type != "MODIFIED" || e.old_object.is_null()) {
        if (now_matches) batch.events.push_back(e);
        continue;
      }
      // As the watch cache does: an update that makes the object start matching is ADDED, one
      // that makes it stop matching is DELETED (the old object at the new resourceVersion).
      const bool matched = MatchesFilter(filter, e.old_object);
      if (now_matches && matched) {
        batch.events.push_back(e);
      } else if (now_matches) {
        batch.events.push_back(Event{e.resource_version, e.type_index, "ADDED", e.object, nullptr});
      } else if (matched) {
        json gone = e.old_object;
        gone["metadata"]["resourceVersion"] = std::to_string(e.resource_version);
        batch.events.push_back(
            Event{e.resource_version, e.type_index, "DELETED", std::move(gone), nullptr});
      }
    }
    batch.scanned_through = std::max(after, resource_version_);
    if (!batch.events.empty() || std::chrono::steady_clock::now() >= deadline) return batch;
    after = batch.scanned_through;
    changed_.WaitUntil(mu_, deadline);
  }
}

void Store::Shutdown() {
  MutexLock lock(mu_);
  shutdown_ = true;
  changed_.NotifyAll();
}

}  // namespace xpu::kubesim
