// The kubelet server tests' fixtures (kubelet_server_*_test.cc): a fake driver service and health
// source, the server's options on a temp dir, a server started with both, and a log to search.
#ifndef XPU_KUBELETPLUGIN_GRPC_TESTING_KUBELET_SERVER_FIXTURE_H_
#define XPU_KUBELETPLUGIN_GRPC_TESTING_KUBELET_SERVER_FIXTURE_H_

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "kubeletplugin/grpc/kubelet_server.h"

namespace xpu::plugin::testing {

inline constexpr char kDriver[] = "xpu.dra.dev";

// How long the tests wait for a condition, and how often they look.
inline constexpr std::chrono::milliseconds kWaitTimeout{5000};
inline constexpr std::chrono::milliseconds kWaitPeriod{5};

// The lines the server logs, kept to search.
class LogLines {
 public:
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      MutexLock lock(mu_);
      lines_.push_back(line);
    };
  }
  bool Contains(const std::string& text) const {
    MutexLock lock(mu_);
    return std::any_of(lines_.begin(), lines_.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> lines_ GUARDED_BY(mu_);
};

// Counts how many Prepare / Unprepare calls run at once, across any number of fake services.
// Each call waits up to `window` for another to join it, so a missing lock shows reliably.
class OverlapDetector {
 public:
  void Enter() {
    MutexLock lock(mu_);
    ++active_;
    max_active_ = std::max(max_active_, active_);
    cv_.NotifyAll();
    cv_.WaitFor(mu_, std::chrono::milliseconds(200), [&]() REQUIRES(mu_) { return active_ > 1; });
    --active_;
  }
  int max_active() const {
    MutexLock lock(mu_);
    return max_active_;
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  int active_ GUARDED_BY(mu_) = 0;
  int max_active_ GUARDED_BY(mu_) = 0;
};

// A driver that prepares one device per claim: gpu-0 of pool node-1, shared under `share_id`.
class FakeService : public NodeService {
 public:
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims,
                                               const CallBounds& bounds) override {
    if (!claims.empty() && claims[0].uid == hang_uid) {
      // Works until gRPC cancels the call because its caller is gone (at most a minute), like a
      // batch the API holds up. Not the deadline by the clock: answering just before gRPC's own
      // deadline could still reach the caller.
      const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(1);
      while (!bounds.Cancelled() && std::chrono::steady_clock::now() < limit) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      saw_caller_leave = bounds.Cancelled();
      return {};
    }
    if (overlap != nullptr) overlap->Enter();
    if (throw_in_prepare) throw std::runtime_error("driver bug");
    MutexLock lock(mu_);
    prepared.push_back(claims);
    deadlines.push_back(bounds.deadline);
    std::map<std::string, PrepareResult> out;
    for (const auto& claim : claims) {
      if (claim.uid == forget_uid) continue;
      out[claim.uid] = PrepareResult{
          .devices = {PreparedDevice{.request_names = {"gpu"},
                                     .pool = "node-1",
                                     .device = "gpu-0",
                                     .cdi_device_ids = {"k8s.xpu.dra.dev/device=" + claim.uid},
                                     .share_id = share_id}},
          .error = claim.uid == fail_uid ? "prepare claim " + claim.name + ": boom" : ""};
    }
    if (!forget_uid.empty()) out["unasked-uid"] = PrepareResult{};
    return out;
  }
  std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims,
                                                   const CallBounds& /*bounds*/) override {
    if (overlap != nullptr) overlap->Enter();
    MutexLock lock(mu_);
    unprepared.push_back(claims);
    std::map<std::string, UnprepareResult> out;
    for (const auto& claim : claims) {
      if (claim.uid != forget_uid) out[claim.uid] = UnprepareResult{};
    }
    return out;
  }

  std::string share_id;
  std::string forget_uid;  // left out of the answers
  std::string fail_uid;    // answered with an error
  bool throw_in_prepare = false;
  std::string hang_uid;  // a batch that starts with it works until its caller is gone
  std::atomic<bool> saw_caller_leave{false};
  OverlapDetector* overlap = nullptr;
  std::vector<std::vector<ClaimRef>> prepared;
  std::vector<CallBounds::Clock::time_point> deadlines;  // of each prepare call
  std::vector<std::vector<ClaimRef>> unprepared;

 private:
  Mutex mu_;
};

class FakeHealth : public HealthSource {
 public:
  FakeHealth() {
    for (const char* device : {"gpu-0", "gpu-1"}) {
      devices_.push_back({.pool = "node-1",
                          .device = device,
                          .health = HealthState::kHealthy,
                          .last_updated_unix = 1000,
                          .message = ""});
    }
  }
  std::vector<DeviceHealth> Snapshot(uint64_t* generation) override {
    MutexLock lock(mu_);
    *generation = generation_;
    return devices_;
  }
  uint64_t WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline) override {
    MutexLock lock(mu_);
    last_wait_ = std::chrono::steady_clock::now();
    cv_.WaitUntil(mu_, deadline, [&]() REQUIRES(mu_) { return generation_ != seen; });
    return generation_;
  }
  void Set(std::vector<DeviceHealth> devices) {
    MutexLock lock(mu_);
    devices_ = std::move(devices);
    ++generation_;
    cv_.NotifyAll();
  }
  std::chrono::steady_clock::time_point last_wait() {
    MutexLock lock(mu_);
    return last_wait_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::vector<DeviceHealth> devices_ GUARDED_BY(mu_);
  uint64_t generation_ GUARDED_BY(mu_) = 1;
  std::chrono::steady_clock::time_point last_wait_ GUARDED_BY(mu_);
};

inline KubeletServerOptions Options(const xpu::testing::TempDir& dir, LogLines* log = nullptr) {
  KubeletServerOptions options;
  options.driver_name = kDriver;
  options.plugin_dir = dir.path() + "/plugins/" + kDriver;
  options.registry_dir = dir.path() + "/plugins_registry";
  if (log != nullptr) options.log = log->Sink();
  return options;
}

// A temp dir for the plugin and registry directories, and a fake driver service.
struct ServerTest {
  xpu::testing::TempDir dir;
  FakeService service;
};

// A server on a temp dir, started with a fake service and a fake health source; `resend`, when
// given, replaces the default period of resending the full health list.
struct ServingWithHealth : ServerTest {
  ServingWithHealth() : ServingWithHealth(std::nullopt) {}
  explicit ServingWithHealth(std::optional<std::chrono::milliseconds> resend)
      : server(Resending(dir, resend)) {
    REQUIRE_OK(server.Start(&service, &health));
  }
  static KubeletServerOptions Resending(const xpu::testing::TempDir& dir,
                                        std::optional<std::chrono::milliseconds> resend) {
    KubeletServerOptions options = Options(dir);
    if (resend) options.health_resend = *resend;
    return options;
  }
  FakeHealth health;
  KubeletServer server;
};

// A claim default/claim-<uid> for each of `uids`.
inline std::vector<e2e::KubeletClaim> Claims(std::initializer_list<std::string> uids) {
  std::vector<e2e::KubeletClaim> claims;
  for (const auto& uid : uids) {
    claims.push_back({.ns = "default", .name = "claim-" + uid, .uid = uid});
  }
  return claims;
}

}  // namespace xpu::plugin::testing

#endif  // XPU_KUBELETPLUGIN_GRPC_TESTING_KUBELET_SERVER_FIXTURE_H_
