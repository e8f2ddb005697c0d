#include "kubeletplugin/grpc/kubelet_server.h"

#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <thread>

#include "base/mutex.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "e2e/client/wait.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "kubeletplugin/grpc/internal/translate.h"
#include "proto/dra_v1.grpc.pb.h"
#include "proto/health_v1.grpc.pb.h"

namespace xpu::plugin {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
namespace drav1 = internal::drav1;
namespace healthv1 = internal::healthv1;

constexpr char kDriver[] = "xpu.dra.dev";

using testing::TempDir;

// How long the tests wait for a condition, and how often they look.
constexpr milliseconds kWaitTimeout{5000};
constexpr milliseconds kWaitPeriod{5};

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
    cv_.WaitFor(mu_, milliseconds(200), [&]() REQUIRES(mu_) { return active_ > 1; });
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
  uint64_t WaitForChange(uint64_t seen, Clock::time_point deadline) override {
    MutexLock lock(mu_);
    last_wait_ = Clock::now();
    cv_.WaitUntil(mu_, deadline, [&]() REQUIRES(mu_) { return generation_ != seen; });
    return generation_;
  }
  void Set(std::vector<DeviceHealth> devices) {
    MutexLock lock(mu_);
    devices_ = std::move(devices);
    ++generation_;
    cv_.NotifyAll();
  }
  Clock::time_point last_wait() {
    MutexLock lock(mu_);
    return last_wait_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::vector<DeviceHealth> devices_ GUARDED_BY(mu_);
  uint64_t generation_ GUARDED_BY(mu_) = 1;
  Clock::time_point last_wait_ GUARDED_BY(mu_);
};

KubeletServerOptions Options(const TempDir& dir, LogLines* log = nullptr) {
  KubeletServerOptions options;
  options.driver_name = kDriver;
  options.plugin_dir = dir.path() + "/plugins/" + kDriver;
  options.registry_dir = dir.path() + "/plugins_registry";
  if (log != nullptr) options.log = log->Sink();
  return options;
}

// Options(dir) with the plugin and registry directories made, as a running kubelet has them.
KubeletServerOptions OptionsWithDirs(const TempDir& dir) {
  KubeletServerOptions options = Options(dir);
  REQUIRE(fs::create_directories(options.PluginDir()));
  REQUIRE(fs::create_directories(options.registry_dir));
  return options;
}

// A temp dir for the plugin and registry directories, and a fake driver service.
struct ServerTest {
  TempDir dir;
  FakeService service;
};

// A server on a temp dir, started with a fake service and a fake health source; `resend`, when
// given, replaces the default period of resending the full health list.
struct ServingWithHealth : ServerTest {
  ServingWithHealth() : ServingWithHealth(std::nullopt) {}
  explicit ServingWithHealth(std::optional<milliseconds> resend) : server(Resending(dir, resend)) {
    REQUIRE_OK(server.Start(&service, &health));
  }
  static KubeletServerOptions Resending(const TempDir& dir, std::optional<milliseconds> resend) {
    KubeletServerOptions options = Options(dir);
    if (resend) options.health_resend = *resend;
    return options;
  }
  FakeHealth health;
  KubeletServer server;
};

// A server whose full-list resend is 5 minutes away: a second message on a stream is a change's.
struct ServingHealthChanges : ServingWithHealth {
  ServingHealthChanges() : ServingWithHealth(std::chrono::minutes(5)) {}
  // The change the tests make: gpu-0 unhealthy with XID 79, at 2000.
  void BreakGpu0() {
    health.Set({{.pool = "node-1",
                 .device = "gpu-0",
                 .health = HealthState::kUnhealthy,
                 .last_updated_unix = 2000,
                 .message = "xid 79"}});
  }
};

mode_t Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Leaves a socket file nobody listens on, as a crashed plugin would.
void MakeDeadSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  ::close(fd);
}

std::vector<e2e::KubeletClaim> Claims(std::initializer_list<std::string> uids) {
  std::vector<e2e::KubeletClaim> claims;
  for (const auto& uid : uids) {
    claims.push_back({.ns = "default", .name = "claim-" + uid, .uid = uid});
  }
  return claims;
}

TEST_CASE_METHOD(
    ServingWithHealth,
    "kubelet server: GetInfo answers within a second with type, name, endpoint and versions") {
  CHECK(server.dra_socket() == dir.path() + "/plugins/xpu.dra.dev/dra.sock");
  CHECK(server.registration_socket() == dir.path() + "/plugins_registry/xpu.dra.dev-reg.sock");

  e2e::KubeletStandIn kubelet;
  Clock::time_point start = Clock::now();
  StatusOr<e2e::PluginInfo> info = kubelet.GetInfo(server.registration_socket());
  CHECK(Clock::now() - start < milliseconds(1000));
  REQUIRE_OK(info);
  CHECK(info->type == "DRAPlugin");
  CHECK(info->name == kDriver);
  CHECK(info->endpoint == server.dra_socket());
  // Both health versions, v1 first: kubelets from 1.37 take the first they know.
  CHECK(info->supported_versions == std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                                             "v1.DRAResourceHealth",
                                                             "v1alpha1.DRAResourceHealth"});

  CHECK_FALSE(server.registered());
  REQUIRE_OK(kubelet.Register(server.registration_socket()));
  CHECK(server.registered());
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: without a health source no health service is advertised") {
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  StatusOr<e2e::PluginInfo> info = e2e::KubeletStandIn().GetInfo(server.registration_socket());
  REQUIRE_OK(info);
  CHECK(info->supported_versions == std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"});
  Status end;
  e2e::KubeletStandIn().WatchHealth(server.dra_socket(), milliseconds(2000), nullptr, &end);
  CHECK(end.code() == StatusCode::kUnimplemented);
  // Nor v1.
  auto stub = healthv1::DRAResourceHealth::NewStub(
      ::grpc::CreateChannel("unix:" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(2000));
  auto reader = stub->NodeWatchResources(&context, healthv1::NodeWatchResourcesRequest());
  healthv1::NodeWatchResourcesResponse response;
  CHECK_FALSE(reader->Read(&response));
  CHECK(reader->Finish().error_code() == ::grpc::StatusCode::UNIMPLEMENTED);
}

// The v1 health service, which kubelets from 1.37 prefer (v1alpha1 goes in 1.40), read with a v1
// client while a v1alpha1 client reads the same source.
TEST_CASE_METHOD(
    ServingHealthChanges,
    "kubelet server: the v1 health stream sends the snapshot and a change, as v1alpha1 "
    "does") {
  auto stub = healthv1::DRAResourceHealth::NewStub(
      ::grpc::CreateChannel("unix:" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(10'000));
  auto reader = stub->NodeWatchResources(&context, healthv1::NodeWatchResourcesRequest());

  healthv1::NodeWatchResourcesResponse first;
  REQUIRE(reader->Read(&first));
  REQUIRE(first.devices_size() == 2);
  CHECK(first.devices(0).device().pool_name() == "node-1");
  CHECK(first.devices(0).device().device_name() == "gpu-0");
  CHECK(first.devices(1).device().device_name() == "gpu-1");
  CHECK(first.devices(0).health() == healthv1::HEALTHY);
  CHECK(first.devices(0).last_updated_time() == 1000);

  BreakGpu0();
  healthv1::NodeWatchResourcesResponse second;
  REQUIRE(reader->Read(&second));
  REQUIRE(second.devices_size() == 1);
  CHECK(second.devices(0).health() == healthv1::UNHEALTHY);
  CHECK(second.devices(0).message() == "xid 79");
  CHECK(second.devices(0).last_updated_time() == 2000);

  // A v1alpha1 client at the same time sees the same state.
  std::vector<e2e::KubeletHealthMessage> alpha =
      e2e::KubeletStandIn().WatchHealth(server.dra_socket(), milliseconds(5000),
                                        [](const e2e::KubeletHealthMessage&) { return false; });
  REQUIRE(alpha.size() == 1);
  REQUIRE(alpha[0].devices.size() == 1);
  CHECK(alpha[0].devices[0].health == e2e::KubeletHealth::kUnhealthy);
  CHECK(alpha[0].devices[0].message == "xid 79");

  context.TryCancel();
  CHECK(reader->Finish().error_code() == ::grpc::StatusCode::CANCELLED);
  // The client left: the server's streams stop waiting on the health source.
  CHECK(e2e::Eventually([&] { return Clock::now() - health.last_wait() > milliseconds(500); },
                        kWaitTimeout, kWaitPeriod));
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: sockets are mode 0600 and the directories it creates 0750") {
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  CHECK(S_ISSOCK(Mode(server.dra_socket())));
  CHECK((Mode(server.dra_socket()) & 07777) == 0600);
  CHECK(S_ISSOCK(Mode(server.registration_socket())));
  CHECK((Mode(server.registration_socket()) & 07777) == 0600);
  CHECK((Mode(dir.path() + "/plugins") & 07777) == 0750);
  CHECK((Mode(dir.path() + "/plugins/xpu.dra.dev") & 07777) == 0750);
  CHECK((Mode(dir.path() + "/plugins_registry") & 07777) == 0750);
}

TEST_CASE_METHOD(
    ServerTest,
    "kubelet server: a stale socket is replaced, anything else at the path stops start-up") {
  KubeletServerOptions options = OptionsWithDirs(dir);

  SECTION("stale sockets") {
    MakeDeadSocket(options.DraSocket());
    MakeDeadSocket(options.RegistrationSocket());
    KubeletServer server(options);
    REQUIRE_OK(server.Start(&service, nullptr));
    REQUIRE_OK(e2e::KubeletStandIn().Register(server.registration_socket()));
    StatusOr<std::map<std::string, e2e::KubeletPrepareResult>> prepared =
        e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"}));
    REQUIRE_OK(prepared);
    CHECK(prepared->count("uid-1") == 1);
  }
  SECTION("a regular file") {
    { std::ofstream(options.DraSocket()) << "not a socket"; }
    KubeletServer server(options);
    Status status = server.Start(&service, nullptr);
    CHECK(status.code() == StatusCode::kFailedPrecondition);
    CHECK_THAT(status.message(), Catch::Contains("not a socket"));
    CHECK_FALSE(Exists(options.RegistrationSocket()));
  }
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: the DRA socket is created before the registration socket") {
  KubeletServerOptions options = OptionsWithDirs(dir);
  int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  REQUIRE(fd >= 0);
  // One inotify instance keeps the order of events across its watches.
  // A socket appears by creation or by a rename into the directory (the kubelet's watcher sees
  // both as a creation); names that start with '.' are ignored by the kubelet.
  constexpr uint32_t kAppears = IN_CREATE | IN_MOVED_TO;
  int plugin_watch = ::inotify_add_watch(fd, options.PluginDir().c_str(), kAppears);
  int registry_watch = ::inotify_add_watch(fd, options.registry_dir.c_str(), kAppears);
  REQUIRE(plugin_watch >= 0);
  REQUIRE(registry_watch >= 0);

  KubeletServer server(options);
  REQUIRE_OK(server.Start(&service, nullptr));

  std::vector<std::string> created;
  alignas(inotify_event) char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) {
    for (char* p = buffer; p < buffer + n;) {
      auto* event = reinterpret_cast<inotify_event*>(p);
      std::string name = event->len > 0 ? event->name : "";
      if (!name.empty() && name[0] != '.') {
        created.push_back((event->wd == plugin_watch ? "plugin/" : "registry/") + name);
      }
      p += sizeof(inotify_event) + event->len;
    }
  }
  ::close(fd);
  CHECK(created == std::vector<std::string>{"plugin/dra.sock", "registry/xpu.dra.dev-reg.sock"});
}

TEST_CASE_METHOD(
    ServerTest,
    "kubelet server: registration status is recorded and a rejection logged as an error") {
  LogLines log;
  KubeletServer server(Options(dir, &log));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;
  REQUIRE_OK(kubelet.NotifyRegistrationStatus(server.registration_socket(), true, ""));
  CHECK(server.registered());
  REQUIRE_OK(kubelet.NotifyRegistrationStatus(server.registration_socket(), false,
                                              "endpoint already registered"));
  CHECK_FALSE(server.registered());
  CHECK(log.Contains("ERROR registration rejected by kubelet: endpoint already registered"));
}

TEST_CASE_METHOD(ServerTest, "kubelet server: prepare and unprepare over v1 carry share_id") {
  service.share_id = "share-1";
  service.fail_uid = "uid-2";
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;

  auto prepared = kubelet.Prepare(server.dra_socket(), "v1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(prepared);
  REQUIRE(prepared->size() == 2);
  const e2e::KubeletPrepareResult& ok = prepared->at("uid-1");
  CHECK(ok.error.empty());
  REQUIRE(ok.devices.size() == 1);
  CHECK(ok.devices[0] == e2e::KubeletDevice{.request_names = {"gpu"},
                                            .pool_name = "node-1",
                                            .device_name = "gpu-0",
                                            .cdi_device_ids = {"k8s.xpu.dra.dev/device=uid-1"},
                                            .share_id = "share-1"});
  CHECK(prepared->at("uid-2").error == "prepare claim claim-uid-2: boom");
  CHECK(prepared->at("uid-2").devices.empty());
  REQUIRE(service.prepared.size() == 1);
  CHECK(service.prepared[0] ==
        std::vector<ClaimRef>{{.ns = "default", .name = "claim-uid-1", .uid = "uid-1"},
                              {.ns = "default", .name = "claim-uid-2", .uid = "uid-2"}});

  auto unprepared = kubelet.Unprepare(server.dra_socket(), "v1", Claims({"uid-1"}));
  REQUIRE_OK(unprepared);
  CHECK(*unprepared == std::map<std::string, std::string>{{"uid-1", ""}});
  REQUIRE(service.unprepared.size() == 1);
  CHECK(service.unprepared[0][0].uid == "uid-1");

  SECTION("no share_id when the device is not shared") {
    service.share_id.clear();
    auto again = kubelet.Prepare(server.dra_socket(), "v1", Claims({"uid-3"}));
    REQUIRE_OK(again);
    REQUIRE(again->at("uid-3").devices.size() == 1);
    CHECK_FALSE(again->at("uid-3").devices[0].share_id.has_value());
  }
}

TEST_CASE_METHOD(ServerTest, "kubelet server: prepare and unprepare over v1beta1") {
  service.share_id = "share-1";  // v1beta1 has no field for it
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;

  auto prepared = kubelet.Prepare(server.dra_socket(), "v1beta1", Claims({"uid-1"}));
  REQUIRE_OK(prepared);
  REQUIRE(prepared->at("uid-1").devices.size() == 1);
  const e2e::KubeletDevice& device = prepared->at("uid-1").devices[0];
  CHECK(device.pool_name == "node-1");
  CHECK(device.device_name == "gpu-0");
  CHECK(device.request_names == std::vector<std::string>{"gpu"});
  CHECK(device.cdi_device_ids == std::vector<std::string>{"k8s.xpu.dra.dev/device=uid-1"});
  CHECK_FALSE(device.share_id.has_value());

  auto unprepared = kubelet.Unprepare(server.dra_socket(), "v1beta1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(unprepared);
  CHECK(*unprepared == std::map<std::string, std::string>{{"uid-1", ""}, {"uid-2", ""}});
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: a claim the driver left out of its answer gets an error entry") {
  service.forget_uid = "uid-2";
  LogLines log;
  KubeletServer server(Options(dir, &log));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;

  auto prepared = kubelet.Prepare(server.dra_socket(), "v1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(prepared);
  REQUIRE(prepared->size() == 2);  // not the unasked uid the driver added
  CHECK(prepared->at("uid-1").error.empty());
  CHECK_THAT(prepared->at("uid-2").error, Catch::Contains("no result"));
  CHECK(log.Contains("ERROR prepare claim default/claim-uid-2 (uid-2)"));

  auto unprepared = kubelet.Unprepare(server.dra_socket(), "v1beta1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(unprepared);
  REQUIRE(unprepared->size() == 2);
  CHECK(unprepared->at("uid-1").empty());
  CHECK_THAT(unprepared->at("uid-2"), Catch::Contains("no result"));
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: a driver that throws fails the call, not the plugin") {
  service.throw_in_prepare = true;
  LogLines log;
  KubeletServer server(Options(dir, &log));
  REQUIRE_OK(server.Start(&service, nullptr));
  auto prepared = e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"}));
  CHECK(prepared.status().code() == StatusCode::kInternal);
  CHECK_THAT(prepared.status().message(), Catch::Contains("driver bug"));
  CHECK(log.Contains("ERROR prepare: the driver threw: driver bug"));
  service.throw_in_prepare = false;
  CHECK(e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"})).ok());
}

TEST_CASE_METHOD(
    ServerTest,
    "kubelet server: a call whose caller gave up stops, and the next call is answered") {
  service.hang_uid = "uid-hang";
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));

  // A caller that gives up after 200 ms, while the driver still works on its batch.
  auto stub = drav1::DRAPlugin::NewStub(
      ::grpc::CreateChannel("unix://" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  drav1::NodePrepareResourcesRequest request;
  drav1::Claim* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_name("hang");
  claim->set_uid("uid-hang");
  drav1::NodePrepareResourcesResponse response;
  CHECK(stub->NodePrepareResources(&context, request, &response).error_code() ==
        ::grpc::StatusCode::DEADLINE_EXCEEDED);

  // The abandoned call noticed, stopped and freed the lock: the next one (with the kubelet's
  // 45 s deadline) gets its answer; without that it would wait for the abandoned one's minute.
  auto next = e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"}));
  INFO(next.status().ToString());
  REQUIRE_OK(next);
  CHECK(next->at("uid-1").error.empty());
  CHECK(service.saw_caller_leave);
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: a call without a deadline is bounded by the kubelet's 45 s") {
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  auto stub = drav1::DRAPlugin::NewStub(
      ::grpc::CreateChannel("unix://" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  drav1::NodePrepareResourcesRequest request;
  drav1::Claim* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_name("a");
  claim->set_uid("uid-1");
  {
    ::grpc::ClientContext context;  // no deadline
    drav1::NodePrepareResourcesResponse response;
    const Clock::time_point sent = Clock::now();
    REQUIRE(stub->NodePrepareResources(&context, request, &response).ok());
    const Clock::time_point answered = Clock::now();
    REQUIRE(service.deadlines.size() == 1);
    CHECK(service.deadlines[0] >= sent + kKubeletCallTimeout - milliseconds(1000));
    CHECK(service.deadlines[0] <= answered + kKubeletCallTimeout);
  }
  {
    // A caller's own deadline, nearer or further, is kept.
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
    drav1::NodePrepareResourcesResponse response;
    const Clock::time_point sent = Clock::now();
    REQUIRE(stub->NodePrepareResources(&context, request, &response).ok());
    REQUIRE(service.deadlines.size() == 2);
    CHECK(service.deadlines[1] >= sent + std::chrono::minutes(3) - milliseconds(1000));
  }
}

TEST_CASE_METHOD(
    ServingHealthChanges,
    "kubelet server: the health stream sends the snapshot at once and a change promptly") {
  Clock::time_point opened = Clock::now();
  Clock::time_point changed;
  std::vector<e2e::KubeletHealthMessage> messages = e2e::KubeletStandIn().WatchHealth(
      server.dra_socket(), milliseconds(10'000), [&](const e2e::KubeletHealthMessage& m) {
        if (changed != Clock::time_point()) return false;
        CHECK(m.received - opened < milliseconds(1000));
        changed = Clock::now();
        BreakGpu0();
        return true;
      });
  REQUIRE(messages.size() == 2);
  REQUIRE(messages[0].devices.size() == 2);
  CHECK(messages[0].devices[0].pool_name == "node-1");
  CHECK(messages[0].devices[0].device_name == "gpu-0");
  CHECK(messages[0].devices[0].health == e2e::KubeletHealth::kHealthy);
  CHECK(messages[0].devices[0].last_updated_time == 1000);
  CHECK(messages[1].received - changed < milliseconds(1000));
  REQUIRE(messages[1].devices.size() == 1);
  CHECK(messages[1].devices[0].health == e2e::KubeletHealth::kUnhealthy);
  CHECK(messages[1].devices[0].message == "xid 79");
  CHECK(messages[1].devices[0].last_updated_time == 2000);

  // The client left: the server's stream stops waiting on the health source.
  CHECK(e2e::Eventually([&] { return Clock::now() - health.last_wait() > milliseconds(500); },
                        kWaitTimeout, kWaitPeriod));
}

// A server resending the full health list every 200 ms.
struct ServingHealthResends : ServingWithHealth {
  ServingHealthResends() : ServingWithHealth(milliseconds(200)) {}
};

TEST_CASE_METHOD(ServingHealthResends,
                 "kubelet server: the health stream resends the full list periodically") {
  std::vector<e2e::KubeletHealthMessage> messages = e2e::KubeletStandIn().WatchHealth(
      server.dra_socket(), milliseconds(10'000),
      [count = 0](const e2e::KubeletHealthMessage&) mutable { return ++count < 3; });
  REQUIRE(messages.size() == 3);
  for (size_t i = 1; i < messages.size(); ++i) {
    CHECK(messages[i].devices.size() == 2);
    CHECK(messages[i].received - messages[i - 1].received >= milliseconds(150));
    CHECK(messages[i].received - messages[i - 1].received < milliseconds(2000));
  }
}

TEST_CASE_METHOD(
    ServingWithHealth,
    "kubelet server: stop ends health streams at once and removes only its own sockets") {
  std::string dra_socket = server.dra_socket();
  std::string registration_socket = server.registration_socket();

  std::atomic<bool> streaming{false};
  Status end;
  std::thread watcher([&] {
    e2e::KubeletStandIn().WatchHealth(
        dra_socket, milliseconds(60'000),
        [&](const e2e::KubeletHealthMessage&) {
          streaming.store(true);
          return true;
        },
        &end);
  });
  REQUIRE(e2e::Eventually([&] { return streaming.load(); }, kWaitTimeout, kWaitPeriod));

  SECTION("its own sockets are removed") {
    Clock::time_point start = Clock::now();
    server.Stop();
    CHECK(Clock::now() - start < milliseconds(2000));
    watcher.join();
    CHECK_FALSE(end.ok());
    CHECK_FALSE(Exists(dra_socket));
    CHECK_FALSE(Exists(registration_socket));
    CHECK(fs::is_directory(dir.path() + "/plugins/xpu.dra.dev"));
    server.Stop();  // idempotent
  }
  SECTION("a socket another instance put in its place stays") {
    MakeDeadSocket(registration_socket + ".new");
    REQUIRE(::rename((registration_socket + ".new").c_str(), registration_socket.c_str()) == 0);
    server.Stop();
    watcher.join();
    CHECK(Exists(registration_socket));
    CHECK_FALSE(Exists(dra_socket));
  }
}

TEST_CASE_METHOD(ServingWithHealth,
                 "kubelet server: start twice is refused, start after stop serves again") {
  CHECK(server.Start(&service, &health).code() == StatusCode::kFailedPrecondition);
  server.Stop();
  CHECK_FALSE(Exists(server.dra_socket()));
  REQUIRE_OK(server.Start(&service, &health));
  REQUIRE_OK(e2e::KubeletStandIn().Register(server.registration_socket()));
  CHECK(server.registered());
  REQUIRE_OK(e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1beta1", Claims({"uid-1"})));
  CHECK(e2e::KubeletStandIn()
            .WatchHealth(server.dra_socket(), milliseconds(5000),
                         [](const e2e::KubeletHealthMessage&) { return false; })
            .size() == 1);
}

TEST_CASE_METHOD(ServerTest, "kubelet server: rolling-update mode names the sockets by uid") {
  KubeletServerOptions options = Options(dir);
  options.rolling_update_uid = "pod-uid-1";
  KubeletServer server(options);
  REQUIRE_OK(server.Start(&service, nullptr));
  CHECK(server.dra_socket() == dir.path() + "/plugins/xpu.dra.dev/dra-pod-uid-1.sock");
  CHECK(server.registration_socket() ==
        dir.path() + "/plugins_registry/xpu.dra.dev-pod-uid-1-reg.sock");
  StatusOr<e2e::PluginInfo> info = e2e::KubeletStandIn().Register(server.registration_socket());
  REQUIRE_OK(info);
  CHECK(info->endpoint == server.dra_socket());
  REQUIRE_OK(e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"})));
  CHECK(Exists(dir.path() + "/plugins/xpu.dra.dev/serialize.lock"));
}

// Two instances each serve Prepare (one) and Unprepare (the other) on two threads at once.
int MaxConcurrentCalls(const KubeletServerOptions& a_options,
                       const KubeletServerOptions& b_options) {
  OverlapDetector overlap;
  FakeService a_service;
  FakeService b_service;
  a_service.overlap = &overlap;
  b_service.overlap = &overlap;
  KubeletServer a(a_options);
  KubeletServer b(b_options);
  REQUIRE_OK(a.Start(&a_service, nullptr));
  REQUIRE_OK(b.Start(&b_service, nullptr));
  std::atomic<int> failures{0};
  std::thread a_calls([&] {
    for (int i = 0; i < 3; ++i) {
      if (!e2e::KubeletStandIn().Prepare(a.dra_socket(), "v1", Claims({"uid-a"})).ok()) ++failures;
    }
  });
  std::thread b_calls([&] {
    for (int i = 0; i < 3; ++i) {
      if (!e2e::KubeletStandIn().Unprepare(b.dra_socket(), "v1", Claims({"uid-b"})).ok()) {
        ++failures;
      }
    }
  });
  a_calls.join();
  b_calls.join();
  CHECK(failures.load() == 0);
  return overlap.max_active();
}

TEST_CASE("kubelet server: rolling-update instances in one plugin dir never overlap calls") {
  TempDir dir;
  KubeletServerOptions a = Options(dir);
  KubeletServerOptions b = Options(dir);
  a.rolling_update_uid = "pod-a";
  b.rolling_update_uid = "pod-b";
  CHECK(MaxConcurrentCalls(a, b) == 1);
}

TEST_CASE("kubelet server: instances in different plugin dirs do overlap (the detector works)") {
  TempDir dir_a;
  TempDir dir_b;
  CHECK(MaxConcurrentCalls(Options(dir_a), Options(dir_b)) == 2);
}

TEST_CASE("kubelet server options: defaults and validation") {
  KubeletServerOptions options;
  options.driver_name = kDriver;
  CHECK(options.Validate().ok());
  CHECK(options.PluginDir() == "/var/lib/kubelet/plugins/xpu.dra.dev");
  CHECK(options.DraSocket() == "/var/lib/kubelet/plugins/xpu.dra.dev/dra.sock");
  CHECK(options.RegistrationSocket() == "/var/lib/kubelet/plugins_registry/xpu.dra.dev-reg.sock");
  CHECK(options.health_resend == std::chrono::seconds(10));

  KubeletServerOptions bad = options;
  SECTION("driver name") {
    bad.driver_name = "Not/A.Name";
    CHECK(bad.Validate().code() == StatusCode::kInvalidArgument);
    bad.driver_name = "";
    CHECK(bad.Validate().code() == StatusCode::kInvalidArgument);
  }
  SECTION("relative directories") {
    bad.plugin_dir = "plugins/x";
    CHECK(bad.Validate().code() == StatusCode::kInvalidArgument);
    bad = options;
    bad.registry_dir = "registry";
    CHECK(bad.Validate().code() == StatusCode::kInvalidArgument);
  }
  SECTION("socket path longer than a Unix socket allows") {
    bad.plugin_dir = "/" + std::string(100, 'p');
    Status status = bad.Validate();
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains("at most 106"));
    // 106 bytes with "/dra.sock": the temporary bind path ".dra.sock" takes 107 and the NUL.
    bad.plugin_dir = "/" + std::string(106 - 1 - 9, 'p');
    CHECK(bad.Validate().ok());
  }
  SECTION("rolling-update uid") {
    bad.rolling_update_uid = "../x";
    CHECK(bad.Validate().code() == StatusCode::kInvalidArgument);
  }
  SECTION("health resend") {
    bad.health_resend = milliseconds(0);
    CHECK(bad.Validate().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: start refuses invalid options and leaves nothing behind") {
  KubeletServerOptions options = Options(dir);
  options.driver_name = "";
  KubeletServer server(options);
  CHECK(server.Start(&service, nullptr).code() == StatusCode::kInvalidArgument);
  CHECK_FALSE(Exists(dir.path() + "/plugins"));
}

}  // namespace
}  // namespace xpu::plugin
