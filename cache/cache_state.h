#pragma once
// Internal to cache/: the state behind SchedulerCache (its pimpl), shared by the .cc files
// of the cache. Not installed for users.
//
// This header is the field list and its invariants; the logic lives in .cc files named for
// what they do:
//   cache/cache_slots.cc        copy-on-write slots, generations, the change logs, removals
//   cache/task_accounting.cc    tasks on nodes and jobs, pods in and out, unassume
//   cache/object_bookkeeping.cc nodes, PodGroups and priorities
//   cache/snapshot_building.cc  full and incremental snapshots
//   cache/scheduler_cache.cc    the public API: takes Impl::mu, calls the *Locked helpers
//
// Thread-safety: one mutex, Impl::mu, guards all mutable state (GUARDED_BY, checked by clang
// -Wthread-safety). Every helper that reads or writes that state REQUIRES(mu); the calls that
// leave the cache (cluster source, reclaimer) go through helpers marked EXCLUDES(mu).

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/check.h"
#include "api/k8s/shared.h"
#include "api/keyed_table.h"
#include "api/mutex.h"
#include "cache/hypernode_forest.h"
#include "cache/reclaimer.h"
#include "cache/scheduler_cache.h"

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
  // log_pos when the slot has no entry: every bit set.
  static constexpr uint32_t kNotLogged = (uint32_t{1} << 28) - 1;
  std::shared_ptr<T> info;
  // This slot's entry in its ChangeLog. It and the four flags share 4 bytes, so a slot is 48
  // bytes: a job's map node (with its 8-byte key) is tcmalloc's 64-byte class, a node's too
  // (80 and 112 with an 8-byte position, a generation for `included` and string keys). A log
  // holds at most 2 * live + ChangeLog::kSlack + 1 entries; Append checks that the positions
  // fit.
  uint32_t log_pos : 28 = kNotLogged;
  bool published : 1 = false;
  // Whether snapshots hold this version (a job: it has a PodGroup of a known queue; a node:
  // it is Ready), as known for this generation while `included_known` (computed then, or
  // carried over by a write that cannot change it; ChangeLog::Append clears it, as the
  // generation moves) and queue version `included_qv` (a full snapshot then reads the slot,
  // not the version).
  bool included : 1 = false;
  bool included_known : 1 = false;
  // Nodes: whether the allocatable changed since the snapshot `snap_tag` took a version, so
  // its refresh knows whether the total must be recounted without reading the version it
  // held (a cache miss) or comparing two Resources. Jobs leave it false.
  bool allocatable_changed : 1 = false;
  uint32_t included_qv = 0;
  uint64_t gen = 0;
  // This slot's entry in the snapshot whose ClusterInfo slot tag is `snap_tag` (the last
  // snapshot that put the slot in), so an incremental refresh finds it without hashing the
  // name. Whoever erases that entry while the slot lives resets snap_tag (0: look it up).
  using SnapEntry = std::pair<const std::string, std::shared_ptr<const T>>;
  SnapEntry* snap_entry = nullptr;
  uint64_t snap_tag = 0;
};

// The order in which the slots of one kind last changed, for incremental snapshots. Every
// write appends an entry (generations ascend along the array) and clears the slot's earlier
// entry; erasing a slot clears its entry. So the entries after a snapshot's generation are
// the slots changed since, each once, all live, and a refresh finds them by reading the
// array's tail backwards: no chain of dependent loads (a std::list walk missed the cache on
// each list entry and then on its slot), so the slots' misses can overlap.
//
// An entry is 8 bytes: a live one is its slot's address, whose generation is the slot's own
// (a later write would have cleared the entry); a cleared one keeps the generation it had,
// as (gen << 1) | 1. A (gen, slot) pair took 16 bytes: 40 bytes a job of the traces with the
// log's room, 20 now. Reading a live entry's generation from its slot is a dependent cache
// miss, so the log also keeps every kMarkEvery-th entry's generation (`marks_`, half a byte
// an entry): a walk finds where `since` falls among them and reads the slots of at most one
// stretch's entries; the entries after it changed after `since`, unread. (Reading the slot
// of every entry walked made the incremental refresh of L 8-10 % slower.)
template <typename T>
class ChangeLog {
 public:
  // Records that `s` changes now, at generation `gen` (the newest yet), which becomes s.gen.
  void Append(Slot<T>& s, uint64_t gen) {
    if (s.log_pos != Slot<T>::kNotLogged) {
      entries_[s.log_pos] = Cleared(s.gen);
    } else {
      ++live_;
    }
    s.gen = gen;
    s.included_known = false;  // as of this generation: not yet
    if (entries_.size() == entries_.capacity()) {
      // Full: when half the entries are cleared, dropping them makes the room (as early as
      // that); otherwise grown by half, to at least the compaction bound below. Doubling
      // left most of the array unused (S's node log reached 512 entries for at most 265).
      if (entries_.size() >= 2 * live_) {
        Compact();
      } else {
        entries_.reserve(std::max(2 * live_ + kSlack + 1, entries_.size() + entries_.size() / 2));
      }
    }
    VC_CHECK(entries_.size() < Slot<T>::kNotLogged, "change log positions exhausted");
    s.log_pos = static_cast<uint32_t>(entries_.size());
    if (entries_.size() % kMarkEvery == 0) marks_.push_back(gen);
    entries_.push_back(reinterpret_cast<uintptr_t>(&s));
    // Cleared entries are dropped once they outnumber the live ones: each write pays for
    // about one entry moved.
    if (entries_.size() > 2 * live_ + kSlack) Compact();
  }
  // Forgets `s`, about to be erased.
  void Erase(Slot<T>& s) {
    if (s.log_pos == Slot<T>::kNotLogged) return;
    entries_[s.log_pos] = Cleared(s.gen);
    s.log_pos = Slot<T>::kNotLogged;
    --live_;
  }
  // Calls f(slot) for every slot changed after generation `since`, the newest first.
  template <typename F>
  void ForEachSince(uint64_t since, F&& f) const {
    // The entries from the first mark after `since` on all changed after it.
    const auto after = std::upper_bound(marks_.begin(), marks_.end(), since);
    const size_t start = std::min(entries_.size(), static_cast<size_t>(after - marks_.begin()) * kMarkEvery);
    for (size_t i = entries_.size(); i-- > start;) {
      const uintptr_t e = entries_[i];
      if ((e & 1) == 0) f(reinterpret_cast<Slot<T>*>(e));
    }
    // Before them, at most a stretch's worth: the mark before `start` is not after `since`.
    for (size_t i = start; i-- > 0;) {
      const uintptr_t e = entries_[i];
      if ((e & 1) != 0) {
        if ((e >> 1) <= since) break;
        continue;
      }
      Slot<T>* s = reinterpret_cast<Slot<T>*>(e);
      if (s->gen <= since) break;
      f(s);
    }
  }
  size_t live() const { return live_; }
  size_t size() const { return entries_.size(); }

  // How many cleared entries beyond the live ones the log keeps before dropping them (a
  // small cluster's log stays small; 1,024 here cost S 30 bytes a task in vector capacity).
  static constexpr size_t kSlack = 64;
  // One generation kept for this many entries.
  static constexpr size_t kMarkEvery = 16;

 private:
  static_assert(alignof(Slot<T>) >= 2);  // a slot's address has its low bit clear
  static uintptr_t Cleared(uint64_t gen) { return static_cast<uintptr_t>((gen << 1) | 1); }

  void Compact() {
    marks_.clear();
    size_t w = 0;
    for (const uintptr_t e : entries_) {
      if ((e & 1) != 0) continue;
      auto* s = reinterpret_cast<Slot<T>*>(e);
      s->log_pos = static_cast<uint32_t>(w);
      if (w % kMarkEvery == 0) marks_.push_back(s->gen);
      entries_[w++] = e;
    }
    entries_.resize(w);
  }

  std::vector<uintptr_t> entries_;
  std::vector<uint64_t> marks_;  // marks_[k]: the generation of entries_[k * kMarkEvery]
  size_t live_ = 0;              // live entries
};

// Versions a snapshot let go of, freed after the cache's lock (cache/reclaimer.h).
using RetiredVersions = std::vector<std::shared_ptr<const void>>;

// Where a refresh puts the versions it lets go of: the tail of a RetiredVersions made `bound` entries
// longer at once, filled in order and trimmed to what was put when the batch ends. Refreshing
// one object retires at most one version, so a refresh that counts the objects it will visit
// never grows the vector; Put still grows it when a caller's bound falls short. (push_back,
// out of line, was a fifth of the refresh's instructions on L.)
class RetiredBatch {
 public:
  RetiredBatch(RetiredVersions* out, size_t bound) : out_(out), used_(out->size()) {
    out->resize(used_ + bound);
  }
  ~RetiredBatch() { out_->resize(used_); }
  RetiredBatch(const RetiredBatch&) = delete;
  RetiredBatch& operator=(const RetiredBatch&) = delete;
  template <typename T>
  void Put(std::shared_ptr<const T>&& v) {
    if (used_ == out_->size()) [[unlikely]]
      out_->resize(used_ + used_ / 2 + 16);
    (*out_)[used_++] = std::move(v);
  }

 private:
  RetiredVersions* out_;
  size_t used_;  // entries of *out_ in use; those after it are empty
};

struct SchedulerCache::NodeSlot : Slot<NodeInfo> {};
// A job's id is its JobInfo's (`info->uid()`): every version of the job holds the same
// interned block, which its tasks hold too, and `jobs` keys the slot by it (8 bytes; a view of
// it took 16, and the map node a tcmalloc class more).
struct SchedulerCache::JobSlot : Slot<JobInfo> {};

// The jobs' hash and equality: of the characters, for any string (a lookup by a JobId or a view
// makes no SharedString). The hash is declared noexcept, so that std::unordered_map does not
// keep each key's hash in its node (it does for std::hash<std::string_view>, which it takes for
// slow). A rehash and an erase hash the key again; a lookup compares keys, not hashes.
struct JobKeyHash {
  using is_transparent = void;
  template <class K>
  size_t operator()(const K& id) const noexcept {
    return std::hash<std::string_view>{}(std::string_view(id));
  }
};
struct JobKeyEq {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const noexcept {
    return std::string_view(a) == std::string_view(b);
  }
};

// Where a task lives: its job ("" → `jobless`) and uid, read from the task's own shared
// TaskMeta rather than copied (two strings per task less).
struct TaskLoc {
  TaskMetaPtr meta;
  const UidString& uid() const { return meta->uid(); }
  const k8s::SharedString& job() const { return meta->job; }
  // Keyed by the task's "namespace/name" (api/keyed_table.h).
  static KeyView TableKey(const TaskLoc& l, uint8_t) { return l.meta->key(); }
};
extern template class KeyedTable<TaskLoc>;

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
  // ---- set once by the SchedulerCache constructor, read-only afterwards (no lock) ----
  SchedulerCache* self;
  std::shared_ptr<Clock> clock;
  const ClusterSource* source;
  SchedulerCacheOptions options;
  // Where Retire hands replaced versions: options.reclaimer, or owned_reclaimer when the
  // options named none (null without background_reclaim).
  std::unique_ptr<Reclaimer> owned_reclaimer;
  Reclaimer* reclaimer = nullptr;

  mutable Mutex mu;

  // ---- the cache's objects ----
  // Invariant: every slot has exactly one live entry in its change log (slot.log_pos), of
  // generation slot.gen.
  // Keyed by the interned name (api/k8s/interned.h: a lookup by a std::string interns it; only
  // names of nodes, which the table keeps anyway, are looked up). A node's map node is then 64
  // bytes: next pointer, the name's number and the slot (112 with a std::string key, its
  // hash and a 56-byte slot; a task's node_name is already an Interned, so most lookups hash no
  // string).
  std::unordered_map<k8s::Interned, NodeSlot> nodes GUARDED_BY(mu);
  // Keys hold the jobs' ids (JobSlot). A job's map node is then 64 bytes: next pointer, key and
  // slot (80 with a key view and a 56-byte slot, 96 with the slot's id pointer and the hash).
  std::unordered_map<k8s::SharedString, JobSlot, JobKeyHash, JobKeyEq> jobs GUARDED_BY(mu);
  static_assert(sizeof(JobSlot) == 48 && sizeof(NodeSlot) == 48);
  // The UID of the PodGroup a job last had, for the jobs whose PodGroup was deleted while
  // tasks hold them: it names the job in the deleted-jobs queue. A job with its PodGroup
  // reads the UID from it, so a slot holds no PodGroup pointer of its own (16 bytes a job).
  std::unordered_map<std::string_view, UidString> departed_pod_groups
      GUARDED_BY(mu);  // keys view the jobs' ids (their keys in `jobs`)
  // The job's PodGroup's UID, or its last one's; "" if it never had one.
  const UidString& PodGroupUid(const JobSlot& s) const REQUIRES(mu);
  ChangeLog<NodeInfo> node_log GUARDED_BY(mu);
  ChangeLog<JobInfo> job_log GUARDED_BY(mu);
  struct Removal {
    bool is_node;
    std::string key;
    uint64_t gen;
  };
  // Nodes and jobs erased, ascending gen, at most options.removal_log_capacity entries.
  std::deque<Removal> removals GUARDED_BY(mu);
  uint64_t removals_floor GUARDED_BY(mu) = 0;  // snapshots older than this cannot be refreshed in place
  // The cache's clock: every write to a slot takes a fresh value (NextGen); a snapshot
  // records the value it was built at.
  uint64_t gen GUARDED_BY(mu) = 0;
  // Bumped when queues change: a snapshot of another version is rebuilt in full.
  uint64_t queue_version GUARDED_BY(mu) = 1;
  NodeTree tree GUARDED_BY(mu);  // the Ready, non-placeholder nodes, by zone

  // ---- network topology (SPEC §12) ----
  HyperNodeForest forest GUARDED_BY(mu);
  // The latest HyperNode version each event delivered, applied by SyncHyperNode; a null
  // pointer is a delete not yet applied.
  std::unordered_map<std::string, k8s::HyperNodePtr> hypernodes_desired GUARDED_BY(mu);
  // Bumped when a node enters or leaves the Ready set (snapshots narrow leaf sets to it).
  uint64_t ready_version GUARDED_BY(mu) = 0;
  // The TopologyInfo snapshots share, and the (forest, ready) versions it was built at.
  std::shared_ptr<const TopologyInfo> topology GUARDED_BY(mu);
  uint64_t topology_forest_version GUARDED_BY(mu) = 0;
  uint64_t topology_ready_version GUARDED_BY(mu) = 0;
  // Rebuilds `topology` when the forest or the Ready set changed since it was built.
  const std::shared_ptr<const TopologyInfo>& Topology() REQUIRES(mu);

  // ---- volumes (VolumeBinding, VolumeZone) ----
  VolumeInfo volume_objects GUARDED_BY(mu);
  // The version snapshots share; null after a volume object changed, until Volumes() copies
  // volume_objects again (once per snapshot at most, however many events came in between).
  std::shared_ptr<const VolumeInfo> volumes GUARDED_BY(mu);
  const std::shared_ptr<const VolumeInfo>& Volumes() REQUIRES(mu);

  // ---- cluster-wide objects ----
  std::unordered_map<std::string, QueueInfo> queues GUARDED_BY(mu);
  std::map<std::string, int32_t, std::less<>> priority_classes GUARDED_BY(mu);
  std::string global_default_class GUARDED_BY(mu);  // "" when no PriorityClass is the global default
  int32_t default_priority GUARDED_BY(mu) = 0;      // value of global_default_class, else 0
  std::map<std::string, std::map<std::string, QuotaEntry>, std::less<>> quotas
      GUARDED_BY(mu);  // ns → name → entry

  // ---- tasks ----
  // Invariant: a key is in task_index iff its task is held by exactly one of: its job's
  // JobInfo (job != "") or `jobless` (job == ""); a task with a node and a non-terminated
  // status is also on that node's NodeInfo.
  KeyedTable<TaskLoc> task_index GUARDED_BY(mu);  // "ns/name" (a view of TaskLoc::meta->key) → location
  std::unordered_map<std::string, TaskInfo> jobless GUARDED_BY(mu);  // "ns/name" → task of no job
  // Tasks placed by AddBindTask and not yet confirmed by the cluster; every key is in task_index.
  std::unordered_map<std::string, AssumedEntry> assumed GUARDED_BY(mu);
  std::vector<EvictionRequest> evictions GUARDED_BY(mu);  // taken by TakeEvictionRequests
  CacheCounters counters GUARDED_BY(mu);

  // ------------------------------------------- slots (cache/cache_slots.cc)
  uint64_t NextGen() REQUIRES(mu) { return ++gen; }
  // The slot's version, made private to the cache first if a snapshot shares it; takes a
  // new generation and appends the slot to its change log.
  NodeInfo& WritableNode(const std::string& name, NodeSlot& s) REQUIRES(mu);
  // WritableNode for a write that changes only the node's tasks, never its Node object: the
  // slot's answer to whether snapshots include the node (its readiness) stays valid.
  NodeInfo& WritableNodeTasks(NodeSlot& s) REQUIRES(mu);
  JobInfo& WritableJob(JobSlot& s) REQUIRES(mu);
  // WritableJob for a write that changes only the job's tasks or priority, never its PodGroup
  // or queue: the slot's answer to whether snapshots include the job stays valid, so the
  // refresh after a task change does not ask again.
  JobInfo& WritableJobTasks(JobSlot& s) REQUIRES(mu);
  NodeSlot& CreateNodeSlot(const std::string& name, std::shared_ptr<NodeInfo> info) REQUIRES(mu);
  // `id`: the job's id in the block its tasks hold (TaskMeta::job), or newly interned.
  JobSlot& CreateJobSlot(k8s::SharedString id) REQUIRES(mu);
  void LogRemoval(bool is_node, const std::string& key) REQUIRES(mu);
  void EraseNodeSlot(const std::string& name) REQUIRES(mu);
  void EraseJobSlot(const JobId& id) REQUIRES(mu);

  // ------------------------------------- tasks (cache/task_accounting.cc)
  // The authoritative copy of a cached task.
  const TaskInfo* FindTask(KeyView key) const REQUIRES(mu);
  // The task a task_index entry points at (null when its job or jobless entry is gone).
  const TaskInfo* TaskAt(const TaskLoc& loc) const REQUIRES(mu);
  // Checks that AddTaskLocked(task) cannot fail. `replacing` means the task's current entry
  // will be removed first (so its own entries do not count as conflicts); a caller that
  // already looked the key up and did not find it passes true as well. `*job`, when given,
  // is set to the task's job slot (null when the job has none yet).
  Status CheckCanAdd(const TaskInfo& task, bool replacing, JobSlot** job = nullptr) REQUIRES(mu);
  // Adds a task whose addition was checked with CheckCanAdd. Never fails. `job`: the slot
  // CheckCanAdd found, when nothing changed the jobs since (null: looked up here).
  void AddTaskLocked(const TaskInfo& task, JobSlot* job = nullptr) REQUIRES(mu);
  // Removes a cached task (by key) from its node, its job and the assumed set. Never fails
  // for a key in task_index.
  void RemoveTaskLocked(const std::string& key, bool queue_empty_job) REQUIRES(mu);
  // Replaces the cached task `key` by `task` (remove + add, all-or-nothing).
  Status ReplaceTaskLocked(const std::string& key, const TaskInfo& task) REQUIRES(mu);
  Status AddPodLocked(const k8s::PodPtr& pod) REQUIRES(mu);
  Status UpdatePodLocked(const TaskInfo& cached, const k8s::PodPtr& pod) REQUIRES(mu);
  // Back to Pending and off the node (forget and expiry).
  void UnassumeLocked(const std::string& key, const AssumedEntry& entry) REQUIRES(mu);

  // ----------------- nodes, PodGroups, priorities (cache/object_bookkeeping.cc)
  Status AddOrUpdateNodeLocked(const k8s::NodePtr& node) REQUIRES(mu);
  void RemoveNodeLocked(const std::string& name) REQUIRES(mu);
  Status SetPodGroupLocked(const std::shared_ptr<const k8s::PodGroup>& pg) REQUIRES(mu);
  int32_t PriorityFor(const JobInfo& job) const REQUIRES(mu);
  void RecomputePriorities() REQUIRES(mu);
  void RecomputeDefaultPriority() REQUIRES(mu);

  // ------------------------------------- snapshots (cache/snapshot_building.cc)
  // Whether snapshots hold the job: it has a PodGroup whose queue the cache knows.
  bool IncludeJob(const JobInfo& job) const REQUIRES(mu);
  // IncludeJob's answers by queue while the queues are unchanged, keyed by the address of the
  // job's interned queue name (one canonical string per name): a lookup compares no string.
  // Comparing and copying the last name was two fifths of an incremental refresh's
  // instructions on L.
  mutable std::unordered_map<const std::string*, bool> known_queues GUARDED_BY(mu);
  mutable uint64_t known_queues_version GUARDED_BY(mu) = 0;  // queue_version starts at 1
  // IncludeJob(*slot.info), and for a node its readiness, remembered in the slot until the
  // slot or the queues change.
  // The remembered answer inline (the refresh asks for every changed object); Ask* computes it.
  bool Included(Slot<JobInfo>& slot) REQUIRES(mu) {
    if (slot.included_known && slot.included_qv == static_cast<uint32_t>(queue_version)) return slot.included;
    return AskIncluded(slot);
  }
  bool Included(Slot<NodeInfo>& slot) REQUIRES(mu) {
    return slot.included_known ? slot.included : AskIncluded(slot);
  }
  bool AskIncluded(Slot<JobInfo>& slot) REQUIRES(mu);
  bool AskIncluded(Slot<NodeInfo>& slot) REQUIRES(mu);
  void FillStatic(ClusterInfo* snap) const REQUIRES(mu);
  void RebuildNodeList(ClusterInfo* snap) const REQUIRES(mu);
  void FullSnapshot(ClusterInfo* snap) REQUIRES(mu);
  // Puts the cache's current version of node `name` into the snapshot (or removes it).
  // Returns true when the snapshot's node membership changed. `slot`: the cache's slot for
  // `name`, null when the cache no longer has the node.
  bool RefreshNode(ClusterInfo* snap, const std::string& name, Resource* total, bool* recount,
                   RetiredBatch* retired) REQUIRES(mu);
  bool RefreshNode(ClusterInfo* snap, const std::string& name, Slot<NodeInfo>* slot, Resource* total,
                   bool* recount, RetiredBatch* retired) REQUIRES(mu);
  // `slot`: the cache's slot for `id`, null when the cache no longer has the job.
  void RefreshJob(ClusterInfo* snap, std::string_view id, RetiredBatch* retired) REQUIRES(mu);
  void RefreshJob(ClusterInfo* snap, const k8s::SharedString& id, Slot<JobInfo>* slot, RetiredBatch* retired)
      REQUIRES(mu);
  // Replaced versions go to `retired` instead of being destroyed under the lock.
  void IncrementalSnapshot(ClusterInfo* snap, RetiredVersions* retired) REQUIRES(mu);

  // ---------------------------------------- calls that leave the cache: never under mu
  // The cluster source's listers may block (cache/scheduler_cache.cc, cache/debug.cc).
  Result<k8s::NodePtr> SourceNode(const std::string& name) const EXCLUDES(mu);
  Result<k8s::PodPtr> SourcePod(const std::string& ns, const std::string& name) const EXCLUDES(mu);
  std::vector<k8s::NodePtr> SourceNodes() const EXCLUDES(mu);
  std::vector<k8s::PodPtr> SourcePods() const EXCLUDES(mu);
  // Hands versions a snapshot let go of to the reclaimer (frees them off the session's path).
  void Retire(RetiredVersions retired) const EXCLUDES(mu);
};

}  // namespace volcache
