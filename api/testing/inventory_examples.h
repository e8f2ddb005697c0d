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

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_INVENTORY_EXAMPLES_H_
