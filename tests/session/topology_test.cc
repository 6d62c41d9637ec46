// Topology-aware gang placement (SPEC §12, session/topology.h) on Volcano's documented
// HyperNode tree (s0..s3 over node-0..node-7 at tier 1, s4/s5 at tier 2, s6 at tier 3), with
// exact expected nodes: hard mode inside one HyperNode of the lowest tier that fits (best
// binpack among that tier), moving up a tier only when needed, waiting when nothing fits or
// the forest is not ready; soft mode falling back; later tasks kept in the job's HyperNode.
#include "session/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "api/k8s/decode.h"
#include "session/allocate.h"
#include "tests/fakes/cluster_builders.h"
#include "tests/testdata.h"

namespace volcache {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;

class TopologyPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.cache->EnsureDefaultQueues();
    for (int i = 0; i < 8; ++i) h.PutNode(NodeBuilder("node-" + std::to_string(i)).Allocatable("4", "16Gi"));
    for (const char* f : {"leaf-hypernodes-s0-s3.yaml", "nonleaf-hypernodes-s4-s6.yaml"}) {
      auto objs = k8s::DecodeFile(volcache::testing::SharedDataDir() + "/k8s/volcano-topology/" + f);
      ASSERT_TRUE(objs.ok()) << objs.status().ToString();
      for (auto& o : *objs)
        h.cache->AddHyperNode(std::make_shared<const k8s::HyperNode>(std::get<k8s::HyperNode>(o)));
    }
    h.cache->DrainQueuesOnce();
    ASSERT_TRUE(h.cache->HyperNodesReady());
  }

  // Job ns/<name>: n tasks of `cpu` cpu and 1Gi, gang `min`, networkTopology as given
  // (mode "" = none).
  void Job(const std::string& name, int n, int min, const char* cpu, const std::string& mode, int tier = -1,
           const std::string& tier_name = "") {
    k8s::PodGroup pg = PodGroupBuilder("ns", name).MinMember(min).Build();
    if (!mode.empty()) {
      k8s::NetworkTopologySpec t;
      t.mode = mode;
      if (tier >= 0) t.highest_tier_allowed = tier;
      t.highest_tier_name = tier_name;
      pg.spec.mutable_rare().network_topology = t;
    }
    ASSERT_TRUE(h.cache->AddPodGroup(std::make_shared<const k8s::PodGroup>(pg)).ok());
    for (int i = 0; i < n; ++i) Pending(name, name + "-" + std::to_string(i), cpu);
  }
  void Pending(const std::string& group, const std::string& pod, const char* cpu) {
    ASSERT_TRUE(h.PutPod(PodBuilder("ns", pod).Group(group).Request(cpu, "1Gi")).ok());
  }
  // A running pod of no job using `cpu` on `node`.
  void Busy(const std::string& pod, const std::string& node, const char* cpu) {
    ASSERT_TRUE(h.PutPod(PodBuilder("other", pod).Request(cpu, "1Gi").NodeName(node).Phase("Running")).ok());
  }

  std::map<std::string, std::string> Run(AllocationPlan* plan_out = nullptr) {
    auto snap = h.cache->Snapshot();
    AllocationPlan plan = Allocate(*snap);
    std::map<std::string, std::string> out;
    for (const auto& p : plan.placements) out[p.task_key] = p.node;
    if (plan_out) *plan_out = std::move(plan);
    return out;
  }
  static std::string Reason(const AllocationPlan& plan, const std::string& job) {
    for (const auto& j : plan.jobs)
      if (j.job == job) return j.reason;
    return "<no outcome>";
  }

  testing::CacheHarness h;
};

TEST_F(TopologyPlacementTest, HardModePicksTheBestBinpackHyperNodeOfTheLowestTier) {
  Busy("b", "node-2", "2");  // s1 is the fullest tier-1 HyperNode: binpack prefers it
  Job("a", 3, 3, "1", "hard", 1);
  EXPECT_EQ(Run(), (std::map<std::string, std::string>{
                       {"ns/a-0", "node-2"}, {"ns/a-1", "node-2"}, {"ns/a-2", "node-3"}}));
  // Unconstrained, a-2 would go to node-0 (empty nodes tie, the smaller name wins); inside s1
  // it goes to node-3.
}

TEST_F(TopologyPlacementTest, HardModeMovesUpATierOnlyWhenNoLowerHyperNodeFits) {
  Busy("b", "node-5", "1");  // s5 binpacks better than s4 (which would win a tie by name)
  Job("a", 3, 3, "3", "hard", 2);
  // One 3-cpu task per node: no tier-1 HyperNode (2 nodes) holds the gang; s4 and s5 do,
  // s5 scores higher: node-5 first (fullest), then node-4 and node-6 (ties by name).
  EXPECT_EQ(Run(), (std::map<std::string, std::string>{
                       {"ns/a-0", "node-5"}, {"ns/a-1", "node-4"}, {"ns/a-2", "node-6"}}));
  // Allowed only up to tier 1, the same gang waits (HardModeWaitsWhenNoAllowedHyperNodeFits).
}

TEST_F(TopologyPlacementTest, HardModeWaitsWhenNoAllowedHyperNodeFits) {
  Job("a", 3, 3, "3", "hard", 1);
  AllocationPlan plan;
  EXPECT_THAT(Run(&plan), IsEmpty());
  EXPECT_THAT(Reason(plan, "ns/a"), HasSubstr("network topology: no HyperNode of tier <= 1 fits the gang"));
}

TEST_F(TopologyPlacementTest, SoftModeFallsBackToAnywhere) {
  Job("a", 3, 3, "3", "soft", 1);
  EXPECT_EQ(Run(), (std::map<std::string, std::string>{
                       {"ns/a-0", "node-0"}, {"ns/a-1", "node-1"}, {"ns/a-2", "node-2"}}));
}

TEST_F(TopologyPlacementTest, LaterTasksStayInsideTheJobsHyperNode) {
  Busy("b", "node-0", "3");  // unconstrained binpack would go to node-0
  Job("a", 0, 1, "1", "hard", 1);
  ASSERT_TRUE(
      h.PutPod(PodBuilder("ns", "a-0").Group("a").Request("1", "1Gi").NodeName("node-6").Phase("Running"))
          .ok());
  Pending("a", "a-1", "1");
  EXPECT_EQ(Run(), (std::map<std::string, std::string>{{"ns/a-1", "node-6"}}));
  auto snap = h.cache->Snapshot();
  EXPECT_EQ(JobAllocatedHyperNode(*snap->FindJob("ns/a"), *snap->topology), "s3");
  // s3 full: tier 1 allows nothing else, the task waits.
  Busy("c", "node-6", "3");
  Busy("d", "node-7", "4");
  AllocationPlan plan;
  EXPECT_THAT(Run(&plan), IsEmpty());
  EXPECT_THAT(Reason(plan, "ns/a"), HasSubstr("holding HyperNode s3 fits the gang"));
}

TEST_F(TopologyPlacementTest, TierLimitTwoLetsLaterTasksUseTheParent) {
  Busy("b", "node-0", "3");
  Job("a", 0, 1, "1", "hard", 2);
  ASSERT_TRUE(
      h.PutPod(PodBuilder("ns", "a-0").Group("a").Request("1", "1Gi").NodeName("node-6").Phase("Running"))
          .ok());
  Busy("c", "node-6", "3");
  Busy("d", "node-7", "4");
  Pending("a", "a-1", "1");
  // s3 is full; its parent s5 (tier 2) still holds the job: node-4 (a tie with node-5, by name).
  EXPECT_EQ(Run(), (std::map<std::string, std::string>{{"ns/a-1", "node-4"}}));
}

TEST_F(TopologyPlacementTest, UnknownTierNameAndAnUnreadyForestMakeHardJobsWait) {
  Job("a", 1, 1, "1", "hard", -1, "rack");
  Job("s", 1, 1, "1", "soft", -1, "rack");
  AllocationPlan plan;
  auto placed = Run(&plan);
  EXPECT_EQ(placed, (std::map<std::string, std::string>{{"ns/s-0", "node-0"}}));
  EXPECT_THAT(Reason(plan, "ns/a"), HasSubstr("no HyperNode has tierName rack"));

  // A refused update (s0 claiming s6: a cycle) makes the forest not ready.
  Job("b", 1, 1, "1", "hard", 3);
  k8s::HyperNode s0;
  s0.metadata.name = "s0";
  s0.spec.tier = 1;
  k8s::HyperNodeMember m;
  m.type = k8s::HyperNodeMember::Type::kHyperNode;
  m.name_or_pattern = "s6";
  s0.spec.members.push_back(m);
  h.cache->AddHyperNode(std::make_shared<const k8s::HyperNode>(s0));
  h.cache->DrainQueuesOnce();
  ASSERT_FALSE(h.cache->HyperNodesReady());
  placed = Run(&plan);
  EXPECT_EQ(placed.count("ns/b-0"), 0u);
  EXPECT_THAT(Reason(plan, "ns/b"), HasSubstr("network topology is not ready"));
}

}  // namespace
}  // namespace volcache
