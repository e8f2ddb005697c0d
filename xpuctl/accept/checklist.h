// The ten-item vendor acceptance list and the rework cost, answered per vendor from the evidence
// its acceptance results hold (xpuctl/accept/results.h) and the controller config's support
// matrix. Pure: value types in, value types out; no I/O, no clock.
#ifndef XPU_XPUCTL_ACCEPT_CHECKLIST_H_
#define XPU_XPUCTL_ACCEPT_CHECKLIST_H_

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "controller/config.h"
#include "xpuctl/accept/results.h"

namespace xpu::accept {

// The items, in the order of the list.
inline constexpr std::array<std::string_view, 10> kChecklistItems = {
    "upstream framework compatibility",
    "model coverage",
    "operator gaps",
    "container images",
    "Kubernetes interfaces",
    "monitoring",
    "collective communication",
    "virtualization",
    "failure recovery",
    "vendor support boundaries"};

enum class ItemStatus { kCoveredPass, kCoveredFail, kNotCovered };
std::string_view ItemStatusName(
    ItemStatus status);  // "covered-pass", "covered-fail", "not-covered"

struct ChecklistItem {
  std::string item;  // one of kChecklistItems
  ItemStatus status = ItemStatus::kNotCovered;
  std::string evidence;             // what the results say, or why nothing covers it
  std::string what_would_cover_it;  // "" when covered and nothing is missing
};

// The ten items for one vendor, in kChecklistItems order. `config` (may be null: no --config)
// gives the support matrix for the support boundaries.
std::vector<ChecklistItem> Checklist(const VendorResults& vendor, const controller::Config* config);

// What a vendor needed, against the baseline vendor, to reach a pass: derived from the results,
// never typed in.
struct ReworkCost {
  std::string vendor;
  std::string baseline;
  bool is_baseline = false;
  std::string image;  // the vendor's image(s), comma-separated
  std::string baseline_image;
  bool image_differs = false;
  std::string extension;  // environment.versions.extension: the vendor's extension package
  std::string baseline_extension;
  std::string toolkit;
  std::string baseline_toolkit;
  std::vector<std::string> env_differences;  // environment.env names set or valued differently
  int operator_gaps = 0;
  int baseline_operator_gaps = 0;
  int fallbacks = 0;
  int baseline_fallbacks = 0;
  std::vector<std::string> failed_stages;
  std::vector<std::string> not_run_stages;  // stages the baseline ran and this vendor did not
  // One line per difference ("image: a (baseline b)", "operator gaps: 3 (baseline 0): ..."), in
  // the order of the fields above; empty when nothing differed.
  std::vector<std::string> items;
};

ReworkCost DeriveReworkCost(const VendorResults& vendor, const VendorResults& baseline);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_CHECKLIST_H_
