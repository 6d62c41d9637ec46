// RestClient against a raw loopback HTTP/1.1 server that misbehaves the way real servers and
// proxies do with keep-alive connections (closes them while they idle in our pool, or closes
// one when the next request arrives), plus the client's metrics and rate-limiter classes.
#include "kube/rest_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

// Answers every request "200 {}" with keep-alive. Policy per connection:
//   close_after_answer: closes the connection right after each answer (as an idle timeout
//     would), and counts it in closed() so a test can wait for the close, not for time;
//   drop_nth_request > 0: the connection's drop_nth_request-th request is read and the
//     connection closed without a byte of answer.
class LoopbackServer {
 public:
  struct Policy {
    bool close_after_answer = false;
    bool say_408_on_close = false;  // before closing, "408 Request Timeout" (as Go servers do)
    int drop_nth_request = 0;
  };
  explicit LoopbackServer(Policy policy) : policy_(policy) {
    listen_fd_ = volcache::testing::ListenLoopback(&port_);
    thread_ = std::thread([this] { Accept(); });
  }
  ~LoopbackServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
    for (auto& t : conns_) t.join();
  }
  KubeConfig Config() const {
    KubeConfig c;
    c.server = "http://127.0.0.1:" + std::to_string(port_);
    return c;
  }
  int connections() const { return connections_.load(); }
  int answered() const { return answered_.load(); }
  // Waits (on a condition, not a clock) until the server closed `n` connections.
  void WaitClosed(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return closed_ >= n; });
  }

 private:
  void Accept() {
    for (;;) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      conns_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  void Serve(int fd) {
    std::string buf;
    int requests = 0;
    char chunk[4096];
    for (;;) {
      size_t end = buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) break;
        buf.append(chunk, static_cast<size_t>(n));
        continue;
      }
      // Body by Content-Length (case-insensitive enough for cpp-httplib's spelling).
      size_t body_len = 0;
      size_t cl = buf.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) body_len = std::stoul(buf.substr(cl + 16));
      while (buf.size() < end + 4 + body_len) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) break;
        buf.append(chunk, static_cast<size_t>(n));
      }
      buf.erase(0, end + 4 + body_len);
      ++requests;
      if (policy_.drop_nth_request > 0 && requests == policy_.drop_nth_request) break;
      const std::string resp =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: "
          "keep-alive\r\n\r\n{}";
      ::send(fd, resp.data(), resp.size(), MSG_NOSIGNAL);
      ++answered_;
      if (policy_.close_after_answer) {
        if (policy_.say_408_on_close) {
          const std::string bye =
              "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
          ::send(fd, bye.data(), bye.size(), MSG_NOSIGNAL);
        }
        break;
      }
    }
    ::close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    ++closed_;
    cv_.notify_all();
  }

  const Policy policy_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::vector<std::thread> conns_;  // joined in the destructor
  std::atomic<int> connections_{0}, answered_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int closed_ = 0;  // guarded by mu_
};

std::unique_ptr<RestClient> Client(const KubeConfig& config, RestClientOptions options = {}) {
  auto c = RestClient::Create(config, options);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

// A projected service-account token is rotated under a running process: the token file is
// re-read (here on every request) and a reused keep-alive connection carries the new token.
// Before, a connection kept the token it was made with.
TEST(RestClientTest, RotatedTokenFileReachesReusedConnections) {
  testing::FakeApiServer server;
  const std::string path = ::testing::TempDir() + "/volcache-token-" + std::to_string(::getpid());
  std::ofstream(path) << "first-token\n";
  KubeConfig config = server.Config();
  config.token.clear();
  config.token_file = path;
  RestClientOptions o;
  o.token_file_refresh = Duration::zero();
  auto client = Client(config, o);
  ASSERT_TRUE(client->Do("GET", "/api/v1/nodes").ok());
  std::ofstream(path) << "second-token\n";
  ASSERT_TRUE(client->Do("GET", "/api/v1/nodes").ok());
  const auto c = server.counters();
  EXPECT_EQ(c.authorizations.count("Bearer first-token") ? c.authorizations.at("Bearer first-token") : 0, 1);
  EXPECT_EQ(c.authorizations.count("Bearer second-token") ? c.authorizations.at("Bearer second-token") : 0,
            1);
  EXPECT_EQ(client->stats().connections, 1u) << "the second request reused the connection";
  std::remove(path.c_str());
}

// Defect: after idle minutes the pool held CLOSE-WAIT sockets and binds failed with "Write".
TEST(RestClientTest, IdleConnectionClosedByServerIsNotReused) {
  LoopbackServer server({.close_after_answer = true});
  auto client = Client(server.Config());
  for (int i = 0; i < 4; ++i) {
    auto r = client->Do("POST", "/api/v1/namespaces/ns/pods/p/binding", "{}");
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    server.WaitClosed(i + 1);  // the pooled connection is now half-closed (CLOSE-WAIT here)
  }
  EXPECT_EQ(server.answered(), 4);
  EXPECT_EQ(server.connections(), 4);
}

// A server that says goodbye on an idle connection ("408 Request Timeout", then close):
// the pooled socket is readable, so cpp-httplib's own liveness peek takes it for alive and
// the next request would read the stale 408 as its answer.
TEST(RestClientTest, IdleConnectionWithUnsolicitedGoodbyeIsNotReused) {
  LoopbackServer server({.close_after_answer = true, .say_408_on_close = true});
  auto client = Client(server.Config());
  for (int i = 0; i < 3; ++i) {
    auto r = client->Do("POST", "/api/v1/namespaces/ns/pods/p/binding", "{}");
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200) << "request " << i;
    server.WaitClosed(i + 1);
  }
  EXPECT_EQ(server.answered(), 3);
  EXPECT_EQ(client->metrics().stale_connections, 2u);
}

// The server closes a reused connection when the request arrives, without answering: the
// request is retried once on a fresh connection.
TEST(RestClientTest, RequestOnReusedConnectionDroppedBeforeAnswerIsRetriedOnce) {
  LoopbackServer server({.drop_nth_request = 2});
  auto client = Client(server.Config());
  auto first = client->Do("GET", "/api/v1/pods/a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = client->Do("POST", "/api/v1/namespaces/ns/pods/p/binding", "{}");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(client->metrics().stale_retries, 1u);
}

// A fresh connection that fails is not retried (the request may have been applied).
TEST(RestClientTest, FailureOnFreshConnectionIsNotRetried) {
  LoopbackServer server({.drop_nth_request = 1});
  auto client = Client(server.Config());
  auto r = client->Do("POST", "/api/v1/namespaces/ns/pods/p/binding", "{}");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client->metrics().stale_retries, 0u);
}

TEST(RestClientTest, MetricsCountRequestsByVerbAndCodeWithLatencyHistogram) {
  LoopbackServer server({});
  auto client = Client(server.Config());
  ASSERT_TRUE(client->Do("GET", "/a").ok());
  ASSERT_TRUE(client->Do("GET", "/b").ok());
  ASSERT_TRUE(client->Do("POST", "/c", "{}").ok());
  KubeConfig dead;
  dead.server = "http://127.0.0.1:1";  // nothing listens: a transport error counts as code 0
  auto unreachable = Client(dead);
  EXPECT_FALSE(unreachable->Do("GET", "/x").ok());

  RestClientMetrics m = client->metrics();
  ASSERT_EQ(m.requests.size(), 2u);
  EXPECT_EQ(m.requests[0].verb, "GET");
  EXPECT_EQ(m.requests[0].code, 200);
  EXPECT_EQ(m.requests[0].count, 2u);
  EXPECT_EQ(m.requests[1].verb, "POST");
  EXPECT_EQ(m.requests[1].count, 1u);
  ASSERT_EQ(m.latency.size(), 2u);
  const auto& get = m.latency[0];
  EXPECT_EQ(get.verb, "GET");
  EXPECT_EQ(get.count, 2u);
  ASSERT_EQ(get.cumulative.size(), RestClientMetrics::LatencyBuckets().size() + 1);
  EXPECT_EQ(get.cumulative.back(), 2u);  // +Inf holds every request
  for (size_t i = 1; i < get.cumulative.size(); ++i) EXPECT_LE(get.cumulative[i - 1], get.cumulative[i]);
  EXPECT_GT(get.sum_seconds, 0);

  RestClientMetrics u = unreachable->metrics();
  ASSERT_EQ(u.requests.size(), 1u);
  EXPECT_EQ(u.requests[0].code, 0);
}

// The limiter's wait is accounted exactly (the bucket runs on a FakeClock that does not
// move, so each request reserves one more 1/qps step ahead), and status writes take their
// tokens from their own bucket, never from the one binds use.
TEST(RestClientTest, RateLimiterWaitIsMeasuredAndStatusWritesHaveTheirOwnBucket) {
  LoopbackServer server({});
  auto clock = std::make_shared<FakeClock>();
  RestClientOptions opts;
  opts.qps = 1000;  // 1 ms per token
  opts.burst = 1;
  opts.status_qps = 1000;
  opts.status_burst = 1;
  opts.clock = clock;
  auto client = Client(server.Config(), opts);
  ASSERT_TRUE(client->Do("POST", "/binding", "{}").ok());  // the burst token
  ASSERT_TRUE(client->Do("POST", "/binding", "{}").ok());  // waits 1 ms
  ASSERT_TRUE(client->Do("POST", "/binding", "{}").ok());  // waits 2 ms
  RestClientMetrics m = client->metrics();
  EXPECT_EQ(m.rate_limited, 2u);
  EXPECT_NEAR(m.rate_limiter_wait_seconds, 0.003, 1e-9);
  // The status bucket is untouched by the binds: its first write does not wait.
  ASSERT_TRUE(
      client->Do("PATCH", "/status", "{}", "application/merge-patch+json", RequestClass::kStatus).ok());
  EXPECT_EQ(client->metrics().rate_limited, 2u);
  // And status writes do not drain the binds' bucket: the next bind waits 3 ms, as before.
  ASSERT_TRUE(
      client->Do("PATCH", "/status", "{}", "application/merge-patch+json", RequestClass::kStatus).ok());
  ASSERT_TRUE(client->Do("POST", "/binding", "{}").ok());
  m = client->metrics();
  EXPECT_EQ(m.rate_limited, 4u);
  EXPECT_NEAR(m.rate_limiter_wait_seconds, 0.003 + 0.001 + 0.003, 1e-9);
}

}  // namespace
}  // namespace volcache::kube
