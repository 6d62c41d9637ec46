// Volcano-compatible multi-scheduler sharding on one real kube-apiserver: three `volcache
// serve` instances (members volcano-scheduler-0..2; two configured by flags, one by Volcano's
// environment variables), all active at once (leader election on, one Lease per member), 12
// nodes and 30 gangs. Every gang is bound exactly once (audit log), each instance binds only
// onto the nodes the ring gives it (Bindings told apart by user agent), no node is
// over-committed (a foreign pod created bound counts), and /debug/shard says who owns what.
//
// The expected owners were computed once by an independent Python model of Volcano's ring
// (stathat.com/c/consistent v1.0.0 over zlib.crc32; see tests/kube/shard_test.cc) for the
// members volcano-scheduler-0..2:
//   nodes shard-n<i>: 0 -> {6, 9, 11}, 1 -> {1, 2, 5, 7}, 2 -> {0, 3, 4, 8, 10}
//   gangs gang-<i>:   0 -> {6, 7, 8, 10, 14, 16, 22, 24, 29},
//                     1 -> {0, 4, 11, 13, 15, 18, 19, 20, 21, 25},
//                     2 -> {1, 2, 3, 5, 9, 12, 17, 23, 26, 27, 28}
#include <stdlib.h>

#include <iostream>
#include <set>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

constexpr int kMembers = 3, kNodes = 12, kGangs = 30, kPerGang = 3;
const std::string kNs = "shard";

const std::vector<std::set<int>> kNodesOf = {{6, 9, 11}, {1, 2, 5, 7}, {0, 3, 4, 8, 10}};
const std::vector<std::set<int>> kGangsOf = {{6, 7, 8, 10, 14, 16, 22, 24, 29},
                                             {0, 4, 11, 13, 15, 18, 19, 20, 21, 25},
                                             {1, 2, 3, 5, 9, 12, 17, 23, 26, 27, 28}};

std::string Member(int i) { return "volcano-scheduler-" + std::to_string(i); }
std::string NodeName(int i) { return "shard-n" + std::to_string(i); }

class ShardTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }
};

// Millicores from "400m" / "2".
int64_t MilliCpu(const std::string& q) {
  if (!q.empty() && q.back() == 'm') return std::stoll(q.substr(0, q.size() - 1));
  return static_cast<int64_t>(std::stod(q) * 1000);
}

TEST_F(ShardTest, ThreeInstancesSplitNodesAndGangsLikeVolcano) {
  KubeClient c = Admin();
  CreateNamespace(c, kNs);
  // 4 cpu per node: member 0's three nodes hold 30 pods of 400m, it has 27 plus the foreign
  // one below: tight enough that an accounting slip over-commits a node.
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_EQ(CreateReadyNode(c, NodeName(i), {{"suite", kNs}}, "4", "16Gi"), "");
  }
  // Another scheduler's pod, created bound on member 0's shard-n6: counted on that node by
  // member 0 only.
  auto a = c.Post("/api/v1/namespaces/" + kNs + "/pods",
                  PodJson(kNs, "foreign", "", "400m", "256Mi", {}, "default-scheduler", NodeName(6)));
  ASSERT_EQ(a.status, 201) << a.body;
  for (int g = 0; g < kGangs; ++g) {
    const std::string gang = "gang-" + std::to_string(g);
    a = c.Post("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + kNs + "/podgroups",
               PodGroupJson(kNs, gang, kPerGang, "default"));
    ASSERT_EQ(a.status, 201) << a.body;
    for (int i = 0; i < kPerGang; ++i) {
      Json pod = PodJson(kNs, gang + "-" + std::to_string(i), gang, "400m", "256Mi", {{"suite", kNs}});
      // The gang's pods and PodGroup hash alike: the pods by their owner (a Volcano Job would be
      // it), the PodGroup by its own name.
      pod["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "batch.volcano.sh/v1alpha1"},
                                                         {"kind", "Job"},
                                                         {"name", gang},
                                                         {"uid", gang + "-uid"}}});
      a = c.Post("/api/v1/namespaces/" + kNs + "/pods", pod);
      ASSERT_EQ(a.status, 201) << a.body;
    }
  }

  std::vector<std::unique_ptr<ServeProcess>> serve;
  for (int m = 0; m < kMembers; ++m) {
    std::vector<std::string> args = {"--schedule-period", "500ms"};
    if (m == 1) {
      // Volcano's environment variables (inherited by the child).
      setenv("MULTI_SCHEDULER_ENABLE", "true", 1);
      setenv("SCHEDULER_NUM", "3", 1);
      setenv("SCHEDULER_POD_NAME", Member(m).c_str(), 1);
    } else {
      for (const char* s : {"--multi-scheduler", "--scheduler-num", "3", "--scheduler-pod-name"})
        args.push_back(s);
      args.push_back(Member(m));
    }
    serve.push_back(StartServe("shard-" + std::to_string(m), args));
    unsetenv("MULTI_SCHEDULER_ENABLE");
    unsetenv("SCHEDULER_NUM");
    unsetenv("SCHEDULER_POD_NAME");
  }
  for (auto& p : serve) ASSERT_TRUE(WaitReady(*p));

  const int total = kGangs * kPerGang + 1;  // + the foreign pod
  ASSERT_TRUE(Eventually([&] { return CountBound(c, kNs) == total; }, Seconds(90)))
      << CountBound(c, kNs) << " of " << total << " bound; logs:\n"
      << Tail(serve[0]->Log(), 1500) << "\n"
      << Tail(serve[1]->Log(), 1500) << "\n"
      << Tail(serve[2]->Log(), 1500);
  EXPECT_TRUE(BindingsExactlyOnce(kNs, {"foreign"}));

  // Who bound what, by user agent ("volcache/0.1 (volcano-scheduler-<m>) (<identity>)").
  auto nodes = PodNodes(c, kNs);
  std::vector<int> binds(kMembers, 0);
  for (const AuditEvent& e : ReadAudit(server().audit_log())) {
    if (e.resource != "pods" || e.subresource != "binding" || e.ns != kNs || e.code != 201) continue;
    int member = -1;
    for (int m = 0; m < kMembers; ++m) {
      if (e.user_agent.find("(" + Member(m) + ")") != std::string::npos) member = m;
    }
    ASSERT_GE(member, 0) << "a Binding of " << e.name << " by an unknown user agent: " << e.user_agent;
    ++binds[member];
    const std::string& node = nodes[e.name];
    const int node_index = std::stoi(node.substr(std::string("shard-n").size()));
    EXPECT_TRUE(kNodesOf[member].count(node_index))
        << Member(member) << " bound " << e.name << " onto " << node << ", which is not its node";
    const std::string gang = e.name.substr(0, e.name.rfind('-'));
    EXPECT_TRUE(kGangsOf[member].count(std::stoi(gang.substr(5))))
        << Member(member) << " bound " << e.name << " of " << gang << ", which is not its gang";
  }
  for (int m = 0; m < kMembers; ++m) {
    EXPECT_EQ(binds[m], static_cast<int>(kGangsOf[m].size()) * kPerGang) << Member(m);
    std::cout << "FIGURE: " << Member(m) << " bound " << binds[m] << " pods onto " << kNodesOf[m].size()
              << " nodes" << std::endl;
  }

  // No node over-committed: requests of everything on it (the foreign pod too) within 4 cpu.
  auto list = c.Get("/api/v1/namespaces/" + kNs + "/pods");
  ASSERT_EQ(list.status, 200);
  std::map<std::string, int64_t> milli;
  for (const auto& pod : list.json()["items"]) {
    const std::string node = pod["spec"].value("nodeName", "");
    for (const auto& ctr : pod["spec"]["containers"]) {
      milli[node] += MilliCpu(ctr["resources"]["requests"].value("cpu", "0"));
    }
  }
  for (const auto& [node, m] : milli) EXPECT_LE(m, 4000) << node << " over-committed";

  // /debug/shard: identity, members, and the nodes and jobs of the ring.
  for (int m = 0; m < kMembers; ++m) {
    auto d = serve[m]->AdminGet("/debug/shard");
    ASSERT_EQ(d.status, 200) << d.body;
    Json j = d.json();
    EXPECT_EQ(j["enabled"], true);
    EXPECT_EQ(j["identity"], Member(m));
    EXPECT_EQ(j["members"], Json::array({Member(0), Member(1), Member(2)}));
    Json want_nodes = Json::array(), want_jobs = Json::array();
    std::set<std::string> node_names, job_names;
    for (int n : kNodesOf[m]) node_names.insert(NodeName(n));
    for (int g : kGangsOf[m]) job_names.insert(kNs + "/gang-" + std::to_string(g));
    for (const auto& n : node_names) want_nodes.push_back(n);
    for (const auto& g : job_names) want_jobs.push_back(g);
    EXPECT_EQ(j["nodes"]["count"], kNodesOf[m].size()) << j.dump();
    EXPECT_EQ(j["nodes"]["names"], want_nodes) << j.dump();
    EXPECT_EQ(j["jobs"]["count"], kGangsOf[m].size()) << j.dump();
    EXPECT_EQ(j["jobs"]["names"], want_jobs) << j.dump();
    // The cache holds exactly its shard's view and its accounting is exact.
    auto cmp = serve[m]->AdminGet("/debug/compare");
    ASSERT_EQ(cmp.status, 200);
    EXPECT_EQ(cmp.json()["consistent"], true) << cmp.body;
    EXPECT_EQ(cmp.json()["invariants"], "ok") << cmp.body;
  }
}

}  // namespace
}  // namespace volcache::integration
