// NodeTree: kube-scheduler's node ordering (round-robin over zones in order of first
// appearance, insertion order within a zone) and the zone key label rule.

#include "cache/node_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
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
