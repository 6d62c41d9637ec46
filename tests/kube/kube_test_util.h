#pragma once
// Helpers shared by the kube tests (header-only: each test is its own executable).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

// A TCP socket bound to a free port of 127.0.0.1 (not yet listening); its port in `*port`.
inline int BindLoopback(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  *port = ntohs(addr.sin_port);
  return fd;
}

// The same, listening with room for `backlog` connections.
inline int ListenLoopback(int* port, int backlog = 16) {
  const int fd = BindLoopback(port);
  EXPECT_EQ(::listen(fd, backlog), 0);
  return fd;
}

}  // namespace volcache::testing
