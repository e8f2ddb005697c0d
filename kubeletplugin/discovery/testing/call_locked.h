// CallLocked for the fake vendor libraries, whose state is one struct guarded by its `mu`.
// Header-only: each fake is a shared library of its own.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_TESTING_CALL_LOCKED_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_TESTING_CALL_LOCKED_H_

#include "base/mutex.h"

namespace xpu::discovery::testing {

// Calls `fn(s, args...)`, s.mu held. NO_THREAD_SAFETY_ANALYSIS: the analysis cannot match the
// callback's REQUIRES(s.mu), written on its own parameter, to this `s`; its body is still checked.
template <typename State, typename Fn, typename... Args>
auto CallLocked(State& s, Fn& fn, Args&... args) REQUIRES(s.mu) NO_THREAD_SAFETY_ANALYSIS {
  return fn(s, args...);
}

}  // namespace xpu::discovery::testing

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_TESTING_CALL_LOCKED_H_
