#include "session/topology.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/task_status.h"

namespace volcache {

std::optional<TopologyConstraint> JobTopologyConstraint(const JobInfo& job, const TopologyInfo& topo,
                                                        std::string* error) {
  const auto& pg = job.pod_group();
  if (!pg || !pg->spec.network_topology() || topo.empty()) return std::nullopt;
  const k8s::NetworkTopologySpec& spec = *pg->spec.network_topology();
  TopologyConstraint c;
  c.hard = spec.mode != "soft";
  if (spec.highest_tier_allowed) {
    c.highest_tier = *spec.highest_tier_allowed;
  } else if (!spec.highest_tier_name.empty()) {
    auto it = topo.tier_names.find(spec.highest_tier_name);
    if (it == topo.tier_names.end()) {
      *error = "network topology: no HyperNode has tierName " + spec.highest_tier_name;
      return std::nullopt;
    }
    c.highest_tier = it->second;
  } else {
    // Any real HyperNode: every tier below the virtual root's.
    c.highest_tier = topo.tiers.rbegin()->first - 1;
  }
  return c;
}

namespace {
bool Holds(const HyperNodeInfo& h, const std::string& node) {
  return std::binary_search(h.nodes.begin(), h.nodes.end(), node);
}
}  // namespace

std::string LowestCommonHyperNode(const TopologyInfo& topo, const std::vector<std::string>& nodes) {
  if (nodes.empty()) return "";
  for (const auto& [tier, names] : topo.tiers) {
    for (const std::string& name : names) {
      const HyperNodeInfo& h = topo.hypernodes.at(name);
      bool all = true;
      for (const std::string& n : nodes) {
        if (!Holds(h, n)) {
          all = false;
          break;
        }
      }
      if (all) return name;
    }
  }
  return "";
}

std::vector<std::vector<const HyperNodeInfo*>> CandidateTiers(const TopologyInfo& topo,
                                                              const TopologyConstraint& c,
                                                              const std::string& allocated) {
  std::vector<std::vector<const HyperNodeInfo*>> out;
  if (!allocated.empty()) {
    std::map<int32_t, std::vector<const HyperNodeInfo*>> by_tier;
    for (const HyperNodeInfo* h = topo.Find(allocated); h != nullptr;
         h = h->parent.empty() ? nullptr : topo.Find(h->parent)) {
      if (h->tier <= c.highest_tier) by_tier[h->tier].push_back(h);
    }
    for (auto& [_, v] : by_tier) out.push_back(std::move(v));
    return out;
  }
  for (const auto& [tier, names] : topo.tiers) {
    if (tier > c.highest_tier) break;
    std::vector<const HyperNodeInfo*> v;
    for (const std::string& name : names) v.push_back(&topo.hypernodes.at(name));
    out.push_back(std::move(v));
  }
  return out;
}

std::string JobAllocatedHyperNode(const JobInfo& job, const TopologyInfo& topo) {
  std::set<std::string> nodes;
  for (const auto& [_, t] : job.tasks()) {
    if (IsAllocatedStatus(t.status) && !t.node_name.empty()) nodes.insert(t.node_name);
  }
  return LowestCommonHyperNode(topo, {nodes.begin(), nodes.end()});
}

}  // namespace volcache
