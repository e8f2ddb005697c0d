// Test-only crash points of the driver's prepare, unprepare and partition steps: the crash-safety
// tests (partitions_test.cc, mig_partitions_test.cc, plugin/plugin_test.cc) set $XPU_DRA_CRASH_AT,
// let the process die at that step, restart it and check the disk.
#ifndef XPU_KUBELETPLUGIN_DRIVER_CRASH_POINT_H_
#define XPU_KUBELETPLUGIN_DRIVER_CRASH_POINT_H_

namespace xpu::plugin {

// When $XPU_DRA_CRASH_AT equals `point`, the process kills itself with SIGKILL right there;
// otherwise nothing.
void CrashPoint(const char* point);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_CRASH_POINT_H_
