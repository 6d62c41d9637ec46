#pragma once
// Allocate: the reference session's allocation step (SPEC §9), a pure function of a
// snapshot. It reads the ClusterInfo and never changes it; every tentative decision lives in
// the function's own overlay (per-node available resources, per-queue allocated), so the
// same snapshot always gives the same plan and nothing needs undoing on the snapshot.
//
// What it does, in Volcano's terms (see docs/SESSION.md for the full rules):
//   * queues: only queues holding a job take part; deserved = weight-proportional
//     water-filling of the Ready nodes' total allocatable, each queue capped per dimension
//     by min(capability, its request = allocated + pending); share = max over dimensions of
//     allocated / deserved (DRF-style). The queue with the lowest share goes first (ties by
//     name). Closed/Closing queues get nothing; a queue whose allocated has reached its
//     deserved in every dimension (overused) gets nothing more; a task that would take a
//     queue past its capability is not placed. Jobs whose queue is not in the snapshot fall
//     into `default_queue`.
//   * jobs inside a queue: priority (higher first), then jobs not yet ready before ready
//     ones, then creation time, then uid. One job is visited per queue turn (the queue goes
//     back into the queue order after each visit, so queues interleave).
//   * gang: during a visit tasks are placed until the job is ready (tasks already
//     Allocated/Binding/Bound/Running/Succeeded + placed >= minAvailable); then the visit's
//     placements are committed and, if pending tasks remain, the job goes back into its queue
//     for a later turn (one more task per turn). A visit that ends with the job not ready
//     discards every tentative placement of that visit (their resources are free again for
//     the next job). A job with fewer valid tasks than minAvailable is not tried.
//   * tasks: Pending and not scheduling-gated, by priority, creation time, then uid. A task
//     that fits no node ends the job's visit.
//   * predicates per task and node, kube-scheduler v1.24's filters in its order:
//     unschedulable (unless the node.kubernetes.io/unschedulable:NoSchedule taint is
//     tolerated), NoSchedule/NoExecute taints, nodeSelector and required node affinity, host
//     ports, max pods, resources (request <= idle minus this session's placements, Volcano
//     LessEqual with missing dimensions as zero), topology spread, inter-pod affinity and
//     anti-affinity (session/constraints.h); this session's placements count for all of them.
//   * score: binpack (most allocated after placement) or least-allocated, weighted over cpu,
//     memory and the configured scalars, plus Volcano's nodeorder scores (NodeOrderWeights);
//     ties go to the smaller node name. On clusters larger
//     than `min_feasible_nodes` only a round-robin sample of feasible nodes is scored (see
//     SessionOptions::percentage_of_nodes_to_find), as kube-scheduler and Volcano do.
//
// Thread-safety: a pure function; the snapshot must not be mutated while it runs.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "api/cluster_info.h"
#include "api/job_info.h"
#include "api/node_info.h"
#include "api/resource.h"
#include "api/task_info.h"

namespace volcache {

enum class ScoreStrategy : uint8_t { kBinpack, kLeastAllocated };
std::string_view ScoreStrategyName(ScoreStrategy s);

// Volcano's nodeorder plugin weights (its argument names in comments) and the binpack
// plugin's, combined as Volcano sums plugin scores: every score is 0..100 per node (the
// score strategy's too) times its weight. kube-scheduler's normalized scores (preferred node
// affinity, taint toleration, preferred inter-pod affinity, ScheduleAnyway spread) are
// normalized over the feasible nodes a search found; they are constant, and skipped, for a
// task that has none of them. The defaults keep the score strategy in charge of resources
// (leastrequested, mostrequested and balancedresource off) and weigh the constraints 1.
struct NodeOrderWeights {
  int64_t strategy = 1;             // binpack.weight (or least-allocated's, SessionOptions::score)
  int64_t node_affinity = 1;        // nodeaffinity.weight
  int64_t pod_affinity = 1;         // podaffinity.weight
  int64_t taint_toleration = 1;     // tainttoleration.weight
  int64_t pod_topology_spread = 1;  // podtopologyspread.weight
  int64_t image_locality = 1;       // imagelocality.weight
  int64_t balanced_resource = 0;    // balancedresource.weight
  int64_t least_requested = 0;      // leastrequested.weight
  int64_t most_requested = 0;       // mostrequested.weight
};

struct SessionOptions {
  ScoreStrategy score = ScoreStrategy::kBinpack;
  NodeOrderWeights node_order;
  int64_t cpu_weight = 1;
  int64_t memory_weight = 1;
  // Scalar resources the score counts, with their weights (others are only checked for fit).
  std::map<std::string, int64_t, std::less<>> scalar_weights = {{"nvidia.com/gpu", 1}};
  // Queue for jobs whose queue is not in the snapshot.
  std::string default_queue = "default";
  // Large clusters (kube-scheduler's percentageOfNodesToScore, Volcano's
  // minPercentageOfNodesToFind): a task's node search stops once this many feasible nodes
  // were found — max(min_feasible_nodes, nodes × percent / 100), percent 0 meaning adaptive
  // (50 − nodes/125, at least 5) — scanning round robin from where the previous search
  // stopped. With at most min_feasible_nodes nodes every node is scored, in name order.
  int percentage_of_nodes_to_find = 0;
  size_t min_feasible_nodes = 100;
  // Pipelining (Volcano's Pipeline): a task that fits no node's idle but fits a node's
  // future idle (idle + releasing − pipelined, minus this session's placements) is placed
  // there as *pipelined*: reserved for this session, not bound. A job whose gang is complete
  // only with pipelined tasks binds nothing; a job ready without them binds the others.
  bool pipeline = false;
  // Enqueue gating: only jobs whose PodGroup is past Pending (Inqueue, Running, ...) are
  // tried; Pending ones still count in their queue's request (session/enqueue.h).
  bool require_inqueue = false;
  // Queue share limit (Volcano proportion's allocatable): a queue whose share reached 1
  // (allocated >= deserved in some dimension) starts no job visit, so what other queues
  // free stays for the queues below their share: a starving gang is not overtaken by small
  // jobs of queues already at their share. A queue below its share may start a job that
  // takes it past (gangs are indivisible), by at most half of the job's next gang in every
  // dimension that the queue already holds some of — its share rounds to the nearest job
  // (a queue holding none of a dimension may always start one: no starvation). Such a job
  // is not tried this session. The Scheduler sets it with enqueue.
  bool share_limit = false;
  // Volcano's overcommit plugin factor for Enqueue (session/enqueue.h).
  double overcommit_factor = 1.2;
};

// One task placed on one node (committed: its job's gang is satisfied).
struct Placement {
  JobId job;
  std::string task_uid;
  std::string task_key;  // "namespace/name", what CacheRuntime::Bind takes
  std::string node;
  bool pipelined = false;  // reserved on releasing resources (or gang completed by such): not bound
};

// Every job with at least one schedulable pending task gets one.
struct JobOutcome {
  JobId job;
  std::string queue;
  int32_t pending = 0;    // schedulable pending tasks at session open
  int32_t placed = 0;     // committed placements
  int32_t pipelined = 0;  // placements reserved, not bound (SessionOptions::pipeline)
  bool ready = false;     // gang satisfied at the end of the session
  // Why tasks stayed pending ("" when all were placed), e.g.
  // "3/3 tasks in gang unschedulable: 0/2 nodes are available: 2 Insufficient cpu."
  std::string reason;
  // Task uid → why it fits no node (kube-scheduler style "0/N nodes are available: ...").
  std::vector<std::pair<std::string, std::string>> task_fit_errors;
};

struct QueueOutcome {
  std::string name;
  int32_t weight = 1;
  Resource request;       // allocated + schedulable pending, at session open
  Resource deserved;      // water-filled share, capped by capability and request
  Resource allocated;     // at session close, including this session's placements
  double share = 0;       // max over dimensions of allocated / deserved
  bool overused = false;  // allocated >= deserved in every dimension at close
  bool closed = false;
};

struct AllocationPlan {
  std::vector<Placement> placements;  // commit order
  std::vector<JobOutcome> jobs;       // sorted by job uid
  std::vector<QueueOutcome> queues;   // sorted by name; queues holding jobs only
  int64_t discarded = 0;              // tentative placements thrown away (gangs that failed)
  int64_t pipelined = 0;              // placements reserved on releasing resources, not bound
};

AllocationPlan Allocate(const ClusterInfo& snapshot, const SessionOptions& options = {});
// The same plan, for a caller that runs one session after another (the Scheduler):
// `jobs_by_uid` is exactly the snapshot's jobs sorted by uid (the caller sorts them once for
// its own close too), and the plan is built in `reuse`'s storage — a plan the caller is done
// with, whose contents do not matter — so the outcomes of a deep backlog that repeat the
// last session's cost no allocation. `positions`, when given, receives for each outcome
// (plan.jobs[i]) its job's index in `jobs_by_uid`.
AllocationPlan Allocate(const ClusterInfo& snapshot, const SessionOptions& options,
                        std::span<const JobInfo* const> jobs_by_uid, AllocationPlan reuse,
                        std::vector<uint32_t>* positions = nullptr);

// The first static node predicate (unschedulable, taints, node selector and required node
// affinity, and with `volumes` the task's volume claims) that keeps `task` off `node`, in the
// fit-error wording; "" when none does. Reclaim and preempt use it.
std::string NodePredicateFailure(const TaskInfo& task, const NodeInfo& node,
                                 const VolumeInfo* volumes = nullptr);

// The deserved water-filling on its own (exposed for tests and reports): per dimension,
// `total` is shared in proportion to `weights`, no queue getting more than its `caps` entry
// in that dimension (absent scalar in a cap = 0), and what a capped queue cannot use goes
// to the others. Dimensions are cpu, memory and the scalars of `total` except `pods`.
std::vector<Resource> WaterFill(const Resource& total, const std::vector<int32_t>& weights,
                                const std::vector<Resource>& caps);

}  // namespace volcache
