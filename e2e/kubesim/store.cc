#include "e2e/kubesim/store.h"

#include <ctime>
#include <utility>

#include "e2e/kubesim/validate.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;

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

std::string Hex(const std::string& s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::optional<std::string> Unhex(const std::string& s) {
  if (s.size() % 2 != 0) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = nibble(s[i]);
    const int lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
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

void Store::RecordLocked(size_t type, const char* event_type, const json& obj) {
  history_.push_back(Event{resource_version_, type, event_type, obj});
  while (history_.size() > options_.history) {
    compacted_ = history_.front().resource_version;
    history_.pop_front();
  }
  changed_.notify_all();
}

Status Store::Validate(size_t type, const json& obj) const {
  const auto& t = options_.types[type];
  if (t.group == "resource.k8s.io" && t.resource == "resourceslices") {
    Status s = ValidateResourceSlice(obj);
    if (!s.ok()) {
      return Status(s.code(),
                    t.kind + "." + t.group + " \"" + NameOf(obj) + "\" is invalid: " + s.message());
    }
  }
  return OkStatus();
}

StatusOr<json> Store::Create(size_t type, const std::string& ns, json obj) {
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
  std::lock_guard lock(mu_);
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
  RETURN_IF_ERROR(Validate(type, obj));
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
  std::lock_guard lock(mu_);
  auto it = objects_[type].find(Key(t.namespaced ? ns : "", name));
  if (it == objects_[type].end()) return NotFound(t, name);
  return it->second;
}

StatusOr<ListResult> Store::List(size_t type, const std::string& ns,
                                 const ListOptions& options) const {
  const auto& t = options_.types[type];
  std::string after;
  if (!options.continue_token.empty()) {
    auto key = Unhex(options.continue_token);
    if (!key) return Status(StatusCode::kFailedPrecondition, "invalid continue token");
    after = *key;
  }
  WatchFilter filter{type, t.namespaced ? ns : "", options.labels, options.fields};
  std::lock_guard lock(mu_);
  ListResult result;
  result.resource_version = resource_version_;
  const auto& objects = objects_[type];
  for (auto it = after.empty() ? objects.begin() : objects.upper_bound(after); it != objects.end();
       ++it) {
    if (!MatchesFilter(filter, it->second)) continue;
    if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
      result.continue_token = Hex(std::prev(it)->first);
      break;
    }
    result.items.push_back(it->second);
  }
  return result;
}

StatusOr<json> Store::Update(size_t type, const std::string& ns, const std::string& name, json obj,
                             bool status) {
  const auto& t = options_.types[type];
  if (!obj.is_object()) return Status(StatusCode::kFailedPrecondition, "the body is not an object");
  const json meta_in = obj.value("metadata", json::object());
  if (!meta_in.is_object() || meta_in.value("name", "") != name) {
    return Status(StatusCode::kFailedPrecondition,
                  "the name of the object (" +
                      (meta_in.is_object() ? meta_in.value("name", "") : "") +
                      ") does not match the name on the URL (" + name + ")");
  }
  std::lock_guard lock(mu_);
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
  if (next == old) return old;  // a no-op update keeps the resourceVersion, as etcd does
  RETURN_IF_ERROR(Validate(type, next));
  next["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  const bool finalized = next["metadata"].contains("deletionTimestamp") &&
                         next["metadata"].value("finalizers", json::array()).empty();
  it->second = next;
  RecordLocked(type, "MODIFIED", next);
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
    obj["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    RecordLocked(ty, "DELETED", obj);
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
  std::lock_guard lock(mu_);
  const std::string key = Key(t.namespaced ? ns : "", name);
  auto it = objects_[type].find(key);
  if (it == objects_[type].end()) return NotFound(t, name);
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
    it->second["metadata"]["deletionTimestamp"] = Now();
    it->second["metadata"]["deletionGracePeriodSeconds"] = 0;
    it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    RecordLocked(type, "MODIFIED", it->second);
    return it->second;
  }
  json last = it->second;
  RemoveLocked(type, key);
  last["metadata"]["resourceVersion"] = std::to_string(resource_version_);
  return last;
}

int64_t Store::ResourceVersion() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

StatusOr<EventBatch> Store::WaitForEvents(const WatchFilter& filter, int64_t after,
                                          std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  EventBatch batch;
  while (true) {
    if (shutdown_) return Status(StatusCode::kCancelled, "kube-sim is shutting down");
    if (after < compacted_) {
      return Status(StatusCode::kOutOfRange, "too old resource version: " + std::to_string(after) +
                                                 " (" + std::to_string(compacted_ + 1) + ")");
    }
    for (const auto& e : history_) {
      if (e.resource_version <= after) continue;
      if (e.type_index == filter.type_index && MatchesFilter(filter, e.object)) {
        batch.events.push_back(e);
      }
    }
    batch.scanned_through = std::max(after, resource_version_);
    if (!batch.events.empty() || std::chrono::steady_clock::now() >= deadline) return batch;
    after = batch.scanned_through;
    changed_.wait_until(lock, deadline);
  }
}

void Store::Shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  changed_.notify_all();
}

}  // namespace xpu::kubesim
