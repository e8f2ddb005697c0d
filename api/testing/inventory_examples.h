// One fully populated example of each of the project's own kinds (every field of the schema set
// somewhere), for the codec, validation and CRD tests: the CRD test checks that the example
// validates against the generated schema and that it sets every property the schema has.
#ifndef XPU_API_TESTING_INVENTORY_EXAMPLES_H_
#define XPU_API_TESTING_INVENTORY_EXAMPLES_H_

#include "api/accelerator_gang.h"
#include "api/node_inventory.h"

namespace xpu::api::testing {

// A two-die Ascend A3 HiAM module node with a NIC per die, valid per ValidateNodeInventory.
NodeInventory ExampleNodeInventory();
// A placed 2 x 2 gang, valid per ValidateAcceleratorGang.
AcceleratorGang ExampleAcceleratorGang();
// An H200's MIG partitioning (MIG mode on, nothing created): 8 memory slots, 7 compute slices and
// the six profiles of NVIDIA's H200 table with their placements (1g.18gb at 0-6, 1g.35gb and
// 2g.35gb at even slots, 3g.71gb at 0 and 4, 4g.71gb and 7g.141gb at 0).
InventoryPartitioning H200MigPartitioning();

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_INVENTORY_EXAMPLES_H_
