// HyperNodeForest (SPEC §12): Volcano's documented HyperNode trees from the shared data,
// exact/regex/label members, cycles and second parents, deletes at leaf/middle/root and
// re-adds, node events against regex and label leaves, and a randomized comparison of the
// incremental forest with one computed from scratch after every event.

#include "cache/hypernode_forest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <functional>
#include <random>

#include "api/k8s/decode.h"
#include "tests/testdata.h"

namespace volcache {

// gtest prints Views through ADL (namespace volcache).
inline void PrintTo(const HyperNodeForest::View& v, std::ostream* os) {
  *os << "{tier " << v.tier << " '" << v.tier_name << "' parent '" << v.parent << "' children [";
  for (const auto& c : v.children) *os << c << " ";
  *os << "] nodes [";
  for (const auto& n : v.nodes) *os << n << " ";
  *os << "]}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using View = HyperNodeForest::View;

std::string TopologyDir() { return volcache::testing::SharedDataDir() + "/k8s/volcano-topology/"; }

std::vector<k8s::HyperNodePtr> LoadHyperNodes(const std::string& file) {
  auto objs = k8s::DecodeFile(TopologyDir() + file);
  EXPECT_TRUE(objs.ok()) << objs.status().ToString();
  std::vector<k8s::HyperNodePtr> out;
  if (!objs.ok()) return out;
  for (auto& o : *objs) out.push_back(std::make_shared<const k8s::HyperNode>(std::get<k8s::HyperNode>(o)));
  return out;
}

k8s::HyperNodePtr ParseHyperNode(const std::string& yaml) {
  auto objs = k8s::DecodeYamlDocuments(yaml);
  EXPECT_TRUE(objs.ok()) << objs.status().ToString();
  return std::make_shared<const k8s::HyperNode>(std::get<k8s::HyperNode>(objs->at(0)));
}

// A HyperNode from a compact member list: "node:exact:NAME", "node:regex:PAT",
// "hn:exact:NAME", "hn:regex:PAT", "node:label:K=V".
k8s::HyperNodePtr HN(const std::string& name, int tier, const std::vector<std::string>& members) {
  k8s::HyperNode hn;
  hn.metadata.name = name;
  hn.spec.tier = tier;
  for (const std::string& m : members) {
    k8s::HyperNodeMember mem;
    auto a = m.find(':');
    auto b = m.find(':', a + 1);
    const std::string type = m.substr(0, a), sel = m.substr(a + 1, b - a - 1), arg = m.substr(b + 1);
    mem.type = type == "node" ? k8s::HyperNodeMember::Type::kNode : k8s::HyperNodeMember::Type::kHyperNode;
    if (sel == "exact") {
      mem.selector = k8s::HyperNodeMember::Selector::kExact;
      mem.name_or_pattern = arg;
    } else if (sel == "regex") {
      mem.selector = k8s::HyperNodeMember::Selector::kRegex;
      mem.name_or_pattern = arg;
    } else {
      mem.selector = k8s::HyperNodeMember::Selector::kLabel;
      auto eq = arg.find('=');
      mem.labels.match_labels.emplace(arg.substr(0, eq), arg.substr(eq + 1));
    }
    hn.spec.members.push_back(std::move(mem));
  }
  return std::make_shared<const k8s::HyperNode>(std::move(hn));
}

View V(int tier, std::string parent, std::vector<std::string> children, std::vector<std::string> nodes,
       std::string tier_name = "") {
  return View{tier, std::move(tier_name), std::move(parent), std::move(children), std::move(nodes)};
}

class HyperNodeForestTest : public ::testing::Test {
 protected:
  void Nodes(int n) {
    for (int i = 0; i < n; ++i) forest.UpsertNode("node-" + std::to_string(i), {});
  }
  void ApplyAll(const std::vector<k8s::HyperNodePtr>& hns) {
    for (const auto& hn : hns) {
      Status s = forest.Apply(hn);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }
  // Volcano's user-guide tree: s0..s3 (tier 1) over node-0..node-7, s4, s5 (tier 2), s6 (tier 3).
  std::map<std::string, View> DocumentedTree() {
    return {
        {"s0", V(1, "s4", {}, {"node-0", "node-1"})},
        {"s1", V(1, "s4", {}, {"node-2", "node-3"})},
        {"s2", V(1, "s5", {}, {"node-4", "node-5"})},
        {"s3", V(1, "s5", {}, {"node-6", "node-7"})},
        {"s4", V(2, "s6", {"s0", "s1"}, {"node-0", "node-1", "node-2", "node-3"})},
        {"s5", V(2, "s6", {"s2", "s3"}, {"node-4", "node-5", "node-6", "node-7"})},
        {"s6", V(3, "", {"s4", "s5"},
                 {"node-0", "node-1", "node-2", "node-3", "node-4", "node-5", "node-6", "node-7"})},
    };
  }
  HyperNodeForest forest;
};

TEST_F(HyperNodeForestTest, VolcanoDocumentedTreeLeavesFirst) {
  Nodes(8);
  ApplyAll(LoadHyperNodes("leaf-hypernodes-s0-s3.yaml"));
  ApplyAll(LoadHyperNodes("nonleaf-hypernodes-s4-s6.yaml"));
  EXPECT_EQ(forest.Views(), DocumentedTree());
  EXPECT_TRUE(forest.ready());
}

TEST_F(HyperNodeForestTest, VolcanoDocumentedTreeRootFirstAndNodesLast) {
  auto upper = LoadHyperNodes("nonleaf-hypernodes-s4-s6.yaml");
  ApplyAll({upper[2], upper[1], upper[0]});
  ApplyAll(LoadHyperNodes("leaf-hypernodes-s0-s3.yaml"));
  Nodes(8);
  EXPECT_EQ(forest.Views(), DocumentedTree());
}

TEST_F(HyperNodeForestTest, ExactPlusRegexLeafIsAnUnanchoredRe2Search) {
  for (const char* n : {"node-0", "node-1", "node-10", "node-2", "xnode-1y"}) forest.UpsertNode(n, {});
  ApplyAll(LoadHyperNodes("leaf-hypernode-s0-exact-plus-regex.yaml"));
  // `node-[01]` is searched, not anchored (Go regexp.MatchString): node-10 and xnode-1y match.
  EXPECT_EQ(forest.Views().at("s0"), V(1, "", {}, {"node-0", "node-1", "node-10", "xnode-1y"}));
  forest.UpsertNode("node-11", {});
  forest.UpsertNode("node-3", {});
  EXPECT_EQ(forest.Views().at("s0").nodes,
            (std::vector<std::string>{"node-0", "node-1", "node-10", "node-11", "xnode-1y"}));
  forest.RemoveNode("node-0");  // exact and regex both matched it
  forest.RemoveNode("node-10");
  EXPECT_EQ(forest.Views().at("s0").nodes, (std::vector<std::string>{"node-1", "node-11", "xnode-1y"}));
}

TEST_F(HyperNodeForestTest, InvalidRegexIsRefusedNamingTheField) {
  const uint64_t v = forest.version();
  Status s = forest.Apply(HN("bad", 1, {"node:exact:a", "node:regex:node-("}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("HyperNode bad: spec.members[1].selector.regexMatch.pattern"));
  EXPECT_EQ(forest.size(), 0u);
  EXPECT_EQ(forest.version(), v);
}

TEST_F(HyperNodeForestTest, LabelMatchedRackFollowsNodeLabels) {
  forest.UpsertNode("a", {{"topology-rack", "rack-0"}});
  forest.UpsertNode("b", {{"topology-rack", "rack-1"}});
  ApplyAll(LoadHyperNodes("rack-0-labelmatch.yaml"));
  ApplyAll({HN("spine", 2, {"hn:exact:rack-0"})});
  EXPECT_EQ(forest.Views().at("rack-0"), V(1, "spine", {}, {"a"}, "rack"));
  forest.UpsertNode("b", {{"topology-rack", "rack-0"}, {"x", "y"}});  // relabelled in
  forest.UpsertNode("c", {{"topology-rack", "rack-0"}});              // added
  EXPECT_EQ(forest.Views().at("spine").nodes, (std::vector<std::string>{"a", "b", "c"}));
  // Volcano keeps these stale; we drop them: relabelled away, and deleted.
  forest.UpsertNode("a", {{"topology-rack", "rack-9"}});
  forest.RemoveNode("c");
  EXPECT_EQ(forest.Views().at("rack-0").nodes, (std::vector<std::string>{"b"}));
  EXPECT_EQ(forest.Views().at("spine").nodes, (std::vector<std::string>{"b"}));
}

TEST_F(HyperNodeForestTest, LabelSelectorExpressionsWithoutMatchLabels) {
  auto hn = ParseHyperNode(R"(
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: gpu}
spec:
  tier: 1
  members:
  - type: Node
    selector:
      labelMatch:
        matchExpressions:
        - {key: accel, operator: In, values: [h100, a100]}
        - {key: drain, operator: DoesNotExist}
)");
  forest.UpsertNode("n1", {{"accel", "h100"}});
  forest.UpsertNode("n2", {{"accel", "t4"}});
  forest.UpsertNode("n3", {{"accel", "a100"}, {"drain", ""}});
  ASSERT_TRUE(forest.Apply(hn).ok());
  EXPECT_THAT(forest.Views().at("gpu").nodes, ElementsAre("n1"));
  forest.UpsertNode("n3", {{"accel", "a100"}});
  forest.UpsertNode("n1", {{"accel", "h100"}, {"drain", "yes"}});
  EXPECT_THAT(forest.Views().at("gpu").nodes, ElementsAre("n3"));
}

TEST_F(HyperNodeForestTest, CycleIsRefusedNamingBothAndLeavesTheForestIntact) {
  Nodes(2);
  ApplyAll({HN("a", 1, {"node:exact:node-0"}), HN("b", 2, {"hn:exact:a"}), HN("c", 3, {"hn:exact:b"})});
  const auto before = forest.Views();
  Status s = forest.Apply(HN("a", 1, {"node:exact:node-0", "hn:exact:c"}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("HyperNode a: member HyperNode c is an ancestor of HyperNode a (cycle)"));
  EXPECT_EQ(forest.Views(), before);
  EXPECT_FALSE(forest.ready());
  EXPECT_THAT(forest.refused(), ::testing::Contains(::testing::Key("a")));
  // Self-membership is a cycle too.
  s = forest.Apply(HN("d", 1, {"hn:exact:d"}));
  EXPECT_THAT(s.message(), HasSubstr("HyperNode d: member HyperNode d is itself (cycle)"));
  // Consistent again once both are fixed.
  ASSERT_TRUE(forest.Apply(HN("a", 1, {"node:exact:node-1"})).ok());
  EXPECT_FALSE(forest.ready());
  ASSERT_TRUE(forest.Remove("d").code() == StatusCode::kNotFound);
  EXPECT_TRUE(forest.ready());
  EXPECT_THAT(forest.Views().at("c").nodes, ElementsAre("node-1"));
}

TEST_F(HyperNodeForestTest, SecondParentIsRefusedNamingBoth) {
  Nodes(1);
  ApplyAll({HN("leaf", 1, {"node:exact:node-0"}), HN("p1", 2, {"hn:exact:leaf"})});
  const auto before = forest.Views();
  Status s = forest.Apply(HN("p2", 2, {"hn:exact:leaf"}));
  EXPECT_THAT(s.message(), HasSubstr("HyperNode p2: member HyperNode leaf already has parent HyperNode p1"));
  EXPECT_EQ(forest.Views(), before);
  EXPECT_FALSE(forest.ready());
  // A regex member claiming it is a second parent as well.
  s = forest.Apply(HN("p3", 2, {"hn:regex:^le"}));
  EXPECT_THAT(s.message(), HasSubstr("HyperNode p3: member HyperNode leaf already has parent HyperNode p1"));
  // Two claims on a HyperNode that does not exist yet: the later claimer is refused.
  ASSERT_TRUE(forest.Apply(HN("q1", 2, {"hn:exact:future"})).ok());
  s = forest.Apply(HN("q2", 2, {"hn:exact:future"}));
  EXPECT_THAT(s.message(),
              HasSubstr("HyperNode q2: member HyperNode future already has parent HyperNode q1"));
  // p1 gives the leaf up: p2 now applies.
  ASSERT_TRUE(forest.Apply(HN("p1", 2, {})).ok());
  ASSERT_TRUE(forest.Apply(HN("p2", 2, {"hn:exact:leaf"})).ok());
  EXPECT_EQ(forest.Views().at("leaf").parent, "p2");
  EXPECT_THAT(forest.Views().at("p1").children, IsEmpty());
  EXPECT_THAT(forest.Views().at("p1").nodes, IsEmpty());
  EXPECT_THAT(forest.Views().at("p2").nodes, ElementsAre("node-0"));
}

TEST_F(HyperNodeForestTest, DeleteLeafMiddleRootThenReAdd) {
  Nodes(8);
  auto leaves = LoadHyperNodes("leaf-hypernodes-s0-s3.yaml");
  auto upper = LoadHyperNodes("nonleaf-hypernodes-s4-s6.yaml");
  ApplyAll(leaves);
  ApplyAll(upper);
  // Leaf: leaves its parent's children; its nodes leave the ancestors.
  ASSERT_TRUE(forest.Remove("s0").ok());
  auto v = forest.Views();
  EXPECT_EQ(v.at("s4"), V(2, "s6", {"s1"}, {"node-2", "node-3"}));
  EXPECT_EQ(v.at("s6").nodes.size(), 6u);
  ApplyAll({leaves[0]});
  EXPECT_EQ(forest.Views(), DocumentedTree());
  // Middle: its children become roots.
  ASSERT_TRUE(forest.Remove("s4").ok());
  v = forest.Views();
  EXPECT_EQ(v.at("s0"), V(1, "", {}, {"node-0", "node-1"}));
  EXPECT_EQ(v.at("s1"), V(1, "", {}, {"node-2", "node-3"}));
  EXPECT_EQ(v.at("s6"), V(3, "", {"s5"}, {"node-4", "node-5", "node-6", "node-7"}));
  ApplyAll({upper[0]});
  EXPECT_EQ(forest.Views(), DocumentedTree());
  // Root.
  ASSERT_TRUE(forest.Remove("s6").ok());
  v = forest.Views();
  EXPECT_EQ(v.at("s4").parent, "");
  EXPECT_EQ(v.at("s5").parent, "");
  EXPECT_EQ(v.size(), 6u);
  ApplyAll({upper[2]});
  EXPECT_EQ(forest.Views(), DocumentedTree());
  EXPECT_EQ(forest.Remove("s6").code(), StatusCode::kOk);
  EXPECT_EQ(forest.Remove("s6").code(), StatusCode::kNotFound);
}

TEST_F(HyperNodeForestTest, NodeEventsReachOnlyMatchingLeavesAndTheirAncestors) {
  ApplyAll({HN("r2", 1, {"node:regex:node-2"}), HN("r3", 1, {"node:regex:^node-3$"}),
            HN("top", 2, {"hn:regex:^r"})});
  forest.UpsertNode("node-2", {});
  forest.UpsertNode("node-20", {});
  forest.UpsertNode("node-3", {});
  forest.UpsertNode("node-30", {});  // anchored pattern: not r3
  auto v = forest.Views();
  EXPECT_THAT(v.at("r2").nodes, ElementsAre("node-2", "node-20"));
  EXPECT_THAT(v.at("r3").nodes, ElementsAre("node-3"));
  EXPECT_THAT(v.at("top").children, ElementsAre("r2", "r3"));
  EXPECT_THAT(v.at("top").nodes, ElementsAre("node-2", "node-20", "node-3"));
  // A label change of a regex-matched node changes nothing (and no version).
  const uint64_t ver = forest.version();
  forest.UpsertNode("node-20", {{"a", "b"}});
  EXPECT_EQ(forest.version(), ver);
  forest.RemoveNode("node-20");
  EXPECT_THAT(forest.Views().at("top").nodes, ElementsAre("node-2", "node-3"));
  // A HyperNode created later joins the regex parent.
  ApplyAll({HN("r4", 1, {"node:exact:node-30"})});
  EXPECT_EQ(forest.Views().at("r4").parent, "top");
  EXPECT_THAT(forest.Views().at("top").nodes, ElementsAre("node-2", "node-3", "node-30"));
}

// ------------------------------------------------------------------ randomized

// The forest by definition, computed from scratch: accepted specs and the current nodes.
std::map<std::string, View> FromScratch(const std::map<std::string, k8s::HyperNodePtr>& specs,
                                        const std::map<std::string, k8s::StringMap>& nodes) {
  using M = k8s::HyperNodeMember;
  auto selects = [](const M& m, const std::string& name, const k8s::StringMap* labels) {
    switch (m.selector) {
      case M::Selector::kExact:
        return m.name_or_pattern == name;
      case M::Selector::kRegex:
        return re2::RE2::PartialMatch(name, re2::RE2(m.name_or_pattern));
      case M::Selector::kLabel:
        return labels != nullptr && k8s::LabelSelectorMatches(m.labels, *labels);
    }
    return false;
  };
  std::map<std::string, View> out;
  std::map<std::string, std::set<std::string>> own;
  for (const auto& [name, hn] : specs) {
    View& v = out[name];
    v.tier = hn->spec.tier;
    v.tier_name = hn->spec.tier_name;
    for (const M& m : hn->spec.members) {
      if (m.type == M::Type::kNode) {
        for (const auto& [node, labels] : nodes) {
          if (selects(m, node, &labels)) own[name].insert(node);
        }
      } else {
        for (const auto& [other, _] : specs) {
          if (other != name && selects(m, other, nullptr)) v.children.push_back(other);
        }
      }
    }
    std::sort(v.children.begin(), v.children.end());
    v.children.erase(std::unique(v.children.begin(), v.children.end()), v.children.end());
  }
  for (auto& [name, v] : out) {
    for (const auto& c : v.children) {
      EXPECT_EQ(out[c].parent, "") << c << " has two parents: " << out[c].parent << " and " << name;
      out[c].parent = name;
    }
  }
  std::function<std::set<std::string>(const std::string&, int)> leaves = [&](const std::string& name,
                                                                             int depth) {
    std::set<std::string> s = own[name];
    if (depth > 64) {
      ADD_FAILURE() << "cycle through " << name;
      return s;
    }
    for (const auto& c : out[name].children) {
      auto cs = leaves(c, depth + 1);
      s.insert(cs.begin(), cs.end());
    }
    return s;
  };
  for (auto& [name, v] : out) {
    auto s = leaves(name, 0);
    v.nodes.assign(s.begin(), s.end());
  }
  return out;
}

TEST(HyperNodeForestRandomTest, MatchesARebuildAfterEveryEvent) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    HyperNodeForest forest;
    std::map<std::string, k8s::HyperNodePtr> accepted;
    std::map<std::string, k8s::StringMap> nodes;
    std::set<std::string> refused;
    auto random_member = [&]() -> std::string {
      switch (pick(6)) {
        case 0:
          return "node:exact:n" + std::to_string(pick(12));
        case 1:
          return "node:regex:n" + std::to_string(pick(3)) + (pick(2) ? "" : "$");
        case 2:
          // Two keys: the forest indexes a node label only while some labelMatch uses its key.
          return std::string(pick(2) ? "node:label:rack=r" : "node:label:zone=z") + std::to_string(pick(3));
        case 3:
        case 4:
          return "hn:exact:h" + std::to_string(pick(10));
        default:
          return "hn:regex:^h" + std::to_string(pick(10)) + "$";
      }
    };
    for (int step = 0; step < 400; ++step) {
      const int op = pick(10);
      std::string what;
      if (op < 4) {
        const std::string name = "h" + std::to_string(pick(10));
        std::vector<std::string> members;
        for (int i = pick(4); i > 0; --i) members.push_back(random_member());
        auto hn = HN(name, 1 + pick(3), members);
        what = "apply " + name;
        Status s = forest.Apply(hn);
        if (s.ok()) {
          accepted[name] = hn;
          refused.erase(name);
        } else {
          refused.insert(name);
        }
      } else if (op < 5) {
        const std::string name = "h" + std::to_string(pick(10));
        what = "remove " + name;
        Status s = forest.Remove(name);
        EXPECT_EQ(s.ok(), accepted.erase(name) == 1);
        refused.erase(name);
      } else if (op < 8) {
        const std::string name = "n" + std::to_string(pick(12));
        k8s::StringMap labels;
        if (pick(3)) labels["rack"] = "r" + std::to_string(pick(3));
        if (pick(2)) labels["zone"] = "z" + std::to_string(pick(3));
        what = "upsert node " + name;
        forest.UpsertNode(name, labels);
        nodes[name] = labels;
      } else {
        const std::string name = "n" + std::to_string(pick(12));
        what = "remove node " + name;
        forest.RemoveNode(name);
        nodes.erase(name);
      }
      ASSERT_EQ(forest.Views(), FromScratch(accepted, nodes))
          << "seed " << seed << " step " << step << ": " << what;
      std::set<std::string> got;
      for (const auto& [name, _] : forest.refused()) got.insert(name);
      ASSERT_EQ(got, refused) << "seed " << seed << " step " << step;
      ASSERT_EQ(forest.ready(), refused.empty());
    }
  }
}

}  // namespace
}  // namespace volcache
