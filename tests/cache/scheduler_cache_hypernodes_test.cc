// SchedulerCache with HyperNodes (SPEC §12): events through the HyperNode queue, the dump's
// "hyperNodes"/"hyperNodesReady", node events re-evaluating leaves, refused updates retried,
// and the snapshot's TopologyInfo (Ready leaves only, virtual root, shared until it changes).

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

k8s::HyperNodePtr Leaf(const std::string& name, int tier, const std::vector<std::string>& nodes,
                       const std::string& tier_name = "") {
  k8s::HyperNode hn;
  hn.metadata.name = name;
  hn.spec.tier = tier;
  hn.spec.tier_name = tier_name;
  for (const auto& n : nodes) {
    k8s::HyperNodeMember m;
    m.name_or_pattern = n;
    if (n.find('*') != std::string::npos) m.selector = k8s::HyperNodeMember::Selector::kRegex;
    hn.spec.members.push_back(m);
  }
  return std::make_shared<const k8s::HyperNode>(std::move(hn));
}

k8s::HyperNodePtr Parent(const std::string& name, int tier, const std::vector<std::string>& children) {
  k8s::HyperNode hn;
  hn.metadata.name = name;
  hn.spec.tier = tier;
  for (const auto& c : children) {
    k8s::HyperNodeMember m;
    m.type = k8s::HyperNodeMember::Type::kHyperNode;
    m.name_or_pattern = c;
    hn.spec.members.push_back(m);
  }
  return std::make_shared<const k8s::HyperNode>(std::move(hn));
}

TEST_F(SchedulerCacheTest, HyperNodeEventsOnlyEnqueueUntilSynced) {
  AddNode("n1");
  AddNode("n2");
  const std::string before = cache->Dump();
  cache->AddHyperNode(Leaf("rack-a", 1, {"n1", "n2", "n9"}, "rack"));
  EXPECT_EQ(cache->Dump(), before);
  EXPECT_EQ(cache->hypernode_queue().Len(), 1u);
  EXPECT_EQ(cache->DrainQueuesOnce(), 1u);
  json j = DumpJson();
  EXPECT_EQ(j["hyperNodes"], json::parse(R"({"rack-a":{"tier":1,"tierName":"rack","parent":null,
      "children":[],"nodes":["n1","n2"]}})"));
  EXPECT_EQ(j["hyperNodesReady"], true);
}

TEST_F(SchedulerCacheTest, DumpShowsTheForestAndNodeEventsUpdateLeaves) {
  AddNode("n1");
  AddNode("n2");
  ASSERT_OK(cache->Apply(EventType::kAdd, k8s::Object(*Leaf("r1", 1, {"n1"}))));
  ASSERT_OK(cache->Apply(EventType::kAdd, k8s::Object(*Leaf("r2", 1, {"n.*"}))));
  ASSERT_OK(cache->Apply(EventType::kAdd, k8s::Object(*Parent("spine", 2, {"r1", "r2"}))));
  cache->DrainQueuesOnce();
  EXPECT_EQ(DumpJson()["hyperNodes"], json::parse(R"({
      "r1":{"tier":1,"tierName":"","parent":"spine","children":[],"nodes":["n1"]},
      "r2":{"tier":1,"tierName":"","parent":"spine","children":[],"nodes":["n1","n2"]},
      "spine":{"tier":2,"tierName":"","parent":null,"children":["r1","r2"],"nodes":["n1","n2"]}})"));
  AddNode("n3");
  RemoveNode("n1");
  json hns = DumpJson()["hyperNodes"];
  EXPECT_EQ(hns["r1"]["nodes"], json::array());
  EXPECT_EQ(hns["r2"]["nodes"], json::parse(R"(["n2","n3"])"));
  EXPECT_EQ(hns["spine"]["nodes"], json::parse(R"(["n2","n3"])"));
  // A middle delete: the children become roots.
  ASSERT_OK(cache->Apply(EventType::kDelete, k8s::Object(*Parent("spine", 2, {}))));
  cache->DrainQueuesOnce();
  hns = DumpJson()["hyperNodes"];
  EXPECT_EQ(hns.size(), 2u);
  EXPECT_TRUE(hns["r1"]["parent"].is_null());
}

TEST_F(SchedulerCacheTest, RefusedHyperNodeMarksTheForestNotReadyAndIsRetried) {
  AddNode("n1");
  cache->AddHyperNode(Leaf("leaf", 1, {"n1"}));
  cache->AddHyperNode(Parent("p1", 2, {"leaf"}));
  cache->DrainQueuesOnce();
  const json forest = DumpJson()["hyperNodes"];
  cache->AddHyperNode(Parent("p2", 2, {"leaf"}));
  cache->DrainQueuesOnce();
  EXPECT_EQ(DumpJson()["hyperNodes"], forest);
  EXPECT_EQ(DumpJson()["hyperNodesReady"], false);
  EXPECT_FALSE(cache->HyperNodesReady());
  EXPECT_FALSE(cache->Snapshot()->topology->ready);
  // p1 lets go of the leaf: the refused p2 is retried at once and applies.
  cache->AddHyperNode(Parent("p1", 2, {}));
  cache->DrainQueuesOnce();
  EXPECT_TRUE(cache->HyperNodesReady());
  EXPECT_EQ(DumpJson()["hyperNodes"]["leaf"]["parent"], "p2");
}

TEST_F(SchedulerCacheTest, SnapshotTopologyHasReadyLeavesAndAVirtualRoot) {
  AddNode("n1");
  AddNode("n2");
  PutNode(NodeBuilder("n3").Allocatable("4", "8Gi").Ready(false));
  cache->AddHyperNode(Leaf("r1", 1, {"n1", "n3"}));
  cache->AddHyperNode(Leaf("r2", 1, {"n2"}));
  cache->AddHyperNode(Parent("s1", 2, {"r1"}));
  cache->DrainQueuesOnce();
  auto snap = cache->Snapshot();
  const TopologyInfo& t = *snap->topology;
  ASSERT_EQ(t.hypernodes.size(), 4u);
  EXPECT_THAT(t.Find("r1")->nodes, ElementsAre("n1"));  // n3 is NotReady
  EXPECT_EQ(t.Find("r1")->parent, "s1");
  EXPECT_EQ(t.Find("r2")->parent, std::string(kTopologyRoot));
  const HyperNodeInfo* root = t.Find(std::string(kTopologyRoot));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->tier, 3);
  EXPECT_THAT(root->children, ElementsAre("r2", "s1"));
  EXPECT_THAT(root->nodes, ElementsAre("n1", "n2"));
  EXPECT_THAT(t.tiers.at(1), ElementsAre("r1", "r2"));
  EXPECT_THAT(t.tiers.at(2), ElementsAre("s1"));
  // Shared until something changes; an incremental refresh picks up a change.
  auto snap2 = cache->Snapshot();
  EXPECT_EQ(snap2->topology, snap->topology);
  const auto first = snap->topology;
  AddNode("n4");  // selected by no HyperNode: the forest and its view stay the same
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->topology, first);
  PutNode(NodeBuilder("n3").Allocatable("4", "8Gi").Ready(true));
  cache->UpdateSnapshot(snap.get());
  EXPECT_NE(snap->topology, first);
  EXPECT_THAT(snap->topology->Find("r1")->nodes, ElementsAre("n1", "n3"));
  EXPECT_THAT(first->Find("r1")->nodes, ElementsAre("n1"));  // the old view is untouched
}

}  // namespace
}  // namespace volcache
