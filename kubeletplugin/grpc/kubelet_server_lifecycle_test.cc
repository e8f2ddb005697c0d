// The kubelet server's registration and sockets: GetInfo and registration status, the sockets'
// modes and order, stale sockets, start and stop, rolling-update instances, and its options.
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "e2e/client/wait.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "kubeletplugin/grpc/kubelet_server.h"
#include "kubeletplugin/grpc/testing/kubelet_server_fixture.h"

namespace xpu::plugin {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

using testing::Claims;
using testing::FakeService;
using testing::kDriver;
using testing::kWaitPeriod;
using testing::kWaitTimeout;
using testing::LogLines;
using testing::Options;
using testing::OverlapDetector;
using testing::ServerTest;
using testing::ServingWithHealth;
using xpu::testing::TempDir;

// Options(dir) with the plugin and registry directories made, as a running kubelet has them.
KubeletServerOptions OptionsWithDirs(const TempDir& dir) {
  KubeletServerOptions options = Options(dir);
  REQUIRE(fs::create_directories(options.PluginDir()));
  REQUIRE(fs::create_directories(options.registry_dir));
  return options;
}

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