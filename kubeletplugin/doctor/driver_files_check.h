// The checklist's driver-files check (docs/node-checklist.md): for each vendor on the node,
// whether the files a prepared claim's CDI spec carries (kubeletplugin/driverfiles/) are there
// and belong to the kernel driver's version, and whether xpu-cdi-hook, which the specs name, is
// installed. It also notes a vendor's own runtime hook, which the specs no longer need.
#ifndef XPU_KUBELETPLUGIN_DOCTOR_DRIVER_FILES_CHECK_H_
#define XPU_KUBELETPLUGIN_DOCTOR_DRIVER_FILES_CHECK_H_

#include <set>
#include <string>

#include "kubeletplugin/doctor/doctor.h"
#include "kubeletplugin/driverfiles/driver_files.h"

namespace xpu::doctor {

// Pass when every vendor's files were found (the evidence counts them and names the version),
// warn when a vendor's files are off (its runtime hook is then needed) or the hook is not
// installed under the host root, fail naming the missing path or the disagreeing version files.
// Skip without devices.
CheckResult CheckDriverFiles(const std::string& host_root, const std::set<std::string>& vendors,
                             const driverfiles::Policy& policy, const std::string& hook_path);

}  // namespace xpu::doctor

#endif  // XPU_KUBELETPLUGIN_DOCTOR_DRIVER_FILES_CHECK_H_
