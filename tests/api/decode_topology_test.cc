// Decoding Volcano network-topology objects (SPEC §12): HyperNodes (the CRD's member forms
// and its validation rules) and PodGroup spec.networkTopology / spec.subGroupPolicy, with
// errors that name the object and the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/k8s/decode.h"
#include "tests/testdata.h"

namespace volcache::k8s {
namespace {

using ::testing::HasSubstr;
using M = HyperNodeMember;

Result<Object> Yaml(const std::string& text) {
  auto objs = DecodeYamlDocuments(text);
  if (!objs.ok()) return objs.status();
  return objs->at(0);
}

std::string HyperNodeYaml(const std::string& members, const std::string& tier = "1") {
  return "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: hn}\nspec:\n  tier: " +
         tier + "\n  members:\n" + members;
}

TEST(DecodeTopologyTest, VolcanoDocumentedHyperNodes) {
  const std::string dir = volcache::testing::SharedDataDir() + "/k8s/volcano-topology/";
  auto leaves = DecodeFile(dir + "leaf-hypernodes-s0-s3.yaml");
  ASSERT_TRUE(leaves.ok()) << leaves.status().ToString();
  ASSERT_EQ(leaves->size(), 4u);
  const auto& s1 = std::get<HyperNode>(leaves->at(1));
  EXPECT_EQ(s1.metadata.name, "s1");
  EXPECT_EQ(s1.spec.tier, 1);
  ASSERT_EQ(s1.spec.members.size(), 2u);
  EXPECT_EQ(s1.spec.members[1].type, M::Type::kNode);
  EXPECT_EQ(s1.spec.members[1].selector, M::Selector::kExact);
  EXPECT_EQ(s1.spec.members[1].name_or_pattern, "node-3");

  auto mixed = DecodeFile(dir + "leaf-hypernode-s0-exact-plus-regex.yaml");
  ASSERT_TRUE(mixed.ok());
  const auto& s0 = std::get<HyperNode>(mixed->at(0));
  EXPECT_EQ(s0.spec.members[1].selector, M::Selector::kRegex);
  EXPECT_EQ(s0.spec.members[1].name_or_pattern, "node-[01]");

  auto upper = DecodeFile(dir + "nonleaf-hypernodes-s4-s6.yaml");
  ASSERT_TRUE(upper.ok());
  const auto& s6 = std::get<HyperNode>(upper->at(2));
  EXPECT_EQ(s6.spec.tier, 3);
  EXPECT_EQ(s6.spec.members[0].type, M::Type::kHyperNode);
  EXPECT_EQ(s6.spec.members[1].name_or_pattern, "s5");

  auto rack = DecodeFile(dir + "rack-0-labelmatch.yaml");
  ASSERT_TRUE(rack.ok());
  const auto& r = std::get<HyperNode>(rack->at(0));
  EXPECT_EQ(r.spec.tier_name, "rack");
  EXPECT_EQ(r.spec.members[0].selector, M::Selector::kLabel);
  EXPECT_EQ(r.spec.members[0].labels.match_labels.at("topology-rack"), "rack-0");
  EXPECT_EQ(KindOf(rack->at(0)), "HyperNode");
  EXPECT_EQ(DescribeObject(rack->at(0)), "HyperNode rack-0");
}

TEST(DecodeTopologyTest, HyperNodeErrorsNameTheField) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  const Case cases[] = {
      {HyperNodeYaml("  - type: Rack\n    selector: {exactMatch: {name: a}}\n"),
       "HyperNode hn: spec.members[0].type: \"Rack\" is not one of Node, HyperNode"},
      {HyperNodeYaml("  - type: Node\n    selector: {}\n"),
       "HyperNode hn: spec.members[0].selector: either exactMatch or regexMatch or labelMatch must be "
       "specified"},
      {HyperNodeYaml("  - type: Node\n    selector: {exactMatch: {name: a}, regexMatch: {pattern: b}}\n"),
       "HyperNode hn: spec.members[0].selector: only one of exactMatch, regexMatch, or labelMatch can be "
       "specified"},
      {HyperNodeYaml("  - type: HyperNode\n    selector: {labelMatch: {matchLabels: {a: b}}}\n"),
       "HyperNode hn: spec.members[0].selector.labelMatch: labelMatch is only allowed for members of type "
       "Node"},
      {HyperNodeYaml("  - type: Node\n    selector: {exactMatch: {name: a}}\n", "-1"),
       "HyperNode hn: spec.tier: must be >= 0"},
      {"apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: hn}\nspec: {members: "
       "[]}\n",
       "HyperNode hn: spec.tier: missing required field"},
      {HyperNodeYaml("  - type: Node\n    selector:\n      labelMatch:\n        matchExpressions: [{key: a, "
                     "operator: Gt, "
                     "values: ['1']}]\n"),
       "HyperNode hn: spec.members[0].selector.labelMatch.matchExpressions[0].operator: \"Gt\" is not a "
       "valid"},
      {"apiVersion: topology.volcano.sh/v1beta9\nkind: HyperNode\nmetadata: {name: hn}\nspec: {tier: 1}\n",
       "unsupported version \"topology.volcano.sh/v1beta9\" for HyperNode"},
  };
  for (const Case& c : cases) {
    auto obj = Yaml(c.yaml);
    ASSERT_FALSE(obj.ok()) << c.yaml;
    EXPECT_THAT(obj.status().message(), HasSubstr(c.error)) << c.yaml;
  }
}

TEST(DecodeTopologyTest, PodGroupNetworkTopologyAndSubGroups) {
  auto obj = Yaml(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec:
  minMember: 3
  networkTopology: {mode: soft, highestTierAllowed: 2}
  subGroupPolicy:
  - name: workers
    subGroupSize: 4
    networkTopology: {highestTierName: rack}
    labelSelector: {matchLabels: {role: worker}}
    matchLabelKeys: [index]
)");
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  const auto& pg = std::get<PodGroup>(*obj);
  ASSERT_TRUE(pg.spec.network_topology().has_value());
  EXPECT_EQ(pg.spec.network_topology()->mode, "soft");
  EXPECT_EQ(pg.spec.network_topology()->highest_tier_allowed, 2);
  ASSERT_EQ(pg.spec.sub_group_policy().size(), 1u);
  const auto& g = pg.spec.sub_group_policy()[0];
  EXPECT_EQ(g.name, "workers");
  EXPECT_EQ(g.sub_group_size, 4);
  EXPECT_EQ(g.network_topology->mode, "hard");  // the CRD default
  EXPECT_EQ(g.network_topology->highest_tier_name, "rack");
  EXPECT_EQ(g.label_selector->match_labels.at("role"), "worker");
  EXPECT_EQ(g.match_label_keys, std::vector<std::string>{"index"});

  auto both = Yaml(
      "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, namespace: ns}\n"
      "spec: {networkTopology: {highestTierAllowed: 1, highestTierName: rack}}\n");
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(
      both.status().message(),
      HasSubstr("PodGroup ns/pg: spec.networkTopology: highestTierAllowed and highestTierName cannot be set "
                "simultaneously"));
  auto mode = Yaml(
      "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, namespace: ns}\n"
      "spec: {networkTopology: {mode: strict}}\n");
  ASSERT_FALSE(mode.ok());
  EXPECT_THAT(mode.status().message(),
              HasSubstr("PodGroup ns/pg: spec.networkTopology.mode: \"strict\" is not one of hard, soft"));
}

}  // namespace
}  // namespace volcache::k8s
