// Partitionable devices in the published slices: NVIDIA MIG, Ascend vNPU, Hygon vHCU.
//
// A device whose inventory has `partitioning` with `enabled` publishes (DRAPartitionableDevices,
// 1.35+ shapes, attributes mode):
//  - a counter set "<device>-parts": one counter "slot-<i>" (value 1) per memory slot (MIG), and
//    the device's capacity counters ("compute", "aicore", ...) at their totals;
//  - the whole device, which consumes every counter of that set at its full value, so that whole
//    and partitioned use exclude each other;
//  - one device per profile and legal placement (MIG: "<device>-<profile>-<first slot>",
//    consuming its slots and its share of the capacity counters), or per profile instance up to
//    the number that fits (vNPU, vHCU: "<device>-<profile>-<n>"). The partition devices are
//    published in the order that packs (BuildPartitions below).
//    A partition that exists now is published where it sits, with attribute `existing`; the
//    placements it overlaps are left out.
// Partition devices carry `partitionKind`, `parent`, `parentUUID`, `profile`, `placement` or
// `instance`, the parent's PCIe and NUMA attributes and capacity `memory`, and no `vendor`,
// `family` or `model`: the whole-device classes, which select on those, never pick a partition.
// Where the shapes cannot carry counters (1.34, or a server that drops them) or in groups mode,
// the device is served whole and a note says why.
#ifndef XPU_CONTROLLER_PARTITIONS_H_
#define XPU_CONTROLLER_PARTITIONS_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "api/resource.h"

namespace xpu::controller {

struct Partitioned {
  std::vector<api::resource::CounterSet> counter_sets;  // one per partitioned device
  std::vector<api::resource::Device> devices;           // the partition devices, in order
};

// The counter sets and partition devices of the `devices` about to be published (whole devices
// by inventory name); each partitioned whole device gains its consumption of its set. The
// partition devices come in the order a first-fit allocator should try them (the stock allocator
// takes the first that fits): the topology solver's (topology/partitions.h) for what the parents
// hold now: the place that loses the least of the largest profiles, then a parent in part use,
// the fullest first, so untouched devices stay whole, then the highest placement. `allocated`:
// the devices claims hold now (whole or partitions).
Partitioned BuildPartitions(const api::NodeInventory& inventory,
                            const std::set<std::string>& allocated,
                            std::vector<api::resource::Device>& devices,
                            std::vector<std::string>& notes);

// Where the server cannot carry counters: the devices whose partitioning says fallback
// "existing" and that have partitions are taken out of `devices`, and their existing partitions
// returned as plain devices (no counters), named and attributed as partition devices are.
std::vector<api::resource::Device> ExistingPartitionsAsDevices(
    const api::NodeInventory& inventory, std::vector<api::resource::Device>& devices,
    std::vector<std::string>& notes);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_PARTITIONS_H_
