#include "api/client/events.h"

#include "api/client/client.h"
#include "base/time.h"

namespace xpu::api::client {

bool IsTerminalApiError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:   // 400, 422
    case StatusCode::kUnauthenticated:   // 401
    case StatusCode::kPermissionDenied:  // 403
    case StatusCode::kNotFound:          // 404
    case StatusCode::kOutOfRange:        // 410
      return true;
    default:
      return false;
  }
}

std::string EventNamespace(const InvolvedObject& about) {
  return about.ns.empty() ? "default" : about.ns;
}

nlohmann::json MakeEvent(const EventInfo& info, std::chrono::system_clock::time_point now) {
  constexpr size_t kMaxMessage = 1024;
  const InvolvedObject& about = info.about;
  nlohmann::json involved = {
      {"apiVersion", about.api_version}, {"kind", about.kind}, {"name", about.name}};
  if (!about.ns.empty()) involved["namespace"] = about.ns;
  if (!about.uid.empty()) involved["uid"] = about.uid;
  nlohmann::json source = {{"component", info.component}};
  if (!info.host.empty()) source["host"] = info.host;
  const std::string t = FormatTime(now);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"generateName", about.name + "."}, {"namespace", EventNamespace(about)}}},
          {"involvedObject", involved},
          {"type", info.type},
          {"reason", info.reason},
          {"message", info.message.substr(0, kMaxMessage)},
          {"source", source},
          {"reportingComponent", info.component},
          {"reportingInstance", info.instance},
          {"firstTimestamp", t},
          {"lastTimestamp", t},
          {"count", 1}};
}

Status ApiEventRecorder::Record(const EventInfo& info, std::chrono::system_clock::time_point now) {
  return client_->Create(Events(), EventNamespace(info.about), MakeEvent(info, now)).status();
}

Status RecordedEvents::Record(const EventInfo& info,
                              std::chrono::system_clock::time_point /*now*/) {
  MutexLock lock(mu_);
  events_.push_back(info);
  return OkStatus();
}

std::vector<EventInfo> RecordedEvents::events() const {
  MutexLock lock(mu_);
  return events_;
}

}  // namespace xpu::api::client
