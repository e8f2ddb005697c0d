// The driver's logic with its claims read from in-memory objects (api/client/testing/
// fake_objects.h): no server. The disk is a temporary directory. driver_test.cc runs the same
// driver against kube-sim on the fixture host trees.
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <set>

#include "api/client/testing/fake_objects.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/fake_claims.h"

namespace xpu::plugin {
namespace {

namespace res = api::resource;
using api::client::ObjectKey;
using api::client::testing::FakeObjects;
using api::client::testing::FakeVerb;

// Claims listed `page_size` a page; counts the pages, fails the next one on demand.
class FakeLister : public ClaimLister {
 public:
  StatusOr<Page> List(const std::string& ns, const std::string& continue_token,
                      const Wanted& wanted) override {
    ++pages;
    listed.push_back(ns);
    if (!fail_next.ok()) return std::exchange(fail_next, OkStatus());
    std::vector<const res::ResourceClaim*> in_ns;
    for (const res::ResourceClaim& c : items) {
      if (ns.empty() || c.metadata.namespace_name == ns) in_ns.push_back(&c);
    }
    const size_t start = continue_token.empty() ? 0 : std::stoul(continue_token);
    Page page;
    size_t i = start;
    for (; i < in_ns.size() && i < start + page_size; ++i) {
      if (wanted(in_ns[i]->metadata.namespace_name, in_ns[i]->metadata.name)) {
        page.claims.push_back(*in_ns[i]);
      }
    }
    if (i < in_ns.size()) page.continue_token = std::to_string(i);
    return page;
  }
  // Claims of `ns` that no batch asks for (listed all the same).
  void AddBystanders(const std::string& ns, int n) {
    for (int i = 0; i < n; ++i) {
      res::ResourceClaim c;
      c.metadata.namespace_name = ns;
      c.metadata.name = "bystander-" + std::to_string(i);
      items.push_back(c);
    }
  }
  std::vector<res::ResourceClaim> items;
  size_t page_size = 500;
  int pages = 0;
  std::vector<std::string> listed;  // the namespace of each page asked for
  Status fail_next;
};

struct FakeNode {
  xpu::testing::TempDir dir;
  std::shared_ptr<FakeObjects<res::ResourceClaim>> claims =
      std::make_shared<FakeObjects<res::ResourceClaim>>("resourceclaims", true);
  std::shared_ptr<FakeLister> lister;  // set: large batches list their namespace
  std::shared_ptr<const api::NodeInventory> inventory =
      std::make_shared<api::NodeInventory>(api::testing::ExampleNodeInventory());
  std::vector<std::string> log;

  std::unique_ptr<Driver> NewDriver() {
    DriverOptions o;
    o.node_name = "node-a3-1";
    o.host_root = dir.path() + "/host";
    o.cdi_dir = dir.path() + "/cdi";
    o.state_dir = dir.path() + "/state";
    // The host root is an empty folder: no driver files (driver_test.cc tests them).
    o.driver_files = driverfiles::Policy{driverfiles::Mode::kOff, {}};
    std::filesystem::create_directories(o.host_root);
    return std::make_unique<Driver>(
        o, claims, [this] { return inventory; },
        [this](const std::string& line) { log.push_back(line); }, nullptr, lister);
  }

  // NewDriver(), started.
  std::unique_ptr<Driver> StartedDriver() {
    std::unique_ptr<Driver> driver = NewDriver();
    REQUIRE_OK(driver->Start());
    return driver;
  }

  // An allocated claim in "default" (also listed when there is a lister); its uid.
  std::string Claim(const std::string& name, const std::vector<std::string>& devices) {
    std::string uid = testing::PutAllocatedClaim(*claims, name, "npus", "node-a3-1", devices,
                                                 "0b5f1c2e-7d3a-4e6b-9c8d-00000000000", ++uids);
    if (lister != nullptr) {
      lister->items.push_back(*claims->Find(ObjectKey::Namespaced("default", name)));
    }
    return uid;
  }
  int uids = 0;
};

TEST_CASE("driver (fakes): prepares from the claim it reads, and checks uid and allocation") {
  FakeNode node;
  auto driver = node.StartedDriver();
  const std::string a = node.Claim("a", {"npu-0"});
  auto out = driver->Prepare({{"default", "a", a}});
  INFO(out.at(a).error);
  REQUIRE(out.at(a).error.empty());
  CHECK(out.at(a).devices.at(0).device == "npu-0");
  CHECK(driver->Snapshot().claims.contains(a));
  const int gets = node.claims->calls(FakeVerb::kGet);

  // Asked again: answered from the checkpoint, without reading the claim.
  CHECK(driver->Prepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.claims->calls(FakeVerb::kGet) == gets);

  // The kubelet names a uid the claim does not have (it was replaced).
  const std::string b = node.Claim("b", {"npu-1"});
  const std::string stale = "0b5f1c2e-7d3a-4e6b-9c8d-0000000000ff";
  CHECK(driver->Prepare({{"default", "b", stale}}).at(stale).error.find("has uid " + b) !=
        std::string::npos);

  // Not allocated.
  res::ResourceClaim unallocated = *node.claims->Find(ObjectKey::Namespaced("default", "b"));
  unallocated.status.allocation.reset();
  node.claims->Put(unallocated);
  CHECK(driver->Prepare({{"default", "b", b}}).at(b).error.find("is not allocated") !=
        std::string::npos);

  // The API does not answer: a retryable error, nothing prepared.
  const std::string c = node.Claim("c", {"npu-1"});
  node.claims->FailNext(FakeVerb::kGet, UnavailableError("get resourceclaims default/c: 503"));
  CHECK(driver->Prepare({{"default", "c", c}}).at(c).error.find("503") != std::string::npos);
  CHECK_FALSE(driver->Snapshot().claims.contains(c));
}

TEST_CASE("driver (fakes): a claim deleted from the API is unprepared, an API error keeps it") {
  FakeNode node;
  auto driver = node.StartedDriver();
  const std::string a = node.Claim("a", {"npu-0"});
  const std::string b = node.Claim("b", {"npu-1"});
  REQUIRE(driver->Prepare({{"default", "a", a}, {"default", "b", b}}).at(b).error.empty());
  REQUIRE(driver->Snapshot().claims.size() == 2);

  REQUIRE_OK(node.claims->Delete(ObjectKey::Namespaced("default", "b"), {}));
  // a's read (entries are checked in uid order: a first) fails: a is kept for the next pass,
  // and the deleted b is still collected.
  node.claims->FailNext(FakeVerb::kGet, UnavailableError("503"));
  REQUIRE_OK(driver->CollectDeletedClaims());
  CHECK(driver->Snapshot().claims.contains(a));
  CHECK_FALSE(driver->Snapshot().claims.contains(b));

  // a replaced by a new claim of the same name (another uid): its entry goes too.
  res::ResourceClaim replaced = *node.claims->Find(ObjectKey::Namespaced("default", "a"));
  replaced.metadata.uid = "0b5f1c2e-7d3a-4e6b-9c8d-0000000000aa";
  node.claims->Put(replaced);
  REQUIRE_OK(driver->CollectDeletedClaims());
  CHECK(driver->Snapshot().claims.empty());
  // Both devices are free again.
  const std::string d = node.Claim("d", {"npu-0", "npu-1"});
  CHECK(driver->Prepare({{"default", "d", d}}).at(d).error.empty());
}

// `n` claims named missing-<i> that do not exist, with UUIDs of their own, in "default" or
// (`spread`) each in its own namespace ns-<i>.
std::vector<ClaimRef> MissingClaims(int n, bool spread = false) {
  std::vector<ClaimRef> out;
  for (int i = 0; i < n; ++i) {
    const std::string serial = std::to_string(i);
    out.push_back({spread ? "ns-" + serial : "default", "missing-" + serial,
                   "7c1e0000-0000-4000-8000-" + std::string(12 - serial.size(), '0') + serial});
  }
  return out;
}

std::vector<const ClaimRef*> Pointers(const std::vector<ClaimRef>& refs) {
  std::vector<const ClaimRef*> out;
  for (const ClaimRef& r : refs) out.push_back(&r);
  return out;
}

CallBounds KubeletBounds() {
  CallBounds b;
  b.deadline = CallBounds::Clock::now() + kKubeletCallTimeout;
  return b;
}

TEST_CASE("claim lookup: which namespaces a batch lists") {
  const int below = static_cast<int>(kListAtClaims) - 1;
  SECTION("a pod's batch (few claims, one namespace): GETs only") {
    const std::vector<ClaimRef> refs = MissingClaims(below);
    const ListPlan plan = PlanLists(Pointers(refs));
    CHECK(plan.lists.empty());
    CHECK(plan.list_of == std::vector<int>(refs.size(), -1));
  }
  SECTION("kListAtClaims claims of a namespace: it is listed; the few others are read") {
    std::vector<ClaimRef> refs = MissingClaims(below + 1);
    refs.push_back({"other", "x", "u"});
    const ListPlan plan = PlanLists(Pointers(refs));
    CHECK(plan.lists == std::vector<std::string>{"default"});
    CHECK(plan.list_of.front() == 0);
    CHECK(plan.list_of.back() == -1);
  }
  SECTION("many claims in small namespaces: one list of all namespaces for them") {
    std::vector<ClaimRef> refs = MissingClaims(below + 1);
    const std::vector<ClaimRef> spread = MissingClaims(below + 1, true);
    refs.insert(refs.end(), spread.begin(), spread.end());
    const ListPlan plan = PlanLists(Pointers(refs));
    CHECK(plan.lists == std::vector<std::string>{"default", ""});
    CHECK(plan.list_of.front() == 0);
    CHECK(plan.list_of.back() == 1);
  }
}

TEST_CASE("driver (fakes): 10,000 missing claims and a real one: one LIST, the real one prepared") {
  FakeNode node;
  node.lister = std::make_shared<FakeLister>();
  auto driver = node.StartedDriver();
  // Other claims of the namespace (and of another), not in the batch: listed, not kept.
  node.lister->AddBystanders("default", 300);
  node.lister->AddBystanders("other", 300);
  std::vector<ClaimRef> batch = MissingClaims(10'000);
  const std::string real = node.Claim("real", {"npu-0"});
  batch.insert(batch.begin() + 5000, ClaimRef{"default", "real", real});

  const auto started = CallBounds::Clock::now();
  std::map<std::string, PrepareResult> out = driver->Prepare(batch, KubeletBounds());
  INFO("took " << std::chrono::duration<double>(CallBounds::Clock::now() - started).count()
               << " s");
  CHECK(CallBounds::Clock::now() - started < std::chrono::seconds(20));
  REQUIRE(out.size() == batch.size());  // every uid of the batch is a key of the answer
  INFO(out.at(real).error);
  REQUIRE(out.at(real).error.empty());
  CHECK(out.at(real).devices.at(0).device == "npu-0");
  CHECK(driver->Snapshot().claims.contains(real));
  CHECK(node.lister->pages == 1);
  CHECK(node.claims->calls(FakeVerb::kGet) == 0);
  for (const ClaimRef& ref : batch) {
    if (ref.uid == real) continue;
    REQUIRE(out.at(ref.uid).error == "ResourceClaim default/" + ref.name +
                                         ": not found (not in the list of namespace default)");
  }
  CHECK(driver->stats().prepare_error == 10'000);
}

TEST_CASE("driver (fakes): a refused LIST falls back to a GET per claim, with the same answers") {
  FakeNode node;
  node.lister = std::make_shared<FakeLister>();
  auto driver = node.StartedDriver();
  std::vector<ClaimRef> batch = MissingClaims(100);
  const std::string real = node.Claim("real", {"npu-0"});
  batch.push_back({"default", "real", real});
  node.lister->fail_next =
      Status(StatusCode::kPermissionDenied, "list resourceclaims in default: 403 Forbidden");
  std::map<std::string, PrepareResult> out = driver->Prepare(batch, KubeletBounds());
  REQUIRE(out.size() == batch.size());
  CHECK(out.at(real).error.empty());
  CHECK(node.claims->calls(FakeVerb::kGet) == 101);
  CHECK_THAT(out.at(batch[0].uid).error,
             Catch::Contains("default/missing-0") && Catch::Contains("not found"));
  CHECK(std::any_of(node.log.begin(), node.log.end(), [](const std::string& l) {
    return l ==
           "list resourceclaims in default: 403 Forbidden; reading the 101 claims of "
           "namespace default it did not find one by one";
  }));
}

TEST_CASE("driver (fakes): 10,000 missing claims in as many namespaces: one LIST of them all") {
  FakeNode node;
  node.lister = std::make_shared<FakeLister>();
  node.lister->AddBystanders("default", 300);
  auto driver = node.StartedDriver();
  std::vector<ClaimRef> batch = MissingClaims(10'000, true);
  const std::string real = node.Claim("real", {"npu-0"});
  batch.push_back({"default", "real", real});
  std::map<std::string, PrepareResult> out = driver->Prepare(batch, KubeletBounds());
  REQUIRE(out.size() == batch.size());
  INFO(out.at(real).error);
  CHECK(out.at(real).error.empty());
  CHECK(node.lister->listed == std::vector<std::string>{""});
  CHECK(node.claims->calls(FakeVerb::kGet) == 0);
  CHECK(out.at(batch[7].uid).error ==
        "ResourceClaim ns-7/missing-7: not found (not in the list of all namespaces)");
}

TEST_CASE("driver (fakes): a LIST costing more requests than the GETs stops, the GETs finish") {
  FakeNode node;
  node.lister = std::make_shared<FakeLister>();
  node.lister->page_size = 1;  // 200 pages for 70 wanted claims
  auto driver = node.StartedDriver();
  node.lister->AddBystanders("default", 199);
  const std::string real = node.Claim("real", {"npu-0"});
  std::vector<ClaimRef> batch = MissingClaims(69);
  batch.push_back({"default", "real", real});
  std::map<std::string, PrepareResult> out = driver->Prepare(batch, KubeletBounds());
  REQUIRE(out.size() == 70);
  CHECK(out.at(real).error.empty());
  CHECK(node.lister->pages == 70);  // never more than the 70 GETs it would replace
  CHECK(node.claims->calls(FakeVerb::kGet) == 70);
  CHECK_THAT(out.at(batch[0].uid).error, Catch::Contains("not found"));
}

TEST_CASE("driver (fakes): lookups that fail stop at the bound like those that succeed") {
  FakeNode node;  // no lister: a GET per claim
  auto driver = node.StartedDriver();
  std::vector<ClaimRef> batch = MissingClaims(200);
  const std::string real = node.Claim("real", {"npu-0"});
  batch.push_back({"default", "real", real});
  // The caller goes away after 16 GETs, all of them 404s.
  CallBounds bounds = KubeletBounds();
  bounds.cancelled = [&node] { return node.claims->calls(FakeVerb::kGet) >= 16; };
  std::map<std::string, PrepareResult> out = driver->Prepare(batch, bounds);
  REQUIRE(out.size() == batch.size());
  CHECK(node.claims->calls(FakeVerb::kGet) == 16);
  CHECK_THAT(out.at(batch[0].uid).error, Catch::Contains("not found"));
  CHECK(out.at(real).error == "not prepared: the caller cancelled the call; retry");

  SECTION("and with a lister, a deadline too near starts no LIST page") {
    FakeNode listed;
    listed.lister = std::make_shared<FakeLister>();
    auto d = listed.StartedDriver();
    CallBounds near;
    near.deadline = CallBounds::Clock::now() + std::chrono::milliseconds(100);
    std::map<std::string, PrepareResult> late = d->Prepare(MissingClaims(100), near);
    CHECK(late.size() == 100);
    CHECK(listed.lister->pages == 0);
    CHECK(listed.claims->calls(FakeVerb::kGet) == 0);
    CHECK_THAT(late.begin()->second.error, Catch::Contains("deadline is near"));
  }
}

}  // namespace
}  // namespace xpu::plugin
