// `volcache serve` when things go wrong: API server restart (stale keep-alive connections),
// 410 Gone relists, an unreachable server, RBAC (deploy/'s and none), bad objects.
// The server runs with the watch cache off and a 5 s compaction so that old resourceVersions
// really answer 410.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <regex>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

class FaultsTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer("--watch-cache=false --etcd-compaction-interval=5s"); }
  static void TearDownTestSuite() { DownServer(); }
};

const std::string kPG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

size_t LineCount(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Defect 4: after a restart every pooled keep-alive connection is dead; binds must not fail.
TEST_F(FaultsTest, ApiServerRestartServeReconnectsAndBindsWithoutLostOrDuplicatedBindings) {
  KubeClient c = Admin();
  const std::string ns = "restart";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "rs-n1", {{"suite", "rs"}}, "16", "32Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "before", 3, "1", "1Gi", {{"suite", "rs"}}), "");
  auto serve = StartServe("restart", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 3; }, Seconds(15))) << Tail(serve->Log());
  const size_t lines_before = LineCount(serve->Log());

  std::string err;
  ASSERT_TRUE(server().StopApiserver(&err)) << err;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // serve sees the server gone
  EXPECT_TRUE(serve->Running()) << "serve exited while the API server was down:\n" << Tail(serve->Log());
  ASSERT_TRUE(server().StartApiserver(&err)) << err;
  c = Admin();

  EXPECT_TRUE(
      Eventually([&] { return !LinesWith(serve->Log(), {"reconnect"}, lines_before).empty(); }, Seconds(20)))
      << "no log line marks the watch reconnect (defect 8); log since the restart:\n"
      << Tail(serve->Log());
  ASSERT_EQ(CreateGang(c, ns, "after", 6, "1", "1Gi", {{"suite", "rs"}}), "");
  EXPECT_TRUE(Eventually([&] { return CountBound(c, ns) == 9; }, Seconds(30)))
      << "bound " << CountBound(c, ns) << "/9; log:\n"
      << Tail(serve->Log());
  auto metrics = serve->AdminGet("/metrics").body;
  EXPECT_EQ(MetricValue(metrics, "volcache_binds_failed_total"), 0)
      << "binds failed after the restart (defect 4: stale keep-alive connections)";
  auto failed_lines =
      LinesWith(serve->Log(), {"binding failed", "bind failed", "failed to bind"}, lines_before);
  EXPECT_TRUE(failed_lines.empty()) << "first: " << (failed_lines.empty() ? "" : failed_lines[0]);
  EXPECT_TRUE(BindingsExactlyOnce(ns));
  EXPECT_TRUE(serve->Running());
}

TEST_F(FaultsTest, WatchFromCompactedResourceVersionRelistsAndStaysConsistent) {
  KubeClient c = Admin();
  const std::string ns = "gone";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "gone-n1", {{"suite", "gone"}}, "16", "32Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "first", 2, "1", "1Gi", {{"suite", "gone"}}), "");
  auto serve = StartServe("gone", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 2; }, Seconds(15))) << Tail(serve->Log());
  // Move etcd's revision far past the watches' resourceVersions and let two compactions run.
  for (int i = 0; i < 30; ++i) {
    c.Post("/api/v1/namespaces/" + ns + "/configmaps",
           Json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", "churn-" + std::to_string(i)}}}});
  }
  std::this_thread::sleep_for(std::chrono::seconds(11));
  for (int i = 30; i < 40; ++i) {
    c.Post("/api/v1/namespaces/" + ns + "/configmaps",
           Json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", "churn-" + std::to_string(i)}}}});
  }
  const size_t lines_before = LineCount(serve->Log());
  std::string err;
  ASSERT_TRUE(server().StopApiserver(&err)) << err;
  ASSERT_TRUE(server().StartApiserver(&err)) << err;
  c = Admin();
  // While disconnected nothing changed in pods; make changes right after the restart too.
  ASSERT_EQ(c.Delete("/api/v1/namespaces/" + ns + "/pods/first-0?gracePeriodSeconds=0").status, 200);
  ASSERT_EQ(CreateGang(c, ns, "second", 2, "1", "1Gi", {{"suite", "gone"}}), "");
  EXPECT_TRUE(Eventually(
      [&] {
        return !LinesWith(serve->Log(), {"410", "gone", "too old", "relist", "expired"}, lines_before)
                    .empty();
      },
      Seconds(30)))
      << "no relist after 410 in the log; since the restart:\n"
      << Tail(serve->Log());
  EXPECT_TRUE(Eventually([&] { return CountBound(c, ns) == 3; }, Seconds(30)))
      << "bound " << CountBound(c, ns) << "/3 after the relist";
  bool consistent = Eventually(
      [&] {
        auto cmp = serve->AdminGet("/debug/compare").json();
        return cmp.is_object() && cmp.value("consistent", false) && cmp.value("invariants", "") == "ok";
      },
      Seconds(15));
  EXPECT_TRUE(consistent) << serve->AdminGet("/debug/compare").body;
  EXPECT_TRUE(BindingsExactlyOnce(ns));
}

// A TCP listener that counts connections (and closes them at once).
class CountingListener {
 public:
  CountingListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 128);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        {
          std::lock_guard<std::mutex> l(mu_);
          times_.push_back(std::chrono::steady_clock::now());
        }
        close(c);
      }
    });
  }
  ~CountingListener() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int CountBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(
        std::count_if(times_.begin(), times_.end(), [&](auto t) { return t >= a && t < b; }));
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::chrono::steady_clock::time_point> times_;
};

// A copy of the admin kubeconfig that points at 127.0.0.1:port.
std::string KubeconfigForPort(const KubeApiServer& s, const std::string& name, int port) {
  std::string kc = s.base() + "/kubeconfig-" + name;
  std::ifstream in(s.kubeconfig());
  std::stringstream ss;
  ss << in.rdbuf();
  std::ofstream(kc) << std::regex_replace(ss.str(), std::regex(R"(https://127\.0\.0\.1:\d+)"),
                                          "https://127.0.0.1:" + std::to_string(port));
  return kc;
}

// Defects 2 (no liveness, SIGTERM ignored during the initial sync) and 3 (retry storms): the
// API server's port is closed (connection refused).
TEST_F(FaultsTest, UnreachableServerHealthzAt1sReadyz503NoWarningStormAndSigtermWithin2s) {
  auto serve = StartServe("unreachable", {}, KubeconfigForPort(server(), "closed", FreePort()));
  const auto t0 = serve->started();
  double healthz_at = -1;
  Eventually(
      [&] {
        if (serve->AdminGet("/healthz", Seconds(0.2)).status == 200) {
          healthz_at = Seconds(std::chrono::steady_clock::now() - t0).count();
          return true;
        }
        return !serve->Running();
      },
      Seconds(5));
  EXPECT_GE(healthz_at, 0) << "/healthz never answered 200 in 5 s (defect 2); log:\n" << Tail(serve->Log());
  EXPECT_LE(healthz_at, 1.0) << "/healthz answered 200 only after " << healthz_at << " s (defect 2)";
  auto ready = serve->AdminGet("/readyz");
  EXPECT_EQ(ready.status, 503) << "/readyz with an unreachable API server: " << ready.status << " "
                               << ready.body << ready.error;
  std::this_thread::sleep_for(std::chrono::steady_clock::time_point(t0 + std::chrono::seconds(12)) -
                              std::chrono::steady_clock::now());
  const auto warnings = LinesWith(serve->Log(), {"[warning]", "[error]"}).size();
  EXPECT_LE(warnings, 40u) << "warning/error log lines in 12 s against an unreachable server (defect 3: "
                              "backoff and rate-limited logs); first lines:\n"
                           << serve->Log().substr(0, 1500);
  ASSERT_TRUE(serve->Running()) << Tail(serve->Log());

  const auto sig_at = std::chrono::steady_clock::now();
  serve->Signal(SIGTERM);
  auto code = serve->WaitExit(Seconds(5));
  const double took = Seconds(std::chrono::steady_clock::now() - sig_at).count();
  EXPECT_TRUE(code.has_value() && took <= 2.0)
      << "SIGTERM during the initial sync: "
      << (code ? "exited after " + std::to_string(took) + " s" : "still running after 5 s")
      << " (defect 2: want exit within 2 s)";
  if (code) {
    EXPECT_EQ(*code, 0) << Tail(serve->Log());
  }
}

// Defect 3: against a server that accepts and drops every connection, serve backs off to at
// most 2 connection attempts per second after the first 10 s, and survives (no SIGPIPE).
TEST_F(FaultsTest, ServerDroppingConnectionsGetsAtMost2AttemptsPerSecondAndServeSurvives) {
  CountingListener listener;
  auto serve = StartServe("dropping", {}, KubeconfigForPort(server(), "dropping", listener.port()));
  const auto t0 = serve->started();
  Eventually([&] { return !serve->Running(); }, Seconds(15));
  std::optional<int> died = serve->Running() ? std::nullopt : serve->WaitExit(Seconds(0));
  EXPECT_FALSE(died.has_value()) << "serve exited with " << *died << (*died == 141 ? " (SIGPIPE)" : "")
                                 << " while the server dropped its connections; log:\n"
                                 << Tail(serve->Log());
  const int late = listener.CountBetween(t0 + std::chrono::seconds(10), t0 + std::chrono::seconds(15));
  const int early = listener.CountBetween(t0, t0 + std::chrono::seconds(10));
  if (!died) {
    EXPECT_LE(late, 10) << late << " connections in seconds 10-15 (" << early
                        << " in the first 10 s): want at most 2/s after backoff (defect 3)";
  }
  serve->Signal(SIGTERM);
  EXPECT_TRUE(serve->WaitExit(Seconds(5)).has_value());
}

// deploy/'s ClusterRole (README.md points at it), read from the manifest so the test follows it.
Json DeployClusterRole() {
  std::string err;
  for (Json& m : DeployManifests(&err)) {
    if (m.value("kind", "") != "ClusterRole") continue;
    m.erase("_file");
    return m;
  }
  return nullptr;
}

std::string ServiceAccountToken(KubeClient& c, const std::string& ns, const std::string& sa,
                                std::string* err) {
  auto a = c.Post("/api/v1/namespaces/" + ns + "/serviceaccounts",
                  Json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", sa}}}});
  if (a.status != 201) *err = "POST serviceaccount: " + std::to_string(a.status) + a.body;
  return RequestToken(c, ns, sa, err);
}

TEST_F(FaultsTest, ServiceAccountWithTheDeployRbacServesAndBinds) {
  KubeClient c = Admin();
  const std::string ns = "rbac";
  CreateNamespace(c, ns);
  Json role = DeployClusterRole();
  ASSERT_TRUE(role.is_object()) << "no ClusterRole in deploy/";
  const std::string role_name = role["metadata"]["name"];
  auto a = c.Post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role);
  ASSERT_EQ(a.status, 201) << a.body;
  a = c.Post(
      "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      Json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
           {"kind", "ClusterRoleBinding"},
           {"metadata", {{"name", role_name}}},
           {"subjects", Json::array({{{"kind", "ServiceAccount"}, {"name", "volcache"}, {"namespace", ns}}})},
           {"roleRef",
            {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role_name}}}});
  ASSERT_EQ(a.status, 201) << a.body;
  std::string err;
  std::string token = ServiceAccountToken(c, ns, "volcache", &err);
  ASSERT_FALSE(token.empty()) << err;
  ASSERT_EQ(CreateReadyNode(c, "rbac-n1", {{"suite", "rbac"}}, "8", "16Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "g", 2, "1", "1Gi", {{"suite", "rbac"}}), "");
  // An unschedulable gang too, so status writes, conditions and events are exercised.
  ASSERT_EQ(CreateGang(c, ns, "big", 2, "6", "1Gi", {{"suite", "rbac"}}), "");
  auto serve =
      StartServe("rbac", {"--schedule-period", "500ms"}, server().WriteKubeconfig("volcache", token));
  ASSERT_TRUE(WaitReady(*serve));
  EXPECT_TRUE(Eventually(
      [&] {
        auto n = PodNodes(c, ns);
        return n["g-0"] == "rbac-n1" && n["g-1"] == "rbac-n1";
      },
      Seconds(15)))
      << Tail(serve->Log());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto forbidden = LinesWith(serve->Log(), {"403", "forbidden"});
  EXPECT_TRUE(forbidden.empty()) << forbidden.size()
                                 << " log lines with 403/forbidden under deploy/'s RBAC; first: "
                                 << (forbidden.empty() ? "" : forbidden[0]);
  int denied = 0;
  std::string what;
  for (auto& e : ReadAudit(server().audit_log())) {
    if (e.user == "system:serviceaccount:rbac:volcache" && e.code == 403) {
      ++denied;
      what = e.verb + " " + e.resource + (e.subresource.empty() ? "" : "/" + e.subresource);
    }
  }
  EXPECT_EQ(denied, 0) << "deploy/'s RBAC is missing a permission serve uses: " << what;
}

// Defect 3: without RBAC, one clear 403 message per missing permission and no request storm.
TEST_F(FaultsTest, ServiceAccountWithoutRbacLogsEach403OnceWithoutRequestStorm) {
  KubeClient c = Admin();
  const std::string ns = "norbac";
  CreateNamespace(c, ns);
  std::string err;
  std::string token = ServiceAccountToken(c, ns, "nobody", &err);
  ASSERT_FALSE(token.empty()) << err;
  auto serve = StartServe("norbac", {}, server().WriteKubeconfig("nobody", token));
  const auto t0 = serve->started();
  std::this_thread::sleep_for(std::chrono::seconds(12));
  const std::string log = serve->Log();
  // The API server's message names verb and resource: `cannot list resource "pods"`.
  std::map<std::string, int> per_permission;
  std::regex re(R"re(cannot (\w+) resource \\?"([\w/]+)\\?")re");
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, re)) ++per_permission[m[1].str() + " " + m[2].str()];
  }
  EXPECT_FALSE(per_permission.empty()) << "no log line names a missing permission (verb, resource); log:\n"
                                       << Tail(log);
  for (auto& [perm, n] : per_permission) {
    EXPECT_EQ(n, 1) << "'cannot " << perm << "' logged " << n << " times in 12 s (want once)";
  }
  int denied_writes = 0;
  for (auto& e : ReadAudit(server().audit_log())) {
    if (e.user == "system:serviceaccount:norbac:nobody" && e.code == 403) ++denied_writes;
  }
  EXPECT_LE(denied_writes, 24) << denied_writes
                               << " forbidden writes in 12 s (defect 3: want backoff, not a storm)";
  EXPECT_LE(LinesWith(log, {"[warning]", "[error]"}).size(), 40u)
      << "warning/error log lines in 12 s without RBAC";
  (void)t0;
  serve->Signal(SIGTERM);
  EXPECT_TRUE(serve->WaitExit(Seconds(5)).has_value()) << "SIGTERM ignored without RBAC";
}

TEST_F(FaultsTest, BadObjectsAreNamedOnceAndEverythingElseIsScheduled) {
  KubeClient c = Admin();
  const std::string ns = "bad";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "bad-n1", {{"suite", "bad"}}, "8", "16Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "hugecpu", 1, "1e9", "1Gi", {{"suite", "bad"}}), "");
  ASSERT_EQ(CreateGang(c, ns, "hugemem", 1, "1", "999Ei", {{"suite", "bad"}}), "");
  ASSERT_EQ(CreateGang(c, ns, "noqueue", 1, "1", "1Gi", {{"suite", "bad"}}, "nope"), "");
  ASSERT_EQ(CreateGang(c, ns, "good", 2, "1", "1Gi", {{"suite", "bad"}}), "");
  auto serve = StartServe("bad", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  EXPECT_TRUE(Eventually([&] { return CountBound(c, ns) == 2; }, Seconds(15)))
      << "bound " << CountBound(c, ns) << " (want the 2 good pods); log:\n"
      << Tail(serve->Log());
  std::this_thread::sleep_for(std::chrono::seconds(4));  // eight more sessions
  ASSERT_TRUE(serve->Running()) << Tail(serve->Log());
  auto nodes = PodNodes(c, ns);
  EXPECT_EQ(nodes["good-0"], "bad-n1");
  EXPECT_EQ(nodes["good-1"], "bad-n1");
  EXPECT_EQ(nodes["hugecpu-0"], "");
  EXPECT_EQ(nodes["hugemem-0"], "");
  EXPECT_EQ(nodes["noqueue-0"], "");
  const std::string log = serve->Log();
  auto mem = LinesWith(log, {"hugemem"});
  int mem_named = 0;
  for (auto& l : mem) mem_named += Lower(l).find("memory") != std::string::npos;
  EXPECT_EQ(mem_named, 1) << "log lines naming pod hugemem-0 and its memory: " << mem_named << "; log:\n"
                          << Tail(log);
  auto nq = LinesWith(log, {"noqueue"});
  int nq_named = 0;
  for (auto& l : nq) nq_named += l.find("nope") != std::string::npos;
  EXPECT_EQ(nq_named, 1) << "log lines naming PodGroup noqueue and its missing queue 'nope': " << nq_named;
  auto events = c.Get("/api/v1/namespaces/" + ns + "/events").json();
  bool queue_event = false;
  for (auto& e : events["items"]) queue_event |= e.value("message", "").find("nope") != std::string::npos;
  EXPECT_TRUE(queue_event) << "no Event says queue 'nope' does not exist";
  auto cmp = serve->AdminGet("/debug/compare").json();
  EXPECT_EQ(cmp.value("invariants", ""), "ok") << cmp.dump();
  EXPECT_TRUE(BindingsExactlyOnce(ns));
}

}  // namespace
}  // namespace volcache::integration
