// Waiting on a condition in tests, never a fixed sleep.
#ifndef XPU_E2E_CLIENT_WAIT_H_
#define XPU_E2E_CLIENT_WAIT_H_

#include <chrono>
#include <thread>

namespace xpu::e2e {

// Polls `done` every `period` until it holds or `timeout` passes; the last answer of `done`.
template <typename F>
bool Eventually(F done, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                std::chrono::milliseconds period = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(period);
  }
  return done();
}

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLIENT_WAIT_H_
