// The API client against the real kube-sim binary over HTTPS: CRUD, conflicts, pagination,
// selectors, watches (resume, bookmarks, 410), the informer (sync, events, relist after 410,
// no lost or duplicated events under injected faults), authentication and timeouts.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "api/client/client.h"
#include "api/client/informer.h"
#include "api/core.h"
#include "base/mutex.h"
#include "base/testing/require_ok.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/client/wait.h"

namespace xpu::e2e {
namespace {

namespace kc = api::client;
using nlohmann::json;

std::unique_ptr<KubeSimProcess> StartSim(const std::vector<std::string>& flags = {}) {
  auto sim = KubeSimProcess::Start(XPU_KUBE_SIM_BINARY, flags);
  INFO(sim.status().ToString());
  REQUIRE_OK(sim);
  return std::move(sim).value();
}

std::unique_ptr<kc::Client> Connect(const KubeSimProcess& sim, kc::ClientOptions options = {}) {
  auto config = sim.Config();
  INFO(config.status().ToString());
  REQUIRE_OK(config);
  auto client = kc::Client::Create(*config, std::move(options));
  REQUIRE_OK(client);
  return std::move(client).value();
}

json Namespace(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

json Lease(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
  json meta = {{"name", name}};
  if (!labels.empty()) meta["labels"] = labels;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", meta},
          {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}};
}

json Slice(const std::string& name, const std::string& node, int devices) {
  json d = json::array();
  for (int i = 0; i < devices; ++i) {
    d.push_back({{"name", "gpu-" + std::to_string(i)}, {"attributes", {{"index", {{"int", i}}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", "xpu.dra.dev"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", d}}}};
}

kc::InformerOptions InNamespace(const std::string& ns) {
  kc::InformerOptions options;
  options.ns = ns;
  return options;
}

std::string Rv(const json& object) { return object["metadata"]["resourceVersion"]; }

TEST_CASE("client CRUD, conflicts and preconditions against kube-sim", "[e2e][client]") {
  auto sim = StartSim();
  auto client = Connect(*sim);
  REQUIRE(sim->url().rfind("https://", 0) == 0);

  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("xpu-dra")));
  const auto made = client->Create(kc::ResourceSlices(), "", Slice("n1-0", "n1", 4));
  INFO(made.status().ToString());
  REQUIRE_OK(made);
  CHECK((*made)["metadata"].contains("uid"));
  CHECK((*made)["apiVersion"] == "resource.k8s.io/v1");

  const auto again = client->Create(kc::ResourceSlices(), "", Slice("n1-0", "n1", 4));
  CHECK(again.status().code() == StatusCode::kAlreadyExists);
  CHECK(again.status().message().rfind("create resourceslices.resource.k8s.io n1-0: 409", 0) == 0);

  json updated = *made;
  updated["spec"]["pool"]["generation"] = 2;
  const auto up = client->Update(kc::ResourceSlices(), "", updated);
  REQUIRE_OK(up);
  CHECK((*up)["metadata"]["generation"] == 2);
  // The same resourceVersion again is stale: 409 Conflict, handed back to re-read.
  const auto stale = client->Update(kc::ResourceSlices(), "", updated);
  CHECK(stale.status().code() == StatusCode::kAborted);
  CHECK(stale.status().message().find("update resourceslices.resource.k8s.io n1-0") == 0);

  // Invalid objects come back as kInvalidArgument with the server's reason.
  const auto invalid = client->Create(kc::ResourceSlices(), "", Slice("n1-1", "n1", 129));
  CHECK(invalid.status().code() == StatusCode::kInvalidArgument);
  CHECK(invalid.status().message().find("422 Invalid") != std::string::npos);

  // Namespaced objects need their namespace; leases live in one.
  CHECK(client->Create(kc::Leases(), "absent", Lease("l1")).status().code() ==
        StatusCode::kNotFound);
  const auto lease = client->Create(kc::Leases(), "xpu-dra", Lease("l1"));
  REQUIRE_OK(lease);
  const auto got = client->Get(kc::Leases(), "xpu-dra", "l1");
  REQUIRE_OK(got);
  CHECK((*got)["spec"]["holderIdentity"] == "a");
  CHECK(client->Get(kc::Leases(), "xpu-dra", "l2").status().code() == StatusCode::kNotFound);

  // Status subresource of the project's CRD.
  json inv = {{"apiVersion", "xpu.dra.dev/v1alpha1"},
              {"kind", "NodeInventory"},
              {"metadata", {{"name", "n1"}}},
              {"status", {{"bootID", "b1"}}}};
  auto created_inv = client->Create(kc::NodeInventories(), "", inv);
  REQUIRE_OK(created_inv);
  CHECK_FALSE(created_inv->contains("status"));  // ignored on the main resource
  json with_status = *created_inv;
  with_status["status"] = {{"bootID", "b1"}};
  const auto st = client->UpdateStatus(kc::NodeInventories(), "", with_status);
  REQUIRE_OK(st);
  CHECK((*st)["status"]["bootID"] == "b1");

  // Delete with preconditions.
  kc::DeleteOptions wrong_uid;
  wrong_uid.uid = "not-the-uid";
  CHECK(client->Delete(kc::ResourceSlices(), "", "n1-0", wrong_uid).code() == StatusCode::kAborted);
  kc::DeleteOptions right;
  right.uid = (*up)["metadata"]["uid"].get<std::string>();
  right.resource_version = Rv(*up);
  CHECK(client->Delete(kc::ResourceSlices(), "", "n1-0", right).ok());
  CHECK(client->Get(kc::ResourceSlices(), "", "n1-0").status().code() == StatusCode::kNotFound);
  CHECK(client->Delete(kc::ResourceSlices(), "", "n1-0").code() == StatusCode::kNotFound);

  // Discovery: kube-sim serves resource.k8s.io/v1.
  CHECK(*client->ResourceApiVersion() == api::resource::ResourceVersion::kV1);
}

TEST_CASE("the observe hook sees every attempt's verb and status code", "[e2e][client]") {
  auto sim = StartSim();
  Mutex mu;
  std::vector<std::pair<std::string, int>> seen;
  kc::ClientOptions options;
  options.observe = [&](std::string_view verb, int code) {
    MutexLock lock(mu);
    seen.emplace_back(std::string(verb), code);
  };
  auto client = Connect(*sim, options);
  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("obs")));
  CHECK(client->Get(kc::Namespaces(), "", "nosuch").status().code() == StatusCode::kNotFound);
  REQUIRE_OK(client->List(kc::Namespaces(), ""));
  MutexLock lock(mu);
  CHECK(seen ==
        std::vector<std::pair<std::string, int>>{{"create", 201}, {"get", 404}, {"list", 200}});
}

TEST_CASE("client lists with selectors and pagination", "[e2e][client]") {
  auto sim = StartSim();
  auto client = Connect(*sim);
  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("ns")));
  for (int i = 0; i < 23; ++i) {
    REQUIRE_OK(client->Create(
        kc::Leases(), "ns", Lease("l" + std::to_string(i), {{"parity", i % 2 ? "odd" : "even"}})));
  }
  kc::ListOptions page;
  page.limit = 10;
  const auto first = client->List(kc::Leases(), "ns", page);
  REQUIRE_OK(first);
  CHECK(first->items.size() == 10);
  CHECK_FALSE(first->continue_token.empty());
  CHECK(first->items[0]["kind"] == "Lease");  // filled in when the server leaves it out

  const auto all = client->ListAll(kc::Leases(), "ns", page);
  REQUIRE_OK(all);
  std::set<std::string> names;
  for (const auto& item : all->items) names.insert(item["metadata"]["name"].get<std::string>());
  CHECK(names.size() == 23);
  CHECK(all->items.size() == 23);

  kc::ListOptions odd;
  odd.label_selector = "parity=odd";
  CHECK(client->ListAll(kc::Leases(), "ns", odd)->items.size() == 11);
  kc::ListOptions by_name;
  by_name.field_selector = "metadata.name=l7";
  const auto one = client->List(kc::Leases(), "", by_name);  // all namespaces
  REQUIRE_OK(one);
  REQUIRE(one->items.size() == 1);
  CHECK(one->items[0]["metadata"]["namespace"] == "ns");
}

TEST_CASE("client watches: events in order, resume, bookmarks and 410", "[e2e][client]") {
  auto sim = StartSim({"--history", "8"});
  auto client = Connect(*sim);
  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("ns")));
  const auto start = client->List(kc::Leases(), "ns");
  REQUIRE_OK(start);

  Mutex mu;
  std::vector<std::string> seen;  // "TYPE name rv"
  std::atomic<bool> stop{false};
  std::atomic<int> bookmarks{0};
  std::string last_rv = start->resource_version;
  kc::WatchOptions options;
  options.resource_version = start->resource_version;
  options.timeout_seconds = 30;
  std::thread watcher([&] {
    const Status s = client->Watch(
        kc::Leases(), "ns", options,
        [&](kc::WatchEvent& e) {
          MutexLock lock(mu);
          if (e.type == "BOOKMARK") {
            ++bookmarks;
          } else {
            seen.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
          }
          last_rv = e.object["metadata"]["resourceVersion"].get<std::string>();
          return seen.size() < 3;
        },
        &stop);
    CHECK(s.code() == StatusCode::kCancelled);  // the handler ended it
  });
  auto l1 = client->Create(kc::Leases(), "ns", Lease("a"));
  REQUIRE_OK(l1);
  json changed = *l1;
  changed["spec"]["holderIdentity"] = "b";
  REQUIRE_OK(client->Update(kc::Leases(), "ns", changed));
  REQUIRE_OK(client->Delete(kc::Leases(), "ns", "a"));
  watcher.join();
  REQUIRE(seen == std::vector<std::string>{"ADDED a", "MODIFIED a", "DELETED a"});

  // Resume from the last resourceVersion seen: only what came after.
  REQUIRE_OK(client->Create(kc::Leases(), "ns", Lease("b")));
  std::vector<std::string> resumed;
  options.resource_version = last_rv;
  const Status r = client->Watch(kc::Leases(), "ns", options, [&](kc::WatchEvent& e) {
    if (e.type != "BOOKMARK") {
      resumed.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
    }
    return resumed.empty();
  });
  CHECK(r.code() == StatusCode::kCancelled);
  CHECK(resumed == std::vector<std::string>{"ADDED b"});

  // Bookmarks arrive on a quiet watch (kube-sim sends one a second).
  int quiet_bookmarks = 0;
  std::string bookmark_rv;
  options.resource_version = Rv(*client->Get(kc::Leases(), "ns", "b"));
  const Status q = client->Watch(kc::Leases(), "ns", options, [&](kc::WatchEvent& e) {
    if (e.type == "BOOKMARK") {
      ++quiet_bookmarks;
      bookmark_rv = e.object["metadata"]["resourceVersion"].get<std::string>();
    }
    return quiet_bookmarks == 0;
  });
  CHECK(q.code() == StatusCode::kCancelled);
  CHECK(quiet_bookmarks == 1);
  CHECK_FALSE(bookmark_rv.empty());

  // Past the 8-event history, the old resourceVersion is gone: kOutOfRange (relist).
  for (int i = 0; i < 12; ++i) {
    REQUIRE_OK(client->Create(kc::Leases(), "ns", Lease("x" + std::to_string(i))));
  }
  options.resource_version = start->resource_version;
  const Status gone =
      client->Watch(kc::Leases(), "ns", options, [](kc::WatchEvent&) { return true; });
  CHECK(gone.code() == StatusCode::kOutOfRange);
  CHECK(gone.message().find("watch leases.coordination.k8s.io in ns: 410") == 0);
}

// Counts handler calls per object name.
struct Recorder {
  Mutex mu;
  std::map<std::string, int> adds, updates, deletes;
  void Attach(kc::Informer& informer) {
    informer.AddHandlers(
        {[this](const kc::ObjectPtr& o) { Bump(adds, *o); },
         [this](const kc::ObjectPtr&, const kc::ObjectPtr& n) { Bump(updates, *n); },
         [this](const kc::ObjectPtr& o) { Bump(deletes, *o); }});
  }
  void Bump(std::map<std::string, int>& m, const json& o) {
    MutexLock lock(mu);
    ++m[o["metadata"]["name"].get<std::string>()];
  }
  int At(std::map<std::string, int>& m, const std::string& key) {
    MutexLock lock(mu);
    const auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  }
  size_t Count(std::map<std::string, int>& m) {
    MutexLock lock(mu);
    size_t n = 0;
    for (const auto& [k, v] : m) n += static_cast<size_t>(v);
    return n;
  }
};

TEST_CASE("informer syncs, follows changes, and relists after 410", "[e2e][client][informer]") {
  auto sim = StartSim({"--history", "5"});
  auto client = Connect(*sim);
  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("ns")));
  for (int i = 0; i < 3; ++i) {
    REQUIRE_OK(client->Create(kc::Leases(), "ns", Lease("pre" + std::to_string(i))));
  }

  kc::Informer informer(client.get(), kc::Leases(), InNamespace("ns"));
  Recorder rec;
  rec.Attach(informer);
  informer.Start();
  REQUIRE(informer.WaitForSync(std::chrono::seconds(20)));
  CHECK(informer.size() == 3);
  CHECK(rec.Count(rec.adds) == 3);

  auto a = client->Create(kc::Leases(), "ns", Lease("a"));
  REQUIRE_OK(a);
  REQUIRE(Eventually([&] { return informer.Get("ns/a") != nullptr; }));
  json changed = *a;
  changed["spec"]["holderIdentity"] = "z";
  REQUIRE_OK(client->Update(kc::Leases(), "ns", changed));
  REQUIRE(Eventually([&] {
    auto o = informer.Get("ns/a");
    return o && (*o)["spec"]["holderIdentity"] == "z";
  }));
  // The handler runs after the cache has changed.
  CHECK(Eventually([&] { return rec.At(rec.updates, "a") == 1; }));

  // Stopped, the informer misses more than the 5-event history; started again it gets 410,
  // relists, and reports exactly the differences.
  informer.Stop();
  REQUIRE_OK(client->Delete(kc::Leases(), "ns", "pre0"));
  for (int i = 0; i < 8; ++i) {
    REQUIRE_OK(client->Create(kc::Leases(), "ns", Lease("new" + std::to_string(i))));
  }
  informer.Start();
  REQUIRE(Eventually([&] { return informer.size() == 3 - 1 + 1 + 8; }));
  // The cache changes before the handlers are called: wait for them too.
  REQUIRE(
      Eventually([&] { return rec.Count(rec.adds) + rec.Count(rec.deletes) >= 3 + 1 + 8 + 1; }));
  CHECK(informer.stats().relists_gone == 1);
  CHECK(informer.Get("ns/pre0") == nullptr);
  CHECK(rec.At(rec.deletes, "pre0") == 1);
  CHECK(rec.Count(rec.adds) == 3 + 1 + 8);
  for (int i = 0; i < 8; ++i) CHECK(rec.At(rec.adds, "new" + std::to_string(i)) == 1);
  CHECK(rec.Count(rec.updates) == 1);
  informer.Stop();
}

TEST_CASE("typed informer keeps decoded objects and leaves out what does not decode",
          "[e2e][client][informer]") {
  auto sim = StartSim();
  auto client = Connect(*sim);
  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("ns")));
  REQUIRE_OK(client->Create(kc::Leases(), "ns", Lease("good")));
  json bad = Lease("bad");
  bad["spec"]["leaseDurationSeconds"] = "fifteen";  // kube-sim stores it; the codec refuses it
  REQUIRE_OK(client->Create(kc::Leases(), "ns", bad));

  kc::TypedInformer<api::core::Lease> leases(client.get(), kc::Leases(), InNamespace("ns"));
  std::atomic<int> adds{0};
  leases.AddHandlers({[&](const auto& lease) {
                        CHECK(lease->spec.lease_duration_seconds == 15);
                        ++adds;
                      },
                      nullptr, nullptr});
  leases.Start();
  REQUIRE(leases.WaitForSync(std::chrono::seconds(20)));
  CHECK(leases.size() == 1);
  REQUIRE(leases.Get("ns/good"));
  CHECK(leases.Get("ns/good")->spec.holder_identity == "a");
  CHECK(leases.Get("ns/bad") == nullptr);
  CHECK(leases.stats().decode_errors == 1);
  CHECK(leases.last_decode_error().find("decode leases.coordination.k8s.io ns/bad: "
                                        "spec.leaseDurationSeconds") == 0);
  CHECK(adds == 1);

  // A fix of the bad object arrives as an add; the informer keeps going.
  auto stored = client->Get(kc::Leases(), "ns", "bad");
  REQUIRE_OK(stored);
  (*stored)["spec"]["leaseDurationSeconds"] = 15;
  REQUIRE_OK(client->Update(kc::Leases(), "ns", *stored));
  REQUIRE(Eventually([&] { return leases.Get("ns/bad") != nullptr; }));
  CHECK(adds == 2);
  leases.Stop();
}

TEST_CASE("client retries injected faults, the informer loses and duplicates nothing",
          "[e2e][client][informer]") {
  // 500s, dropped connections and watches cut after 5 events. (429 and 503 carry Retry-After:
  // 1 s, which the Retry-After test covers; here they would only make the test slow.)
  auto sim = StartSim({"--fault-rate", "0.2", "--fault-codes", "500", "--drop-rate", "0.1",
                       "--watch-close-after", "5", "--seed", "7"});
  kc::ClientOptions options;
  options.backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(50), 2, 12,
                     std::chrono::seconds(60)};
  options.seed = 11;
  auto client = Connect(*sim, options);
  // Faults hit every kind of request, so even setting up goes through the retries.
  REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("ns")));

  kc::Informer informer(client.get(), kc::Leases(), InNamespace("ns"));
  Recorder rec;
  rec.Attach(informer);
  informer.Start();
  REQUIRE(informer.WaitForSync(std::chrono::seconds(30)));

  constexpr int kObjects = 40;
  for (int i = 0; i < kObjects; ++i) {
    const auto made = client->Create(kc::Leases(), "ns", Lease("l" + std::to_string(i)));
    INFO(made.status().ToString());
    REQUIRE_OK(made);
  }
  for (int i = 0; i < kObjects; i += 2) {
    REQUIRE_OK(client->Delete(kc::Leases(), "ns", "l" + std::to_string(i)));
  }
  const auto truth = client->ListAll(kc::Leases(), "ns");
  REQUIRE_OK(truth);
  REQUIRE(truth->items.size() == kObjects / 2);
  REQUIRE(Eventually([&] { return rec.Count(rec.deletes) == kObjects / 2; }));
  CHECK(informer.size() == kObjects / 2);
  for (const auto& item : truth->items) {
    const auto cached = informer.Get("ns/" + item["metadata"]["name"].get<std::string>());
    REQUIRE(cached);
    CHECK(Rv(*cached) == Rv(item));
  }
  CHECK(rec.Count(rec.adds) == kObjects);
  for (int i = 0; i < kObjects; ++i) CHECK(rec.At(rec.adds, "l" + std::to_string(i)) == 1);
  CHECK(rec.Count(rec.updates) == 0);
  CHECK(client->stats().retries > 0);
  CHECK(informer.stats().watches > kObjects / 5);  // the watch was cut and resumed many times
  informer.Stop();
}

TEST_CASE("client honours 429 Retry-After", "[e2e][client]") {
  auto sim = StartSim({"--fault-rate", "0.5", "--fault-codes", "429", "--seed", "3"});
  kc::ClientOptions options;
  options.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(10), 2, 20,
                     std::chrono::seconds(60)};
  auto client = Connect(*sim, options);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) {
    REQUIRE_OK(client->Create(kc::Namespaces(), "", Namespace("n" + std::to_string(i))));
  }
  const auto throttled = client->stats().throttled;
  CHECK(throttled > 0);
  // Each 429 carried Retry-After: 1, which outweighs the 10 ms backoff cap.
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(throttled));
}

TEST_CASE("client authentication and TLS verification", "[e2e][client]") {
  auto sim = StartSim({"--token", "right-token"});
  auto config = sim->Config();
  REQUIRE_OK(config);
  CHECK(config->token == "right-token");

  kc::ClusterConfig wrong = *config;
  wrong.token = "wrong-token";
  auto bad = kc::Client::Create(wrong);
  REQUIRE_OK(bad);
  const auto denied = (*bad)->Get(kc::Nodes(), "", "n1");
  CHECK(denied.status().code() == StatusCode::kUnauthenticated);
  CHECK(denied.status().message().find("get nodes n1: 401") == 0);
  CHECK(denied.status().message().find("wrong-token") == std::string::npos);

  // Another server's CA does not verify this one.
  auto other = StartSim();
  kc::ClusterConfig mismatched = *config;
  mismatched.ca_pem = other->Config()->ca_pem;
  auto untrusted = kc::Client::Create(mismatched);
  REQUIRE_OK(untrusted);
  CHECK((*untrusted)->Get(kc::Nodes(), "", "n1").status().code() ==
        StatusCode::kFailedPrecondition);
  // tls-server-name: the certificate (IP:127.0.0.1, DNS:localhost) is checked against that name.
  kc::ClusterConfig named = *config;
  named.tls_server_name = "localhost";
  CHECK((*kc::Client::Create(named))->Get(kc::Nodes(), "", "n1").status().code() ==
        StatusCode::kNotFound);
  named.tls_server_name = "api.other.example";
  const auto wrong_name = (*kc::Client::Create(named))->Get(kc::Nodes(), "", "n1");
  CHECK(wrong_name.status().code() == StatusCode::kFailedPrecondition);
  // Neither does the system trust store.
  kc::ClusterConfig system_store = *config;
  system_store.ca_pem.clear();
  CHECK((*kc::Client::Create(system_store))->Get(kc::Nodes(), "", "n1").status().code() ==
        StatusCode::kFailedPrecondition);
}

TEST_CASE("client authenticates with a client certificate", "[e2e][client]") {
  auto sim = StartSim();
  auto config = api::client::LoadKubeconfig(sim->client_cert_kubeconfig());
  INFO(config.status().ToString());
  REQUIRE_OK(config);
  CHECK(config->token.empty());
  CHECK_FALSE(config->client_cert_pem.empty());
  CHECK(config->Describe().find("client certificate") != std::string::npos);
  auto client = kc::Client::Create(*config);
  REQUIRE_OK(client);
  CHECK((*client)->Create(kc::Namespaces(), "", Namespace("by-cert")).ok());
  CHECK((*client)->Get(kc::Namespaces(), "", "by-cert").ok());

  // Without the certificate (and no token) the same server says 401.
  kc::ClusterConfig anonymous = *config;
  anonymous.client_cert_pem.clear();
  anonymous.client_key_pem.clear();
  CHECK((*kc::Client::Create(anonymous))->Get(kc::Nodes(), "", "n1").status().code() ==
        StatusCode::kUnauthenticated);
}

TEST_CASE("client falls back to the served resource.k8s.io version and speaks v1 to callers",
          "[e2e][client]") {
  for (const auto& [served, expected] :
       std::vector<std::pair<std::string, api::resource::ResourceVersion>>{
           {"v1beta1", api::resource::ResourceVersion::kV1beta1},
           {"v1beta2,v1beta1", api::resource::ResourceVersion::kV1beta2}}) {
    INFO("served: " << served);
    auto sim = StartSim({"--resource-versions", served});
    auto client = Connect(*sim);
    REQUIRE(*client->ResourceApiVersion() == expected);
    // The v1 path is not there, as on a 1.32 or 1.33 cluster.
    CHECK(client->GetPath("/apis/resource.k8s.io/v1/resourceslices").status().code() ==
          StatusCode::kNotFound);

    kc::Informer slices(client.get(), kc::ResourceSlices());
    slices.Start();
    REQUIRE(slices.WaitForSync(std::chrono::seconds(20)));
    const auto made = client->Create(kc::ResourceSlices(), "", Slice("n1-0", "n1", 2));
    INFO(made.status().ToString());
    REQUIRE_OK(made);
    CHECK((*made)["apiVersion"] == "resource.k8s.io/v1");
    CHECK((*made)["spec"]["devices"][0]["attributes"]["index"]["int"] == 0);
    CHECK_FALSE((*made)["spec"]["devices"][0].contains("basic"));
    const auto listed = client->ListAll(kc::ResourceSlices(), "");
    REQUIRE_OK(listed);
    REQUIRE(listed->items.size() == 1);
    CHECK(listed->items[0]["apiVersion"] == "resource.k8s.io/v1");
    // Watch events are converted too.
    REQUIRE(Eventually([&] { return slices.Get("n1-0") != nullptr; }));
    CHECK((*slices.Get("n1-0"))["apiVersion"] == "resource.k8s.io/v1");
    CHECK((*slices.Get("n1-0"))["spec"]["devices"][1]["attributes"]["index"]["int"] == 1);
    // Updates round-trip through the beta too.
    json changed = *made;
    changed["spec"]["pool"]["generation"] = 2;
    const auto up = client->Update(kc::ResourceSlices(), "", changed);
    REQUIRE_OK(up);
    CHECK((*up)["spec"]["pool"]["generation"] == 2);
    slices.Stop();
  }
}

TEST_CASE("client requests time out", "[e2e][client]") {
  // A socket that accepts connections (the kernel's backlog) but never answers.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  kc::ClusterConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  kc::ClientOptions options;
  options.timeout = std::chrono::milliseconds(300);
  auto client = kc::Client::Create(config, options);
  REQUIRE_OK(client);
  const auto got = (*client)->Get(kc::Nodes(), "", "n1");
  CHECK(got.status().code() == StatusCode::kDeadlineExceeded);
  CHECK(got.status().message().find("get nodes n1: ") == 0);
  CHECK((*client)->stats().requests == 1);  // a timeout is not retried
  ::close(fd);
}

}  // namespace
}  // namespace xpu::e2e
