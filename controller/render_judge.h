// Judging a count on the reference servers, for Render (controller/render.h): the device sets the
// scheduler could pick on each server under a subrequest's selectors and matchAttribute
// constraints, whether every one of them keeps the server's rule set (topology::RuleAllows), and,
// for each model a vendor's class admits, the loosest constraint under which all of them do.
//
// The scheduler picks any `count` devices that pass the selectors and share the value of every
// matchAttribute; a device without the attribute is in no set. So a constraint is safe for a
// model only when every such set, on every server of that model, keeps the rules: judged by
// enumerating them (servers hold at most 64 devices and the counts that need a constraint are
// small, so the sets stay in the thousands). Internal to the render files and their tests.
#ifndef XPU_CONTROLLER_RENDER_JUDGE_H_
#define XPU_CONTROLLER_RENDER_JUDGE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "controller/reference_servers.h"
#include "controller/render.h"
#include "topology/device_set.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::controller::render_internal {

// What a matchAttribute groups devices by: the rule-keeping constraints (loosest first), then
// the topology tiers (tightest first).
enum class SetKey { kNone, kScaleUpDomain, kModule, kPcieSwitch, kPcieRoot, kNumaNode };
inline constexpr size_t kSetKeyCount = 6;

// The attribute as the slices publish it: "scaleUpDomain", "module", "pcieSwitch",
// "resource.kubernetes.io/pcieRoot", "numaNode"; empty for kNone.
std::string_view SetKeyAttribute(SetKey key);
// The name a matchAttribute takes: bare names in the driver's domain ("xpu.dra.dev/module"),
// domain-qualified ones as they are.
std::string QualifiedAttribute(std::string_view attribute, std::string_view driver);

// One reference server, seen for one vendor and class.
struct ServerView {
  const ReferenceServer* server = nullptr;
  topology::Node node;
  topology::DeviceSet admitted = {};      // the devices the per-vendor class admits
  std::map<int, std::string> model = {};  // node id -> model, of the admitted devices
  std::set<std::string> models = {};      // their models
  // Per SetKey: node id -> the value the slices publish, for the devices that have one.
  std::array<std::map<int, std::string>, kSetKeyCount> keys = {};
};

// The servers with devices of `vendor` that `device_class` admits (with `precision`, when set).
std::vector<ServerView> ViewsOf(const std::vector<ReferenceServer>& servers, const Config& config,
                                const std::string& driver, const std::string& vendor,
                                const std::string& device_class, const std::string& precision);

// The admitted devices of `view` whose model is one of `models`.
topology::DeviceSet DevicesOf(const ServerView& view, const std::set<std::string>& models);

// The sets the scheduler could pick out of `devices` for `count` under matchAttribute
// constraints on `keys` (kNone entries are ignored): the `count`-subsets whose devices all have
// every key and share its value.
struct SetsJudged {
  int64_t sets = 0;
  bool all_keep = true;  // every set keeps the rules; true when there is none
  // The lowest bottleneck bandwidth over the sets (topology::Evaluate), when asked for.
  int64_t worst_mbps = topology::kNoPairs;
};
SetsJudged JudgeSets(const ServerView& view, topology::DeviceSet devices, int count,
                     const std::vector<SetKey>& keys, bool bandwidth);

// Whether every such set keeps the server's rules, and at least one exists.
bool EverySetKeepsRules(const ServerView& view, topology::DeviceSet devices, int count,
                        const std::vector<SetKey>& keys);

// The counts the rules allow on `devices` of a server: "1, 2, 4, 8".
std::string AllowedCounts(const ServerView& view, topology::DeviceSet devices);

// Why a vendor was left out; the most telling reason becomes the error when none is left.
enum class Refusal { kNone, kNoDevices, kTooFew, kRules, kMode, kAmbiguous };

// A vendor's models that share their loosest rule-keeping constraint: one subrequest (and its
// tiers).
struct ModelGroup {
  SetKey constraint = SetKey::kNone;
  std::set<std::string> models;
  std::vector<size_t> views;  // indices into VendorVerdict::views: where such a set exists
};

// How a vendor can serve `count` devices on one node under a class, or why it cannot.
struct VendorVerdict {
  std::string vendor;
  std::string device_class;  // "<class>.<vendor>"
  int count = 0;
  Refusal refusal = Refusal::kNone;
  std::string why;  // for a refusal: the note
  std::vector<ServerView> views;
  std::vector<ModelGroup> groups;  // loosest constraint first
  bool groups_mode = false;        // the config publishes groups: single devices are groupSize 1
  std::vector<int> group_sizes;    // in groups mode, the sizes published (publishing.groupSizes)
  bool group_device = false;       // one group device of `count` serves the models on group_views
  std::vector<size_t> group_views;
  std::set<std::string> excluded;  // models the class admits that no subrequest may take
  std::vector<std::string> notes;  // why each of them is left out
};

// The job sizes the claims Render writes can ask of `devices` on `view`, one of `v`'s servers,
// bit k-1 for k devices: those with a matchAttribute constraint (or none) under which every set
// the scheduler could pick keeps the rules, and in groups mode the published group sizes with an
// aligned group of those devices. What the server model can still serve through this driver.
uint64_t ServableCounts(const VendorVerdict& v, const ServerView& view,
                        topology::DeviceSet devices);

VendorVerdict JudgeVendor(const std::string& vendor, int64_t count, const std::string& class_name,
                          const std::string& precision, const RenderOptions& options,
                          const std::vector<ReferenceServer>& servers);

}  // namespace xpu::controller::render_internal

#endif  // XPU_CONTROLLER_RENDER_JUDGE_H_
