// Where a vendor's CDI specs carry no driver files (the plugin's --cdi-driver-files off for it,
// docs/kubelet-plugin.md), the container gets the vendor's user-space driver only from the
// vendor's own container runtime, which a pod selects by RuntimeClass. The names are those the
// vendors' operators and installers create.
#ifndef XPU_CONTROLLER_RUNTIME_CLASS_H_
#define XPU_CONTROLLER_RUNTIME_CLASS_H_

#include <string>
#include <string_view>

namespace xpu::controller {

// "nvidia" (NVIDIA's GPU operator and container toolkit), "ascend" (Ascend's docker runtime),
// else the vendor's name.
std::string_view VendorRuntimeClass(std::string_view vendor);

// The render note for a vendor whose driver files are off.
std::string RuntimeClassNote(std::string_view vendor);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_RUNTIME_CLASS_H_
