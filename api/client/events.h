// What the daemons tell people about the API's answers: which errors are terminal, and the core/v1
// Events that record them.
//
// A terminal error is one the API server gives for the request itself: invalid (400, 422),
// unauthenticated (401), forbidden (403), not found (404) or gone (410), that is every 4xx but 409
// Conflict/AlreadyExists and 429 Too Many Requests (see client.h for the codes). Sending the same
// request again cannot succeed, so callers do not retry it on a timer: they record it once (an
// Event and a metric) and try again when their inputs change. Everything else (409, 429, 5xx, no
// answer) is worth retrying.
#ifndef XPU_API_CLIENT_EVENTS_H_
#define XPU_API_CLIENT_EVENTS_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace xpu::api::client {

// True for the codes of the terminal answers above.
bool IsTerminalApiError(const Status& status);

// The object an Event is about (namespace empty for a cluster-scoped one).
struct InvolvedObject {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

struct EventInfo {
  InvolvedObject about;
  std::string type = "Warning";  // "Normal" or "Warning"
  std::string reason;            // UpperCamelCase, e.g. "SyncFailed"
  std::string message;           // cut to 1,024 bytes (the API's limit)
  std::string component;         // e.g. "xpu-dra-controller"
  std::string instance;          // the replica or node
  std::string host;              // the node, when the reporter runs on one
};

// The namespace an Event about `about` lives in: the object's own, or "default" for a
// cluster-scoped object (where the API server's event handling looks for them).
std::string EventNamespace(const InvolvedObject& about);

// A core/v1 Event (generateName "<about.name>.", as client-go names them; count 1; both
// timestamps `now`).
nlohmann::json MakeEvent(const EventInfo& info, std::chrono::system_clock::time_point now);

// Where Events go: the API (ApiEventRecorder), or a list in tests (RecordedEvents).
class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  virtual Status Record(const EventInfo& info, std::chrono::system_clock::time_point now) = 0;
};

class Client;

// Creates each Event through `client` (which must outlive it).
class ApiEventRecorder final : public EventRecorder {
 public:
  explicit ApiEventRecorder(Client* client) : client_(client) {}
  Status Record(const EventInfo& info, std::chrono::system_clock::time_point now) override;

 private:
  Client* const client_;
};

// Keeps what it is given. Thread-safe.
class RecordedEvents final : public EventRecorder {
 public:
  Status Record(const EventInfo& info, std::chrono::system_clock::time_point now) override;
  std::vector<EventInfo> events() const;

 private:
  mutable Mutex mu_;
  std::vector<EventInfo> events_ GUARDED_BY(mu_);
};

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_EVENTS_H_
