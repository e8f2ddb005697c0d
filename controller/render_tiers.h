// The subrequests of a vendor's part of a rendered claim (controller/render.h): one per group of
// models that share a rule-keeping constraint (controller/render_judge.h), each preceded by the
// topology tiers that are worth an alternative of their own, and the cut to the API's 8.
//
// Tiers, tightest first: one PCIe switch (`pcieSwitch`), one root complex
// (`resource.kubernetes.io/pcieRoot`), one NUMA node (`numaNode`). The scheduler's allocator
// takes the first subrequest that fits on a node, and from 1.37 kube-scheduler scores a node by
// the index of the subrequest it used (docs/kube-scheduler-scoring.md), so a tier is listed only
// where it changes what the scheduler may pick: on some reference server of the group, the worst
// set inside one tier group (its bottleneck bandwidth, topology::Evaluate) is better than the
// worst set of the next looser alternative listed. Every set of a tier must keep the rules too
// (with the group's constraint). A root or NUMA tier that groups the devices exactly like a
// tighter tier on every server where bandwidths differ is the same alternative under another
// name: only the tighter one is considered. So NVSwitch boards (all pairs equal) and Ascend
// servers (HCCS inside each constraint group) get no tier, PCIe servers up to three.
#ifndef XPU_CONTROLLER_RENDER_TIERS_H_
#define XPU_CONTROLLER_RENDER_TIERS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "controller/render.h"
#include "controller/render_judge.h"

namespace xpu::controller::render_internal {

// A tier worth listing, and the servers (indices into the verdict's views) it leaves a set on.
struct Tier {
  SetKey key = SetKey::kNone;
  std::vector<size_t> views;
};

// The tiers worth a subrequest for `group` of `verdict`, tightest first; none for one device.
std::vector<Tier> TiersOf(const VendorVerdict& verdict, const ModelGroup& group);

// The vendor's subrequests in order of preference: the group device (groups mode), then for
// each model group its tiers (when `tiers`) and its rule-keeping subrequest. With
// `by_bandwidth` (and tiers) each model gets its own alternatives, and all of the vendor's are
// ordered by the bottleneck bandwidth every set of them keeps, fastest first (alternatives equal
// in constraint, tier and bandwidth merge): an NVSwitch board's any four then come before a PCIe
// server's best four. Names are DNS labels that start with the vendor: "<vendor>", then
// "-<constraint>" where it is not the first group's ("huawei-module"), then "-group", "-switch",
// "-root", "-numa" or "-any" where the models list more than one alternative; a name taken
// already gets the model's ("nvidia-l40s").
VendorRender BuildVendorRender(const VendorVerdict& verdict, bool tiers, bool by_bandwidth);

// Keeps at most `max` subrequests over `vendors` (in order of preference), dropping the least
// preferred: the tiers (SubrequestRender::optional) of the last vendors first, each vendor's from
// its end, so that its middle tiers go before its tightest; never a rule-keeping subrequest, nor
// a group device that some model has no other subrequest for. Then whole vendors from the end.
// Each drop is a note naming the subrequest, or the vendor and its subrequests.
void LimitSubrequests(std::vector<VendorRender>& vendors, size_t max,
                      std::vector<std::string>& notes);

}  // namespace xpu::controller::render_internal

#endif  // XPU_CONTROLLER_RENDER_TIERS_H_
