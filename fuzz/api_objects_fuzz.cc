// The project's and core Kubernetes objects the components read (api/node_inventory.h,
// api/accelerator_gang.h, api/core.h, api/meta.h): NodeInventory, AcceleratorGang, Node, Lease,
// the API's Status object and watch events (whose object is decoded by its kind). The input is
// the object's JSON.
//
// Invariants: decode -> encode -> decode is stable (fuzz/round_trip.h); a NodeInventory whose
// node description builds gives the same description back through InventoryFromNodeDescription.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/accelerator_gang.h"
#include "api/core.h"
#include "api/meta.h"
#include "api/node_description.h"
#include "api/node_inventory.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/round_trip.h"
#include "topology/model.h"

namespace {

namespace api = ::xpu::api;
using ::nlohmann::json;
using ::xpu::fuzz::DecodeAndRoundTrip;
using ::xpu::fuzz::Dump;

// GroupDevices lists the aligned groups of every size; keep it to nodes that size.
constexpr size_t kMaxGroupedDevices = 16;

void ExerciseInventory(const json& doc) {
  std::optional<api::NodeInventory> inventory = DecodeAndRoundTrip<api::NodeInventory>(doc);
  if (!inventory) return;
  (void)api::ValidateNodeInventory(*inventory);
  xpu::StatusOr<xpu::topology::NodeSpec> spec = api::NodeDescriptionFromInventory(*inventory);
  if (!spec.ok() || !xpu::topology::Node::Build(*spec).ok()) return;
  const json description = api::NodeDescriptionToJson(*spec);
  xpu::StatusOr<xpu::topology::NodeSpec> again =
      api::NodeDescriptionFromInventory(api::InventoryFromNodeDescription(*spec));
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\n" + Dump(description));
  FUZZ_CHECK(api::NodeDescriptionToJson(*again) == description, Dump(description));
  if (inventory->status.devices.size() <= kMaxGroupedDevices) {
    (void)api::GroupDevices(*inventory);
  }
}

// Decodes `doc` by its kind; `depth` bounds watch events inside watch events.
void Exercise(const json& doc, int depth) {
  const std::string kind = xpu::fuzz::StringMember(doc, "kind");
  if (kind == "NodeInventory") {
    ExerciseInventory(doc);
  } else if (kind == "AcceleratorGang") {
    if (auto gang = DecodeAndRoundTrip<api::AcceleratorGang>(doc)) {
      (void)api::ValidateAcceleratorGang(*gang);
    }
  } else if (kind == "Node") {
    (void)DecodeAndRoundTrip<api::core::Node>(doc);
  } else if (kind == "Lease") {
    (void)DecodeAndRoundTrip<api::core::Lease>(doc);
  } else if (kind == "Status") {
    (void)DecodeAndRoundTrip<api::ApiStatus>(doc);
  } else if (doc.is_object() && doc.contains("type") && doc.contains("object")) {
    if (auto event = DecodeAndRoundTrip<api::WatchEvent>(doc); event && depth < 2) {
      Exercise(event->object, depth + 1);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (std::optional<json> doc = xpu::fuzz::ParseJson(xpu::fuzz::AsText(data, size))) {
    Exercise(*doc, 0);
  }
  return 0;
}
