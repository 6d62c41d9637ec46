// Placement constraints in Allocate (session/constraints.h, api/placement.h): each of
// kube-scheduler v1.24's filters both ways with its fit-error wording, the gang counting its
// own tentative placements, and the scores that need the same counts. Expected values follow
// the cases of kube-scheduler's plugins/*/..._test.go tables (our own tests, their verdicts).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/placement.h"
#include "session/allocate.h"
#include "tests/fakes/cluster_builders.h"

namespace volcache {
namespace {

using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;

k8s::LabelSelector Match(std::string key, std::string value) {
  k8s::LabelSelector s;
  s.match_labels.emplace(std::move(key), std::move(value));
  return s;
}

k8s::PodAffinityTerm Term(std::string key, std::string value, std::string topology) {
  k8s::PodAffinityTerm t;
  t.label_selector = Match(std::move(key), std::move(value));
  t.topology_key = std::move(topology);
  return t;
}

k8s::NodeSelectorTerm NodeTerm(std::string key, std::string op, std::vector<std::string> values) {
  k8s::NodeSelectorTerm t;
  t.match_expressions.push_back({std::move(key), std::move(op), std::move(values)});
  return t;
}

constexpr const char* kHost = "kubernetes.io/hostname";
constexpr const char* kZone = "zone";

struct World {
  World() { h.cache->EnsureDefaultQueues(); }

  // A node labelled with its hostname and zone.
  void Node(const std::string& name, const std::string& zone, const char* cpu = "8",
            const char* pods = "110") {
    NodeBuilder b(name);
    b.Allocatable(cpu, "32Gi", pods).Label(kHost, name);
    if (!zone.empty()) b.Label(kZone, zone);
    h.PutNode(b);
  }
  void Node(const NodeBuilder& b) { h.PutNode(b); }
  void Group(const std::string& name, int min) {
    ASSERT_TRUE(h.cache->AddPodGroup(PodGroupBuilder("ns", name).MinMember(min).Ptr()).ok());
  }
  void Pod(const k8s::Pod& p) { ASSERT_TRUE(h.PutPod(std::make_shared<const k8s::Pod>(p)).ok()); }
  // A pod of group `group` labelled app=<app>, requesting 1 cpu.
  k8s::Pod Make(const std::string& name, const std::string& group, const std::string& app = "web") {
    k8s::Pod p = PodBuilder("ns", name).Group(group).Label("app", app).Request("1", "1Gi").Build();
    return p;
  }
  // A running pod on `node`.
  void Running(const std::string& name, const std::string& node, k8s::Pod p) {
    p.spec.node_name = node;
    p.status.phase = "Running";
    Pod(p);
    (void)name;
  }

  AllocationPlan Run(const SessionOptions& o = {}) {
    auto snap = h.cache->Snapshot();
    return Allocate(*snap, o);
  }

  testing::CacheHarness h;
};

std::map<std::string, std::string> Placed(const AllocationPlan& plan) {
  std::map<std::string, std::string> out;
  for (const auto& p : plan.placements) out[p.task_key] = p.node;
  return out;
}

std::string FitError(const AllocationPlan& plan) {
  for (const auto& j : plan.jobs) {
    for (const auto& [_, why] : j.task_fit_errors) return why;
  }
  return "";
}

// ------------------------------------------------------------------ NodeAffinity

TEST(PlacementTest, NodeSelectorRequirementOperators) {
  k8s::Node node = NodeBuilder("n1").Label("zone", "a").Label("gen", "5").Build();
  auto matches = [&](std::string key, std::string op, std::vector<std::string> values) {
    return placement::NodeSelectorTermMatches(NodeTerm(std::move(key), std::move(op), std::move(values)),
                                              node);
  };
  EXPECT_TRUE(matches("zone", "In", {"a", "b"}));
  EXPECT_FALSE(matches("zone", "In", {"b"}));
  EXPECT_FALSE(matches("rack", "In", {"a"}));
  EXPECT_TRUE(matches("zone", "NotIn", {"b"}));
  EXPECT_FALSE(matches("zone", "NotIn", {"a"}));
  EXPECT_TRUE(matches("rack", "NotIn", {"a"}));  // a missing label is not in the set
  EXPECT_TRUE(matches("zone", "Exists", {}));
  EXPECT_FALSE(matches("rack", "Exists", {}));
  EXPECT_TRUE(matches("rack", "DoesNotExist", {}));
  EXPECT_FALSE(matches("zone", "DoesNotExist", {}));
  EXPECT_TRUE(matches("gen", "Gt", {"4"}));
  EXPECT_FALSE(matches("gen", "Gt", {"5"}));
  EXPECT_TRUE(matches("gen", "Lt", {"6"}));
  EXPECT_FALSE(matches("gen", "Lt", {"5"}));
  EXPECT_FALSE(matches("zone", "Gt", {"1"}));  // the label is not an integer
  EXPECT_FALSE(matches("rack", "Lt", {"1"}));  // nor present
  // An empty term matches no node; terms are ORed, expressions ANDed.
  EXPECT_FALSE(placement::NodeSelectorTermMatches(k8s::NodeSelectorTerm{}, node));
  k8s::NodeSelectorTerm both = NodeTerm("zone", "In", {"a"});
  both.match_expressions.push_back({"gen", "In", {"4"}});
  EXPECT_FALSE(placement::NodeSelectorTermMatches(both, node));
  EXPECT_TRUE(placement::NodeSelectorTermsMatch({both, NodeTerm("gen", "In", {"5"})}, node));
  // matchFields on metadata.name.
  k8s::NodeSelectorTerm field;
  field.match_fields.push_back({"metadata.name", "In", {"n1"}});
  EXPECT_TRUE(placement::NodeSelectorTermMatches(field, node));
  field.match_fields[0].values = {"n2"};
  EXPECT_FALSE(placement::NodeSelectorTermMatches(field, node));
}

TEST(ConstraintsTest, RequiredNodeAffinityPicksTheOnlyMatchingNodeOrNone) {
  World w;
  w.Node(NodeBuilder("node-a").Allocatable("8", "32Gi").Label("disk", "ssd").Label("zone", "a"));
  w.Node(NodeBuilder("node-b").Allocatable("8", "32Gi").Label("zone", "b"));
  w.Group("ssd", 1);
  w.Group("nowhere", 1);
  k8s::Pod ssd = w.Make("ssd-0", "ssd");
  ssd.spec.mutable_rare().node_affinity.required = std::vector{NodeTerm("disk", "In", {"ssd"})};
  ssd.spec.has_node_affinity = true;
  w.Pod(ssd);
  k8s::Pod none = w.Make("nowhere-0", "nowhere");
  none.spec.mutable_rare().node_affinity.required = std::vector{NodeTerm("zone", "In", {"x"})};
  none.spec.has_node_affinity = true;
  w.Pod(none);
  const AllocationPlan plan = w.Run();
  const auto placed = Placed(plan);
  EXPECT_EQ(placed.at("ns/ssd-0"), "node-a");
  EXPECT_EQ(placed.count("ns/nowhere-0"), 0u);
  EXPECT_EQ(FitError(plan), "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.");
}

// ------------------------------------------------------------------ NodePorts

TEST(PlacementTest, HostPortConflicts) {
  auto hp = [](std::string ip, std::string proto, int32_t port) {
    return HostPort{std::move(ip), std::move(proto), port};
  };
  EXPECT_TRUE(
      placement::HostPortsConflict(hp("", "TCP", 80), hp("127.0.0.1", "TCP", 80)));  // 0.0.0.0 overlaps all
  EXPECT_TRUE(placement::HostPortsConflict(hp("10.0.0.1", "TCP", 80), hp("", "TCP", 80)));
  EXPECT_FALSE(placement::HostPortsConflict(hp("10.0.0.1", "TCP", 80), hp("10.0.0.2", "TCP", 80)));
  EXPECT_FALSE(placement::HostPortsConflict(hp("", "TCP", 80), hp("", "UDP", 80)));
  EXPECT_FALSE(placement::HostPortsConflict(hp("", "TCP", 80), hp("", "TCP", 8080)));
  EXPECT_TRUE(placement::HostPortsConflict(hp("10.0.0.1", "UDP", 53), hp("10.0.0.1", "UDP", 53)));
}

k8s::Pod WithHostPort(k8s::Pod p, int32_t port, std::string ip = "") {
  k8s::Container c = p.spec.containers.empty() ? k8s::Container{} : p.spec.containers[0];
  c.ports.push_back({port, port, "TCP", std::move(ip)});
  p.spec.containers = std::vector<k8s::Container>{c};
  return p;
}

TEST(ConstraintsTest, HostPortsSpreadPodsOneANodeAndCountThisSessionsPlacements) {
  World w;
  w.Node("n1", "a");
  w.Node("n2", "b");
  w.Node("n3", "b");
  // n1 already runs a pod on 9000.
  w.Running("old", "n1", WithHostPort(w.Make("old", "old-g"), 9000));
  for (int i = 0; i < 4; ++i) {
    w.Group("p" + std::to_string(i), 1);
    w.Pod(WithHostPort(w.Make("p" + std::to_string(i) + "-0", "p" + std::to_string(i)), 9000));
  }
  const AllocationPlan plan = w.Run();
  const auto placed = Placed(plan);
  std::set<std::string> nodes;
  for (const auto& [_, n] : placed) nodes.insert(n);
  EXPECT_EQ(placed.size(), 2u);
  EXPECT_EQ(nodes, (std::set<std::string>{"n2", "n3"}));
  EXPECT_EQ(FitError(plan),
            "0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod ports.");
}

TEST(ConstraintsTest, AHostPortOnAnotherIpOrProtocolDoesNotConflict) {
  World w;
  w.Node("n1", "a");
  w.Running("old", "n1", WithHostPort(w.Make("old", "old-g"), 9000, "10.0.0.1"));
  w.Group("g", 1);
  w.Pod(WithHostPort(w.Make("g-0", "g"), 9000, "10.0.0.2"));
  EXPECT_EQ(Placed(w.Run()).at("ns/g-0"), "n1");
}

// ------------------------------------------------------------------ InterPodAffinity

TEST(ConstraintsTest, AGangWithHostnameAntiAffinityNeedsOneNodeAMemberAndStaysWholeOrUnplaced) {
  for (int nodes : {2, 3}) {
    World w;
    for (int i = 0; i < nodes; ++i) w.Node("n" + std::to_string(i), "a");
    w.Group("gang", 3);
    for (int i = 0; i < 3; ++i) {
      k8s::Pod p = w.Make("gang-" + std::to_string(i), "gang", "gang");
      p.spec.mutable_rare().pod_anti_affinity.required.push_back(Term("app", "gang", kHost));
      p.spec.has_pod_anti_affinity = true;
      w.Pod(p);
    }
    const AllocationPlan plan = w.Run();
    const auto placed = Placed(plan);
    if (nodes == 2) {
      EXPECT_TRUE(placed.empty()) << "a gang that cannot keep its anti-affinity must not bind in part";
      EXPECT_THAT(plan.jobs.at(0).reason, HasSubstr("node(s) didn't match pod anti-affinity rules"));
    } else {
      std::set<std::string> used;
      for (const auto& [_, n] : placed) used.insert(n);
      EXPECT_EQ(placed.size(), 3u);
      EXPECT_EQ(used.size(), 3u) << "one member a node";
    }
  }
}

TEST(ConstraintsTest, ExistingPodsAntiAffinityKeepsMatchingPodsAway) {
  // Symmetry: the running pod on n1 refuses app=web pods in its zone; the incoming pod has no
  // constraint of its own.
  World w;
  w.Node("n1", "a");
  w.Node("n2", "a");
  w.Node("n3", "b");
  k8s::Pod guard = w.Make("guard", "guard-g", "db");
  guard.spec.mutable_rare().pod_anti_affinity.required.push_back(Term("app", "web", kZone));
  guard.spec.has_pod_anti_affinity = true;
  w.Running("guard", "n1", guard);
  w.Group("web", 1);
  w.Pod(w.Make("web-0", "web", "web"));
  w.Group("other", 1);
  w.Pod(w.Make("other-0", "other", "cache"));
  const auto placed = Placed(w.Run());
  EXPECT_EQ(placed.at("ns/web-0"), "n3");
  EXPECT_EQ(placed.count("ns/other-0"), 1u);
}

TEST(ConstraintsTest, ExistingAntiAffinityInAnotherNamespaceSelectsOnlyItsOwnNamespace) {
  World w;
  w.Node("n1", "a");
  k8s::Pod guard = PodBuilder("other", "guard").Label("app", "db").Request("1", "1Gi").Build();
  guard.spec.mutable_rare().pod_anti_affinity.required.push_back(Term("app", "web", kHost));
  guard.spec.has_pod_anti_affinity = true;
  guard.spec.node_name = "n1";
  guard.status.phase = "Running";
  w.Pod(guard);
  w.Group("web", 1);
  w.Pod(w.Make("web-0", "web", "web"));
  EXPECT_EQ(Placed(w.Run()).at("ns/web-0"), "n1") << "the guard's term names only its own namespace";
}

TEST(ConstraintsTest, RequiredPodAffinityFollowsTheMatchingPodsDomainAndTheFirstOfAGroupMayGoAnywhere) {
  World w;
  w.Node("n1", "a");
  w.Node("n2", "b");
  w.Node("n3", "b");
  // A gang of three whose members want to be in the zone of app=train pods: none runs yet, and
  // they match their own term, so the first goes anywhere and the others follow its zone.
  w.Group("train", 3);
  for (int i = 0; i < 3; ++i) {
    k8s::Pod p = w.Make("train-" + std::to_string(i), "train", "train");
    p.spec.mutable_rare().pod_affinity.required.push_back(Term("app", "train", kZone));
    p.spec.has_pod_affinity = true;
    w.Pod(p);
  }
  const auto placed = Placed(w.Run());
  ASSERT_EQ(placed.size(), 3u);
  std::set<std::string> zones;
  for (const auto& [_, n] : placed) zones.insert(n == "n1" ? "a" : "b");
  EXPECT_EQ(zones.size(), 1u);
}

TEST(ConstraintsTest, RequiredPodAffinityWithNoMatchingPodAndNotSelfMatchingFitsNowhere) {
  World w;
  w.Node("n1", "a");
  w.Node("n2", "b");
  w.Group("g", 1);
  k8s::Pod p = w.Make("g-0", "g", "web");
  p.spec.mutable_rare().pod_affinity.required.push_back(Term("app", "db", kZone));
  p.spec.has_pod_affinity = true;
  w.Pod(p);
  const AllocationPlan plan = w.Run();
  EXPECT_TRUE(Placed(plan).empty());
  EXPECT_EQ(FitError(plan), "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.");
  // A db pod running in zone b: the pod follows it there.
  World w2;
  w2.Node("n1", "a");
  w2.Node("n2", "b");
  w2.Running("db", "n2", w2.Make("db", "db-g", "db"));
  w2.Group("g", 1);
  w2.Pod(p);
  EXPECT_EQ(Placed(w2.Run()).at("ns/g-0"), "n2");
}

TEST(ConstraintsTest, AnAffinityTermNeedsTheTopologyLabelOnTheNode) {
  World w;
  w.Node("n1", "");  // no zone label
  w.Node("n2", "b");
  w.Group("g", 1);
  k8s::Pod p = w.Make("g-0", "g", "web");
  p.spec.mutable_rare().pod_affinity.required.push_back(Term("app", "web", kZone));
  p.spec.has_pod_affinity = true;
  w.Pod(p);
  EXPECT_EQ(Placed(w.Run()).at("ns/g-0"), "n2");
}

// ------------------------------------------------------------------ PodTopologySpread

k8s::TopologySpreadConstraint Spread(std::string key, int32_t max_skew, std::string app,
                                     std::string when = "DoNotSchedule") {
  k8s::TopologySpreadConstraint c;
  c.topology_key = std::move(key);
  c.max_skew = max_skew;
  c.label_selector = Match("app", std::move(app));
  c.when_unsatisfiable = std::move(when);
  return c;
}

TEST(ConstraintsTest, AGangSpreadOverZonesWithMaxSkewOne) {
  World w;
  w.Node("a1", "a");
  w.Node("b1", "b");
  w.Node("b2", "b");
  w.Group("spread", 4);
  for (int i = 0; i < 4; ++i) {
    k8s::Pod p = w.Make("spread-" + std::to_string(i), "spread", "spread");
    p.spec.mutable_rare().topology_spread_constraints.push_back(Spread(kZone, 1, "spread"));
    w.Pod(p);
  }
  const auto placed = Placed(w.Run());
  ASSERT_EQ(placed.size(), 4u);
  int a = 0, b = 0;
  for (const auto& [_, n] : placed) (n == "a1" ? a : b)++;
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
}

TEST(ConstraintsTest, SpreadCountsExistingMatchingPodsOfTheSameNamespaceOnly) {
  World w;
  w.Node("a1", "a");
  w.Node("b1", "b");
  // Zone a already holds one matching pod (and one of another namespace, which does not count).
  w.Running("old", "a1", w.Make("old", "old-g", "s"));
  k8s::Pod foreign = PodBuilder("other", "x").Label("app", "s").Request("1", "1Gi").Build();
  foreign.spec.node_name = "b1";
  foreign.status.phase = "Running";
  w.Pod(foreign);
  w.Group("g", 1);
  k8s::Pod p = w.Make("g-0", "g", "s");
  p.spec.mutable_rare().topology_spread_constraints.push_back(Spread(kZone, 1, "s"));
  w.Pod(p);
  EXPECT_EQ(Placed(w.Run()).at("ns/g-0"), "b1");
}

TEST(ConstraintsTest, SpreadNeedsTheTopologyLabelAndHonoursNodeAffinityForItsDomains) {
  World w;
  w.Node("a1", "a");
  w.Node("n0", "");  // no zone: refused with the missing-label reason
  w.Group("g", 2);
  for (int i = 0; i < 2; ++i) {
    k8s::Pod p = w.Make("g-" + std::to_string(i), "g", "s");
    p.spec.mutable_rare().topology_spread_constraints.push_back(Spread(kZone, 1, "s"));
    w.Pod(p);
  }
  const AllocationPlan plan = w.Run();
  // Only zone a exists among eligible nodes: the minimum is that domain's own count, so both fit.
  EXPECT_EQ(Placed(plan).size(), 2u);
  // With minDomains 2 the minimum is 0 while fewer domains exist: the second member's skew is 2.
  World w2;
  w2.Node("a1", "a");
  w2.Node("n0", "");
  w2.Group("g", 2);
  for (int i = 0; i < 2; ++i) {
    k8s::Pod p = w2.Make("g-" + std::to_string(i), "g", "s");
    k8s::TopologySpreadConstraint c = Spread(kZone, 1, "s");
    c.min_domains = 2;
    p.spec.mutable_rare().topology_spread_constraints.push_back(c);
    w2.Pod(p);
  }
  const AllocationPlan plan2 = w2.Run();
  EXPECT_TRUE(Placed(plan2).empty());
  EXPECT_THAT(plan2.jobs.at(0).reason,
              HasSubstr("1 node(s) didn't match pod topology spread constraints (missing required label)"));
  EXPECT_THAT(plan2.jobs.at(0).reason, HasSubstr("1 node(s) didn't match pod topology spread constraints, "));
}

// ------------------------------------------------------------------ NodeResourcesFit

TEST(ConstraintsTest, MaxPodsAndExtendedResources) {
  World w;
  w.Node(NodeBuilder("full")
             .Allocatable(testing::Resources({{"cpu", "8"}, {"memory", "8Gi"}, {"pods", "1"}}))
             .Label(kHost, "full"));
  w.Node(NodeBuilder("gpu").Allocatable(
      testing::Resources({{"cpu", "8"}, {"memory", "8Gi"}, {"pods", "10"}, {"example.com/fpga", "1"}})));
  w.Running("old", "full", w.Make("old", "old-g"));
  w.Group("g", 1);
  k8s::Pod p = PodBuilder("ns", "g-0")
                   .Group("g")
                   .Container(testing::Resources({{"cpu", "1"}, {"example.com/fpga", "2"}}))
                   .Build();
  w.Pod(p);
  const AllocationPlan plan = w.Run();
  EXPECT_TRUE(Placed(plan).empty());
  EXPECT_EQ(FitError(plan), "0/2 nodes are available: 1 Insufficient example.com/fpga, 1 Too many pods.");
}

// ------------------------------------------------------------------ scores

TEST(ConstraintsTest, PreferredNodeAffinityAndPreferNoScheduleTaintsSteerTheChoice) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "32Gi").Label("disk", "hdd"));
  w.Node(NodeBuilder("n2").Allocatable("8", "32Gi").Label("disk", "ssd"));
  w.Node(NodeBuilder("n3")
             .Allocatable("8", "32Gi")
             .Label("disk", "ssd")
             .Taint("spot", "yes", "PreferNoSchedule"));
  w.Group("g", 1);
  k8s::Pod p = w.Make("g-0", "g");
  p.spec.mutable_rare().node_affinity.preferred.push_back({50, NodeTerm("disk", "In", {"ssd"})});
  p.spec.has_node_affinity = true;
  w.Pod(p);
  EXPECT_EQ(Placed(w.Run()).at("ns/g-0"), "n2");
}

TEST(ConstraintsTest, PreferredPodAntiAffinityAndScheduleAnywaySpreadSpreadTheGang) {
  for (bool spread : {false, true}) {
    World w;
    w.Node("n1", "a");
    w.Node("n2", "b");
    w.Group("g", 2);
    for (int i = 0; i < 2; ++i) {
      k8s::Pod p = w.Make("g-" + std::to_string(i), "g", "g");
      if (spread) {
        p.spec.mutable_rare().topology_spread_constraints.push_back(Spread(kHost, 1, "g", "ScheduleAnyway"));
      } else {
        p.spec.mutable_rare().pod_anti_affinity.preferred.push_back({100, Term("app", "g", kHost)});
        p.spec.has_pod_anti_affinity = true;
      }
      w.Pod(p);
    }
    // Binpack alone would stack both on n1; the preference sends the second to n2.
    const auto placed = Placed(w.Run());
    ASSERT_EQ(placed.size(), 2u);
    EXPECT_NE(placed.at("ns/g-0"), placed.at("ns/g-1")) << (spread ? "spread" : "anti-affinity");
  }
}

}  // namespace
}  // namespace volcache
