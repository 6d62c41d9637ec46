// NodeTree: kube-scheduler's node ordering (round-robin over zones in order of first
// appearance, insertion order within a zone) and the zone key label rule.

#include "cache/node_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace volcache {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Key(std::string_view region, std::string_view zone) {
  std::string k(region);
  k.append(":\0:", 3);
  k.append(zone);
  return k;
}

TEST(ZoneKeyTest, NoLabelsIsTheUnnamedZone) {
  EXPECT_EQ(ZoneKey({}), "");
  EXPECT_EQ(ZoneKey({{"kubernetes.io/hostname", "n1"}}), "");
}

TEST(ZoneKeyTest, TopologyLabels) {
  EXPECT_EQ(ZoneKey({{"topology.kubernetes.io/region", "r1"}, {"topology.kubernetes.io/zone", "z1"}}),
            Key("r1", "z1"));
  // Only one of the two is enough to name a zone.
  EXPECT_EQ(ZoneKey({{"topology.kubernetes.io/zone", "z1"}}), Key("", "z1"));
  EXPECT_EQ(ZoneKey({{"topology.kubernetes.io/region", "r1"}}), Key("r1", ""));
}

TEST(ZoneKeyTest, FailureDomainBetaLabelsTakePrecedence) {
  k8s::StringMap both = {{"failure-domain.beta.kubernetes.io/region", "beta-r"},
                         {"failure-domain.beta.kubernetes.io/zone", "beta-z"},
                         {"topology.kubernetes.io/region", "topo-r"},
                         {"topology.kubernetes.io/zone", "topo-z"}};
  EXPECT_EQ(ZoneKey(both), Key("beta-r", "beta-z"));
  // Precedence is per label: a beta zone with only a topology region mixes the two.
  EXPECT_EQ(ZoneKey({{"failure-domain.beta.kubernetes.io/zone", "beta-z"},
                     {"topology.kubernetes.io/region", "topo-r"}}),
            Key("topo-r", "beta-z"));
}

TEST(ZoneKeyTest, RegionAndZoneDoNotRunTogether) {
  // "a" + "bc" and "ab" + "c" must be different zones.
  EXPECT_NE(ZoneKey({{"topology.kubernetes.io/region", "a"}, {"topology.kubernetes.io/zone", "bc"}}),
            ZoneKey({{"topology.kubernetes.io/region", "ab"}, {"topology.kubernetes.io/zone", "c"}}));
}

TEST(NodeTreeTest, EmptyTree) {
  NodeTree t;
  EXPECT_THAT(t.List(), IsEmpty());
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.Contains("n1"));
}

TEST(NodeTreeTest, SingleZoneKeepsInsertionOrder) {
  NodeTree t;
  for (const char* n : {"n3", "n1", "n2"}) t.Add(n, "");
  EXPECT_THAT(t.List(), ElementsAre("n3", "n1", "n2"));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_TRUE(t.Contains("n1"));
}

TEST(NodeTreeTest, RoundRobinAcrossZonesInOrderOfFirstAppearance) {
  NodeTree t;
  t.Add("a1", "A");
  t.Add("b1", "B");
  t.Add("a2", "A");
  t.Add("c1", "C");
  t.Add("a3", "A");
  t.Add("c2", "C");
  EXPECT_THAT(t.List(), ElementsAre("a1", "b1", "c1", "a2", "c2", "a3"));
}

TEST(NodeTreeTest, ReAddingInTheSameZoneIsANoOp) {
  NodeTree t;
  t.Add("a1", "A");
  t.Add("a2", "A");
  const uint64_t v = t.version();
  t.Add("a1", "A");
  EXPECT_EQ(t.version(), v);
  EXPECT_THAT(t.List(), ElementsAre("a1", "a2"));
}

TEST(NodeTreeTest, ZoneIsRemovedWhenItsLastNodeLeaves) {
  NodeTree t;
  t.Add("a1", "A");
  t.Add("b1", "B");
  t.Add("c1", "C");
  t.Add("a2", "A");
  const uint64_t v = t.version();
  t.Remove("b1");
  EXPECT_GT(t.version(), v);
  EXPECT_THAT(t.List(), ElementsAre("a1", "c1", "a2"));
  // Zone B was dropped: a node arriving in B again makes it the newest zone.
  t.Add("b2", "B");
  t.Add("c2", "C");
  EXPECT_THAT(t.List(), ElementsAre("a1", "c1", "b2", "a2", "c2"));
}

TEST(NodeTreeTest, RemovingUnknownNodeIsANoOp) {
  NodeTree t;
  t.Add("a1", "A");
  const uint64_t v = t.version();
  t.Remove("nope");
  EXPECT_EQ(t.version(), v);
  EXPECT_THAT(t.List(), ElementsAre("a1"));
}

TEST(NodeTreeTest, ZoneChangeMovesTheNodeToTheEndOfItsNewZone) {
  NodeTree t;
  t.Add("a1", "A");
  t.Add("a2", "A");
  t.Add("b1", "B");
  const uint64_t v = t.version();
  t.Add("a1", "B");
  EXPECT_GT(t.version(), v);
  EXPECT_TRUE(t.Contains("a1"));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_THAT(t.List(), ElementsAre("a2", "b1", "a1"));
  // Moving the last node out of a zone drops that zone.
  t.Add("a2", "B");
  EXPECT_THAT(t.List(), ElementsAre("b1", "a1", "a2"));
}

TEST(NodeTreeTest, MovesAndRemovalsThenList) {
  NodeTree t;
  for (const char* n : {"a1", "a2", "a3"}) t.Add(n, "A");
  for (const char* n : {"b1", "b2"}) t.Add(n, "B");
  t.Add("c1", "C");
  EXPECT_THAT(t.List(), ElementsAre("a1", "b1", "c1", "a2", "b2", "a3"));
  t.Add("a2", "C");  // to the end of C
  t.Add("b1", "A");  // to the end of A
  EXPECT_THAT(t.List(), ElementsAre("a1", "b2", "c1", "a3", "a2", "b1"));
  t.Remove("a1");
  t.Remove("c1");
  EXPECT_THAT(t.List(), ElementsAre("a3", "b2", "a2", "b1"));
  // Moving the last node of B away drops B; moving back makes B the newest zone.
  t.Add("b2", "C");
  EXPECT_THAT(t.List(), ElementsAre("a3", "a2", "b1", "b2"));
  t.Add("a3", "B");
  EXPECT_THAT(t.List(), ElementsAre("b1", "a2", "a3", "b2"));
  t.Remove("b1");
  t.Remove("a2");
  t.Remove("b2");
  EXPECT_THAT(t.List(), ElementsAre("a3"));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(t.Contains("a2"));
  // A removed node comes back as a new node.
  t.Add("a2", "B");
  EXPECT_THAT(t.List(), ElementsAre("a3", "a2"));
}

// Zones hold the addresses of the tree's own copies of the names: they must survive the map
// growing (rehash), zone changes and removals. Checked against a model that keeps names by
// value, over enough nodes to rehash many times.
TEST(NodeTreeTest, ListMatchesAModelThroughGrowthMovesAndRemovals) {
  struct ModelZone {
    std::string key;
    std::vector<std::string> nodes;
  };
  std::vector<ModelZone> model;
  auto model_remove = [&](const std::string& name) {
    for (auto z = model.begin(); z != model.end(); ++z) {
      auto n = std::find(z->nodes.begin(), z->nodes.end(), name);
      if (n == z->nodes.end()) continue;
      z->nodes.erase(n);
      if (z->nodes.empty()) model.erase(z);
      return;
    }
  };
  auto model_add = [&](const std::string& name, const std::string& zone) {
    for (const ModelZone& z : model) {  // unchanged zone: no-op
      if (z.key == zone && std::find(z.nodes.begin(), z.nodes.end(), name) != z.nodes.end()) return;
    }
    model_remove(name);
    auto z = std::find_if(model.begin(), model.end(), [&](const ModelZone& m) { return m.key == zone; });
    if (z == model.end()) z = model.insert(model.end(), ModelZone{zone, {}});
    z->nodes.push_back(name);
  };
  auto model_list = [&] {
    std::vector<std::string> out;
    for (size_t i = 0;; ++i) {
      bool any = false;
      for (const ModelZone& z : model) {
        if (i < z.nodes.size()) {
          out.push_back(z.nodes[i]);
          any = true;
        }
      }
      if (!any) return out;
    }
  };

  NodeTree t;
  const std::vector<std::string> zones = {"", Key("r1", "z1"), Key("r1", "z2"), Key("r2", "z1")};
  // Long names (not in std::string's inline buffer) so a dangling pointer reads freed memory.
  auto name = [](int i) { return "node-with-a-long-enough-name-" + std::to_string(i); };
  for (int i = 0; i < 1000; ++i) {
    t.Add(name(i), zones[i % 3]);  // zones[3] appears only through moves
    model_add(name(i), zones[i % 3]);
  }
  ASSERT_EQ(t.List(), model_list());
  for (int i = 0; i < 1000; i += 7) {
    t.Add(name(i), zones[(i / 7) % 4]);  // a move, or a no-op in the same zone
    model_add(name(i), zones[(i / 7) % 4]);
  }
  for (int i = 0; i < 1000; i += 3) {
    t.Remove(name(i));
    model_remove(name(i));
  }
  ASSERT_EQ(t.List(), model_list());
  for (int i = 1000; i < 3000; ++i) {  // grow again past the earlier size
    t.Add(name(i), zones[i % 4]);
    model_add(name(i), zones[i % 4]);
  }
  EXPECT_EQ(t.List(), model_list());
  EXPECT_EQ(t.size(), model_list().size());

  // A moved tree keeps its pointers valid.
  NodeTree moved = std::move(t);
  EXPECT_EQ(moved.List(), model_list());
}

TEST(NodeTreeTest, ListFollowsKubeSchedulerExample) {
  // kube-scheduler node_tree_test "add nodes to a new and to an exiting zone".
  NodeTree t;
  const std::string z1 = Key("region-1", "zone-1");
  const std::string z2 = Key("region-1", "zone-2");
  const std::string z3 = Key("region-2", "zone-2");
  t.Add("node-0", z1);
  t.Add("node-1", z1);
  t.Add("node-2", z2);
  t.Add("node-3", z3);
  t.Add("node-4", z1);
  t.Add("node-5", "");
  EXPECT_THAT(t.List(), ElementsAre("node-0", "node-2", "node-3", "node-5", "node-1", "node-4"));
}

}  // namespace
}  // namespace volcache
