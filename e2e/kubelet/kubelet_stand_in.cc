#include "e2e/kubelet/kubelet_stand_in.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <type_traits>

#include "base/mutex.h"
#include "proto/dra_v1.grpc.pb.h"
#include "proto/dra_v1beta1.grpc.pb.h"
#include "proto/health_v1alpha1.grpc.pb.h"
#include "proto/registration.grpc.pb.h"

namespace xpu::e2e {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace registration = ::pluginregistration;

std::shared_ptr<::grpc::Channel> Dial(const std::string& socket) {
  return ::grpc::CreateChannel("unix:" + socket, ::grpc::InsecureChannelCredentials());
}

void SetDeadline(::grpc::ClientContext* context, std::chrono::milliseconds timeout) {
  context->set_deadline(std::chrono::system_clock::now() + timeout);
}

Status FromGrpc(const ::grpc::Status& status, const std::string& what) {
  if (status.ok()) return OkStatus();
  return Status(static_cast<StatusCode>(status.error_code()), what + ": " + status.error_message());
}

template <typename Request>
void FillClaims(const std::vector<KubeletClaim>& claims, Request* request) {
  for (const auto& claim : claims) {
    auto* out = request->add_claims();
    out->set_namespace_(claim.ns);
    out->set_name(claim.name);
    out->set_uid(claim.uid);
  }
}

template <typename ProtoDevice>
KubeletDevice DeviceFromProto(const ProtoDevice& device) {
  KubeletDevice out;
  out.request_names.assign(device.request_names().begin(), device.request_names().end());
  out.pool_name = device.pool_name();
  out.device_name = device.device_name();
  out.cdi_device_ids.assign(device.cdi_device_ids().begin(), device.cdi_device_ids().end());
  if constexpr (std::is_same_v<ProtoDevice, drav1::Device>) {
    if (device.has_share_id()) out.share_id = device.share_id();
  }
  return out;
}

// One batch call to the plugin at `socket`: `rpc` with a request naming `claims`, within
// kCallTimeout.
template <typename Stub, typename Request, typename Response>
StatusOr<Response> CallWithClaims(
    const std::shared_ptr<::grpc::Channel>& channel, const std::string& socket,
    ::grpc::Status (Stub::*rpc)(::grpc::ClientContext*, const Request&, Response*),
    const std::string& name, const std::vector<KubeletClaim>& claims) {
  Stub stub(channel);
  Request request;
  FillClaims(claims, &request);
  Response response;
  ::grpc::ClientContext context;
  SetDeadline(&context, KubeletStandIn::kCallTimeout);
  RETURN_IF_ERROR(FromGrpc((stub.*rpc)(&context, request, &response), name + " on " + socket));
  return response;
}

// DRAPlugin: the generated service of one API version.
template <typename DRAPlugin>
StatusOr<std::map<std::string, KubeletPrepareResult>> PrepareOver(
    const std::shared_ptr<::grpc::Channel>& channel, const std::string& socket,
    const std::vector<KubeletClaim>& claims) {
  ASSIGN_OR_RETURN(const auto response,
                   CallWithClaims(channel, socket, &DRAPlugin::Stub::NodePrepareResources,
                                  "NodePrepareResources", claims));
  std::map<std::string, KubeletPrepareResult> out;
  for (const auto& [uid, result] : response.claims()) {
    KubeletPrepareResult& entry = out[uid];
    entry.error = result.error();
    for (const auto& device : result.devices()) entry.devices.push_back(DeviceFromProto(device));
  }
  return out;
}

template <typename DRAPlugin>
StatusOr<std::map<std::string, std::string>> UnprepareOver(
    const std::shared_ptr<::grpc::Channel>& channel, const std::string& socket,
    const std::vector<KubeletClaim>& claims) {
  ASSIGN_OR_RETURN(const auto response,
                   CallWithClaims(channel, socket, &DRAPlugin::Stub::NodeUnprepareResources,
                                  "NodeUnprepareResources", claims));
  std::map<std::string, std::string> out;
  for (const auto& [uid, result] : response.claims()) out[uid] = result.error();
  return out;
}

Status UnknownApi(const std::string& api) {
  return InvalidArgumentError("DRA api \"" + api + "\": want v1 or v1beta1");
}

}  // namespace

// The DRA sockets' channels, kept when the stand-in keeps its connections.
struct KubeletStandIn::Channels {
  Mutex mu;
  std::map<std::string, std::shared_ptr<::grpc::Channel>> by_socket GUARDED_BY(mu);
};

KubeletStandIn::KubeletStandIn(Connections connections) {
  if (connections == Connections::kKeep) channels_ = std::make_shared<Channels>();
}

std::shared_ptr<::grpc::Channel> KubeletStandIn::DraChannel(const std::string& socket) {
  if (channels_ == nullptr) return Dial(socket);
  MutexLock lock(channels_->mu);
  std::shared_ptr<::grpc::Channel>& channel = channels_->by_socket[socket];
  if (channel == nullptr) channel = Dial(socket);
  return channel;
}

StatusOr<PluginInfo> KubeletStandIn::GetInfo(const std::string& registration_socket) {
  auto stub = registration::Registration::NewStub(Dial(registration_socket));
  ::grpc::ClientContext context;
  SetDeadline(&context, kGetInfoTimeout);
  registration::PluginInfo info;
  RETURN_IF_ERROR(FromGrpc(stub->GetInfo(&context, registration::InfoRequest(), &info),
                           "GetInfo on " + registration_socket));
  return PluginInfo{
      .type = info.type(),
      .name = info.name(),
      .endpoint = info.endpoint(),
      .supported_versions = {info.supported_versions().begin(), info.supported_versions().end()}};
}

Status KubeletStandIn::NotifyRegistrationStatus(const std::string& registration_socket,
                                                bool registered, const std::string& error) {
  auto stub = registration::Registration::NewStub(Dial(registration_socket));
  ::grpc::ClientContext context;
  SetDeadline(&context, kNotifyTimeout);
  registration::RegistrationStatus status;
  status.set_plugin_registered(registered);
  status.set_error(error);
  registration::RegistrationStatusResponse response;
  return FromGrpc(stub->NotifyRegistrationStatus(&context, status, &response),
                  "NotifyRegistrationStatus on " + registration_socket);
}

StatusOr<PluginInfo> KubeletStandIn::Register(const std::string& registration_socket) {
  ASSIGN_OR_RETURN(PluginInfo info, GetInfo(registration_socket));
  std::string problem;
  const auto& versions = info.supported_versions;
  if (info.type != "DRAPlugin") {
    problem = "plugin type \"" + info.type + "\" is not DRAPlugin";
  } else if (info.name.empty()) {
    problem = "plugin name is empty";
  } else if (std::none_of(versions.begin(), versions.end(), [](const std::string& v) {
               return v == "v1.DRAPlugin" || v == "v1beta1.DRAPlugin";
             })) {
    problem = "none of the plugin's versions is supported";
  }
  RETURN_IF_ERROR(NotifyRegistrationStatus(registration_socket, problem.empty(), problem));
  if (!problem.empty()) return FailedPreconditionError("register " + info.name + ": " + problem);
  return info;
}

StatusOr<std::map<std::string, KubeletPrepareResult>> KubeletStandIn::Prepare(
    const std::string& dra_socket, const std::string& api,
    const std::vector<KubeletClaim>& claims) {
  if (api == "v1") return PrepareOver<drav1::DRAPlugin>(DraChannel(dra_socket), dra_socket, claims);
  if (api == "v1beta1") {
    return PrepareOver<drav1beta1::DRAPlugin>(DraChannel(dra_socket), dra_socket, claims);
  }
  return UnknownApi(api);
}

StatusOr<std::map<std::string, std::string>> KubeletStandIn::Unprepare(
    const std::string& dra_socket, const std::string& api,
    const std::vector<KubeletClaim>& claims) {
  if (api == "v1") {
    return UnprepareOver<drav1::DRAPlugin>(DraChannel(dra_socket), dra_socket, claims);
  }
  if (api == "v1beta1") {
    return UnprepareOver<drav1beta1::DRAPlugin>(DraChannel(dra_socket), dra_socket, claims);
  }
  return UnknownApi(api);
}

std::vector<KubeletHealthMessage> KubeletStandIn::WatchHealth(
    const std::string& dra_socket, std::chrono::milliseconds duration,
    const std::function<bool(const KubeletHealthMessage&)>& on_message, Status* end) {
  auto stub = ::v1alpha1::DRAResourceHealth::NewStub(Dial(dra_socket));
  ::grpc::ClientContext context;
  SetDeadline(&context, duration);
  auto reader = stub->NodeWatchResources(&context, ::v1alpha1::NodeWatchResourcesRequest());
  std::vector<KubeletHealthMessage> messages;
  ::v1alpha1::NodeWatchResourcesResponse response;
  bool stopped = false;
  while (reader->Read(&response)) {
    KubeletHealthMessage message{.devices = {}, .received = std::chrono::steady_clock::now()};
    for (const auto& device : response.devices()) {
      message.devices.push_back(KubeletDeviceHealth{
          .pool_name = device.device().pool_name(),
          .device_name = device.device().device_name(),
          .health = static_cast<KubeletHealth>(device.health()),
          .last_updated_time = device.last_updated_time(),
          .message = device.message(),
      });
    }
    messages.push_back(std::move(message));
    if (on_message && !on_message(messages.back())) {
      stopped = true;
      context.TryCancel();
      break;
    }
  }
  ::grpc::Status status = reader->Finish();
  if (end != nullptr) {
    bool ours = stopped || status.error_code() == ::grpc::StatusCode::DEADLINE_EXCEEDED;
    *end = ours ? OkStatus() : FromGrpc(status, "NodeWatchResources on " + dra_socket);
  }
  return messages;
}

}  // namespace xpu::e2e
