// What the crash trials check after each kill, as pure functions of what is on disk or in the
// API and what should be there: the plugin's checkpoint and CDI specs against the claims the
// kubelet holds prepared, and the driver's ResourceSlices against the pools the inventories ask
// for, and the AcceleratorGangs against what their status reserves (whole or absent). Each check
// returns its violations, one message each; none means the invariant holds.
#ifndef XPU_E2E_TRIALS_INVARIANTS_H_
#define XPU_E2E_TRIALS_INVARIANTS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "e2e/kubelet/kubelet_stand_in.h"

namespace xpu::e2e::trials {

// A claim the kubelet stand-in prepares: its reference and its allocation, one device per
// result, all in `pool` (the plugin's node, or another node: then the plugin has nothing to do).
struct TrialClaim {
  std::string ns;
  std::string name;
  std::string uid;
  std::string pool;
  std::vector<std::string> devices;
};

// The plugin's state on disk, read while no call is in flight.
struct PluginDisk {
  std::map<std::string, nlohmann::json> checkpoint;  // claim uid -> the checkpoint's claim
  std::map<std::string, nlohmann::json> specs;       // claim uid -> its CDI spec file
  std::vector<std::string> stray;                    // other files of ours in the CDI dir
};

// Reads <state_dir>/checkpoint.json (a missing file holds no claims, as the plugin reads it) and
// the CDI specs of `driver` in `cdi_dir`. The checkpoint is read as JSON, layout and version
// checked; its checksum is the plugin's to check (a bad one stops the next start, which the
// trials see). An unreadable or malformed file is a DataLoss error.
StatusOr<PluginDisk> ReadPluginDisk(const std::string& state_dir, const std::string& cdi_dir,
                                    const std::string& driver);

// The CDI device id the plugin gives `device` of a claim: "k8s.<driver>/device=<uid>-<device>".
std::string CdiDeviceId(const std::string& driver, const std::string& claim_uid,
                        const std::string& device);

// A prepare answer for `claim` is its allocation on `node`: the devices in order, request
// "npus", one CDI id each; nothing for a claim of another node.
std::vector<std::string> CheckAnswer(const TrialClaim& claim,
                                     const std::vector<KubeletDevice>& answer,
                                     const std::string& node, const std::string& driver);

// The disk against the kubelet: every claim the kubelet holds prepared (`prepared`, uids) is in
// the checkpoint, Prepared, with its allocation's devices and CDI ids, and has its CDI spec as
// recorded; no other claim is recorded; no CDI spec without an entry; no device is held by two
// claims; no stray file. `claims` are all the claims the kubelet knows.
std::vector<std::string> CheckPluginDisk(const std::vector<TrialClaim>& claims,
                                         const std::set<std::string>& prepared,
                                         const PluginDisk& disk, const std::string& node,
                                         const std::string& driver);

// A pool the controller should publish: the owning Node's uid and each slice's devices.
struct ExpectedPool {
  std::string node_uid;
  std::vector<nlohmann::json> slices;  // spec.devices of each slice, NormalizedDevices
};

// spec.devices without what the server or the time of writing adds (taints' timeAdded), and
// without the attribute `gang`, which a gang's member nodes carry (GangDifferences judges it).
nlohmann::json NormalizedDevices(const nlohmann::json& devices);

// The pools of a golden slice list (e2e/fixtures/slices-expected): each slice's devices,
// normalized, in the list's order.
std::vector<nlohmann::json> GoldenSlices(const nlohmann::json& list);

// The driver's slices against the wanted pools; empty when they are equal: each wanted pool
// published once, all its slices at one generation with resourceSliceCount their number,
// nodeName and owner its Node, no device twice, the devices as wanted; no slice of any other
// pool (an orphan). The slices of the gang pool ("gangs") are GangDifferences' and left out.
std::vector<std::string> SliceDifferences(const std::map<std::string, ExpectedPool>& want,
                                          const std::vector<nlohmann::json>& slices);

// The slice writes that bring one pool's `slices` to what is wanted (`want`; null: the pool
// should not be published): none when SliceDifferences finds none; else the wanted slices
// updated as far as slices exist, the rest created, the slices left over deleted.
struct SliceWrites {
  int64_t create = 0;
  int64_t update = 0;
  int64_t remove = 0;
  int64_t total() const { return create + update + remove; }
};
SliceWrites WritesNeeded(const std::string& pool, const ExpectedPool* want,
                         const std::vector<nlohmann::json>& slices);

// The generation of each pool (the highest among its slices).
std::map<std::string, int64_t> PoolGenerations(const std::vector<nlohmann::json>& slices);

// The gangs as the API holds them.
struct GangWorld {
  std::vector<nlohmann::json> gangs;   // the AcceleratorGangs
  std::vector<nlohmann::json> slices;  // every slice of the driver: node pools and pool "gangs"
  std::set<std::string> claims;        // "<ns>/<name>" of the ResourceClaims
  std::set<std::string> templates;     // "<ns>/<name>" of the ResourceClaimTemplates
};

// The reservation alone, which the controller writes in one status write (docs/gangs.md, step 4)
// and so must hold at every moment, a kill's included: a gang Placed holds exactly spec.nodes
// distinct nodes, each with devicesPerNode distinct devices, node ranks 0..n-1 and a rank table
// naming each of those devices once; a gang not Placed holds no node and no rank, but a Failed
// one (final) keeps its last placement, whole as above, as a record that holds no node; no node
// is held by two Placed gangs.
std::vector<std::string> GangReservationDifferences(const std::vector<nlohmann::json>& gangs);

// Gangs whole or absent, once the controller has converged. The reservation as above, and then
// for a Placed gang (whole): every member node is `live` (a Node and an inventory: its pool is
// published) and every device of its pool carries the attribute gang = the gang's uid; the gang
// device's slice "xpu-dra-gang.<ns>.<name>" exists, in pool "gangs", with the one device
// "gang-<name>", gang = uid, gangNodes = the member count, and a node selector listing exactly the
// members; the shared claim "<name>-gang" and the template "<name>-member" exist. For a gang not
// Placed, or gone (absent): no slice of the gang pool is its, no device carries its uid. And no
// device carries the uid of a gang that does not hold its node, no gang-pool slice is of no gang.
// A pending gang's claim and template may stay (they are made on placement and kept).
std::vector<std::string> GangDifferences(const GangWorld& world, const std::set<std::string>& live);

// The gangs whose status the controller has not yet written for their spec (status
// observedGeneration short of metadata.generation): until it has, a gang's slices may still be
// on their way (the status is written first, the members' attribute after), so convergence
// waits for this to be empty before GangDifferences judges.
std::vector<std::string> UnjudgedGangs(const std::vector<nlohmann::json>& gangs);

}  // namespace xpu::e2e::trials

#endif  // XPU_E2E_TRIALS_INVARIANTS_H_
