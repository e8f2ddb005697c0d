#include "kubeletplugin/grpc/kubelet_server.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "kubeletplugin/grpc/internal/translate.h"
#include "proto/dra_v1.grpc.pb.h"
#include "proto/dra_v1beta1.grpc.pb.h"
#include "proto/health_v1.grpc.pb.h"
#include "proto/health_v1alpha1.grpc.pb.h"
#include "proto/registration.grpc.pb.h"

namespace xpu::plugin {

// What tells our socket from one another instance put at the same path later. Outside the
// anonymous namespace: KubeletServer::Impl, declared in the header, holds it.
struct SocketIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  timespec ctime{};
};

namespace {

namespace drav1 = internal::drav1;
namespace drav1beta1 = internal::drav1beta1;
namespace healthv1 = internal::healthv1;
namespace healthv1alpha1 = internal::healthv1alpha1;
namespace registration = ::pluginregistration;

constexpr mode_t kDirMode = 0750;
constexpr mode_t kSocketMode = 0600;
// A health stream checks this often whether its client left or the server is stopping.
constexpr std::chrono::milliseconds kHealthPoll{100};
// A call waiting behind another checks this often whether its own caller is still there.
constexpr std::chrono::milliseconds kCallPoll{20};
// In-flight calls get this long to finish when the server stops.
constexpr std::chrono::milliseconds kShutdownGrace{1000};
// sun_path holds 108 bytes including the terminating NUL.
constexpr size_t kMaxSocketPath = sizeof(sockaddr_un{}.sun_path) - 1;

std::string Errno(int err) { return std::strerror(err); }

bool ValidDriverName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

bool ValidUid(const std::string& uid) {
  return std::all_of(uid.begin(), uid.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// mkdir -p; directories it creates get `mode` exactly (whatever the umask), existing ones are
// left alone.
Status MakeDirs(const std::string& path, mode_t mode) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), mode) == 0) {
      if (::chmod(part.c_str(), mode) != 0) {
        return InternalError("chmod " + part + ": " + Errno(errno));
      }
    } else if (errno != EEXIST) {
      return InternalError("create directory " + part + ": " + Errno(errno));
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return FailedPreconditionError("create directory " + path + ": not a directory");
  }
  return OkStatus();
}

// gRPC binds here and unlinks this path when it shuts down; the socket is then renamed to its
// real path. So the socket appears there atomically, already listening and mode 0600, and a
// stopping server cannot unlink a socket another instance has since put at the real path. The
// kubelet's plugin watcher ignores names that start with '.'.
std::string BindPath(const std::string& socket) {
  size_t slash = socket.rfind('/');
  return socket.substr(0, slash + 1) + "." + socket.substr(slash + 1);
}

// The path is free or holds a socket (left by an earlier run: it is replaced); anything else at
// the path is an error.
Status CheckSocketPath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return OkStatus();
    return InternalError("stat " + path + ": " + Errno(errno));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPreconditionError("listen on " + path + ": the path exists and is not a socket");
  }
  return OkStatus();
}

Status RemoveStaleSocket(const std::string& path) {
  RETURN_IF_ERROR(CheckSocketPath(path));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return InternalError("remove stale socket " + path + ": " + Errno(errno));
  }
  return OkStatus();
}

bool SameSocket(const std::string& path, const SocketIdentity& id) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == id.dev &&
         st.st_ino == id.ino && st.st_ctim.tv_sec == id.ctime.tv_sec &&
         st.st_ctim.tv_nsec == id.ctime.tv_nsec;
}

// The caller's deadline and cancellation, for the driver. gRPC gives the deadline on the system
// clock; one further away than a day is taken as none, and a call without one gets the kubelet's
// (kKubeletCallTimeout): the kubelet always sets it, and a batch no caller bounds could hold the
// plugin's one call at a time for minutes.
CallBounds BoundsOf(::grpc::ServerContext* context) {
  CallBounds bounds;
  const auto left = context->deadline() - std::chrono::system_clock::now();
  bounds.deadline =
      CallBounds::Clock::now() +
      (left < std::chrono::hours(24)
           ? std::chrono::duration_cast<CallBounds::Clock::duration>(left)
           : std::chrono::duration_cast<CallBounds::Clock::duration>(kKubeletCallTimeout));
  bounds.cancelled = [context] { return context->IsCancelled(); };
  return bounds;
}

// Holds the cross-instance lock file for the duration of one Prepare / Unprepare.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      status_ = InternalError("open lock file " + path + ": " + Errno(errno));
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      status_ = InternalError("lock " + path + ": " + Errno(errno));
      return;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  const Status& status() const { return status_; }

 private:
  int fd_ = -1;
  Status status_;
};

}  // namespace

Status KubeletServerOptions::Validate() const {
  if (!ValidDriverName(driver_name)) {
    return InvalidArgumentError("driver name \"" + driver_name +
                                "\": want a DNS subdomain of at most 63 characters");
  }
  if (!plugin_dir.empty() && plugin_dir.front() != '/') {
    return InvalidArgumentError("plugin dir " + plugin_dir + ": want an absolute path");
  }
  if (registry_dir.empty() || registry_dir.front() != '/') {
    return InvalidArgumentError("registry dir \"" + registry_dir + "\": want an absolute path");
  }
  if (!ValidUid(rolling_update_uid)) {
    return InvalidArgumentError("rolling update uid \"" + rolling_update_uid +
                                "\": want letters, digits, '-', '_' and '.' only");
  }
  if (health_resend <= std::chrono::milliseconds::zero()) {
    return InvalidArgumentError("health resend period: want a positive duration");
  }
  for (const std::string& socket : {DraSocket(), RegistrationSocket()}) {
    // The temporary bind path (BindPath) is one byte longer.
    if (socket.size() + 1 > kMaxSocketPath) {
      return InvalidArgumentError("socket path " + socket + ": " + std::to_string(socket.size()) +
                                  " bytes, at most " + std::to_string(kMaxSocketPath - 1) +
                                  " fit a Unix socket address here");
    }
  }
  return OkStatus();
}

std::string KubeletServerOptions::PluginDir() const {
  return plugin_dir.empty() ? "/var/lib/kubelet/plugins/" + driver_name : plugin_dir;
}

std::string KubeletServerOptions::DraSocket() const {
  return PluginDir() + "/" +
         (rolling_update_uid.empty() ? "dra.sock" : "dra-" + rolling_update_uid + ".sock");
}

std::string KubeletServerOptions::RegistrationSocket() const {
  return registry_dir + "/" + driver_name +
         (rolling_update_uid.empty() ? "" : "-" + rolling_update_uid) + "-reg.sock";
}

struct KubeletServer::Impl {
  explicit Impl(KubeletServerOptions opts)
      : options(std::move(opts)),
        dra_socket(options.DraSocket()),
        registration_socket(options.RegistrationSocket()) {}

  void Log(const std::string& line) const {
    if (options.log) {
      options.log(line);
    } else {
      std::cerr << line << std::endl;
    }
  }

  // Runs one Prepare / Unprepare under the in-process mutex and, in rolling-update mode, the
  // lock file shared with the other instances. A call waits for the mutex only while its caller
  // is still there (an abandoned call ahead of it stops early: see CallBounds). An exception from
  // the driver (a bug: none should cross the seam) fails the call instead of ending the process on
  // a gRPC thread.
  template <typename Fn>
  ::grpc::Status Serialised(const char* call, const CallBounds& bounds, Fn fn) {
    std::unique_lock<std::timed_mutex> lock(call_mu, std::defer_lock);
    while (!lock.try_lock_for(kCallPoll)) {
      if (bounds.Cancelled()) return {::grpc::StatusCode::CANCELLED, "the caller went away"};
      if (!bounds.Live()) {
        return {::grpc::StatusCode::DEADLINE_EXCEEDED,
                call + std::string(": the deadline passed while an earlier call ran")};
      }
    }
    std::optional<FileLock> file_lock;
    if (!options.rolling_update_uid.empty()) {
      file_lock.emplace(options.PluginDir() + "/serialize.lock");
      if (!file_lock->status().ok()) {
        Log("ERROR " + std::string(call) + ": " + file_lock->status().message());
        return {::grpc::StatusCode::INTERNAL, call + (": " + file_lock->status().message())};
      }
    }
    try {
      fn();
    } catch (const std::exception& e) {
      Log("ERROR " + std::string(call) + ": the driver threw: " + e.what());
      return {::grpc::StatusCode::INTERNAL, call + std::string(": internal error: ") + e.what()};
    }
    return ::grpc::Status::OK;
  }

  void LogNotes(const std::vector<std::string>& notes) const {
    for (const auto& note : notes) Log("ERROR " + note);
  }

  // One prepare or unprepare call: the claims of `request` through the service's `op`, its
  // results into `response`, serialised with the other calls.
  template <typename Request, typename Response, typename Op>
  ::grpc::Status Call(const char* what, ::grpc::ServerContext* context, const Request& request,
                      Response* response, Op op) {
    std::vector<ClaimRef> claims = internal::ClaimsFromProto(request);
    const CallBounds bounds = BoundsOf(context);
    return Serialised(what, bounds, [&] { LogNotes(op(claims, bounds, response)); });
  }

  template <typename Request, typename Response>
  ::grpc::Status Prepare(::grpc::ServerContext* context, const Request& request,
                         Response* response) {
    return Call("prepare", context, request, response, [this](auto& claims, auto& bounds, auto* r) {
      return internal::PrepareToProto(claims, service->Prepare(claims, bounds), r);
    });
  }

  template <typename Request, typename Response>
  ::grpc::Status Unprepare(::grpc::ServerContext* context, const Request& request,
                           Response* response) {
    return Call("unprepare", context, request, response,
                [this](auto& claims, auto& bounds, auto* r) {
                  return internal::UnprepareToProto(claims, service->Unprepare(claims, bounds), r);
                });
  }

  // The health stream of either wire version (v1, v1alpha1): the same messages, the same flow.
  template <typename Response>
  ::grpc::Status WatchHealth(::grpc::ServerContext* context, ::grpc::ServerWriter<Response>* out) {
    using Clock = std::chrono::steady_clock;
    uint64_t generation = 0;
    auto send = [&] {
      Response message;
      internal::HealthToProto(health->Snapshot(&generation), &message);
      return out->Write(message);
    };
    if (!send()) return {::grpc::StatusCode::CANCELLED, "health stream closed by the client"};
    Clock::time_point next_resend = Clock::now() + options.health_resend;
    while (true) {
      // Short waits, so that a departed client or a stopping server ends the stream promptly.
      uint64_t now_generation =
          health->WaitForChange(generation, std::min(next_resend, Clock::now() + kHealthPoll));
      if (stopping.load()) return {::grpc::StatusCode::UNAVAILABLE, "plugin stopping"};
      if (context->IsCancelled()) return {::grpc::StatusCode::CANCELLED, "client went away"};
      if (now_generation == generation && Clock::now() < next_resend) continue;
      if (!send()) return {::grpc::StatusCode::CANCELLED, "health stream closed by the client"};
      next_resend = Clock::now() + options.health_resend;
    }
  }

  // One DRA service per wire version; both call the same Prepare / Unprepare.
  template <typename Service, typename PrepareRequest, typename PrepareResponse,
            typename UnprepareRequest, typename UnprepareResponse>
  class Dra final : public Service {
   public:
    explicit Dra(Impl* impl) : impl_(impl) {}
    ::grpc::Status NodePrepareResources(::grpc::ServerContext* context,
                                        const PrepareRequest* request,
                                        PrepareResponse* response) override {
      return impl_->Prepare(context, *request, response);
    }
    ::grpc::Status NodeUnprepareResources(::grpc::ServerContext* context,
                                          const UnprepareRequest* request,
                                          UnprepareResponse* response) override {
      return impl_->Unprepare(context, *request, response);
    }

   private:
    Impl* impl_;
  };
  using DraV1 = Dra<drav1::DRAPlugin::Service, drav1::NodePrepareResourcesRequest,
                    drav1::NodePrepareResourcesResponse, drav1::NodeUnprepareResourcesRequest,
                    drav1::NodeUnprepareResourcesResponse>;
  using DraV1beta1 =
      Dra<drav1beta1::DRAPlugin::Service, drav1beta1::NodePrepareResourcesRequest,
          drav1beta1::NodePrepareResourcesResponse, drav1beta1::NodeUnprepareResourcesRequest,
          drav1beta1::NodeUnprepareResourcesResponse>;

  // One health service per wire version; both stream the same HealthSource.
  template <typename Service, typename Request, typename Response>
  class Health final : public Service {
   public:
    explicit Health(Impl* impl) : impl_(impl) {}
    ::grpc::Status NodeWatchResources(::grpc::ServerContext* context, const Request* /*request*/,
                                      ::grpc::ServerWriter<Response>* writer) override {
      return impl_->WatchHealth(context, writer);
    }

   private:
    Impl* impl_;
  };
  using HealthV1 = Health<healthv1::DRAResourceHealth::Service, healthv1::NodeWatchResourcesRequest,
                          healthv1::NodeWatchResourcesResponse>;
  using HealthV1alpha1 =
      Health<healthv1alpha1::DRAResourceHealth::Service, healthv1alpha1::NodeWatchResourcesRequest,
             healthv1alpha1::NodeWatchResourcesResponse>;

  class Registration final : public registration::Registration::Service {
   public:
    explicit Registration(Impl* impl) : impl_(impl) {}
    ::grpc::Status GetInfo(::grpc::ServerContext* /*context*/,
                           const registration::InfoRequest* /*request*/,
                           registration::PluginInfo* info) override {
      info->set_type("DRAPlugin");
      info->set_name(impl_->options.driver_name);
      info->set_endpoint(impl_->dra_socket);
      // Preference order: the kubelet picks the first entry it supports.
      info->add_supported_versions("v1.DRAPlugin");
      info->add_supported_versions("v1beta1.DRAPlugin");
      // Kubelets from 1.37 pick the first health version they know (v1 before v1alpha1, which
      // 1.40 drops); older ones know only v1alpha1 and open it whatever this list says.
      if (impl_->health != nullptr) {
        info->add_supported_versions("v1.DRAResourceHealth");
        info->add_supported_versions("v1alpha1.DRAResourceHealth");
      }
      return ::grpc::Status::OK;
    }
    ::grpc::Status NotifyRegistrationStatus(
        ::grpc::ServerContext* /*context*/, const registration::RegistrationStatus* status,
        registration::RegistrationStatusResponse* /*response*/) override {
      impl_->registered.store(status->plugin_registered());
      if (status->plugin_registered()) {
        impl_->Log("registered with the kubelet as " + impl_->options.driver_name + " (endpoint " +
                   impl_->dra_socket + ")");
      } else {
        impl_->Log("ERROR registration rejected by kubelet: " + status->error());
      }
      return ::grpc::Status::OK;
    }

   private:
    Impl* impl_;
  };

  // Serves `services` on `socket`, mode 0600, and records the socket's identity in `id`.
  static StatusOr<std::unique_ptr<::grpc::Server>> Serve(
      const std::string& socket, const std::vector<::grpc::Service*>& services,
      SocketIdentity* id) {
    const std::string bind_path = BindPath(socket);
    RETURN_IF_ERROR(CheckSocketPath(socket));
    RETURN_IF_ERROR(RemoveStaleSocket(bind_path));
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + bind_path, ::grpc::InsecureServerCredentials());
    for (auto* s : services) builder.RegisterService(s);
    std::unique_ptr<::grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr) return UnavailableError("serve gRPC on " + bind_path + ": bind failed");
    Status status;
    struct stat st {};
    if (::chmod(bind_path.c_str(), kSocketMode) != 0) {
      status = InternalError("chmod " + bind_path + ": " + Errno(errno));
    } else if (::rename(bind_path.c_str(), socket.c_str()) != 0) {
      status = InternalError("rename " + bind_path + " to " + socket + ": " + Errno(errno));
    } else if (::lstat(socket.c_str(), &st) != 0) {
      status = InternalError("stat " + socket + ": " + Errno(errno));
    }
    if (!status.ok()) {
      server->Shutdown(std::chrono::system_clock::now());
      return status;
    }
    *id = SocketIdentity{.dev = st.st_dev, .ino = st.st_ino, .ctime = st.st_ctim};
    return server;
  }

  // Shuts `server` down and removes `socket` if it is still the one it created.
  static void Close(std::unique_ptr<::grpc::Server>& server, const std::string& socket,
                    const SocketIdentity& id) {
    if (server == nullptr) return;
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    server.reset();
    if (SameSocket(socket, id)) ::unlink(socket.c_str());
  }

  const KubeletServerOptions options;
  const std::string dra_socket;
  const std::string registration_socket;
  NodeService* service = nullptr;
  HealthSource* health = nullptr;
  std::atomic<bool> registered{false};
  std::atomic<bool> stopping{false};
  std::timed_mutex call_mu;  // serialises Prepare and Unprepare

  DraV1 dra_v1{this};
  DraV1beta1 dra_v1beta1{this};
  HealthV1 health_v1{this};
  HealthV1alpha1 health_v1alpha1{this};
  Registration registration_service{this};
  std::unique_ptr<::grpc::Server> dra_server;
  std::unique_ptr<::grpc::Server> registration_server;
  SocketIdentity dra_id;
  SocketIdentity registration_id;
};

KubeletServer::KubeletServer(KubeletServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

KubeletServer::~KubeletServer() { Stop(); }

Status KubeletServer::Start(NodeService* service, HealthSource* health) {
  Impl& impl = *impl_;
  if (impl.dra_server != nullptr) return FailedPreconditionError("start kubelet server: running");
  if (service == nullptr) return InvalidArgumentError("start kubelet server: no node service");
  RETURN_IF_ERROR(impl.options.Validate());
  impl.service = service;
  impl.health = health;
  impl.stopping.store(false);
  impl.registered.store(false);
  RETURN_IF_ERROR(MakeDirs(impl.options.PluginDir(), kDirMode));
  RETURN_IF_ERROR(MakeDirs(impl.options.registry_dir, kDirMode));

  // The DRA service first: once the registration socket exists the kubelet may call it.
  std::vector<::grpc::Service*> dra_services = {&impl.dra_v1, &impl.dra_v1beta1};
  if (health != nullptr) {
    dra_services.insert(dra_services.end(), {&impl.health_v1, &impl.health_v1alpha1});
  }
  ASSIGN_OR_RETURN(impl.dra_server, Impl::Serve(impl.dra_socket, dra_services, &impl.dra_id));
  auto registration_server =
      Impl::Serve(impl.registration_socket, {&impl.registration_service}, &impl.registration_id);
  if (!registration_server.ok()) {
    Impl::Close(impl.dra_server, impl.dra_socket, impl.dra_id);
    return registration_server.status();
  }
  impl.registration_server = std::move(registration_server).value();
  impl.Log("serving " + impl.options.driver_name + " on " + impl.dra_socket + ", registration on " +
           impl.registration_socket);
  return OkStatus();
}

void KubeletServer::Stop() {
  Impl& impl = *impl_;
  if (impl.dra_server == nullptr && impl.registration_server == nullptr) return;
  impl.stopping.store(true);
  // Deregister first (the kubelet treats the socket's removal so), then end the DRA service.
  Impl::Close(impl.registration_server, impl.registration_socket, impl.registration_id);
  Impl::Close(impl.dra_server, impl.dra_socket, impl.dra_id);
  impl.registered.store(false);
}

const std::string& KubeletServer::dra_socket() const { return impl_->dra_socket; }
const std::string& KubeletServer::registration_socket() const { return impl_->registration_socket; }
bool KubeletServer::registered() const { return impl_->registered.load(); }

}  // namespace xpu::plugin
