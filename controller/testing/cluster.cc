#include "controller/testing/cluster.h"

#include <fstream>
#include <sstream>

#include "api/core.h"
#include "base/time.h"

namespace xpu::controller::testing {
namespace {
namespace kc = api::client;
}  // namespace

StatusOr<std::unique_ptr<kc::Client>> Connect(const e2e::KubeSimProcess& sim,
                                              kc::ClientOptions options) {
  ASSIGN_OR_RETURN(kc::ClusterConfig config, sim.Config());
  return kc::Client::Create(config, std::move(options));
}

api::client::ClientOptions Unthrottled() {
  api::client::ClientOptions options;
  options.qps = 0;
  return options;
}

StatusOr<SimCluster> StartCluster(const std::string& binary, const std::vector<std::string>& flags,
                                  const std::vector<std::string>& namespaces,
                                  kc::ClientOptions options) {
  SimCluster cluster;
  ASSIGN_OR_RETURN(cluster.sim, e2e::KubeSimProcess::Start(binary, flags));
  ASSIGN_OR_RETURN(cluster.client, Connect(*cluster.sim, std::move(options)));
  for (const std::string& ns : namespaces) RETURN_IF_ERROR(MakeNamespace(*cluster.client, ns));
  return cluster;
}

StatusOr<SimCluster> StartControllerCluster(const std::string& binary,
                                            const std::vector<std::string>& flags) {
  return StartCluster(binary, flags, {"xpu-dra", "default"}, Unthrottled());
}

Status MakeNamespace(kc::Client& client, const std::string& name) {
  nlohmann::json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  auto created = client.Create(kc::Namespaces(), "", ns);
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  return OkStatus();
}

StatusOr<std::string> MakeNode(kc::Client& client, const std::string& name,
                               const std::map<std::string, std::string>& labels) {
  nlohmann::json node = {
      {"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", labels}}}};
  node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  ASSIGN_OR_RETURN(nlohmann::json created, client.Create(kc::Nodes(), "", node));
  return created["metadata"].value("uid", "");
}

Status PutInventory(kc::Client& client, api::NodeInventory inventory) {
  inventory.metadata.resource_version.clear();
  inventory.metadata.uid.clear();
  const std::string name = inventory.metadata.name;
  auto current = client.Get(kc::NodeInventories(), "", name);
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
  if (!current.ok()) {
    ASSIGN_OR_RETURN(nlohmann::json created,
                     client.Create(kc::NodeInventories(), "", api::ToJson(inventory)));
    inventory.metadata.resource_version = created["metadata"].value("resourceVersion", "");
  } else {
    inventory.metadata.resource_version = (*current)["metadata"].value("resourceVersion", "");
  }
  // Status goes through the status subresource, as the plugin writes it.
  return client.UpdateStatus(kc::NodeInventories(), "", api::ToJson(inventory)).status();
}

Status RenewPluginLease(kc::Client& client, const std::string& ns, const std::string& node,
                        int64_t duration_seconds) {
  const std::string name = "xpu-dra-plugin-" + node;
  const std::string now = FormatMicroTime(std::chrono::system_clock::now());
  auto current = client.Get(kc::Leases(), ns, name);
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
  api::core::Lease lease;
  if (current.ok()) {
    ASSIGN_OR_RETURN(lease, api::FromJson<api::core::Lease>(*current));
  } else {
    lease.metadata.name = name;
    lease.metadata.namespace_name = ns;
    lease.spec.holder_identity = node;
  }
  lease.spec.lease_duration_seconds = duration_seconds;
  lease.spec.renew_time = now;
  if (current.ok()) return client.Update(kc::Leases(), ns, api::core::ToJson(lease)).status();
  return client.Create(kc::Leases(), ns, api::core::ToJson(lease)).status();
}

StatusOr<api::NodeInventory> FixtureInventory(const std::string& source_dir,
                                              const std::string& host, const std::string& node) {
  const std::string path = source_dir + "/e2e/fixtures/hosts-expected/" + host + ".json";
  std::ifstream in(path);
  if (!in) return NotFoundError("read inventory " + path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  if (json.is_discarded()) return InvalidArgumentError("read inventory " + path + ": not JSON");
  ASSIGN_OR_RETURN(api::NodeInventory inventory, api::FromJson<api::NodeInventory>(json));
  inventory.metadata.name = node;
  return inventory;
}

StatusOr<std::vector<api::resource::ResourceSlice>> ListSlices(kc::Client& client,
                                                               const std::string& driver) {
  kc::ListOptions options;
  options.field_selector = "spec.driver=" + driver;
  ASSIGN_OR_RETURN(kc::ListPage page, client.ListAll(kc::ResourceSlices(), "", options));
  std::vector<api::resource::ResourceSlice> out;
  for (const nlohmann::json& item : page.items) {
    ASSIGN_OR_RETURN(api::resource::ResourceSlice slice,
                     api::FromJson<api::resource::ResourceSlice>(item));
    out.push_back(std::move(slice));
  }
  return out;
}

}  // namespace xpu::controller::testing
