// Energy per claim on a fake clock: the accounting (power x time, the energy counter, health
// events and XIDs), when a status write is due, the merge into status.devices and the writer
// against a fake API (conflicts, a server that drops the field, refusals), and the service seam.
#include "kubeletplugin/plugin/claim_energy.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kubeletplugin/plugin/claim_status_writer.h"

namespace xpu::plugin {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPci0 = "0000:18:00.0";
constexpr const char* kPci1 = "0000:2A:00.0";

EnergyClaim TwoGpus() {
  return {.ref = {.ns = "default", .name = "e1", .uid = "u1"},
          .devices = {{.pool = "n1", .device = "gpu-0", .pci_address = kPci0, .share_id = ""},
                      {.pool = "n1", .device = "gpu-1", .pci_address = kPci1, .share_id = ""}}};
}

// A reading of gpu-0's PCI address (upper or lower case alike).
EnergyReading At0(std::optional<double> watts, std::optional<double> joules = std::nullopt) {
  return {.pci_address = "0000:18:00.0",
          .watts = watts,
          .energy_joules = joules,
          .xid_total = std::nullopt};
}

const DeviceEnergy& Dev(const ClaimEnergy& c, const std::string& name) {
  for (const DeviceEnergy& d : c.devices) {
    if (d.device == name) return d;
  }
  FAIL("no device " << name);
  return c.devices.front();
}

TEST_CASE("power x time: each reading holds until the next, prepare to unprepare", "[energy]") {
  struct Step {
    std::chrono::milliseconds after;  // on the clock since the previous step
    std::optional<double> watts;      // a reading of gpu-0; nullopt: prepare (first) or unprepare
  };
  struct Case {
    const char* name;
    std::optional<double> before;  // a reading before prepare
    std::vector<Step> steps;       // between prepare and unprepare, then unprepare
    double joules, average, peak, seconds;
    int64_t samples;
  };
  const Case cases[] = {
      {"constant 72 W at 1 Hz for 8 s, a reading before prepare",
       72.0,
       {{1s, 72}, {1s, 72}, {1s, 72}, {1s, 72}, {1s, 72}, {1s, 72}, {1s, 72}, {1s, std::nullopt}},
       576,
       72,
       72,
       8,
       7},
      {"no reading before prepare: the first one covers the first interval",
       std::nullopt,
       {{500ms, 100}, {1s, 100}, {500ms, std::nullopt}},
       200,
       100,
       100,
       2,
       2},
      {"a step: the power before prepare, then 200 W, then 100 W",
       100.0,
       {{1s, 200}, {1s, 100}, {1s, std::nullopt}},
       400,
       400.0 / 3,
       200,
       3,
       2},
      {"no reading at all: nothing accounted", std::nullopt, {{3s, std::nullopt}}, 0, 0, 0, 3, 0},
      {"a reading without power keeps the last power",
       50.0,
       {{1s, std::nullopt}, {1s, std::nullopt}},
       100,
       50,
       50,
       2,
       0},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    FakeClock clock;
    ClaimEnergyLedger ledger(clock, {});
    if (c.before) ledger.OnReadings({At0(c.before)});
    clock.Advance(300ms);
    ledger.Start(TwoGpus());
    for (size_t i = 0; i < c.steps.size(); ++i) {
      clock.Advance(c.steps[i].after);
      if (i + 1 == c.steps.size()) break;
      ledger.OnReadings({At0(c.steps[i].watts)});
    }
    ledger.Stop("u1", clock.Now());
    clock.Advance(10s);  // nothing moves after unprepare
    ledger.OnReadings({At0(1000)});
    const std::vector<ClaimEnergy> accounts = ledger.Accounts();
    REQUIRE(accounts.size() == 1);
    CHECK(accounts[0].final);
    const DeviceEnergy& d = Dev(accounts[0], "gpu-0");
    CHECK(d.joules == Approx(c.joules));
    CHECK(d.average_watts == Approx(c.average));
    CHECK(d.peak_watts == Approx(c.peak));
    CHECK(d.seconds_held == Approx(c.seconds));
    CHECK(d.samples == c.samples);
    CHECK(d.source == "power-x-time");
    CHECK(d.final);
    CHECK(d.since == "prepare");
    CHECK(Dev(accounts[0], "gpu-1").joules == 0);  // never read
  }
}

TEST_CASE("the energy counter where every reading has one, power x time at the edges", "[energy]") {
  FakeClock clock;
  ClaimEnergyLedger ledger(clock, {});
  ledger.Start(TwoGpus());
  clock.Advance(1s);
  ledger.OnReadings({At0(100, 5000)});  // head: 1 s at 100 W (the first reading's power)
  clock.Advance(2s);
  ledger.OnReadings({At0(100, 5250)});  // the counter says 250 J, not 200
  clock.Advance(1s);
  ledger.Stop("u1", clock.Now());  // tail: 1 s at 100 W
  DeviceEnergy d = Dev(ledger.Accounts()[0], "gpu-0");
  CHECK(d.source == "nvml-energy-counter");
  CHECK(d.joules == Approx(100 + 250 + 100));
  CHECK(d.average_watts == Approx(450.0 / 4));
  CHECK(d.peak_watts >= d.average_watts);

  SECTION("a counter that goes back (a driver reload) is not trusted") {
    FakeClock clock2;
    ClaimEnergyLedger again(clock2, {});
    again.Start(TwoGpus());
    clock2.Advance(1s);
    again.OnReadings({At0(100, 5000)});
    clock2.Advance(1s);
    again.OnReadings({At0(100, 10)});
    clock2.Advance(1s);
    again.OnReadings({At0(100, 20)});
    d = Dev(again.Accounts()[0], "gpu-0");
    CHECK(d.source == "power-x-time");
    CHECK(d.joules == Approx(300));
  }
}

TEST_CASE("health events and XIDs count on held devices only, while held", "[energy]") {
  FakeClock clock;
  ClaimEnergyLedger ledger(clock, {});
  ledger.OnHealth("n1", "gpu-0", true);  // before prepare: not the claim's
  ledger.OnHealth("n1", "gpu-0", false);
  ledger.OnReadings({{.pci_address = kPci1, .watts = 1, .energy_joules = {}, .xid_total = 4}});
  ledger.Start(TwoGpus());
  ledger.OnHealth("n1", "gpu-0", true);
  ledger.OnHealth("n1", "gpu-0", true);  // still unhealthy: one event
  ledger.OnHealth("n1", "gpu-0", false);
  ledger.OnHealth("n1", "gpu-0", true);
  ledger.OnHealth("n1", "gpu-2", true);  // another device
  ledger.OnXid("gpu-0");
  ledger.OnReadings({{.pci_address = kPci1, .watts = 1, .energy_joules = {}, .xid_total = 7}});
  ledger.Stop("u1", clock.Now());
  ledger.OnXid("gpu-0");  // after unprepare
  const ClaimEnergy a = ledger.Accounts()[0];
  CHECK(Dev(a, "gpu-0").health_events == 2);
  CHECK(Dev(a, "gpu-0").xids == 1);
  CHECK(Dev(a, "gpu-1").health_events == 0);
  CHECK(Dev(a, "gpu-1").xids == 3);  // the telemetry's count since prepare
}

TEST_CASE("EnergyStatusDue: every period while held, then the final write with retries",
          "[energy]") {
  FakeClock clock;
  const Clock::SteadyTime t0 = clock.Now();
  const EnergyStatusOptions options{.period = 30s, .final_retry = 5s, .final_attempts = 3};
  struct Case {
    const char* name;
    EnergyWriteState state;
    std::chrono::seconds now;
    bool due;
  };
  const Case cases[] = {
      {"held, within the first period", {.started = t0}, 29s, false},
      {"held, one period after prepare", {.started = t0}, 30s, true},
      {"held, written 10 s ago", {.started = t0, .last_attempt = t0 + 50s}, 60s, false},
      {"held, written a period ago", {.started = t0, .last_attempt = t0 + 50s}, 80s, true},
      {"unprepared: the final write at once",
       {.started = t0, .ended = t0 + 5s, .last_attempt = t0 + 4s},
       5s,
       true},
      {"final write failed 2 s ago",
       {.started = t0, .ended = t0, .last_attempt = t0 + 1s, .final_attempts = 1},
       3s,
       false},
      {"final write failed 5 s ago",
       {.started = t0, .ended = t0, .last_attempt = t0 + 1s, .final_attempts = 1},
       6s,
       true},
      {"final write tried 3 times",
       {.started = t0, .ended = t0, .last_attempt = t0 + 1s, .final_attempts = 3},
       60s,
       false},
      {"final written", {.started = t0, .ended = t0, .final_written = true}, 60s, false},
      {"the writer gave up", {.started = t0, .stopped = true}, 90s, false},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(EnergyStatusDue(c.state, t0 + c.now, options) == c.due);
  }
  CHECK_FALSE(EnergyStatusDue({.started = t0, .ended = t0}, t0 + 1s, {.period = 0s}));
}

TEST_CASE("the ledger hands out due accounts and forgets finished ones after a while", "[energy]") {
  FakeClock clock;
  ClaimEnergyLedger ledger(clock, {.period = 30s, .keep_after_final = 5min});
  ledger.Start(TwoGpus());
  CHECK(ledger.Holding());
  CHECK(ledger.Due().empty());
  clock.Advance(30s);
  std::vector<ClaimEnergy> due = ledger.Due();
  REQUIRE(due.size() == 1);
  CHECK_FALSE(due[0].final);
  ledger.Written(due[0], EnergyWriteOutcome::kWritten);
  CHECK(ledger.Due().empty());
  clock.Advance(10s);
  ledger.Stop("u1", clock.Now());
  CHECK_FALSE(ledger.Holding());
  due = ledger.Due();
  REQUIRE(due.size() == 1);
  CHECK(due[0].final);
  CHECK(Dev(due[0], "gpu-0").seconds_held == Approx(40));
  ledger.Written(due[0], EnergyWriteOutcome::kWritten);
  CHECK(ledger.Due().empty());
  clock.Advance(4min);
  CHECK(ledger.Accounts().size() == 1);  // still in the metrics
  clock.Advance(1min);
  CHECK(ledger.Accounts().empty());

  SECTION("prepare again keeps the account; unknown uids are ignored") {
    FakeClock c2;
    ClaimEnergyLedger l2(c2, {});
    l2.Start(TwoGpus(), "restart");
    c2.Advance(5s);
    l2.Start(TwoGpus());
    l2.Stop("nobody", c2.Now());
    const ClaimEnergy a = l2.Accounts()[0];
    CHECK(Dev(a, "gpu-0").seconds_held == Approx(5));
    CHECK(Dev(a, "gpu-0").since == "restart");
    CHECK_FALSE(a.final);
    l2.Stop("u1", c2.Now());
    c2.Advance(1s);
    l2.Start(TwoGpus());  // prepared again for a later pod: a new account
    c2.Advance(2s);
    const ClaimEnergy b = l2.Accounts()[0];
    CHECK_FALSE(b.final);
    CHECK(Dev(b, "gpu-0").seconds_held == Approx(2));
    CHECK(Dev(b, "gpu-0").since == "prepare");
  }
}

// A claim as the API serves it, with another driver's entry and a condition on ours.
nlohmann::json Claim(const std::string& rv = "7") {
  return nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "e1", "namespace": "default", "uid": "u1", "resourceVersion": ")" +
                               rv + R"("},
    "status": {"allocation": {"devices": {"results": [
      {"request": "gpus", "driver": "xpu.dra.dev", "pool": "n1", "device": "gpu-0"},
      {"request": "gpus", "driver": "xpu.dra.dev", "pool": "n1", "device": "gpu-1"}]}},
    "devices": [
      {"driver": "net.example.com", "pool": "n1", "device": "nic-0", "data": {"x": 1}},
      {"driver": "xpu.dra.dev", "pool": "n1", "device": "gpu-0",
       "conditions": [{"type": "Ready", "status": "True"}], "data": {"mine": true}}]}})");
}

ClaimEnergy Account() {
  FakeClock clock;
  ClaimEnergyLedger ledger(clock, {});
  ledger.OnReadings({At0(72)});
  ledger.Start(TwoGpus());
  clock.Advance(8s);
  ledger.Stop("u1", clock.Now());
  return ledger.Accounts()[0];
}

TEST_CASE("MergeEnergyStatus sets our entries' data.energy and keeps everything else", "[energy]") {
  StatusOr<nlohmann::json> merged = MergeEnergyStatus(Claim(), "xpu.dra.dev", Account());
  REQUIRE(merged.ok());
  const nlohmann::json& devices = (*merged)["status"]["devices"];
  REQUIRE(devices.size() == 3);
  CHECK(devices[0] == Claim()["status"]["devices"][0]);
  CHECK(devices[1]["conditions"] == Claim()["status"]["devices"][1]["conditions"]);
  CHECK(devices[1]["data"]["mine"] == true);
  CHECK(devices[1]["data"]["energy"]["joules"] == Approx(576));
  CHECK(devices[1]["data"]["energy"]["peakWatts"] == Approx(72));
  CHECK(devices[1]["data"]["energy"]["final"] == true);
  CHECK(devices[2]["device"] == "gpu-1");
  CHECK(devices[2]["data"]["energy"]["secondsHeld"] == Approx(8));
  CHECK(devices[2]["data"]["energy"].contains("healthEvents"));
  CHECK(devices[2]["data"]["energy"].contains("xids"));
  CHECK(merged->dump().size() < 10240);
  CHECK(HasEnergyStatus(*merged, "xpu.dra.dev", Account()));
  CHECK_FALSE(HasEnergyStatus(Claim(), "xpu.dra.dev", Account()));

  nlohmann::json other = Claim();
  other["metadata"]["uid"] = "u2";
  CHECK(MergeEnergyStatus(other, "xpu.dra.dev", Account()).status().code() ==
        StatusCode::kInvalidArgument);
}

// The API: GETs answer the claim at the current resourceVersion; updates answer what `updates`
// holds in turn (an error, or "echo" the object, or "drop" it without status.devices).
class FakeApi final : public ClaimStatusApi {
 public:
  std::deque<StatusOr<std::string>> updates;
  Status get_error;
  int gets = 0;
  bool deallocated = false;  // the claim controller deallocated the claim
  std::vector<nlohmann::json> written;

  StatusOr<nlohmann::json> GetClaim(const std::string&, const std::string&) override {
    ++gets;
    if (!get_error.ok()) return get_error;
    nlohmann::json claim = Claim(std::to_string(gets));
    if (deallocated) claim["status"].erase("allocation");
    return claim;
  }
  StatusOr<nlohmann::json> UpdateClaimStatus(const std::string&,
                                             const nlohmann::json& claim) override {
    REQUIRE_FALSE(updates.empty());
    StatusOr<std::string> next = updates.front();
    updates.pop_front();
    if (!next.ok()) return next.status();
    written.push_back(claim);
    nlohmann::json out = claim;
    if (*next == "drop") out["status"].erase("devices");
    return out;
  }
};

TEST_CASE("ClaimStatusWriter: conflicts re-read, refusals and a dropped field fall back",
          "[energy]") {
  FakeApi api;
  ClaimStatusWriter writer(&api, "xpu.dra.dev", 2);

  SECTION("a conflict, then written with the fresh resourceVersion") {
    api.updates = {Status(StatusCode::kAborted, "409 Conflict"), std::string("echo")};
    const ClaimStatusWrite w = writer.Write(Account());
    CHECK(w.outcome == EnergyWriteOutcome::kWritten);
    CHECK(w.fallback.empty());
    CHECK(api.gets == 2);
    REQUIRE(api.written.size() == 1);
    CHECK(api.written[0]["metadata"]["resourceVersion"] == "2");
  }
  SECTION("a claim deallocated after its pod ended: no write, no fallback") {
    api.deallocated = true;
    const ClaimStatusWrite w = writer.Write(Account());
    CHECK(w.outcome == EnergyWriteOutcome::kGiveUp);
    CHECK(w.fallback.empty());
    CHECK(api.written.empty());
    CHECK_FALSE(writer.dropped());
  }
  SECTION("conflicts beyond the retries: tried again later") {
    api.updates = {Status(StatusCode::kAborted, "c"), Status(StatusCode::kAborted, "c"),
                   Status(StatusCode::kAborted, "c")};
    CHECK(writer.Write(Account()).outcome == EnergyWriteOutcome::kRetry);
  }
  SECTION("the server drops status.devices: metrics only from now on") {
    api.updates = {std::string("drop")};
    const ClaimStatusWrite w = writer.Write(Account());
    CHECK(w.outcome == EnergyWriteOutcome::kGiveUp);
    CHECK(w.fallback == "dropped");
    CHECK(writer.dropped());
    const ClaimStatusWrite later = writer.Write(Account());
    CHECK(later.outcome == EnergyWriteOutcome::kGiveUp);
    CHECK(later.fallback.empty());  // counted once
    CHECK(api.gets == 1);
  }
  struct Refusal {
    Status error;
    const char* fallback;
  };
  for (const Refusal& r : {Refusal{Status(StatusCode::kPermissionDenied, "403"), "forbidden"},
                           Refusal{NotFoundError("404"), "not_found"},
                           Refusal{InvalidArgumentError("422"), "invalid"}}) {
    FakeApi refusing;
    refusing.updates = {r.error};
    ClaimStatusWriter w(&refusing, "xpu.dra.dev");
    const ClaimStatusWrite out = w.Write(Account());
    CHECK(out.outcome == EnergyWriteOutcome::kGiveUp);
    CHECK(out.fallback == r.fallback);
    CHECK_FALSE(w.dropped());
  }
  SECTION("an unavailable server: tried again later; a deleted claim: given up quietly") {
    api.updates = {UnavailableError("503")};
    CHECK(writer.Write(Account()).outcome == EnergyWriteOutcome::kRetry);
    api.get_error = NotFoundError("gone");
    const ClaimStatusWrite w = writer.Write(Account());
    CHECK(w.outcome == EnergyWriteOutcome::kGiveUp);
    CHECK(w.fallback.empty());
  }
}

// The driver stand-in: prepares every claim with gpu-0 (but "bad"), unprepares all.
class FakeService final : public NodeService {
 public:
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims,
                                               const CallBounds&) override {
    std::map<std::string, PrepareResult> out;
    for (const ClaimRef& c : claims) {
      out[c.uid] = c.name == "bad" ? PrepareResult{.devices = {}, .error = "no"}
                                   : PrepareResult{.devices = {{.request_names = {"gpus"},
                                                                .pool = "n1",
                                                                .device = "gpu-0",
                                                                .cdi_device_ids = {},
                                                                .share_id = ""}},
                                                   .error = ""};
    }
    return out;
  }
  std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims,
                                                   const CallBounds&) override {
    std::map<std::string, UnprepareResult> out;
    for (const ClaimRef& c : claims) out[c.uid] = {};
    return out;
  }
};

TEST_CASE("EnergyAccountingService starts accounts on prepare and ends them on unprepare",
          "[energy]") {
  FakeClock clock;
  ClaimEnergyLedger ledger(clock, {});
  FakeService inner;
  EnergyAccountingService service(&inner, &ledger, clock,
                                  [](const std::string&, const std::string& device) {
                                    return device == "gpu-0" ? std::string(kPci0) : "";
                                  });
  ledger.OnReadings({At0(72)});
  const auto prepared = service.Prepare({{"default", "e1", "u1"}, {"default", "bad", "u2"}}, {});
  CHECK(prepared.at("u1").error.empty());
  CHECK(ledger.Holding());
  clock.Advance(2s);
  service.Unprepare({{"default", "e1", "u1"}}, {});
  CHECK_FALSE(ledger.Holding());
  const std::vector<ClaimEnergy> accounts = ledger.Accounts();
  REQUIRE(accounts.size() == 1);  // the failed prepare has none
  CHECK(accounts[0].name == "e1");
  CHECK(Dev(accounts[0], "gpu-0").joules == Approx(144));
}

TEST_CASE("WriteFinalAccounts: the final writes of a stop, until the deadline", "[energy]") {
  FakeClock clock;
  std::vector<ClaimEnergy> due;
  for (int i = 0; i < 10; ++i) {
    ClaimEnergy a;
    a.name = "c" + std::to_string(i);
    a.final = i != 3;  // one account still held: not a final write, never written at a stop
    due.push_back(a);
  }
  std::vector<std::string> written;
  // Each write takes a second (a slow API server, or the limiter); the stop allows 5.
  const int left = WriteFinalAccounts(due, clock, clock.Now() + 5s, [&](const ClaimEnergy& a) {
    written.push_back(a.name);
    clock.Advance(1s);
  });
  CHECK(written == std::vector<std::string>{"c0", "c1", "c2", "c4", "c5"});
  CHECK(left == 4);

  written.clear();
  CHECK(WriteFinalAccounts(due, clock, clock.Now() + 1h,
                           [&](const ClaimEnergy& a) { written.push_back(a.name); }) == 0);
  CHECK(written.size() == 9);
}

}  // namespace
}  // namespace xpu::plugin
