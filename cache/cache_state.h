#pragma once
// Internal to cache/: the state behind SchedulerCache (its pimpl), shared by the .cc files
// of the cache. Not installed for users; everything here is guarded by Impl::mu.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/check.h"
#include "api/resource_list.h"
#include "api/string_map.h"
#include "cache/scheduler_cache.h"
#include "workers/work_queue.h"

namespace volcache {

namespace cache_internal {

inline bool IsOurs(const k8s::Pod& pod, const std::string& scheduler_name) {
  return pod.spec.scheduler_name == scheduler_name || !pod.spec.node_name.empty();
}

inline std::string KeyOf(const k8s::ObjectMeta& m) { return PodKey(m.namespace_, m.name); }

// Splits "namespace/name".
inline std::pair<std::string, std::string> SplitKey(const std::string& key) {
  auto pos = key.find('/');
  if (pos == std::string::npos) return {"", key};
  return {key.substr(0, pos), key.substr(pos + 1)};
}

}  // namespace cache_internal

using cache_internal::IsOurs;
using cache_internal::KeyOf;
using cache_internal::SplitKey;

// A node or job held by the cache. `info` is shared with snapshots once `published`; it is
// then never mutated again: the cache writes to a fresh copy (copy-on-write).
template <typename T>
struct Slot {
  // An entry of the most-recently-changed list: the slot and its key in the cache's map
  // (unordered_map elements never move), so an incremental snapshot walks the list without
  // hashing names.
  struct MruRef {
    const std::string* key;
    Slot* slot;
  };
  std::shared_ptr<T> info;
  bool published = false;
  uint64_t gen = 0;
  typename std::list<MruRef>::iterator mru;
};

struct SchedulerCache::NodeSlot : Slot<NodeInfo> {};
struct SchedulerCache::JobSlot : Slot<JobInfo> {
  std::string pg_uid;  // UID of the current or last PodGroup ("" if never had one)
};

// Where a task lives: its job ("" → `jobless`) and uid, read from the task's own shared
// TaskMeta rather than copied (two strings per task less).
struct TaskLoc {
  std::shared_ptr<const TaskMeta> meta;
  const std::string& uid() const { return meta->uid(); }
  const JobId& job() const { return meta->job; }
};

struct AssumedEntry {
  std::string node;
  bool binding_finished = false;
  TimePoint deadline{};
};

struct QuotaEntry {
  Resource hard;
  Resource used;
};

struct SchedulerCache::Impl {
  SchedulerCache* self;
  std::shared_ptr<Clock> clock;
  const ClusterSource* source;
  SchedulerCacheOptions options;

  mutable std::mutex mu;
  // ---- everything below is guarded by mu ----
  std::unordered_map<std::string, NodeSlot> nodes;
  std::unordered_map<JobId, JobSlot> jobs;
  std::list<Slot<NodeInfo>::MruRef> node_mru;  // front = most recently changed
  std::list<Slot<JobInfo>::MruRef> job_mru;
  struct Removal {
    bool is_node;
    std::string key;
    uint64_t gen;
  };
  std::deque<Removal> removals;  // ascending gen
  uint64_t removals_floor = 0;   // snapshots older than this cannot be refreshed in place
  uint64_t gen = 0;
  uint64_t queue_version = 1;
  NodeTree tree;
  std::unordered_map<std::string, QueueInfo> queues;
  std::map<std::string, int32_t, std::less<>> priority_classes;
  std::string global_default_class;
  int32_t default_priority = 0;
  std::map<std::string, std::map<std::string, QuotaEntry>, std::less<>> quotas;  // ns → name → entry
  ViewKeyMap<TaskLoc> task_index;  // "ns/name" (a view of TaskLoc::meta->key) → location
  std::unordered_map<std::string, TaskInfo> jobless;    // "ns/name" → task of no job
  std::unordered_map<std::string, AssumedEntry> assumed;
  std::vector<EvictionRequest> evictions;
  CacheCounters counters;

  // ---------------------------------------------------------------- helpers
  uint64_t NextGen() { return ++gen; }

  NodeInfo& WritableNode(const std::string& name, NodeSlot& s) {
    if (s.published) {
      s.info = std::make_shared<NodeInfo>(*s.info);
      s.published = false;
    }
    s.gen = NextGen();
    node_mru.splice(node_mru.begin(), node_mru, s.mru);
    s.info->set_generation(s.gen);
    (void)name;
    return *s.info;
  }

  JobInfo& WritableJob(JobSlot& s) {
    if (s.published) {
      s.info = std::make_shared<JobInfo>(*s.info);
      s.published = false;
    }
    s.gen = NextGen();
    job_mru.splice(job_mru.begin(), job_mru, s.mru);
    s.info->set_generation(s.gen);
    return *s.info;
  }

  NodeSlot& CreateNodeSlot(const std::string& name, std::shared_ptr<NodeInfo> info) {
    auto entry = nodes.try_emplace(name).first;
    NodeSlot& s = entry->second;
    s.info = std::move(info);
    s.gen = NextGen();
    s.info->set_generation(s.gen);
    node_mru.push_front({&entry->first, &s});
    s.mru = node_mru.begin();
    return s;
  }

  JobSlot& CreateJobSlot(const JobId& id) {
    auto entry = jobs.try_emplace(id).first;
    JobSlot& s = entry->second;
    s.info = std::make_shared<JobInfo>(id);
    s.gen = NextGen();
    s.info->set_generation(s.gen);
    job_mru.push_front({&entry->first, &s});
    s.mru = job_mru.begin();
    return s;
  }

  void LogRemoval(bool is_node, const std::string& key) {
    removals.push_back({is_node, key, NextGen()});
    while (removals.size() > options.removal_log_capacity) {
      removals_floor = removals.front().gen;
      removals.pop_front();
    }
  }

  void EraseNodeSlot(const std::string& name) {
    auto it = nodes.find(name);
    if (it == nodes.end()) return;
    node_mru.erase(it->second.mru);
    nodes.erase(it);
    tree.Remove(name);
    LogRemoval(true, name);
  }

  void EraseJobSlot(const JobId& id) {
    auto it = jobs.find(id);
    if (it == jobs.end()) return;
    job_mru.erase(it->second.mru);
    jobs.erase(it);
    LogRemoval(false, id);
  }

  int32_t PriorityFor(const JobInfo& job) const {
    if (!job.pod_group()) return 0;
    const std::string& pc = job.pod_group()->spec.priority_class_name;
    if (!pc.empty()) {
      if (auto it = priority_classes.find(pc); it != priority_classes.end()) return it->second;
    }
    return default_priority;
  }

  // The authoritative copy of a cached task.
  const TaskInfo* FindTask(const std::string& key) const {
    auto it = task_index.find(key);
    if (it == task_index.end()) return nullptr;
    if (it->second.job().empty()) {
      auto j = jobless.find(key);
      return j == jobless.end() ? nullptr : &j->second;
    }
    auto j = jobs.find(it->second.job());
    if (j == jobs.end()) return nullptr;
    return j->second.info->FindTask(it->second.uid());
  }

  // Checks that AddTaskLocked(task) cannot fail. `replacing_key` names a task that will be
  // removed first (so its own entries do not count as conflicts).
  Status CheckCanAdd(const TaskInfo& task, bool replacing) const {
    if (!replacing && task_index.count(task.key())) {
      return Status::AlreadyExists("task " + task.key() + " is already in the cache");
    }
    if (!task.job().empty()) {
      if (auto j = jobs.find(task.job()); j != jobs.end()) {
        const TaskInfo* other = j->second.info->FindTask(task.uid());
        if (other && other->key() != task.key()) {
          return Status::AlreadyExists("task uid " + task.uid() + " of " + task.key() + " is already held by " +
                                       other->key() + " in job " + task.job());
        }
      }
    }
    return Status::Ok();
  }

  // Adds a task whose addition was checked with CheckCanAdd. Never fails.
  void AddTaskLocked(const TaskInfo& task) {
    if (!task.node_name.empty() && !IsTerminatedStatus(task.status)) {
      auto it = nodes.find(task.node_name);
      if (it == nodes.end()) {
        CreateNodeSlot(task.node_name, std::make_shared<NodeInfo>(task.node_name));
        it = nodes.find(task.node_name);
      }
      NodeInfo& node = WritableNode(task.node_name, it->second);
      int64_t before = node.negative_idle_events();
      Status s = node.AddTask(task);
      VC_CHECK(s.ok(), "adding a checked task to node " + task.node_name + ": " + s.ToString());
      counters.negative_idle += static_cast<uint64_t>(node.negative_idle_events() - before);
    }
    if (task.job().empty()) {
      jobless[task.key()] = task;
    } else {
      auto it = jobs.find(task.job());
      JobSlot& js = it == jobs.end() ? CreateJobSlot(task.job()) : it->second;
      Status s = WritableJob(js).AddTask(task);
      VC_CHECK(s.ok(), "adding a checked task to job " + task.job() + ": " + s.ToString());
    }
    auto [loc, inserted] = task_index.try_emplace(task.meta->key, TaskLoc{task.meta});
    if (!inserted) {  // re-keyed: the key views the old TaskMeta, which the new location replaces
      ReplaceAndRekey(task_index, loc, TaskLoc{task.meta},
                      [](const TaskLoc& l) -> std::string_view { return l.meta->key; });
    }
  }

  // Removes a cached task (by key) from its node, its job and the assumed set. Never fails
  // for a key in task_index.
  void RemoveTaskLocked(const std::string& key, bool queue_empty_job) {
    auto it = task_index.find(key);
    VC_CHECK(it != task_index.end(), "removing unknown task " + key);
    const TaskInfo* cached = FindTask(key);
    VC_CHECK(cached != nullptr, "task index points nowhere for " + key);
    TaskInfo task = *cached;  // copy: the job's storage is about to change
    if (!task.node_name.empty()) {
      auto n = nodes.find(task.node_name);
      if (n != nodes.end() && n->second.info->FindTask(key) != nullptr) {
        NodeInfo& node = WritableNode(task.node_name, n->second);
        Status s = node.RemoveTask(task);
        VC_CHECK(s.ok(), "removing task " + key + " from node: " + s.ToString());
        if (node.is_placeholder() && node.tasks().empty()) EraseNodeSlot(task.node_name);
      }
    }
    if (it->second.job().empty()) {
      jobless.erase(key);
    } else {
      auto j = jobs.find(it->second.job());
      VC_CHECK(j != jobs.end(), "job of task " + key + " missing");
      JobInfo& job = WritableJob(j->second);
      Status s = job.DeleteTask(task.uid());
      VC_CHECK(s.ok(), "removing task " + key + " from job: " + s.ToString());
      if (queue_empty_job && job.tasks().empty() && !job.pod_group()) {
        self->deleted_jobs_->Add(job.uid() + "/" + j->second.pg_uid);
      }
    }
    task_index.erase(it);
    assumed.erase(key);
  }

  // Replaces the cached task `key` by `task` (remove + add, all-or-nothing).
  Status ReplaceTaskLocked(const std::string& key, const TaskInfo& task) {
    VC_RETURN_IF_ERROR(CheckCanAdd(task, task.key() == key));
    const JobId old_job = task_index.at(key).job();
    // Not queued on removal: within the same job the task comes straight back.
    RemoveTaskLocked(key, /*queue_empty_job=*/false);
    AddTaskLocked(task);
    // A job emptied by a move to another job is cleaned up like any other.
    if (!old_job.empty() && old_job != task.job()) {
      if (auto j = jobs.find(old_job);
          j != jobs.end() && j->second.info->tasks().empty() && !j->second.info->pod_group()) {
        self->deleted_jobs_->Add(old_job + "/" + j->second.pg_uid);
      }
    }
    return Status::Ok();
  }

  Status AddPodLocked(const k8s::PodPtr& pod) {
    const std::string key = KeyOf(pod->metadata);
    if (const TaskInfo* cached = FindTask(key)) return UpdatePodLocked(*cached, pod);
    if (!IsOurs(*pod, options.scheduler_name)) return Status::Ok();
    auto task = TaskInfo::FromPod(pod);
    if (!task.ok()) return task.status();
    VC_RETURN_IF_ERROR(CheckCanAdd(*task, false));
    AddTaskLocked(*task);
    return Status::Ok();
  }

  Status UpdatePodLocked(const TaskInfo& cached, const k8s::PodPtr& pod) {
    // A bind is in flight: the cache already placed the task; a pod update without a
    // nodeName predates the binding and must not undo it.
    if (IsAllocatedStatus(cached.status) && pod->spec.node_name.empty()) return Status::Ok();
    const std::string key = cached.key();
    if (!IsOurs(*pod, options.scheduler_name)) {
      RemoveTaskLocked(key, true);
      return Status::Ok();
    }
    auto task = TaskInfo::FromPod(pod);
    if (!task.ok()) return task.status();
    VC_RETURN_IF_ERROR(ReplaceTaskLocked(key, *task));
    return Status::Ok();
  }

  Status AddOrUpdateNodeLocked(const k8s::NodePtr& node) {
    const std::string& name = node->metadata.name;
    auto it = nodes.find(name);
    if (it == nodes.end()) {
      auto info = NodeInfo::FromNode(node);
      if (!info.ok()) return info.status();
      CreateNodeSlot(name, std::make_shared<NodeInfo>(std::move(*info)));
    } else {
      // Validate on a scratch copy so that a refused update leaves the slot untouched.
      NodeInfo trial = *it->second.info;
      VC_RETURN_IF_ERROR(trial.SetNode(node));
      NodeInfo& w = WritableNode(name, it->second);
      int64_t before = w.negative_idle_events();
      w = std::move(trial);
      w.set_generation(it->second.gen);
      counters.negative_idle += static_cast<uint64_t>(std::max<int64_t>(0, w.negative_idle_events() - before));
    }
    tree.Add(name, ZoneKey(node->metadata.labels));
    return Status::Ok();
  }

  void RemoveNodeLocked(const std::string& name) {
    auto it = nodes.find(name);
    if (it == nodes.end()) return;
    if (it->second.info->tasks().empty()) {
      EraseNodeSlot(name);
      return;
    }
    // Tasks still reference the node: keep a placeholder until they leave; it is not Ready,
    // so it drops out of snapshots at once.
    WritableNode(name, it->second).UnsetNode();
    tree.Remove(name);
  }

  Status SetPodGroupLocked(const std::shared_ptr<const k8s::PodGroup>& pg) {
    const JobId id = PodKey(pg->metadata.namespace_, pg->metadata.name);
    auto it = jobs.find(id);
    if (it != jobs.end()) {
      JobInfo trial = *it->second.info;
      VC_RETURN_IF_ERROR(trial.SetPodGroup(pg, options.default_queue));
      trial.set_priority(PriorityFor(trial));
      JobInfo& w = WritableJob(it->second);
      uint64_t g = w.generation();
      w = std::move(trial);
      w.set_generation(g);
      it->second.pg_uid = pg->metadata.uid;
      return Status::Ok();
    }
    JobInfo fresh(id);
    VC_RETURN_IF_ERROR(fresh.SetPodGroup(pg, options.default_queue));
    fresh.set_priority(PriorityFor(fresh));
    JobSlot& s = CreateJobSlot(id);
    uint64_t g = s.info->generation();
    *s.info = std::move(fresh);
    s.info->set_generation(g);
    s.pg_uid = pg->metadata.uid;
    return Status::Ok();
  }

  void RecomputePriorities() {
    for (auto& [id, slot] : jobs) {
      int32_t p = PriorityFor(*slot.info);
      if (p != slot.info->priority()) WritableJob(slot).set_priority(p);
    }
  }

  void RecomputeDefaultPriority() {
    default_priority = 0;
    if (!global_default_class.empty()) {
      if (auto it = priority_classes.find(global_default_class); it != priority_classes.end()) {
        default_priority = it->second;
      }
    }
  }

  // Back to Pending and off the node (forget and expiry).
  void UnassumeLocked(const std::string& key, const AssumedEntry& entry) {
    Impl& m = *this;
    const TaskInfo* cached = m.FindTask(key);
    VC_CHECK(cached != nullptr, "assumed task " + key + " not cached");
    TaskInfo pending = *cached;
    auto n = m.nodes.find(entry.node);
    if (n != m.nodes.end() && n->second.info->FindTask(key)) {
      NodeInfo& node = m.WritableNode(entry.node, n->second);
      VC_CHECK(node.RemoveTask(pending).ok(), "node lost assumed task " + key);
      if (node.is_placeholder() && node.tasks().empty()) m.EraseNodeSlot(entry.node);
    }
    pending.status = TaskStatus::kPending;
    pending.node_name.clear();
    JobInfo& job = m.WritableJob(m.jobs.at(pending.job()));
    VC_CHECK(job.DeleteTask(pending.uid()).ok(), "job lost assumed task " + key);
    VC_CHECK(job.AddTask(pending).ok(), "job refused task " + key);
    m.assumed.erase(key);
  }

  // Versions an incremental snapshot let go of, freed after the lock (cache/reclaimer.h).
  using Retired = std::vector<std::shared_ptr<const void>>;

  // ---- snapshots ----
  // Shares the slot's current version with a snapshot. A version not yet published is the
  // cache's alone, so this is the last moment its generation may be written: stamping it
  // with the slot's generation gives every published version a distinct, increasing value
  // (NodeInfo/JobInfo mutators also bump their own counter after WritableNode/WritableJob
  // set it, which let two different versions of a job carry the same generation).
  template <typename S>
  static void Publish(S& slot) {
    if (slot.published) return;
    slot.info->set_generation(slot.gen);
    slot.published = true;
  }

  bool IncludeJob(const JobInfo& job) const { return job.pod_group() && queues.count(job.queue()) > 0; }

  void FillStatic(ClusterInfo* snap) const {
    snap->queues = queues;
    snap->priority_classes = priority_classes;
    snap->default_priority = default_priority;
    snap->namespace_quotas.clear();
    for (const auto& [ns, entries] : quotas) {
      NamespaceQuota q;
      q.name = ns;
      bool first = true;
      for (const auto& [_, e] : entries) {
        if (first) {
          q.hard = e.hard;
          first = false;
        } else {
          q.hard.MinDimension(e.hard, DimensionDefault::kInfinity);
        }
        q.used.SetMax(e.used);
      }
      snap->namespace_quotas.emplace(ns, std::move(q));
    }
  }

  void RebuildNodeList(ClusterInfo* snap) const {
    auto& list = ClusterInfo::Builder::node_list(*snap);
    list.clear();
    const auto& nodes_map = ClusterInfo::Builder::nodes(*snap);
    for (const std::string& name : tree.List()) {
      if (nodes_map.count(name)) list.push_back(name);
    }
  }

  void FullSnapshot(ClusterInfo* snap) {
    using B = ClusterInfo::Builder;
    auto& nmap = B::nodes(*snap);
    auto& jmap = B::jobs(*snap);
    nmap.clear();
    jmap.clear();
    B::revocable_nodes(*snap).clear();
    B::dirty_nodes(*snap).clear();
    B::dirty_jobs(*snap).clear();
    Resource total;
    nmap.reserve(nodes.size());
    for (auto& [name, slot] : nodes) {
      if (!slot.info->Ready()) continue;
      Publish(slot);
      nmap.emplace(name, slot.info);
      total.Add(slot.info->allocatable());
      if (!slot.info->revocable_zone().empty()) B::revocable_nodes(*snap).insert(name);
    }
    jmap.reserve(jobs.size());
    for (auto& [id, slot] : jobs) {
      if (!IncludeJob(*slot.info)) continue;
      Publish(slot);
      jmap.emplace(id, slot.info);
    }
    B::total_allocatable(*snap) = std::move(total);
    RebuildNodeList(snap);
    FillStatic(snap);
    B::generation(*snap) = gen;
    B::structure_version(*snap) = queue_version;
    B::node_tree_version(*snap) = tree.version();
    B::owner(*snap) = self;
    ++counters.full_snapshots;
  }

  // Puts the cache's current version of node `name` into the snapshot (or removes it).
  // Returns true when the snapshot's node membership changed.
  // `*recount` is set when a node's allocatable leaves the total: subtracting it would leave
  // explicit zero scalars (e.g. "nvidia.com/gpu 0") that a fresh sum does not have, and
  // Resource equality and kInfinity comparisons tell the two apart, so the caller re-sums
  // the snapshot's nodes instead (rare: only on allocatable changes and node removals).
  bool RefreshNode(ClusterInfo* snap, const std::string& name, Resource* total, bool* recount, Retired* retired) {
    auto it = nodes.find(name);
    return RefreshNode(snap, name, it == nodes.end() ? nullptr : &it->second, total, recount, retired);
  }

  // `slot`: the cache's slot for `name`, null when the cache no longer has the node.
  bool RefreshNode(ClusterInfo* snap, const std::string& name, Slot<NodeInfo>* slot, Resource* total, bool* recount,
                   Retired* retired) {
    using B = ClusterInfo::Builder;
    auto& nmap = B::nodes(*snap);
    auto old = nmap.find(name);
    bool had = old != nmap.end();
    bool include = slot != nullptr && slot->info->Ready();
    if (had) {
      if (!include || (old->second != slot->info && !(old->second->allocatable() == slot->info->allocatable()))) {
        *recount = true;
      }
    } else if (include) {
      total->Add(slot->info->allocatable());
    }
    auto& revocable = B::revocable_nodes(*snap);
    if (include) {
      Publish(*slot);
      if (had) {
        if (old->second != slot->info) {
          retired->push_back(std::move(old->second));
          old->second = slot->info;
        }
      } else {
        nmap.emplace(name, slot->info);
      }
      if (!slot->info->revocable_zone().empty()) {
        revocable.insert(name);
      } else if (!revocable.empty()) {
        revocable.erase(name);
      }
    } else {
      if (had) {
        retired->push_back(std::move(old->second));
        nmap.erase(old);
      }
      if (!revocable.empty()) revocable.erase(name);
    }
    return had != include;
  }

  void RefreshJob(ClusterInfo* snap, const JobId& id, Retired* retired) {
    auto it = jobs.find(id);
    RefreshJob(snap, id, it == jobs.end() ? nullptr : &it->second, retired);
  }

  // `slot`: the cache's slot for `id`, null when the cache no longer has the job.
  void RefreshJob(ClusterInfo* snap, const JobId& id, Slot<JobInfo>* slot, Retired* retired) {
    auto& jmap = ClusterInfo::Builder::jobs(*snap);
    auto cur = jmap.find(id);
    if (slot != nullptr && IncludeJob(*slot->info)) {
      Publish(*slot);
      if (cur == jmap.end()) {
        jmap.emplace(id, slot->info);
      } else if (cur->second != slot->info) {
        retired->push_back(std::move(cur->second));
        cur->second = slot->info;
      }
    } else if (cur != jmap.end()) {
      retired->push_back(std::move(cur->second));
      jmap.erase(cur);
    }
  }

  // Replaced versions go to `retired` instead of being destroyed under the lock (the caller
  // frees them later, see cache/reclaimer.h).
  void IncrementalSnapshot(ClusterInfo* snap, Retired* retired) {
    using B = ClusterInfo::Builder;
    const uint64_t since = B::generation(*snap);
    Resource total = B::total_allocatable(*snap);
    bool membership_changed = false;
    bool recount_total = false;
    // 1. Undo the session's own changes.
    if (!B::dirty_nodes(*snap).empty()) {
      for (const std::string& name : B::dirty_nodes(*snap)) {
        auto& nmap = B::nodes(*snap);
        auto it = nodes.find(name);
        bool include = it != nodes.end() && it->second.info->Ready();
        bool had = nmap.count(name) > 0;
        auto cur = nmap.find(name);
        if (include) {
          Publish(it->second);
          if (cur == nmap.end()) {
            nmap.emplace(name, it->second.info);
          } else if (cur->second != it->second.info) {
            retired->push_back(std::move(cur->second));
            cur->second = it->second.info;
          }
        } else if (cur != nmap.end()) {
          retired->push_back(std::move(cur->second));
          nmap.erase(cur);
        }
        membership_changed |= had != include;
      }
      B::dirty_nodes(*snap).clear();
      // The session's copies may have changed allocatable; recount from cache versions.
      total = Resource();
      for (const auto& [_, n] : B::nodes(*snap)) total.Add(n->allocatable());
    }
    for (const JobId& id : B::dirty_jobs(*snap)) RefreshJob(snap, id, retired);
    B::dirty_jobs(*snap).clear();
    // 2. Removals since, in order (before updates: a re-created object is newer).
    auto r = std::upper_bound(removals.begin(), removals.end(), since,
                              [](uint64_t g, const Removal& x) { return g < x.gen; });
    for (; r != removals.end(); ++r) {
      if (r->is_node) {
        membership_changed |= RefreshNode(snap, r->key, &total, &recount_total, retired);
      } else {
        RefreshJob(snap, r->key, retired);
      }
    }
    // 3. Objects changed since, most recent first, stopping at the first unchanged one.
    for (const auto& ref : node_mru) {
      if (ref.slot->gen <= since) break;
      membership_changed |= RefreshNode(snap, *ref.key, ref.slot, &total, &recount_total, retired);
    }
    for (const auto& ref : job_mru) {
      if (ref.slot->gen <= since) break;
      RefreshJob(snap, *ref.key, ref.slot, retired);
    }
    if (recount_total) {
      total = Resource();
      for (const auto& [_, n] : B::nodes(*snap)) total.Add(n->allocatable());
    }
    B::total_allocatable(*snap) = std::move(total);
    if (membership_changed || B::node_tree_version(*snap) != tree.version()) RebuildNodeList(snap);
    FillStatic(snap);
    B::generation(*snap) = gen;
    B::node_tree_version(*snap) = tree.version();
    ++counters.incremental_snapshots;
  }
};


}  // namespace volcache
