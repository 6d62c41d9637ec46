#pragma once
// Reclaim and preempt: the session's eviction planning (Volcano's `reclaim` and `preempt`
// actions with the `proportion`, `gang` and `priority` plugins), a pure function of the
// snapshot Allocate saw and Allocate's plan. It chooses victims; the Scheduler evicts them
// through CacheRuntime::Evict (task Releasing → evictor → pod deleted), and the starving
// job is placed — pipelined onto the releasing resources, then bound — by later sessions.
//
// Starving job: PodGroup past Pending when require_inqueue (else any), queue open, enough
// valid tasks for its gang, and ready (allocated statuses + Succeeded + this plan's binds) +
// this plan's pipelined tasks < minAvailable. It needs its next minAvailable − ready −
// pipelined schedulable pending tasks (task order); a job is served whole or not at all:
// if one of those tasks finds no node even with victims, nothing is evicted for the job.
//
//   reclaim (between queues): queues by Allocate's share (lowest first), skipping queues
//     whose share (with the jobs served so far) reached 1; jobs by priority, creation time,
//     uid (a served job may take its queue past its share: gangs are indivisible, and the
//     victims' side keeps every other queue at its share, so this cannot oscillate).
//     Victims: Running/Bound tasks of other, `reclaimable` queues not reclaimed for earlier in
//     the same plan, and only while the victim's queue keeps its share (max over dimensions
//     of allocated / deserved) >= 1.
//   preempt (within a queue): then every still-starving job may evict Running/Bound tasks of
//     lower-priority jobs of its own queue.
//   both: a needed task first takes a node whose future idle (idle + releasing − pipelined,
//     minus this plan's placements and this call's reservations) already fits it, first by
//     name; otherwise, of the first 16 nodes (by name) where victims make room, the one
//     whose victims' highest job priority is the lowest, then needing the fewest (ties:
//     name; a one-victim node at the lowest priority of any victim ends the search; before,
//     the fewest victims won, so a higher-priority gang could go for a lower one elsewhere).
//     On a node, victims
//     are taken in order — lowest job priority, youngest job, youngest task, uid — until the
//     task fits, never more (gang: a victim whose job would drop below minAvailable brings
//     its whole job, on every node, or is skipped when that is not possible: a job with a
//     task still Allocated/Binding). Non-resource predicates (NodePredicateFailure) apply.
//   The pods dimension (max pods) is not checked here; the later Allocate checks it.
//
// Thread-safety: a pure function; the snapshot must not be mutated while it runs.

#include <cstdint>
#include <string>
#include <vector>

#include "api/cluster_info.h"
#include "api/status.h"
#include "session/allocate.h"

namespace volcache {

struct Eviction {
  std::string task_key;  // "namespace/name", what CacheRuntime::Evict takes
  std::string task_uid;
  JobId job;  // the victim's job
  std::string queue;
  std::string node;
  JobId for_job;         // the starving job it makes room for
  bool preempt = false;  // false: reclaim
  std::string reason;    // written on the pod and in the Evict event
};

struct StarvingOutcome {
  JobId job;
  std::string queue;
  bool served = false;  // victims chosen (or room found) for every needed task
  int32_t evictions = 0;
  std::string reason;  // why not served ("" when served)
};

struct EvictionPlan {
  std::vector<Eviction> evictions;    // in choice order
  std::vector<StarvingOutcome> jobs;  // starving jobs considered, in visit order
  int64_t reclaimed = 0, preempted = 0;
};

struct EvictOptions {
  bool reclaim = true;
  bool preempt = true;
};

// The invariants any eviction plan must keep, checked independently of how it was made: no
// task evicted twice; every victim Running/Bound; each victim job left with ready tasks >=
// minAvailable or none; a reclaim victim from another, reclaimable queue whose share stays
// >= 1 after all of the plan's reclaim victims; a preempt victim of the same queue and lower
// priority; every eviction for a job the plan serves. OK, or Internal listing violations.
Status CheckEvictionPlan(const ClusterInfo& snapshot, const AllocationPlan& plan,
                         const EvictionPlan& evictions, const SessionOptions& options = {});

EvictionPlan PlanEvictions(const ClusterInfo& snapshot, const AllocationPlan& plan,
                           const SessionOptions& options, EvictOptions evict = {});

}  // namespace volcache
