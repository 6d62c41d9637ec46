#pragma once
// SchedulerCache: volcache's mirror of the cluster — Jobs, Tasks, Nodes, Queues,
// PriorityClasses, ResourceQuotas, the node list and the assumed set — with exact resource
// accounting, the assume/bind state machine and snapshots (SPEC §3).
//
// Writer discipline (the one rule for all state below): every field is guarded by `mu_`.
// Every public method takes it for its whole duration and never calls out (no I/O, no
// plugin, no binder/evictor) while holding it; work that must reach the cluster is handed
// to the pipelines (queues and the outbox) and performed by workers without the lock.
//
// All-or-nothing: every entry point either completes or returns an error leaving jobs,
// tasks, nodes, queues and the assumed set exactly as they were (tests compare Dump()
// before and after).
//
// Snapshots: objects are held as shared versions; a version handed to a snapshot is never
// mutated again (the cache clones it first: copy-on-write). Snapshot() copies pointers under
// the lock; UpdateSnapshot() refreshes a previous snapshot in time proportional to what
// changed (per-object generations, most-recently-changed order, a bounded removal log).
//
// Thread-safety: safe for concurrent use.

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/cluster_info.h"
#include "api/job_info.h"
#include "api/k8s/objects.h"
#include "api/node_info.h"
#include "api/queue_info.h"
#include "api/status.h"
#include "api/task_info.h"
#include "cache/cluster_source.h"
#include "cache/event_sink.h"
#include "cache/node_tree.h"
#include "workers/clock.h"

namespace volcache {

class Reclaimer;
class WorkQueue;

struct SchedulerCacheOptions {
  std::string scheduler_name = "volcano";
  std::string default_queue = "default";
  // How long an assumed task whose bind finished may wait for the watch to confirm it
  // before it expires. Zero means never (the default, as in Volcano).
  Duration assumed_ttl = Duration::zero();
  // Removals remembered for incremental snapshots; older snapshots are rebuilt in full.
  size_t removal_log_capacity = 1 << 16;
  // UpdateSnapshot hands the versions it replaced to a background thread to free
  // (cache/reclaimer.h); false frees them on the caller, after the cache lock is released.
  bool background_reclaim = true;
  // The background reclaimer to use (must outlive the cache); nullptr: with
  // background_reclaim the cache creates and owns one.
  Reclaimer* reclaimer = nullptr;
};

// A decision that must reach the cluster, produced under the lock and executed by a worker
// without it (issue: decision pipelines). The cache appends; workers drain.
struct EvictionRequest {
  TaskInfo task;
  std::string reason;
};

// Counters for metrics and tests.
struct CacheCounters {
  uint64_t events_applied = 0;
  uint64_t events_refused = 0;
  uint64_t negative_idle = 0;
  uint64_t full_snapshots = 0;
  uint64_t incremental_snapshots = 0;
};

class SchedulerCache : public EventSink {
 public:
  // `source` is the lister used by SyncNode, resync and the comparer; it must outlive the
  // cache. `clock` drives TTLs and the retry queues.
  SchedulerCache(SchedulerCacheOptions options, std::shared_ptr<Clock> clock, const ClusterSource* source);
  ~SchedulerCache() override;
  SchedulerCache(const SchedulerCache&) = delete;
  SchedulerCache& operator=(const SchedulerCache&) = delete;

  const SchedulerCacheOptions& options() const { return options_; }

  // ---------------------------------------------------------------- events
  // Pods: only pods whose schedulerName is ours, plus foreign pods bound to a node. A pod
  // that is filtered out returns OK and changes nothing.
  Status AddPod(k8s::PodPtr pod);
  Status UpdatePod(k8s::PodPtr old_pod, k8s::PodPtr new_pod);
  // Removes using the cached task (tombstones with a stale final state are fine).
  Status DeletePod(const k8s::Pod& pod);

  // Nodes: the callbacks only enqueue the name on the node queue; SyncNode applies it.
  void AddNode(const k8s::Node& node);
  void UpdateNode(const k8s::Node& old_node, const k8s::Node& new_node);
  void DeleteNode(const k8s::Node& node);
  // Reads the node from the source: gone → RemoveNode; present → add or SetNode.
  Status SyncNode(const std::string& name);

  // HyperNodes (SPEC §12): the callbacks record the latest version and only enqueue the
  // name on the HyperNode queue; SyncHyperNode applies it to the forest. A refused update (a
  // cycle, a second parent, a bad regex) leaves the forest as it was and marks it not ready;
  // the name is retried rate-limited, and again whenever another HyperNode is applied.
  void AddHyperNode(k8s::HyperNodePtr hn);
  void UpdateHyperNode(k8s::HyperNodePtr old_hn, k8s::HyperNodePtr new_hn);
  void DeleteHyperNode(const k8s::HyperNode& hn);
  Status SyncHyperNode(const std::string& name);
  // False while some HyperNode update is refused.
  bool HyperNodesReady() const;

  Status AddPodGroup(std::shared_ptr<const k8s::PodGroup> pg);
  // No-op when the resourceVersion is unchanged.
  Status UpdatePodGroup(std::shared_ptr<const k8s::PodGroup> old_pg,
                        std::shared_ptr<const k8s::PodGroup> new_pg);
  Status DeletePodGroup(const k8s::PodGroup& pg);

  Status AddQueue(std::shared_ptr<const k8s::Queue> queue);
  Status UpdateQueue(std::shared_ptr<const k8s::Queue> old_queue,
                     std::shared_ptr<const k8s::Queue> new_queue);
  Status DeleteQueue(const k8s::Queue& queue);
  // Inserts volcache's own `root` and default queues when the cluster has not (yet)
  // delivered them; a later Queue event replaces them.
  void EnsureDefaultQueues();

  Status AddPriorityClass(const k8s::PriorityClass& pc);
  Status UpdatePriorityClass(const k8s::PriorityClass& old_pc, const k8s::PriorityClass& new_pc);
  Status DeletePriorityClass(const k8s::PriorityClass& pc);
  // PersistentVolumeClaims, PersistentVolumes and StorageClasses, kept for the snapshot's
  // volume predicates (api/volume_info.h). Add also updates; a delete of an object the cache
  // does not hold is NotFound.
  template <class T>
  Status AddVolumeObject(const T& obj);
  template <class T>
  Status DeleteVolumeObject(const T& obj);

  Status AddResourceQuota(const k8s::ResourceQuota& quota);
  Status UpdateResourceQuota(const k8s::ResourceQuota& old_quota, const k8s::ResourceQuota& new_quota);
  Status DeleteResourceQuota(const k8s::ResourceQuota& quota);

  // EventSink (cache/event_sink.h), what the feeders use. Apply dispatches a decoded object
  // by kind (add/update are the same for the cache: update is resolved against the cached
  // object). Add keeps a shared Pod as it is (no copy), and Update passes both versions to
  // the typed update above. Unstructured kinds are refused.
  using EventType = volcache::EventType;
  Status Apply(EventType type, const k8s::Object& obj) override;
  Status Add(std::shared_ptr<const k8s::Object> obj) override;
  Status Update(std::shared_ptr<const k8s::Object> old_obj,
                std::shared_ptr<const k8s::Object> new_obj) override;

  // -------------------------------------------------- assume / bind state machine
  // The assume step: the task (by "namespace/name") goes Pending → Binding on `node`, the
  // node accounts it with the fit check, and it enters the assumed set.
  Status AddBindTask(const std::string& task_key, const std::string& node);
  // Bind succeeded: the assumed entry may now expire after the TTL.
  Status FinishBinding(const std::string& task_key);
  // Bind failed: back to Pending, the node releases it, leaves the assumed set, and the
  // task is queued for a resync from the cluster. `node` must be the assumed node.
  Status ForgetTask(const std::string& task_key, const std::string& node);
  bool IsAssumed(const std::string& task_key) const;
  // The cache's copy of a task ("namespace/name"); NotFound when absent.
  Result<TaskInfo> GetTask(const std::string& task_key) const;
  bool HasTask(const std::string& task_key) const;
  // Expires assumed tasks whose binding finished and whose TTL has passed. Returns how
  // many expired.
  size_t CleanupExpiredAssumed();

  // Evict: requires the job's PodGroup; the task goes Releasing and the node accounts it
  // as releasing; an EvictionRequest is queued for the evictor.
  Status Evict(const std::string& task_key, const std::string& reason);
  // Takes the queued eviction requests (for the evictor worker).
  std::vector<EvictionRequest> TakeEvictionRequests();

  // ------------------------------------------------------------ retry workers
  // errTasks: resync a task from the cluster source (gone → delete; present → rebuild).
  Status ResyncTask(const std::string& task_key);
  // DeletedJobs: "<jobUID>/<podGroupUID>" — delete the job once it has no PodGroup and no
  // tasks and its PodGroup UID matches; returns Unavailable to ask for a rate-limited retry.
  Status CleanupJob(const std::string& key);

  WorkQueue& node_queue() { return *node_queue_; }
  WorkQueue& err_tasks() { return *err_tasks_; }
  WorkQueue& deleted_jobs() { return *deleted_jobs_; }
  WorkQueue& hypernode_queue() { return *hypernode_queue_; }
  // Runs every item that is ready now on the four queues, synchronously, until none is
  // left (replay and tests; the daemon uses the workers). Failed items are re-queued
  // rate-limited. Returns the number of items processed.
  size_t DrainQueuesOnce();

  // ----------------------------------------------------------------- snapshots
  // A fresh snapshot (Ready nodes, jobs with a PodGroup and a known queue, ...).
  std::unique_ptr<ClusterInfo> Snapshot() const;
  // Refreshes a snapshot previously returned by this cache: discards the session's own
  // changes and applies what changed in the cache since; cost grows with the change.
  void UpdateSnapshot(ClusterInfo* snapshot) const;
  // Forces a private deep copy of every node and job in `snapshot` (parallel on up to
  // `threads` threads) — for sessions that will rewrite most objects, and for benchmarks.
  static void MaterializeSnapshot(ClusterInfo* snapshot, int threads);

  // Jobs that snapshots leave out because their PodGroup does not exist (`has_pod_group`
  // false) or names a queue the cache does not hold, with their Pending tasks (jobs without
  // one are not listed). One scan of the jobs under the lock; for the session's events.
  struct LeftOutJob {
    JobId job;  // "namespace/podgroup"
    bool has_pod_group = false;
    std::string queue;  // the PodGroup's queue ("" without a PodGroup)
    std::vector<TaskMetaPtr> pending;
  };
  std::vector<LeftOutJob> JobsLeftOutOfSnapshots() const;

  // ------------------------------------------------------------------ debugging
  // The whole cache as JSON (SPEC §8 schema).
  std::string Dump() const;
  // Checks the accounting invariants; OK or Internal listing every violation.
  Status CheckInvariants() const;
  // Compares the cache against the source's current nodes and pods; the report lists
  // missing/extra/mismatched objects ("" when consistent).
  std::string Compare() const;

  CacheCounters counters() const;
  size_t num_jobs() const;
  size_t num_nodes() const;
  size_t num_tasks() const;

 private:
  struct NodeSlot;
  struct JobSlot;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  SchedulerCacheOptions options_;
  std::unique_ptr<WorkQueue> node_queue_;
  std::unique_ptr<WorkQueue> err_tasks_;
  std::unique_ptr<WorkQueue> deleted_jobs_;
  std::unique_ptr<WorkQueue> hypernode_queue_;
};

// Serializes a snapshot with the §8 schema (nodes, jobs, queues, nodeList; no assumed).
std::string DumpClusterInfo(const ClusterInfo& snapshot);

}  // namespace volcache
