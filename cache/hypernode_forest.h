#pragma once
// HyperNodeForest: the network-topology forest of Volcano HyperNodes (SPEC §12) — each
// HyperNode's parent (at most one), children, tier, and leaf set (the real nodes it selects
// itself ∪ its children's leaf sets), kept incrementally as HyperNodes and nodes change.
//
// Semantics (Volcano's, minus its stale spots):
// - Node members select nodes by exactMatch name, regexMatch (RE2, unanchored search:
//   `node-2` matches `node-20`) or labelMatch (a label selector). Only nodes the forest was
//   told about (UpsertNode) are leaves; a node deleted or relabelled away leaves every leaf set.
// - HyperNode members (exactMatch or regexMatch on HyperNode names) make the selected
//   HyperNodes children. A HyperNode selected by two HyperNodes (a second parent) or an update
//   closing a cycle is refused: the forest is unchanged, the error names both HyperNodes, and
//   the forest is not ready() until the refused HyperNode is applied successfully or removed.
// - Removing a HyperNode makes its children roots (they keep their leaves) and takes its
//   leaves out of its ancestors.
//
// Cost: Apply is O(members + the HyperNode's leaves × depth), plus a scan of the known nodes
// for its regex/label members and of the HyperNode names for its regex HyperNode members.
// A node event looks only at the HyperNodes that could select it (exact-name and label
// indexes, the HyperNodes that hold it now, and those with regex or expression-only members)
// and walks their ancestors.
//
// RE2 stays in hypernode_forest.cc. Thread-safety: externally synchronized (owned by
// SchedulerCache under its lock); const methods may run concurrently with each other.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache {

class HyperNodeForest {
 public:
  struct Entry;  // defined in hypernode_forest.cc

  HyperNodeForest();
  ~HyperNodeForest();
  HyperNodeForest(const HyperNodeForest&) = delete;
  HyperNodeForest& operator=(const HyperNodeForest&) = delete;

  // Adds or replaces a HyperNode. InvalidArgument (and nothing changes) for a regex RE2
  // rejects, a second parent or a cycle; the latter two also record the HyperNode as refused.
  Status Apply(const k8s::HyperNodePtr& hn);
  // Removes a HyperNode (children become roots). Also forgets a refusal of that name.
  // NotFound when it is not in the forest.
  Status Remove(const std::string& name);

  // A node with a Node object, added or changed; a no-op when its labels did not change.
  void UpsertNode(const std::string& name, const k8s::StringMap& labels);
  // The node is gone (or became a placeholder).
  void RemoveNode(const std::string& name);

  // False while some HyperNode update is refused (jobs with topology constraints wait).
  bool ready() const { return refused_.empty(); }
  // Refused HyperNode name → the error.
  const std::map<std::string, std::string>& refused() const { return refused_; }
  // Bumped on every change of structure, tiers or leaf sets.
  uint64_t version() const { return version_; }
  size_t size() const { return entries_.size(); }
  bool Contains(const std::string& name) const { return entries_.count(name) > 0; }
  // Whether some HyperNode selects node `name` itself (so it is in some leaf set).
  bool Selects(const std::string& node) const { return owners_.count(node) > 0; }

  // One HyperNode as the dump shows it: names sorted; parent "" for a root.
  struct View {
    int32_t tier = 0;
    std::string tier_name;
    std::string parent;
    std::vector<std::string> children;
    std::vector<std::string> nodes;
    friend bool operator==(const View&, const View&) = default;
  };
  // Every HyperNode, by name.
  std::map<std::string, View> Views() const;

 private:
  Entry* Find(const std::string& name);
  // The HyperNodes (other than `except`) whose HyperNode members select `name`.
  std::vector<std::string> ClaimersOf(const std::string& name, const std::string& except) const;
  bool MemberSelectsNode(const Entry& e, const std::string& node, const k8s::StringMap& labels) const;
  void Inc(Entry* e, const std::string& node);
  void Dec(Entry* e, const std::string& node);
  void Index(const std::string& name, const Entry& e);
  void Unindex(const std::string& name, const Entry& e);
  // Indexes every known node's value of `key` (a key label_index_ just started using).
  void IndexNodeLabel(const std::string& key);
  void UnindexNodeLabels(const std::string& name, const k8s::StringMap& labels);
  void Reevaluate(const std::string& name, const std::string& node, const k8s::StringMap* labels);

  std::unordered_map<std::string, std::unique_ptr<Entry>> entries_;
  // Known nodes → labels, by interned name (the cache's NodeInfo interns every node's name):
  // a 24-byte map node, 56 with a std::string name and its hash.
  std::unordered_map<k8s::Interned, k8s::StringMap> nodes_;
  // label key → value → known nodes carrying it, for the keys of label_index_ only (the
  // labelMatch members look up their first pair): indexing every label of every node cost
  // about 300 bytes a node on a cluster with no HyperNodes.
  std::unordered_map<std::string, std::unordered_map<std::string, std::unordered_set<std::string>>>
      node_labels_;
  // node name → HyperNodes with an exactMatch Node member of that name
  std::unordered_map<std::string, std::set<std::string>> exact_node_index_;
  // label key → value → HyperNodes with a labelMatch whose first matchLabels pair is key=value
  std::unordered_map<std::string, std::unordered_map<std::string, std::set<std::string>>> label_index_;
  // HyperNodes with a regexMatch Node member or a labelMatch without matchLabels
  std::set<std::string> scan_hns_;
  // node name → HyperNodes that select it themselves (own matches)
  std::unordered_map<std::string, std::set<std::string>> owners_;
  // HyperNode name → HyperNodes with an exactMatch HyperNode member of that name
  std::unordered_map<std::string, std::set<std::string>> exact_claims_;
  std::set<std::string> regex_claimers_;  // HyperNodes with a regexMatch HyperNode member
  std::map<std::string, std::string> refused_;
  uint64_t version_ = 0;
};

}  // namespace volcache
