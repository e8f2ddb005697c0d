#include "api/client/client.h"

#include <array>
#include <random>
#include <thread>
#include <utility>

namespace xpu::api::client {
namespace {

using nlohmann::json;

constexpr const char* kResourceGroup = "resource.k8s.io";

std::string ItemKind(const json& list) {
  std::string kind = list.value("kind", "");
  if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) {
    kind.resize(kind.size() - 4);
  }
  return kind;
}

std::string ObjectName(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  return meta->value("name", "");
}

// What an API server's HTTP status means to the caller; a 409 depends on the Status reason.
StatusCode CodeOfHttpStatus(long http_code, const std::string& reason) {
  static constexpr std::array<std::pair<long, StatusCode>, 7> kCodes = {{
      {400, StatusCode::kInvalidArgument},
      {422, StatusCode::kInvalidArgument},
      {401, StatusCode::kUnauthenticated},
      {403, StatusCode::kPermissionDenied},
      {404, StatusCode::kNotFound},
      {410, StatusCode::kOutOfRange},
      {429, StatusCode::kUnavailable},
  }};
  if (http_code == 409) {
    return reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kAborted;
  }
  for (const auto& [http, code] : kCodes) {
    if (http == http_code) return code;
  }
  return http_code >= 500 ? StatusCode::kUnavailable : StatusCode::kUnknown;
}

}  // namespace

std::string ResourceRef::Name() const { return group.empty() ? resource : resource + "." + group; }
std::string ResourceRef::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

ResourceRef Namespaces() { return {"", "v1", "namespaces", false}; }
ResourceRef Nodes() { return {"", "v1", "nodes", false}; }
ResourceRef Leases() { return {"coordination.k8s.io", "v1", "leases", true}; }
ResourceRef Events() { return {"", "v1", "events", true}; }
ResourceRef ResourceSlices() { return {kResourceGroup, "v1", "resourceslices", false}; }
ResourceRef DeviceClasses() { return {kResourceGroup, "v1", "deviceclasses", false}; }
ResourceRef ResourceClaims() { return {kResourceGroup, "v1", "resourceclaims", true}; }
ResourceRef ResourceClaimTemplates() {
  return {kResourceGroup, "v1", "resourceclaimtemplates", true};
}
ResourceRef NodeInventories() { return {"xpu.dra.dev", "v1alpha1", "nodeinventories", false}; }
ResourceRef AcceleratorGangs() { return {"xpu.dra.dev", "v1alpha1", "acceleratorgangs", true}; }

bool IsSafePathSegment(const std::string& segment) {
  return !segment.empty() && segment != "." && segment != ".." &&
         segment.find_first_of("/%?#") == std::string::npos;
}

Status ApiError(const std::string& what, long http_code, const std::string& body) {
  std::string reason;
  std::string message;
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    reason = parsed.value("reason", "");
    message = parsed.value("message", "");
  } else {
    message = body.substr(0, 200);
  }
  const StatusCode code = CodeOfHttpStatus(http_code, reason);
  std::string text = what + ": " + std::to_string(http_code);
  if (!reason.empty()) text += " " + reason;
  if (!message.empty()) text += ": " + message;
  return Status(code, text);
}

StatusOr<resource::ResourceVersion> PickResourceVersion(const json& group_document) {
  const auto versions = group_document.find("versions");
  if (versions == group_document.end() || !versions->is_array()) {
    return NotFoundError("discover resource.k8s.io: the group document lists no versions");
  }
  std::optional<resource::ResourceVersion> best;
  for (const json& v : *versions) {
    if (!v.is_object()) continue;
    const auto parsed = resource::ParseApiVersion(v.value("groupVersion", ""));
    if (parsed && (!best || static_cast<int>(*parsed) < static_cast<int>(*best))) best = parsed;
  }
  if (!best) {
    return NotFoundError("discover resource.k8s.io: none of v1, v1beta2, v1beta1 is served");
  }
  return *best;
}

struct Client::Op {
  std::string what;          // "get resourceslices.resource.k8s.io n1"
  bool idempotent = true;    // retry after a dropped connection
  bool* streamed = nullptr;  // set once a watch stream delivered data: no retry after that
};

Client::Client(std::unique_ptr<Transport> transport, ClientOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      limiter_(options_.qps, options_.burst),
      seed_(options_.seed != 0 ? options_.seed : std::random_device()()) {}

StatusOr<std::unique_ptr<Client>> Client::Create(const ClusterConfig& config,
                                                 ClientOptions options) {
  ASSIGN_OR_RETURN(auto transport, Transport::Create(config));
  return std::unique_ptr<Client>(new Client(std::move(transport), std::move(options)));
}

ClientStats Client::stats() const { return {requests_.load(), retries_.load(), throttled_.load()}; }

StatusOr<HttpResult> Client::Call(const Op& op, HttpCall call) {
  Backoff backoff(options_.backoff, seed_.fetch_add(0x9E3779B97F4A7C15ULL));
  call.connect_timeout = options_.connect_timeout;
  bool ambiguous = false;  // an earlier attempt may have reached the server
  while (true) {
    limiter_.Wait();
    ++requests_;
    auto result = transport_->Do(call);
    if (options_.observe) {
      const std::string_view what = op.what;
      options_.observe(what.substr(0, what.find(' ')),
                       result.ok() ? static_cast<int>(result->code) : 0);
    }
    std::optional<std::chrono::seconds> retry_after;
    Status failure;
    if (!result.ok()) {
      failure = result.status().WithContext(op.what);
      const bool retryable = result.status().code() == StatusCode::kUnavailable && op.idempotent &&
                             (op.streamed == nullptr || !*op.streamed);
      if (!retryable) return failure;
      ambiguous = true;
    } else if (result->code >= 200 && result->code < 300) {
      return result;
    } else {
      const long code = result->code;  // NOLINT(google-runtime-int)
      failure = ApiError(op.what, code, result->body);
      if (code == 409 && ambiguous && failure.code() == StatusCode::kAlreadyExists) {
        return Status(failure.code(), failure.message() +
                                          " (an earlier attempt whose answer was lost may have "
                                          "created it)");
      }
      const bool retryable =
          code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
      if (!retryable || (op.streamed != nullptr && *op.streamed)) return failure;
      if (code == 429) ++throttled_;
      if (!result->retry_after.empty()) {
        retry_after = ParseRetryAfter(result->retry_after,
                                      std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
      }
    }
    const auto delay = backoff.Next(retry_after);
    if (!delay) {
      return Status(failure.code(), failure.message() + " (after " +
                                        std::to_string(backoff.attempts()) + " attempts)");
    }
    if (call.stop != nullptr && call.stop->load()) return failure;
    ++retries_;
    std::this_thread::sleep_for(*delay);
  }
}

StatusOr<std::string> Client::Path(const ResourceRef& ref, const std::string& ns,
                                   const std::string& name, const std::string& verb) {
  std::string path =
      ref.group.empty() ? "/api/" + ref.version : "/apis/" + ref.group + "/" + ref.version;
  if (ref.namespaced && !ns.empty()) {
    if (!IsSafePathSegment(ns)) {
      return InvalidArgumentError(verb + " " + ref.Name() + ": namespace \"" + ns +
                                  "\" is not a valid path segment");
    }
    path += "/namespaces/" + ns;
  } else if (ref.namespaced && verb != "list" && verb != "watch") {
    return InvalidArgumentError(verb + " " + ref.Name() + " " + name + ": namespace required");
  }
  path += "/" + ref.resource;
  if (!name.empty() || (verb != "list" && verb != "watch" && verb != "create")) {
    if (!IsSafePathSegment(name)) {
      return InvalidArgumentError(verb + " " + ref.Name() + ": name \"" + name +
                                  "\" is not a valid path segment");
    }
    path += "/" + name;
  }
  return path;
}

StatusOr<resource::ResourceVersion> Client::ResourceApiVersion() {
  MutexLock lock(discovery_mu_);
  if (resource_version_) return *resource_version_;
  auto doc = GetPath("/apis/resource.k8s.io");
  if (!doc.ok()) {
    if (doc.status().code() == StatusCode::kNotFound) {
      return NotFoundError("discover resource.k8s.io: the group is not served (is DRA enabled?)");
    }
    return doc.status();
  }
  ASSIGN_OR_RETURN(auto version, PickResourceVersion(*doc));
  resource_version_ = version;
  return version;
}

StatusOr<ResourceRef> Client::Served(const ResourceRef& ref) {
  if (ref.group != kResourceGroup) return ref;
  ASSIGN_OR_RETURN(auto version, ResourceApiVersion());
  ResourceRef served = ref;
  const std::string api_version(resource::ApiVersionOf(version));
  served.version = api_version.substr(api_version.find('/') + 1);
  return served;
}

StatusOr<json> Client::ToServed(const ResourceRef& ref, const ResourceRef& served,
                                const json& object) {
  if (served.version == ref.version) return object;
  const auto to = resource::ParseApiVersion(served.ApiVersion());
  if (!to) return InternalError("no conversion to " + served.ApiVersion());
  return resource::ConvertResource(object, *to);
}

StatusOr<json> Client::FromServed(const ResourceRef& ref, json object) {
  if (ref.group != kResourceGroup || !object.is_object() ||
      object.value("apiVersion", "") == ref.ApiVersion()) {
    return object;
  }
  return resource::ConvertResource(object, resource::ResourceVersion::kV1);
}

StatusOr<json> Client::GetPath(const std::string& path) {
  HttpCall call;
  call.path = path;
  call.timeout = options_.timeout;
  ASSIGN_OR_RETURN(auto result, Call({"get " + path}, call));
  json parsed = json::parse(result.body, nullptr, false);
  if (parsed.is_discarded()) return DataLossError("get " + path + ": the answer is not JSON");
  return parsed;
}

StatusOr<json> Client::PostPath(const std::string& path, const json& body) {
  HttpCall call;
  call.method = "POST";
  call.path = path;
  call.body = body.dump();
  call.timeout = options_.timeout;
  ASSIGN_OR_RETURN(auto result, Call({"post " + path}, call));
  json parsed = json::parse(result.body, nullptr, false);
  if (parsed.is_discarded()) return DataLossError("post " + path + ": the answer is not JSON");
  return parsed;
}

StatusOr<json> Client::Get(const ResourceRef& ref, const std::string& ns, const std::string& name) {
  const std::string what = "get " + ref.Name() + " " + (ns.empty() ? "" : ns + "/") + name;
  ASSIGN_OR_RETURN(ResourceRef served, Served(ref));
  ASSIGN_OR_RETURN(std::string path, Path(served, ns, name, "get"));
  HttpCall call;
  call.path = path;
  call.timeout = options_.timeout;
  ASSIGN_OR_RETURN(auto result, Call({what}, call));
  json parsed = json::parse(result.body, nullptr, false);
  if (parsed.is_discarded()) return DataLossError(what + ": the answer is not JSON");
  auto object = FromServed(ref, std::move(parsed));
  if (!object.ok()) return object.status().WithContext(what);
  return object;
}

StatusOr<ListPage> Client::List(const ResourceRef& ref, const std::string& ns,
                                const ListOptions& options) {
  const std::string what = "list " + ref.Name() + (ns.empty() ? "" : " in " + ns);
  ASSIGN_OR_RETURN(ResourceRef served, Served(ref));
  ASSIGN_OR_RETURN(std::string path, Path(served, ns, "", "list"));
  std::string query;
  auto add = [&query](const char* key, const std::string& value) {
    if (value.empty()) return;
    query += (query.empty() ? "?" : "&") + std::string(key) + "=" + QueryEscape(value);
  };
  add("labelSelector", options.label_selector);
  add("fieldSelector", options.field_selector);
  if (options.limit > 0) add("limit", std::to_string(options.limit));
  add("continue", options.continue_token);
  add("resourceVersion", options.resource_version);
  HttpCall call;
  call.path = path + query;
  call.timeout = options_.timeout;
  ASSIGN_OR_RETURN(auto result, Call({what}, call));
  json list = json::parse(result.body, nullptr, false);
  if (!list.is_object()) return DataLossError(what + ": the answer is not a JSON object");
  ListPage page;
  if (const auto meta = list.find("metadata"); meta != list.end() && meta->is_object()) {
    page.resource_version = meta->value("resourceVersion", "");
    page.continue_token = meta->value("continue", "");
  }
  const auto items = list.find("items");
  if (items == list.end() || !(items->is_array() || items->is_null())) {
    return DataLossError(what + ": items: expected a list");
  }
  const std::string kind = ItemKind(list);
  const std::string api_version = list.value("apiVersion", served.ApiVersion());
  if (items->is_array()) {
    page.items.reserve(items->size());
    for (json& item : *items) {
      // The API server leaves apiVersion and kind out of list items; put them back.
      if (!item.contains("apiVersion")) item["apiVersion"] = api_version;
      if (!item.contains("kind") && !kind.empty()) item["kind"] = kind;
      auto converted = FromServed(ref, std::move(item));
      if (!converted.ok()) return converted.status().WithContext(what);
      page.items.push_back(std::move(converted).value());
    }
  }
  return page;
}

StatusOr<ListPage> Client::ListAll(const ResourceRef& ref, const std::string& ns,
                                   ListOptions options) {
  if (options.limit <= 0) options.limit = 500;
  ListPage all;
  while (true) {
    ASSIGN_OR_RETURN(ListPage page, List(ref, ns, options));
    for (json& item : page.items) all.items.push_back(std::move(item));
    all.resource_version = page.resource_version;
    if (page.continue_token.empty()) break;
    options.continue_token = page.continue_token;
    options.resource_version.clear();  // the token pins the snapshot
  }
  return all;
}

StatusOr<json> Client::Write(const char* verb, const char* method, const ResourceRef& ref,
                             const std::string& ns, const json& object, bool status) {
  const std::string name = ObjectName(object);
  const std::string what = std::string(verb) + " " + ref.Name() + " " +
                           (ns.empty() ? "" : ns + "/") + (name.empty() ? "(generateName)" : name);
  if (!object.is_object()) return InvalidArgumentError(what + ": the object is not a JSON object");
  ASSIGN_OR_RETURN(ResourceRef served, Served(ref));
  const bool create = std::string(method) == "POST";
  ASSIGN_OR_RETURN(std::string path,
                   Path(served, ns, create ? "" : name, create ? "create" : verb));
  if (status) path += "/status";
  json body = object;
  if (!body.contains("apiVersion")) body["apiVersion"] = ref.ApiVersion();
  auto converted = ToServed(ref, served, body);
  if (!converted.ok()) return converted.status().WithContext(what);
  HttpCall call;
  call.method = method;
  call.path = path;
  call.body = converted->dump();
  call.timeout = options_.timeout;
  // A create is repeated after a lost answer only when it has a fixed name: a repeat then gets
  // AlreadyExists instead of making a second object.
  const bool idempotent = !create || !name.empty();
  ASSIGN_OR_RETURN(auto result, Call({what, idempotent}, call));
  json parsed = json::parse(result.body, nullptr, false);
  if (parsed.is_discarded()) return DataLossError(what + ": the answer is not JSON");
  auto back = FromServed(ref, std::move(parsed));
  if (!back.ok()) return back.status().WithContext(what);
  return back;
}

StatusOr<json> Client::Create(const ResourceRef& ref, const std::string& ns, const json& object) {
  return Write("create", "POST", ref, ns, object, false);
}

StatusOr<json> Client::Update(const ResourceRef& ref, const std::string& ns, const json& object) {
  return Write("update", "PUT", ref, ns, object, false);
}

StatusOr<json> Client::UpdateStatus(const ResourceRef& ref, const std::string& ns,
                                    const json& object) {
  return Write("update status of", "PUT", ref, ns, object, true);
}

Status Client::Delete(const ResourceRef& ref, const std::string& ns, const std::string& name,
                      const DeleteOptions& options) {
  const std::string what = "delete " + ref.Name() + " " + (ns.empty() ? "" : ns + "/") + name;
  ASSIGN_OR_RETURN(ResourceRef served, Served(ref));
  ASSIGN_OR_RETURN(std::string path, Path(served, ns, name, "delete"));
  HttpCall call;
  call.method = "DELETE";
  call.path = path;
  call.timeout = options_.timeout;
  if (options.uid || options.resource_version || options.grace_period_seconds) {
    json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
    if (options.uid || options.resource_version) {
      json pre = json::object();
      if (options.uid) pre["uid"] = *options.uid;
      if (options.resource_version) pre["resourceVersion"] = *options.resource_version;
      body["preconditions"] = pre;
    }
    call.body = body.dump();
  }
  auto result = Call({what}, call);
  return result.status();
}

Status Client::Watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                     const std::function<bool(WatchEvent&)>& on_event,
                     const std::atomic<bool>* stop) {
  const std::string what = "watch " + ref.Name() + (ns.empty() ? "" : " in " + ns);
  ASSIGN_OR_RETURN(ResourceRef served, Served(ref));
  ASSIGN_OR_RETURN(std::string path, Path(served, ns, "", "watch"));
  std::string query = "?watch=1";
  auto add = [&query](const char* key, const std::string& value) {
    if (!value.empty()) query += "&" + std::string(key) + "=" + QueryEscape(value);
  };
  add("labelSelector", options.label_selector);
  add("fieldSelector", options.field_selector);
  add("resourceVersion", options.resource_version);
  if (options.bookmarks) add("allowWatchBookmarks", "true");
  add("timeoutSeconds", std::to_string(options.timeout_seconds));

  std::string buffer;
  Status stream_error;
  bool streamed = false;
  auto handle_line = [&](const std::string& line) -> bool {
    json event = json::parse(line, nullptr, false);
    if (!event.is_object() || !event.contains("type") || !event["type"].is_string()) {
      stream_error =
          DataLossError(what + ": a watch event is not a JSON event: " + line.substr(0, 120));
      return false;
    }
    WatchEvent e;
    e.type = event["type"].get<std::string>();
    json object = event.contains("object") ? std::move(event["object"]) : json::object();
    if (e.type == "ERROR") {
      const long code = object.is_object() ? object.value("code", 500L) : 500L;  // NOLINT
      stream_error = ApiError(what, code, object.dump());
      return false;
    }
    if (e.type == "BOOKMARK") {
      e.object = std::move(object);
    } else {
      auto converted = FromServed(ref, std::move(object));
      if (!converted.ok()) {
        stream_error = converted.status().WithContext(what);
        return false;
      }
      e.object = std::move(converted).value();
    }
    return on_event(e);
  };
  HttpCall call;
  call.path = path + query;
  call.timeout = std::chrono::seconds(options.timeout_seconds + 30);
  call.stop = stop;
  call.on_data = [&](std::string_view chunk) -> bool {
    streamed = true;
    buffer.append(chunk);
    size_t start = 0;
    for (size_t nl = buffer.find('\n', start); nl != std::string::npos;
         nl = buffer.find('\n', start)) {
      std::string line = buffer.substr(start, nl - start);
      start = nl + 1;
      if (line.empty() || line == "\r") continue;
      if (!handle_line(line)) {
        buffer.erase(0, start);
        return false;
      }
    }
    buffer.erase(0, start);
    return true;
  };
  auto result = Call({what, true, &streamed}, call);
  if (!stream_error.ok()) return stream_error;
  if (!result.ok()) return result.status();
  // A last event without its newline.
  if (!buffer.empty() && buffer != "\r" && !handle_line(buffer) && !stream_error.ok()) {
    return stream_error;
  }
  return OkStatus();
}

}  // namespace xpu::api::client
