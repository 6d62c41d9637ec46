#pragma once
// Helpers shared by the kube tests (header-only: each test is its own executable).
#include <chrono>
#include <functional>
#include <ostream>
#include <thread>

#include "api/status.h"

namespace volcache {
// For gtest messages (found by ADL).
inline std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }
}  // namespace volcache

namespace volcache::testing {

// Polls `pred` every 5 ms until it holds or `timeout` passes (generous timeouts: the tests
// run under sanitizers on a shared 2-core machine). Returns the last value of `pred`.
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace volcache::testing
