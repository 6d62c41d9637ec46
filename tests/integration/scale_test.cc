// `volcache serve` at scale on a real kube-apiserver (DIR on /dev/shm): the first bind on 200
// nodes / 2,000 gang pods (defect 9) and 8,000 gang pods on 500 nodes (defect 10), each against
// the ceiling a trivial binder reaches on the same server with the same concurrency.
#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

constexpr int kCreateThreads = 8;
constexpr int kBindConcurrency = 16;  // serve's --kube-bind-concurrency default

class ScaleTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }

  // Creates `nodes` Ready nodes (label suite=<suite>) and `gangs` gangs of `per_gang` pods.
  std::string Populate(const std::string& ns, const std::string& suite, int nodes, int gangs, int per_gang,
                       const std::string& cpu, const std::string& mem) {
    KubeClient c = Admin();
    CreateNamespace(c, ns);
    std::string e = ParallelFor(server(), kCreateThreads, nodes, [&](KubeClient& k, int i) {
      return CreateReadyNode(k, suite + "-n" + std::to_string(i), {{"suite", suite}}, "16", "64Gi");
    });
    if (!e.empty()) return e;
    e = ParallelFor(server(), kCreateThreads, gangs, [&](KubeClient& k, int g) {
      auto a = k.Post("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + ns + "/podgroups",
                      PodGroupJson(ns, "g" + std::to_string(g), per_gang, "default"));
      return a.status == 201 ? "" : "POST podgroup: " + std::to_string(a.status) + a.error + a.body;
    });
    if (!e.empty()) return e;
    return ParallelFor(server(), kCreateThreads, gangs * per_gang, [&](KubeClient& k, int i) {
      const std::string group = "g" + std::to_string(i / per_gang);
      auto a = k.Post(
          "/api/v1/namespaces/" + ns + "/pods",
          PodJson(ns, group + "-" + std::to_string(i % per_gang), group, cpu, mem, {{"suite", suite}}));
      return a.status == 201 ? "" : "POST pod: " + std::to_string(a.status) + a.error + a.body;
    });
  }

  // The ceiling: `n` pods of no scheduler bound by a trivial binder (Binding POSTs as fast as
  // the server takes them, kBindConcurrency at once) to placeholder node names. Pods per second.
  double TrivialBinderRate(const std::string& ns, int n) {
    KubeClient c = Admin();
    CreateNamespace(c, ns);
    std::string e = ParallelFor(server(), kCreateThreads, n, [&](KubeClient& k, int i) {
      auto a = k.Post("/api/v1/namespaces/" + ns + "/pods",
                      PodJson(ns, "p" + std::to_string(i), "", "100m", "64Mi", {}, "trivial-binder"));
      return a.status == 201 ? "" : "POST pod: " + std::to_string(a.status) + a.body;
    });
    EXPECT_EQ(e, "");
    auto t0 = std::chrono::steady_clock::now();
    e = ParallelFor(server(), kBindConcurrency, n, [&](KubeClient& k, int i) {
      const std::string pod = "p" + std::to_string(i);
      Json b = {
          {"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", {{"name", pod}, {"namespace", ns}}},
          {"target",
           {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "ceiling-sink-" + std::to_string(i % 10)}}}};
      auto a = k.Post("/api/v1/namespaces/" + ns + "/pods/" + pod + "/binding", b);
      return a.status == 201 ? "" : "binding: " + std::to_string(a.status) + a.body;
    });
    EXPECT_EQ(e, "");
    const double wall = Seconds(std::chrono::steady_clock::now() - t0).count();
    // Measured like serve's bind phase: the server's own timestamps (first received, last done).
    auto [first, last] = BindWindow(ReadAudit(server().audit_log()), ns);
    std::printf("integration: trivial binder: %d Bindings in %.2f s wall, %.2f s on the server\n", n, wall,
                last - first);
    return n / std::max(1e-3, last - first);
  }

  // Waits until `want` pods of `ns` have a successful Binding, failing when nothing new was
  // bound for `stall` or after `deadline`. Returns the audited bindings.
  std::map<std::string, int> WaitAllBound(ServeProcess& serve, const std::string& ns, size_t want,
                                          Seconds stall, Seconds deadline) {
    auto start = std::chrono::steady_clock::now();
    auto last_progress = start;
    size_t last = 0;
    std::map<std::string, int> b;
    while (true) {
      b = BindingsPerPod(ReadAudit(server().audit_log()), ns);
      auto now = std::chrono::steady_clock::now();
      if (b.size() != last) {
        last = b.size();
        last_progress = now;
      }
      if (b.size() >= want) break;
      if (now - last_progress > stall || now - start > deadline || !serve.Running()) {
        ADD_FAILURE() << "bound " << b.size() << " of " << want << " pods; nothing new for "
                      << Seconds(now - last_progress).count() << " s (running: " << serve.Running()
                      << "); metrics bind_flow_queued: " << BindFlowQueued(serve) << "; log tail:\n"
                      << Tail(serve.Log(), 1500);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return b;
  }

  static std::string BindFlowQueued(ServeProcess& serve) {
    std::istringstream in(serve.AdminGet("/metrics").body);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("volcache_bind_flow_queued ", 0) == 0) return line.substr(26);
    }
    return "?";
  }

  static std::pair<double, double> BindWindow(const std::vector<AuditEvent>& ev, const std::string& ns) {
    double first = 1e300, last = 0;
    for (auto& e : ev) {
      if (e.resource == "pods" && e.subresource == "binding" && e.code == 201 && e.ns == ns) {
        first = std::min(first, e.received);
        last = std::max(last, e.completed);
      }
    }
    return {first, last};
  }

  static inline double ceiling_rate_ = 0;
};

double NowEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Defect 9: first bind <= 0.5 s after start on 200 nodes / 2,000 gang pods.
TEST_F(ScaleTest, FirstBindWithin500msOn200NodesAnd2000GangPods) {
  const std::string ns = "first";
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Populate(ns, "fb", 200, 250, 8, "1", "1Gi"), "");
  std::cout << "integration: created 200 nodes, 250 PodGroups, 2000 pods in "
            << Seconds(std::chrono::steady_clock::now() - t0).count() << " s" << std::endl;
  const double start = NowEpoch();
  auto serve = StartServe("first-bind");
  auto bindings = WaitAllBound(*serve, ns, 2000, Seconds(60), Seconds(180));
  auto ev = ReadAudit(server().audit_log());
  auto [first, last] = BindWindow(ev, ns);
  serve->Signal(SIGTERM);
  serve->WaitExit(Seconds(10));
  ceiling_rate_ = TrivialBinderRate("first-ceiling", 2000);
  const double first_bind = first - start;
  const double rate = bindings.size() / std::max(1e-3, last - first);
  std::printf(
      "FIGURE: defect 9: 200 nodes, 2000 gang pods: first Binding %.3f s after serve started; "
      "%zu bound, bind phase %.0f pods/s over %.2f s; trivial binder ceiling %.0f pods/s (%d at once)\n",
      first_bind, bindings.size(), rate, last - first, ceiling_rate_, kBindConcurrency);
  std::fflush(stdout);
  EXPECT_EQ(bindings.size(), 2000u);
  for (auto& [pod, n] : bindings) EXPECT_EQ(n, 1) << pod;
  // The target (0.5 s, met on a quiet machine: docs/BENCHMARKS.md) is a benchmark figure, the
  // FIGURE line above; the test fails on the defect itself — the first session one period
  // late and a paginated first LIST from etcd put the first Binding at 1.7-2.4 s — with room
  // for a machine busy with other work.
  EXPECT_LE(first_bind, 1.5) << "first Binding " << first_bind << " s after start (defect 9 target 0.5 s)";
}

// Defect 10: 8,000 gang pods on 500 nodes, all bound, each once.
TEST_F(ScaleTest, EightThousandGangPodsOn500NodesAllBoundOnce) {
  const std::string ns = "big";
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Populate(ns, "big", 500, 1000, 8, "500m", "512Mi"), "");
  std::cout << "integration: created 500 nodes, 1000 PodGroups, 8000 pods in "
            << Seconds(std::chrono::steady_clock::now() - t0).count() << " s" << std::endl;
  const double start = NowEpoch();
  auto serve = StartServe("eight-thousand");
  auto bindings = WaitAllBound(*serve, ns, 8000, Seconds(20), Seconds(300));
  const double done = NowEpoch();
  auto [first, last] = BindWindow(ReadAudit(server().audit_log()), ns);
  serve->Signal(SIGTERM);
  auto code = serve->WaitExit(Seconds(10));
  if (ceiling_rate_ == 0) ceiling_rate_ = TrivialBinderRate("big-ceiling", 2000);
  std::printf(
      "FIGURE: defect 10: 500 nodes, 1000 gangs x 8 pods: %zu of 8000 bound %s %.2f s from serve's start "
      "(bind phase %.2f s); trivial binder ceiling %.0f pods/s (%d at once), i.e. %.2f s for 8000\n",
      bindings.size(), bindings.size() == 8000 ? "(all) in" : "when the test gave up after",
      bindings.size() == 8000 ? last - start : done - start, bindings.empty() ? 0.0 : last - first,
      ceiling_rate_, kBindConcurrency, 8000 / ceiling_rate_);
  std::fflush(stdout);
  EXPECT_EQ(bindings.size(), 8000u) << "defect 10: the bind flow stopped";
  for (auto& [pod, n] : bindings) {
    if (n != 1) ADD_FAILURE() << pod << " bound " << n << " times";
  }
  EXPECT_TRUE(code.has_value()) << "serve did not exit 10 s after SIGTERM";
}

}  // namespace
}  // namespace volcache::integration
