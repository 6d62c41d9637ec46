// `volcache serve` replicas with leader election on one real kube-apiserver: exactly one
// leader (the Lease's holder and /metrics volcache_leader agree); SIGKILL of the leader → a
// standby schedules a new gang within lease duration + 2 s; SIGTERM → the lease is released
// and a standby takes over within 3 s; a leader paused (SIGSTOP) longer than the lease makes
// no write after it resumes and exits 1 ("leaderelection lost"). No pod is ever bound twice.
// Short timings (4s / 3s / 1s); prints FIGURE: lines with the failover times measured.
#include <signal.h>

#include <iostream>
#include <regex>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

class HaTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }

  std::unique_ptr<ServeProcess> Replica(const std::string& name, const std::string& lease) {
    return StartServe(name, {"--schedule-period", "500ms", "--leader-elect-lease-duration", "4s",
                             "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "1s",
                             "--leader-elect-resource-name", lease});
  }
};

constexpr double kLeaseSeconds = 4;

// volcache_leader from /metrics: 1, 0, or -1 when it cannot be read.
int LeaderMetric(ServeProcess& p) {
  auto a = p.AdminGet("/metrics", Seconds(1));
  if (a.status != 200) return -1;
  std::smatch m;
  if (!std::regex_search(a.body, m, std::regex(R"((^|\n)volcache_leader ([0-9.]+))"))) return -1;
  return std::stod(m[2]) > 0.5 ? 1 : 0;
}

std::string Identity(ServeProcess& p) {
  std::smatch m;
  const std::string log = p.Log();
  if (std::regex_search(log, m, std::regex(R"(leader election: (\S+) is a candidate)"))) return m[1];
  return "";
}

std::string LeaseHolder(KubeClient& c, const std::string& lease) {
  auto a = c.Get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + lease);
  if (a.status != 200) return "<" + std::to_string(a.status) + ">";
  return a.json()["spec"].value("holderIdentity", "");
}

// The index of the one replica that says it leads and holds the lease; -1 unless exactly
// one does (and the lease names it).
int OneLeader(KubeClient& c, const std::string& lease, const std::vector<ServeProcess*>& ps) {
  int leader = -1, count = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (LeaderMetric(*ps[i]) == 1) {
      leader = static_cast<int>(i);
      ++count;
    }
  }
  if (count != 1) return -1;
  return LeaseHolder(c, lease) == Identity(*ps[leader]) ? leader : -1;
}

bool AllBound(KubeClient& c, const std::string& ns, const std::string& group, int n) {
  auto nodes = PodNodes(c, ns);
  for (int i = 0; i < n; ++i) {
    if (nodes[group + "-" + std::to_string(i)].empty()) return false;
  }
  return true;
}

// Every bound pod of `ns` is on one of `nodes`.
::testing::AssertionResult OnNodes(KubeClient& c, const std::string& ns, const std::set<std::string>& nodes) {
  for (auto& [pod, node] : PodNodes(c, ns)) {
    if (!node.empty() && !nodes.count(node)) return ::testing::AssertionFailure() << pod << " is on " << node;
  }
  return ::testing::AssertionSuccess();
}

TEST_F(HaTest, ThreeReplicasOneLeaderKillAndTermFailOverWithoutDuplicateBindings) {
  KubeClient c = Admin();
  const std::string ns = "ha-failover", lease = "ha-failover";
  CreateNamespace(c, ns);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(CreateReadyNode(c, "ha-f-n" + std::to_string(i), {{"suite", ns}}, "16", "32Gi"), "");
  std::vector<std::unique_ptr<ServeProcess>> owned;
  for (int i = 0; i < 3; ++i) owned.push_back(Replica("ha-f-" + std::to_string(i), lease));
  std::vector<ServeProcess*> ps;
  for (auto& p : owned) ps.push_back(p.get());
  for (auto* p : ps) ASSERT_TRUE(WaitReady(*p)) << "standbys sync too";

  int leader = -1;
  ASSERT_TRUE(Eventually([&] { return (leader = OneLeader(c, lease, ps)) >= 0; }, Seconds(15)))
      << Tail(ps[0]->Log());
  // Stays exactly one for a few renewals.
  for (int k = 0; k < 6; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(OneLeader(c, lease, ps), leader);
  }
  ASSERT_EQ(CreateGang(c, ns, "g1", 3, "1", "1Gi", {{"suite", ns}}), "");
  ASSERT_TRUE(Eventually([&] { return AllBound(c, ns, "g1", 3); }, Seconds(15))) << Tail(ps[leader]->Log());

  // SIGKILL: the lease expires; a standby takes over and schedules a new gang.
  ps[leader]->Signal(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_EQ(CreateGang(c, ns, "g2", 3, "1", "1Gi", {{"suite", ns}}), "");
  ASSERT_TRUE(Eventually([&] { return AllBound(c, ns, "g2", 3); }, Seconds(30)));
  const double kill_failover = Seconds(std::chrono::steady_clock::now() - killed).count();
  std::cout << "FIGURE: SIGKILL of the leader -> new gang bound by a standby in " << kill_failover
            << " s (lease 4s, renew deadline 3s, retry 1s)" << std::endl;
  EXPECT_LE(kill_failover, kLeaseSeconds + 2);
  ps.erase(ps.begin() + leader);
  ASSERT_TRUE(Eventually([&] { return (leader = OneLeader(c, lease, ps)) >= 0; }, Seconds(10)));
  for (int k = 0; k < 4; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(OneLeader(c, lease, ps), leader) << "two replicas: exactly one leader";
  }

  // SIGTERM: the leader releases the lease on its way out; the standby takes it at once.
  ps[leader]->Signal(SIGTERM);
  const auto termed = std::chrono::steady_clock::now();
  ASSERT_EQ(CreateGang(c, ns, "g3", 3, "1", "1Gi", {{"suite", ns}}), "");
  ASSERT_TRUE(Eventually([&] { return AllBound(c, ns, "g3", 3); }, Seconds(30)));
  const double term_failover = Seconds(std::chrono::steady_clock::now() - termed).count();
  std::cout << "FIGURE: SIGTERM of the leader -> new gang bound by the standby in " << term_failover << " s"
            << std::endl;
  EXPECT_LE(term_failover, 3.0);
  auto code = ps[leader]->WaitExit(Seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  EXPECT_GE(ps[leader]->CountLog("released lease"), 1) << Tail(ps[leader]->Log());

  EXPECT_TRUE(BindingsExactlyOnce(ns));
  EXPECT_TRUE(OnNodes(c, ns, {"ha-f-n0", "ha-f-n1"}));
}

TEST_F(HaTest, PausedLeaderWritesNothingAfterResumingAndExitsLost) {
  KubeClient c = Admin();
  const std::string ns = "ha-pause", lease = "ha-pause";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "ha-p-n0", {{"suite", ns}}, "16", "32Gi"), "");
  // An unschedulable gang keeps every session writing (status, events) while leading.
  ASSERT_EQ(CreateGang(c, ns, "big", 2, "12", "1Gi", {{"suite", ns}}), "");
  auto a = Replica("ha-p-a", lease);
  ASSERT_TRUE(WaitReady(*a));
  ASSERT_TRUE(Eventually([&] { return LeaderMetric(*a) == 1; }, Seconds(15))) << Tail(a->Log());
  auto b = Replica("ha-p-b", lease);
  ASSERT_TRUE(WaitReady(*b));
  ASSERT_EQ(LeaderMetric(*b), 0);
  const std::string id_a = Identity(*a);
  ASSERT_FALSE(id_a.empty());

  a->Signal(SIGSTOP);
  // b takes over once the lease expired in its view, and schedules.
  ASSERT_EQ(CreateGang(c, ns, "g", 2, "1", "1Gi", {{"suite", ns}}), "");
  ASSERT_TRUE(Eventually([&] { return LeaderMetric(*b) == 1 && AllBound(c, ns, "g", 2); }, Seconds(20)))
      << Tail(b->Log());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // paused 6+ s in all: past lease and deadline
  const double resumed =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  a->Signal(SIGCONT);
  auto code = a->WaitExit(Seconds(10));
  ASSERT_TRUE(code.has_value()) << "the paused leader did not exit after resuming; log:\n" << Tail(a->Log());
  EXPECT_EQ(*code, 1);
  EXPECT_GE(a->CountLog("leaderelection lost"), 1) << Tail(a->Log());
  ASSERT_EQ(CreateGang(c, ns, "h", 2, "1", "1Gi", {{"suite", ns}}), "");
  ASSERT_TRUE(Eventually([&] { return AllBound(c, ns, "h", 2); }, Seconds(15))) << Tail(b->Log());

  int after = 0, before = 0;
  std::string what;
  for (auto& e : ReadAudit(server().audit_log())) {
    if (e.user_agent.find(id_a) == std::string::npos) continue;
    if (e.received >= resumed - 0.05) {
      ++after;
      what = e.verb + " " + e.resource + "/" + e.subresource + " " + e.ns + "/" + e.name;
    } else {
      ++before;
    }
  }
  EXPECT_GT(before, 0) << "no audited write of the first leader at all: is its user agent in the audit log?";
  EXPECT_EQ(after, 0) << after << " writes of the paused leader after SIGCONT, e.g. " << what;
  EXPECT_EQ(LeaseHolder(c, lease), Identity(*b));
  EXPECT_TRUE(BindingsExactlyOnce(ns));
  EXPECT_TRUE(OnNodes(c, ns, {"ha-p-n0"}));
}

}  // namespace
}  // namespace volcache::integration
