#pragma once
// Topology-aware gang placement helpers (SPEC §12), used by Allocate (session/allocate.cc):
// which HyperNodes a job's gang may be placed inside, in the order they are tried.
//
// Rules (Volcano's network-topology-aware plugin, simplified):
//   * a job with PodGroup spec.networkTopology is constrained: hard mode (the default) puts
//     every task of the gang inside one HyperNode of tier <= the allowed tier
//     (highestTierAllowed, or the tier of highestTierName; neither set: any HyperNode);
//     soft mode prefers that and falls back to any node;
//   * the lowest tier is tried first; in a tier the HyperNode where the gang fits with the
//     best score wins (ties: the smaller name); the next tier only when none fits;
//   * the job's allocated HyperNode is the lowest common ancestor of the nodes its tasks in
//     allocated statuses (Allocated, Binding, Bound, Running) occupy. It is derived from the
//     snapshot every session, so it is remembered across sessions through the tasks the cache
//     holds (assumed binds included) and rebuilt from running tasks after a restart; later
//     tasks of the job only go to it or its ancestors within the allowed tier;
//   * while the cache refuses a HyperNode update (forest not ready), hard-mode jobs wait.
//
// Thread-safety: pure functions over immutable inputs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/job_info.h"
#include "api/topology_info.h"

namespace volcache {

struct TopologyConstraint {
  bool hard = true;
  int32_t highest_tier = 0;  // inclusive
};

// The job's constraint; nullopt when it has none (no networkTopology, or no HyperNodes).
// `*error` is set (and nullopt returned) when highestTierName names no tier.
std::optional<TopologyConstraint> JobTopologyConstraint(const JobInfo& job, const TopologyInfo& topo,
                                                        std::string* error);

// The lowest HyperNode whose leaf set holds every node of `nodes` ("" when none, or `nodes`
// is empty).
std::string LowestCommonHyperNode(const TopologyInfo& topo, const std::vector<std::string>& nodes);

// The HyperNodes to try, grouped by ascending tier (each group sorted by name), tiers
// <= c.highest_tier. With `allocated` set, only it and its ancestors.
std::vector<std::vector<const HyperNodeInfo*>> CandidateTiers(const TopologyInfo& topo,
                                                              const TopologyConstraint& c,
                                                              const std::string& allocated);

// The job's allocated HyperNode: the lowest common HyperNode of its tasks in allocated statuses.
std::string JobAllocatedHyperNode(const JobInfo& job, const TopologyInfo& topo);

}  // namespace volcache
