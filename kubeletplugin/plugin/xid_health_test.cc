// The XID recovery state machine on a fake clock, and its overlay on an inventory.
#include "kubeletplugin/plugin/xid_health.h"

#include <catch2/catch.hpp>

#include "kubeletplugin/driver/driver.h"

namespace xpu::plugin {
namespace {

using std::chrono::seconds;
using Checked = XidHealth::Checked;

// Two healthy GPUs, as discovery reports them.
api::NodeInventory TwoGpus() {
  api::NodeInventory inv;
  inv.metadata.name = "n1";
  for (const char* name : {"gpu-0", "gpu-1"}) {
    api::InventoryDevice d;
    d.name = name;
    d.vendor = "nvidia";
    d.health = "Healthy";
    inv.status.devices.push_back(d);
  }
  inv.status.health = "Healthy";
  inv.status.conditions.push_back({.type = "Ready",
                                   .status = "True",
                                   .observed_generation = std::nullopt,
                                   .last_transition_time = "",
                                   .reason = "Discovered",
                                   .message = "2 devices found, 2 healthy"});
  return inv;
}

const api::Condition* Find(const api::NodeInventory& inv, const std::string& type) {
  for (const api::Condition& c : inv.status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

// The XidErrors condition is there with this status, reason and message.
void CheckXidCondition(const api::NodeInventory& inv, const std::string& status,
                       const std::string& reason, const std::string& message) {
  const api::Condition* c = Find(inv, "XidErrors");
  REQUIRE(c != nullptr);
  CHECK(c->status == status);
  CHECK(c->reason == reason);
  CHECK(c->message == message);
}

api::NodeInventory Overlaid(const XidHealth& h) {
  api::NodeInventory inv = TwoGpus();
  ApplyXidFaults(h.Faults(), h.settle(), "2026-01-01T00:00:00Z", &inv);
  return inv;
}

TEST_CASE("a fatal XID makes its device unhealthy at once, with the XID in the reason", "[xid]") {
  FakeClock clock;
  XidHealth h(clock, seconds(60));
  CHECK(Overlaid(h) == TwoGpus());  // no faults: discovery's answer unchanged, no condition

  CHECK(h.OnXid("gpu-1", 79));
  CHECK(h.Faulted() == std::vector<std::string>{"gpu-1"});
  const api::NodeInventory inv = Overlaid(h);
  CHECK(inv.status.devices[0].health == "Healthy");
  CHECK(inv.status.devices[1].health == "Unhealthy");
  CHECK(inv.status.devices[1].sources.at("health") == "nvml");
  CHECK(inv.status.health == "Degraded");
  CHECK(Find(inv, "Ready")->message == "2 devices found, 1 healthy");
  CheckXidCondition(inv, "False", "FatalXid",
                    "gpu-1: XID 79 (GPU has fallen off the bus) at 2026-01-01T00:00:00Z, "
                    "unhealthy until NVML answers and no fatal XID for 60s");
  // The kubelet's health stream gives that message for the device.
  HealthMonitor monitor("n1");
  monitor.Update(inv);
  const std::vector<DeviceHealth> health = monitor.Snapshot(nullptr);
  REQUIRE(health.size() == 2);
  CHECK(health[1].device == "gpu-1");
  CHECK(health[1].health == HealthState::kUnhealthy);
  CHECK(health[1].message == Find(inv, "XidErrors")->message);

  // The same XID again changes nothing shown; another one does.
  CHECK_FALSE(h.OnXid("gpu-1", 79));
  CHECK(h.OnXid("gpu-1", 48));
  CHECK(h.Faults().at("gpu-1").xid == 48);
}

TEST_CASE("recovery needs the device usable and no fatal XID for the settle period", "[xid]") {
  FakeClock clock;
  XidHealth h(clock, seconds(60));
  REQUIRE(h.OnXid("gpu-0", 79));
  const Status lost =
      UnavailableError("not on the bus (nvmlDeviceGetHandleByIndex_v2: 15 gpu is lost)");

  // Off the bus for five minutes: every failing check restarts the settle period.
  CHECK(h.OnCheck("gpu-0", lost) == Checked::kChanged);
  CHECK(Overlaid(h).status.devices[0].health == "Unhealthy");
  CHECK(Find(Overlaid(h), "XidErrors")
            ->message.ends_with(
                ", NVML: not on the bus (nvmlDeviceGetHandleByIndex_v2: 15 gpu is lost)"));
  for (int i = 0; i < 5; ++i) {
    clock.Advance(seconds(60));
    CHECK(h.OnCheck("gpu-0", lost) == Checked::kUnchanged);
  }
  // Back: usable, but only 59 s after the last failing check — not yet.
  clock.Advance(seconds(59));
  CHECK(h.OnCheck("gpu-0", OkStatus()) == Checked::kChanged);  // the NVML error is gone
  CHECK(h.Faulted() == std::vector<std::string>{"gpu-0"});
  CHECK(Overlaid(h).status.devices[0].health == "Unhealthy");
  // A new fatal XID within the period starts it again.
  clock.Advance(seconds(30));
  CHECK(h.OnXid("gpu-0", 79) == false);
  clock.Advance(seconds(59));
  CHECK(h.OnCheck("gpu-0", OkStatus()) == Checked::kUnchanged);
  clock.Advance(seconds(1));
  CHECK(h.OnCheck("gpu-0", OkStatus()) == Checked::kRecovered);
  CHECK(h.Faulted().empty());
  CHECK(h.OnCheck("gpu-0", OkStatus()) == Checked::kUnchanged);  // already recovered

  // Healthy again without a restart, and the recovery recorded.
  const api::NodeInventory inv = Overlaid(h);
  CHECK(inv.status.devices[0].health == "Healthy");
  CHECK(inv.status.health == "Healthy");
  CHECK(Find(inv, "Ready")->message == "2 devices found, 2 healthy");
  CheckXidCondition(inv, "True", "Recovered",
                    "gpu-0: XID 79 (GPU has fallen off the bus) at 2026-01-01T00:00:00Z, "
                    "recovered at 2026-01-01T00:07:29Z");

  // A later XID is a new episode, from its own time.
  clock.Advance(seconds(2));
  CHECK(h.OnXid("gpu-0", 95));
  CHECK(h.Faults().at("gpu-0").at == clock.WallNow());
  CHECK_FALSE(h.Faults().at("gpu-0").recovered);
  CHECK(Overlaid(h).status.devices[0].health == "Unhealthy");
}

TEST_CASE("the overlay never makes a device healthier than discovery says", "[xid]") {
  FakeClock clock;
  XidHealth h(clock, seconds(0));
  REQUIRE(h.OnXid("gpu-1", 48));
  REQUIRE(h.OnCheck("gpu-1", OkStatus()) == Checked::kRecovered);  // settle 0: at once
  api::NodeInventory inv = TwoGpus();
  inv.status.devices[1].health = "Unhealthy";  // discovery's own finding (a device node gone)
  ApplyXidFaults(h.Faults(), h.settle(), "2026-01-01T00:00:00Z", &inv);
  CHECK(inv.status.devices[1].health == "Unhealthy");
  CHECK(inv.status.health == "Degraded");
  // A device the inventory does not have: no condition about it; unknown devices are no-ops.
  XidHealth other(clock, seconds(60));
  REQUIRE(other.OnXid("gpu-9", 79));
  CHECK(other.OnCheck("gpu-7", OkStatus()) == Checked::kUnchanged);
  CHECK(Overlaid(other) == TwoGpus());
}

}  // namespace
}  // namespace xpu::plugin
