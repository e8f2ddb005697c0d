#include "e2e/kubesim/api_handler.h"

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "base/enum_names.h"
#include "e2e/kubesim/convert.h"
#include "e2e/kubesim/discovery.h"
#include "e2e/kubesim/http_query.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct StatusReason {
  int code;
  const char* reason;
};

// The HTTP code and reason of an error, by StatusCode value; 500 InternalError for the codes
// the API server has no answer of its own for.
constexpr StatusReason kReasons[] = {
    {500, "InternalError"},       // kOk
    {500, "InternalError"},       // kCancelled
    {500, "InternalError"},       // kUnknown
    {422, "Invalid"},             // kInvalidArgument
    {504, "Timeout"},             // kDeadlineExceeded
    {404, "NotFound"},            // kNotFound
    {409, "AlreadyExists"},       // kAlreadyExists
    {500, "InternalError"},       // kPermissionDenied
    {429, "TooManyRequests"},     // kResourceExhausted
    {400, "BadRequest"},          // kFailedPrecondition
    {409, "Conflict"},            // kAborted
    {410, "Expired"},             // kOutOfRange
    {405, "MethodNotAllowed"},    // kUnimplemented
    {500, "InternalError"},       // kInternal
    {503, "ServiceUnavailable"},  // kUnavailable
    {500, "InternalError"},       // kDataLoss
    {401, "Unauthorized"},        // kUnauthenticated
};
static_assert(NamesCover(kReasons, StatusCode::kUnauthenticated));

StatusReason ReasonFor(StatusCode code) {
  return NameAt(kReasons, code).value_or(StatusReason{500, "InternalError"});
}

constexpr std::string_view kTooLargePrefix = "Too large resource version";

json StatusObject(const Status& status, const std::string& name, const ResourceType* type,
                  const api::FieldErrors* causes = nullptr) {
  const auto r = ReasonFor(status.code());
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (type != nullptr) {
    if (!type->group.empty()) details["group"] = type->group;
    // NewInvalid names the kind, the other errors the resource.
    details["kind"] = status.code() == StatusCode::kInvalidArgument ? type->kind : type->resource;
  }
  if (causes != nullptr && !causes->empty()) {
    json list = json::array();
    for (const auto& c : *causes) {
      list.push_back(
          {{"reason", api::FieldErrorReason(c.type)}, {"message", c.detail}, {"field", c.field}});
    }
    details["causes"] = list;
  }
  if (r.code == 429 || r.code == 503 || r.code == 504) details["retryAfterSeconds"] = 1;
  if (status.message().rfind(kTooLargePrefix, 0) == 0) {
    details["causes"] = json::array(
        {{{"reason", "ResourceVersionTooLarge"}, {"message", std::string(kTooLargePrefix)}}});
  }
  json out = {{"kind", "Status"},    {"apiVersion", "v1"},          {"metadata", json::object()},
              {"status", "Failure"}, {"message", status.message()}, {"reason", r.reason},
              {"code", r.code}};
  if (!details.empty()) out["details"] = details;
  return out;
}

// Replace, not throw: error messages echo the request's path and (percent-decoded) query, which
// need not be UTF-8.
HttpResponse JsonResponse(int code, const json& body) {
  return {code, body.dump(-1, ' ', false, json::error_handler_t::replace), {}};
}

// A <Kind>List of stored objects in the requested version.
json ListDocument(const ResourceType& type, const std::string& version, std::vector<json> items,
                  const json& meta) {
  json list = json::array();
  for (auto& item : items) list.push_back(FromStorage(type, version, std::move(item)));
  return {{"kind", type.kind + "List"},
          {"apiVersion", type.ApiVersion(version)},
          {"metadata", meta},
          {"items", std::move(list)}};
}

// The labelSelector and fieldSelector of a list, a watch or a collection delete.
Status ReadSelectors(const std::map<std::string, std::string>& query, ListOptions* list) {
  if (auto it = query.find("labelSelector"); it != query.end()) {
    ASSIGN_OR_RETURN(list->labels, Selector::ParseLabels(it->second));
  }
  if (auto it = query.find("fieldSelector"); it != query.end()) {
    ASSIGN_OR_RETURN(list->fields, Selector::ParseFields(it->second));
  }
  return OkStatus();
}

Status NotFoundPath(const std::string& path) {
  return Status(StatusCode::kNotFound,
                "the server could not find the requested resource (" + path + ")");
}

bool Truthy(const std::map<std::string, std::string>& q, const char* key) {
  auto it = q.find(key);
  return it != q.end() && (it->second == "1" || it->second == "true");
}

StatusOr<int64_t> ParseInt(const std::string& s, const char* what) {
  try {
    size_t used = 0;
    const int64_t v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {  // fall through to the error below
  }
  return Status(StatusCode::kFailedPrecondition,
                std::string("invalid ") + what + ": \"" + s + "\"");
}

json WatchEventJson(const std::string& type, const json& object) {
  return {{"type", type}, {"object", object}};
}

// The parsed resource part of a request path.
struct Target {
  size_t type_index = 0;
  std::string version;
  std::string ns;
  std::string name;
  bool status = false;
  bool watch = false;
};

StatusOr<Target> ParseTarget(const Store& store, const std::string& path,
                             const std::vector<std::string>& segs) {
  Target t;
  std::string group;
  size_t at = 0;
  if (segs.size() >= 3 && segs[0] == "api") {
    t.version = segs[1];
    at = 2;
  } else if (segs.size() >= 4 && segs[0] == "apis") {
    group = segs[1];
    t.version = segs[2];
    at = 3;
  } else {
    return NotFoundPath(path);
  }
  std::vector<std::string> rest(segs.begin() + static_cast<std::ptrdiff_t>(at), segs.end());
  if (!rest.empty() && rest[0] == "watch") {
    t.watch = true;
    rest.erase(rest.begin());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    t.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3 || (rest.size() == 3 && rest[2] != "status")) {
    return NotFoundPath(path);
  }
  auto type = store.FindType(group, rest[0]);
  if (!type) return NotFoundPath(path);
  const auto& rt = store.types()[*type];
  if (!rt.Serves(t.version) || (!t.ns.empty() && !rt.namespaced) ||
      (rest.size() == 3 && !rt.has_status)) {
    return NotFoundPath(path);
  }
  t.type_index = *type;
  if (rest.size() >= 2) t.name = rest[1];
  t.status = rest.size() == 3;
  return t;
}

}  // namespace

HttpResponse ErrorResponse(const Status& status, const std::string& name, const ResourceType* type,
                           const api::FieldErrors* causes) {
  const json body = StatusObject(status, name, type, causes);
  HttpResponse response = JsonResponse(body["code"].get<int>(), body);
  if (response.code == 429 || response.code == 503 || response.code == 504) {
    response.headers.emplace_back("Retry-After", "1");
  }
  return response;
}

WatchStream::WatchStream(const Store* store, Params params)
    : store_(store),
      params_(std::move(params)),
      next_bookmark_(Clock::now() + params_.bookmark_interval) {}

std::vector<std::string> WatchStream::Next() {
  std::vector<std::string> lines;
  if (done_) return lines;
  if (!params_.initial.empty()) {
    for (auto& obj : params_.initial) {
      lines.push_back(
          WatchEventJson("ADDED", FromStorage(params_.type, params_.version, std::move(obj)))
              .dump() +
          "\n");
    }
    params_.initial.clear();
    sent_ += static_cast<int64_t>(lines.size());
    if (params_.close_after_events > 0 && sent_ >= params_.close_after_events) {
      lines.resize(lines.size() - static_cast<size_t>(sent_ - params_.close_after_events));
      done_ = true;
    }
    return lines;
  }
  if (Clock::now() >= params_.deadline) {
    done_ = true;
    return lines;
  }
  const auto until =
      params_.bookmarks ? std::min(params_.deadline, next_bookmark_) : params_.deadline;
  auto batch = store_->WaitForEvents(params_.filter, params_.from, until);
  if (!batch.ok()) {
    done_ = true;
    if (batch.status().code() == StatusCode::kOutOfRange) {
      lines.push_back(WatchEventJson("ERROR", StatusObject(batch.status(), "", nullptr)).dump() +
                      "\n");
    }
    return lines;
  }
  for (auto& e : batch->events) {
    lines.push_back(
        WatchEventJson(e.type, FromStorage(params_.type, params_.version, std::move(e.object)))
            .dump() +
        "\n");
    if (params_.close_after_events > 0 && ++sent_ >= params_.close_after_events) {
      // Fault injection: end the watch early, as a server restart or timeout would.
      done_ = true;
      return lines;
    }
  }
  params_.from = batch->scanned_through;
  if (params_.bookmarks && Clock::now() >= next_bookmark_) {
    next_bookmark_ = Clock::now() + params_.bookmark_interval;
    const json bookmark = {{"kind", params_.type.kind},
                           {"apiVersion", params_.type.ApiVersion(params_.version)},
                           {"metadata", {{"resourceVersion", std::to_string(params_.from)}}}};
    lines.push_back(WatchEventJson("BOOKMARK", bookmark).dump() + "\n");
  }
  return lines;
}

ApiHandler::ApiHandler(Store* store, HandlerOptions options)
    : store_(store),
      options_(std::move(options)),
      fault_random_(options_.seed),
      faults_(options_.faults),
      feature_gates_(options_.feature_gates) {}

FeatureGates ApiHandler::feature_gates() const { return feature_gates_.Get(); }

void ApiHandler::set_feature_gates(const FeatureGates& gates) { feature_gates_.Set(gates); }

FaultSettings ApiHandler::faults() const {
  MutexLock lock(fault_mu_);
  return faults_;
}

void ApiHandler::set_faults(const FaultSettings& faults) {
  MutexLock lock(fault_mu_);
  faults_ = faults;
}

bool ApiHandler::DropConnection() {
  MutexLock lock(fault_mu_);
  if (faults_.drop_rate <= 0) return false;
  std::uniform_real_distribution<double> coin(0, 1);
  return coin(fault_random_) < faults_.drop_rate;
}

bool ApiHandler::InjectFault(HttpResponse* response) {
  int code = 0;
  {
    MutexLock lock(fault_mu_);
    if (faults_.rate <= 0 || faults_.codes.empty()) return false;
    std::uniform_real_distribution<double> coin(0, 1);
    if (coin(fault_random_) >= faults_.rate) return false;
    code = faults_.codes[fault_random_() % faults_.codes.size()];
  }
  StatusCode sc = StatusCode::kInternal;
  if (code == 409) sc = StatusCode::kAborted;
  if (code == 429) sc = StatusCode::kResourceExhausted;
  if (code == 503) sc = StatusCode::kUnavailable;
  *response = ErrorResponse(Status(sc, "injected fault"));
  return true;
}

namespace {

json FaultsJson(const FaultSettings& f) {
  return {{"rate", f.rate},
          {"codes", f.codes},
          {"dropRate", f.drop_rate},
          {"watchCloseAfter", f.watch_close_after},
          {"watchCloseAfterMs", f.watch_close_after_ms},
          {"latencyMs", f.latency_ms}};
}

}  // namespace

HttpResponse ApiHandler::HandleFaults(const HttpRequest& request) {
  if (request.method == "GET") return JsonResponse(200, FaultsJson(faults()));
  if (request.method != "POST" && request.method != "PUT") {
    return ErrorResponse(
        Status(StatusCode::kUnimplemented, request.method + " is not allowed on /kube-sim/faults"));
  }
  const json body = json::parse(request.body, nullptr, false);
  if (!body.is_object()) {
    return ErrorResponse(
        Status(StatusCode::kFailedPrecondition, "set faults: the body is not a JSON object"));
  }
  FaultSettings next = faults();
  std::optional<uint64_t> seed;
  auto bad = [](const std::string& what) {
    return ErrorResponse(Status(StatusCode::kFailedPrecondition, "set faults: " + what));
  };
  for (const auto& [key, value] : body.items()) {
    if (key == "rate" || key == "dropRate") {
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1) {
        return bad(key + " must be a number in [0, 1]");
      }
      (key == "rate" ? next.rate : next.drop_rate) = value.get<double>();
    } else if (key == "codes") {
      if (!value.is_array()) return bad("codes must be a list");
      next.codes.clear();
      for (const auto& c : value) {
        if (!c.is_number_integer() || (c != 409 && c != 429 && c != 500 && c != 503)) {
          return bad("codes must be from 409, 429, 500, 503");
        }
        next.codes.push_back(c.get<int>());
      }
    } else if (key == "watchCloseAfter" || key == "watchCloseAfterMs" || key == "latencyMs") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        return bad(key + " must be a non-negative integer");
      }
      const int64_t v = value.get<int64_t>();
      if (key == "watchCloseAfter") next.watch_close_after = v;
      if (key == "watchCloseAfterMs") next.watch_close_after_ms = v;
      if (key == "latencyMs") next.latency_ms = v;
    } else if (key == "seed") {
      if (!value.is_number_unsigned()) return bad("seed must be a non-negative integer");
      seed = value.get<uint64_t>();
    } else {
      return bad("unknown member \"" + key + "\"");
    }
  }
  if (next.rate > 0 && next.codes.empty()) return bad("codes is empty while rate is set");
  {
    MutexLock lock(fault_mu_);
    faults_ = next;
    if (seed) fault_random_.seed(*seed);
  }
  return JsonResponse(200, FaultsJson(next));
}

HttpResponse ApiHandler::HandleFeatureGates(const HttpRequest& request) {
  if (request.method == "GET") return JsonResponse(200, FeatureGatesJson(feature_gates()));
  if (request.method != "POST" && request.method != "PUT") {
    return ErrorResponse(Status(StatusCode::kUnimplemented,
                                request.method + " is not allowed on /kube-sim/feature-gates"));
  }
  const json body = json::parse(request.body, nullptr, false);
  if (!body.is_object()) {
    return ErrorResponse(Status(StatusCode::kFailedPrecondition,
                                "set feature gates: the body is not a JSON object"));
  }
  FeatureGates next;
  // On the stored gates under their lock, so that two concurrent changes both stand.
  const Status applied = feature_gates_.Update([&](FeatureGates& gates) {
    next = gates;
    Status s = ApplyFeatureGatesJson(body, &next);
    if (s.ok()) gates = next;
    return s;
  });
  if (!applied.ok()) {
    return ErrorResponse(
        Status(StatusCode::kFailedPrecondition, "set feature gates: " + applied.message()));
  }
  return JsonResponse(200, FeatureGatesJson(next));
}

// One request on a resource path, parsed.
struct ApiHandler::Call {
  const HttpRequest& request;
  const std::map<std::string, std::string>& query;
  size_t type_index = 0;
  const ResourceType& type;
  std::string version;
  std::string ns;
  std::string name;
  bool status = false;  // the status subresource
  json body;            // the request body, parsed; null when empty

  // A Status object about this request's object.
  HttpResponse Error(const Status& s, const api::FieldErrors* causes = nullptr) const {
    return ErrorResponse(s, name, &type, causes);
  }
  // `object` (storage form) in the request's version.
  HttpResponse Object(int code, json object) const {
    return JsonResponse(code, FromStorage(type, version, std::move(object)));
  }
};

ApiHandler::Result ApiHandler::Handle(const HttpRequest& request) {
  const bool token_ok =
      !options_.token.empty() && request.authorization == "Bearer " + options_.token;
  if (!token_ok && request.client_certificate.empty()) {
    return ErrorResponse(Status(StatusCode::kUnauthenticated, "Unauthorized"));
  }
  const auto qpos = request.target.find('?');
  const std::string path = request.target.substr(0, qpos);
  const auto query = ParseQuery(
      qpos == std::string::npos ? "" : std::string_view{request.target}.substr(qpos + 1));
  const auto segs = SplitPath(path);
  if (std::optional<HttpResponse> served = HandleServerPath(request, path, segs)) {
    return *std::move(served);
  }
  auto target = ParseTarget(*store_, path, segs);
  if (!target.ok()) return ErrorResponse(target.status());
  if (const int64_t latency = faults().latency_ms; latency > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(latency));
  }
  if (DropConnection()) {
    HttpResponse dropped;
    dropped.drop_connection = true;
    return dropped;
  }
  Call call{request,         query,      target->type_index, store_->types()[target->type_index],
            target->version, target->ns, target->name,       target->status,
            nullptr};
  const bool collection = call.name.empty();
  const bool watch = target->watch || Truthy(query, "watch");
  if (request.method == "GET" && collection) {
    ListOptions list;
    if (Status s = ReadSelectors(query, &list); !s.ok()) return call.Error(s);
    if (watch) return HandleWatch(call, list);
    return HandleList(call, std::move(list));
  }
  if (watch) {
    return call.Error(Status(StatusCode::kFailedPrecondition, "watch needs a collection path"));
  }
  if (request.method == "DELETE" && collection) return HandleDeleteCollection(call);
  HttpResponse fault;
  if (InjectFault(&fault)) return fault;
  if (!request.body.empty()) {
    call.body = json::parse(request.body, nullptr, false);
    if (call.body.is_discarded()) {
      return call.Error(
          Status(StatusCode::kFailedPrecondition, "the request body is not valid JSON"));
    }
  }
  if (request.method == "GET") return HandleGet(call);
  if (request.method == "POST" && collection) return HandleCreate(call);
  if (request.method == "PUT" && !collection) return HandleUpdate(call);
  if (request.method == "PATCH" && !collection) return HandlePatch(call);
  if (request.method == "DELETE" && !collection && !call.status) return HandleDelete(call);
  return call.Error(Status(StatusCode::kUnimplemented,
                           request.method + " is not allowed on the requested resource"));
}

std::optional<HttpResponse> ApiHandler::HandleServerPath(const HttpRequest& request,
                                                         const std::string& path,
                                                         const std::vector<std::string>& segs) {
  if (path == "/healthz" || path == "/readyz" || path == "/livez") {
    return HttpResponse{200, "ok", {}};
  }
  if (path == "/version") {
    const std::string minor = options_.kube_version == "1.34" ? "34" : "35";
    return JsonResponse(200, {{"major", "1"},
                              {"minor", minor},
                              {"gitVersion", "v1." + minor + ".0"},
                              {"gitCommit", "kube-sim"},
                              {"platform", "linux/amd64"}});
  }
  if (path == "/kube-sim/faults") return HandleFaults(request);
  if (path == "/kube-sim/feature-gates") return HandleFeatureGates(request);
  if (json doc = DiscoveryDocument(store_->types(), segs); !doc.is_null()) {
    if (request.method != "GET") {
      return ErrorResponse(Status(StatusCode::kUnimplemented,
                                  "the server does not allow this "
                                  "method on the requested resource"));
    }
    return JsonResponse(200, doc);
  }
  return std::nullopt;
}

ApiHandler::Result ApiHandler::HandleWatch(const Call& call, const ListOptions& list) {
  const auto& query = call.query;
  WatchStream::Params p;
  p.type = call.type;
  p.version = call.version;
  p.filter = WatchFilter{call.type_index, call.ns, list.labels, list.fields};
  p.bookmarks = Truthy(query, "allowWatchBookmarks");
  p.bookmark_interval = options_.bookmark_interval;
  auto timeout = options_.default_watch_timeout;
  if (auto it = query.find("timeoutSeconds"); it != query.end()) {
    auto secs = ParseInt(it->second, "timeoutSeconds");
    if (!secs.ok()) return call.Error(secs.status());
    timeout = std::chrono::seconds(*secs);
  }
  p.deadline = Clock::now() + timeout;
  const std::string rv = query.count("resourceVersion") ? query.at("resourceVersion") : "";
  const FaultSettings faults_now = faults();
  p.close_after_events = faults_now.watch_close_after;
  if (faults_now.watch_close_after_ms > 0) {
    p.deadline = std::min(
        p.deadline, Clock::now() + std::chrono::milliseconds(faults_now.watch_close_after_ms));
  }
  if (rv.empty() || rv == "0") {
    // "Any" version: the current state as ADDED events, then changes after it.
    auto current = store_->List(call.type_index, call.ns, list);
    if (!current.ok()) return call.Error(current.status());
    p.initial = std::move(current->items);
    p.from = current->resource_version;
  } else {
    auto from = ParseInt(rv, "resourceVersion");
    if (!from.ok()) return call.Error(from.status());
    if (const int64_t current = store_->ResourceVersion(); *from > current) {
      // The watch cache waits for a future resourceVersion, then gives up with 504; kube-sim
      // has no lagging cache to wait for.
      return call.Error(Status(StatusCode::kDeadlineExceeded,
                               "Too large resource version: " + std::to_string(*from) +
                                   ", current: " + std::to_string(current)));
    }
    p.from = *from;
  }
  return std::make_unique<WatchStream>(store_, std::move(p));
}

HttpResponse ApiHandler::HandleList(const Call& call, ListOptions list) {
  HttpResponse fault;
  if (InjectFault(&fault)) return fault;
  const auto& query = call.query;
  if (auto it = query.find("limit"); it != query.end()) {
    auto limit = ParseInt(it->second, "limit");
    if (!limit.ok()) return call.Error(limit.status());
    list.limit = *limit;
  }
  if (auto it = query.find("continue"); it != query.end()) list.continue_token = it->second;
  if (auto it = query.find("resourceVersion"); it != query.end()) {
    list.resource_version = it->second;
  }
  if (auto it = query.find("resourceVersionMatch"); it != query.end()) {
    list.resource_version_match = it->second;
  }
  auto result = store_->List(call.type_index, call.ns, list);
  if (!result.ok()) return call.Error(result.status());
  json meta = {{"resourceVersion", std::to_string(result->resource_version)}};
  if (!result->continue_token.empty()) meta["continue"] = result->continue_token;
  return JsonResponse(200, ListDocument(call.type, call.version, std::move(result->items), meta));
}

HttpResponse ApiHandler::HandleDeleteCollection(const Call& call) {
  HttpResponse fault;
  if (InjectFault(&fault)) return fault;
  ListOptions list;
  if (Status s = ReadSelectors(call.query, &list); !s.ok()) return call.Error(s);
  auto deleted = store_->DeleteCollection(call.type_index, call.ns, list);
  if (!deleted.ok()) return call.Error(deleted.status());
  const json meta = {{"resourceVersion", std::to_string(store_->ResourceVersion())}};
  return JsonResponse(200, ListDocument(call.type, call.version, std::move(*deleted), meta));
}

HttpResponse ApiHandler::HandleGet(const Call& call) {
  auto obj = store_->Get(call.type_index, call.ns, call.name);
  return obj.ok() ? call.Object(200, *obj) : call.Error(obj.status());
}

HttpResponse ApiHandler::HandleCreate(const Call& call) {
  const ResourceType& type = call.type;
  if (type.namespaced && call.ns.empty()) {
    return call.Error(Status(StatusCode::kUnimplemented, "create needs a namespace in the path"));
  }
  if (!call.body.is_object()) {
    return call.Error(Status(StatusCode::kFailedPrecondition, "no object sent"));
  }
  json body = ToStorage(type, call.version, call.body);
  body["kind"] = type.kind;
  const std::string name = body.contains("metadata") && body["metadata"].is_object()
                               ? body["metadata"].value("name", "")
                               : "";
  api::FieldErrors causes;
  auto obj = store_->Create(call.type_index, call.ns, std::move(body), &causes, feature_gates());
  if (obj.ok()) return call.Object(201, *obj);
  return ErrorResponse(obj.status(), name, &type, &causes);
}

HttpResponse ApiHandler::HandleUpdate(const Call& call) {
  if (!call.body.is_object()) {
    return call.Error(Status(StatusCode::kFailedPrecondition, "no object sent"));
  }
  json body = ToStorage(call.type, call.version, call.body);
  body["kind"] = call.type.kind;
  api::FieldErrors causes;
  auto obj = store_->Update(call.type_index, call.ns, call.name, std::move(body), call.status,
                            &causes, feature_gates());
  return obj.ok() ? call.Object(200, *obj) : call.Error(obj.status(), &causes);
}

HttpResponse ApiHandler::HandlePatch(const Call& call) {
  const std::string& content_type = call.request.content_type;
  const bool json_patch = content_type.find("json-patch") != std::string::npos;
  const bool merge_patch = content_type.find("merge-patch") != std::string::npos;
  if (!json_patch && !merge_patch) {
    return call.Error(
        Status(StatusCode::kUnimplemented, "unsupported patch type \"" + content_type + "\""));
  }
  const json& body = call.body;
  const bool patch_sets_rv = body.is_object() && body.contains("metadata") &&
                             body["metadata"].is_object() &&
                             body["metadata"].contains("resourceVersion");
  // Patches apply to the current object; retry when a concurrent writer wins in between.
  for (int attempt = 0;; ++attempt) {
    auto current = store_->Get(call.type_index, call.ns, call.name);
    if (!current.ok()) return call.Error(current.status());
    json obj = FromStorage(call.type, call.version, *current);
    try {
      if (json_patch) {
        obj = obj.patch(body);
      } else {
        obj.merge_patch(body);
      }
    } catch (const json::exception& e) {
      return call.Error(
          Status(StatusCode::kInvalidArgument, std::string("apply patch: ") + e.what()));
    }
    obj = ToStorage(call.type, call.version, std::move(obj));
    api::FieldErrors causes;
    auto updated = store_->Update(call.type_index, call.ns, call.name, std::move(obj), call.status,
                                  &causes, feature_gates());
    if (!updated.ok() && updated.status().code() == StatusCode::kAborted && !patch_sets_rv &&
        attempt < 5) {
      continue;
    }
    return updated.ok() ? call.Object(200, *updated) : call.Error(updated.status(), &causes);
  }
}

HttpResponse ApiHandler::HandleDelete(const Call& call) {
  const json& body = call.body;
  Preconditions pre;
  if (body.is_object() && body.contains("preconditions") && body["preconditions"].is_object()) {
    const auto& p = body["preconditions"];
    if (p.contains("uid") && p["uid"].is_string()) pre.uid = p["uid"].get<std::string>();
    if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
      pre.resource_version = p["resourceVersion"].get<std::string>();
    }
  }
  auto obj = store_->Delete(call.type_index, call.ns, call.name, pre);
  return obj.ok() ? call.Object(200, *obj) : call.Error(obj.status());
}

}  // namespace xpu::kubesim
