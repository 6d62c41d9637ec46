#pragma once
// TopologyInfo: the network-topology forest as a scheduling session sees it (SPEC §12) —
// every HyperNode with its tier, parent, children and leaf set narrowed to the snapshot's
// Ready nodes, plus a virtual root above every parentless HyperNode (tier = highest tier + 1),
// so that "anywhere" is a HyperNode too.
//
// Ownership: built by the cache when the forest or the Ready node set changed and shared,
// immutable, by every snapshot taken until the next change (copy-on-write by replacement).
// Thread-safety: immutable once published; safe for concurrent reads.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace volcache {

// The virtual root's name: not a valid Kubernetes object name, so it never collides.
inline constexpr std::string_view kTopologyRoot = "<root>";

struct HyperNodeInfo {
  std::string name;
  int32_t tier = 0;
  std::string tier_name;
  std::string parent;                 // "" only for the virtual root
  std::vector<std::string> children;  // sorted
  std::vector<std::string> nodes;     // leaf set: Ready nodes, sorted
};

struct TopologyInfo {
  // False while the cache refuses some HyperNode update (a cycle or a second parent): jobs
  // with a topology constraint wait.
  bool ready = true;
  // Every HyperNode by name, the virtual root included (when there is at least one HyperNode).
  std::unordered_map<std::string, HyperNodeInfo> hypernodes;
  // tier → names of its HyperNodes, sorted; tiers ascending.
  std::map<int32_t, std::vector<std::string>> tiers;
  // tierName → tier (the HyperNodes that name their tier).
  std::map<std::string, int32_t, std::less<>> tier_names;

  bool empty() const { return hypernodes.empty(); }
  const HyperNodeInfo* Find(const std::string& name) const {
    auto it = hypernodes.find(name);
    return it == hypernodes.end() ? nullptr : &it->second;
  }
};

}  // namespace volcache
