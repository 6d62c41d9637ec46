// Snapshot building: a full snapshot of the cache, and the incremental refresh of a
// snapshot the cache built before (cache/cache_state.h).

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/cache_state.h"

namespace volcache {

namespace {

// Shares the slot's current version with a snapshot. A version not yet published is the
// cache's alone, so this is the last moment its generation may be written: stamping it
// with the slot's generation gives every published version a distinct, increasing value
// (NodeInfo/JobInfo mutators also bump their own counter after WritableNode/WritableJob
// set it, which let two different versions of a job carry the same generation).
template <typename S>
void Publish(S& slot) {
  if (slot.published) return;
  slot.info->set_generation(slot.gen);
  slot.published = true;
}

// A walk over a map of slots touches every version it includes (its reference count, a
// node's allocatable): a cache miss each. Next() prefetches the version a few slots ahead,
// so that the misses overlap.
template <typename M>
class Prefetcher {
 public:
  explicit Prefetcher(M& map) : it_(map.begin()), end_(map.end()) {
    for (int i = 0; i < kAhead && it_ != end_; ++i) ++it_;
  }
  void Next() {
    if (it_ == end_) return;
    // The version and its make_shared control block, whose count the snapshot bumps: 16 bytes
    // before the object, on the line before it for one block in four of tcmalloc's 240-byte
    // class (a job's), which is not 64-byte aligned.
    const auto* version = reinterpret_cast<const char*>(it_->second.info.get());
    __builtin_prefetch(version - 16);
    __builtin_prefetch(version);
    // A job's snapshot entry copies its id: the key's characters, in the id's one block
    // (api/k8s/shared_string.h).
    if constexpr (kJobs) __builtin_prefetch(it_->first.data());
    ++it_;
  }

 private:
  static constexpr int kAhead = 8;
  static constexpr bool kJobs = requires(typename M::iterator i) { i->second.info->uid(); };
  typename M::iterator it_, end_;
};

// The slots `log` says changed after generation `since`, newest first. The log is read as
// an array, so the slots' cache misses overlap: a first pass prefetches the slots, a second
// the versions and snapshot entries they point at, which the refresh then reads. Each line
// fetched is one the refresh reads: a fill buffer spent on another line holds back the misses
// of the next objects (the refresh of 1 % churn is a few thousand of them).
// `writes`: how many writes the cache made since (a bound on the count, for the reserve).
template <typename T>
std::vector<Slot<T>*> ChangedSince(const ChangeLog<T>& log, uint64_t since, uint64_t writes) {
  std::vector<Slot<T>*> out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(log.live(), writes)));
  log.ForEachSince(since, [&out](Slot<T>* s) {
    // The slot's first and last bytes: one line when its map node is 64-byte aligned (the
    // slot is the node's last 48 bytes, and tcmalloc's 64-byte class is aligned), else two.
    __builtin_prefetch(s);
    __builtin_prefetch(reinterpret_cast<const char*>(s) + sizeof(Slot<T>) - 1);
    out.push_back(s);
  });
  for (Slot<T>* s : out) {
    // The version's reference count (in front of it) and generation (its first field), both
    // written when the snapshot takes it: one line unless the object starts one (a job's
    // 240-byte block, one in four). A node's refresh also reads its revocable zone, in the
    // same line (NodeInfo's first 48 bytes).
    const char* v = reinterpret_cast<const char*>(s->info.get());
    __builtin_prefetch(v - 8, 1);
    __builtin_prefetch(v + sizeof(uint64_t) - 1, 1);
    if constexpr (std::is_same_v<T, NodeInfo>) __builtin_prefetch(v + 47);
    __builtin_prefetch(s->snap_entry, 1);
  }
  return out;
}

// A fresh ClusterInfo slot tag: unique in the process, so a slot never mistakes another
// snapshot (or an earlier build of the same one) for the one it remembers.
uint64_t NewSlotTag() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

template <typename T>
using SnapMap = std::unordered_map<std::string, std::shared_ptr<const T>>;  // NodeMap, JobMap

// A snapshot map's key for a node's name or a job's id. Taken as the id's SharedString, not a
// view of it, so that a refresh that finds its entry through the slot never reads the id's
// block (a cache miss per changed job).
const std::string& AsKey(const std::string& name) { return name; }
std::string AsKey(const k8s::SharedString& id) { return id.str(); }

// The snapshot's entry for `key`: the one `slot` remembers for this snapshot (`tag`), else
// the one found by name; null when the snapshot has none.
template <typename T, typename K>
typename Slot<T>::SnapEntry* FindEntry(SnapMap<T>& map, const K& key, const Slot<T>* slot, uint64_t tag) {
  if (slot != nullptr && slot->snap_tag == tag) return slot->snap_entry;
  auto it = map.find(AsKey(key));
  return it == map.end() ? nullptr : &*it;
}

// Makes the snapshot's entry `cur`, the one `slot` remembers, hold the slot's published version;
// the version it replaces (if another) is retired. The refresh's common case, inlined in its
// loops.
template <typename T>
[[gnu::always_inline]] inline void Replace(typename Slot<T>::SnapEntry& cur, const Slot<T>& slot,
                                           RetiredBatch* retired) {
  if (cur.second != slot.info) {
    retired->Put(std::move(cur.second));
    cur.second = slot.info;
  }
}

// Makes the snapshot hold `slot`'s version under `key`: in entry `cur` (the version it
// replaces is retired), or in a new entry when `cur` is null. The slot remembers the entry.
// `retired` may be null only when `cur` is.
template <typename T, typename K>
void HoldVersion(SnapMap<T>& map, const K& key, Slot<T>& slot, typename Slot<T>::SnapEntry* cur, uint64_t tag,
                 RetiredBatch* retired) {
  Publish(slot);
  if (cur == nullptr) {
    cur = &*map.emplace(AsKey(key), slot.info).first;
  } else {
    Replace(*cur, slot, retired);
  }
  slot.snap_entry = cur;
  slot.snap_tag = tag;
  slot.allocatable_changed = false;
}

// Keeps `node`, the version a snapshot now holds, in the snapshot's revocable set exactly when
// it has a revocable zone. The set is empty on most clusters: then no name is read or hashed
// (the name is looked up in the intern table, so it is read only in the branches).
inline void NoteRevocable(std::unordered_set<std::string>& revocable, const NodeInfo& node) {
  if (!node.revocable_zone().empty()) {
    revocable.insert(node.name());
  } else if (!revocable.empty()) {
    revocable.erase(node.name());
  }
}

// Drops entry `cur` (if any) from the snapshot, retiring its version; `slot` (if any)
// forgets it.
template <typename T, typename K>
void DropEntry(SnapMap<T>& map, const K& key, Slot<T>* slot, typename Slot<T>::SnapEntry* cur,
               RetiredBatch* retired) {
  if (cur != nullptr) {
    retired->Put(std::move(cur->second));
    map.erase(map.find(AsKey(key)));
  }
  if (slot != nullptr) slot->snap_tag = 0;
}

}  // namespace

const std::shared_ptr<const VolumeInfo>& SchedulerCache::Impl::Volumes() {
  if (!volumes) volumes = std::make_shared<const VolumeInfo>(volume_objects);
  return volumes;
}

const std::shared_ptr<const TopologyInfo>& SchedulerCache::Impl::Topology() {
  if (topology && topology_forest_version == forest.version() && topology_ready_version == ready_version &&
      topology->ready == forest.ready()) {
    return topology;
  }
  auto t = std::make_shared<TopologyInfo>();
  t->ready = forest.ready();
  std::map<std::string, HyperNodeForest::View> views = forest.Views();
  if (!views.empty()) {
    int32_t highest = 0;
    HyperNodeInfo root;
    root.name = std::string(kTopologyRoot);
    std::set<std::string> all;
    for (auto& [name, v] : views) {
      const bool is_root = v.parent.empty();
      HyperNodeInfo info;
      info.name = name;
      info.tier = v.tier;
      info.tier_name = std::move(v.tier_name);
      info.parent = is_root ? root.name : std::move(v.parent);
      info.children = std::move(v.children);
      info.nodes.reserve(v.nodes.size());
      for (std::string& n : v.nodes) {
        auto slot = nodes.find(n);
        if (slot != nodes.end() && slot->second.info->Ready()) info.nodes.push_back(std::move(n));
      }
      highest = std::max(highest, info.tier);
      if (is_root) {
        root.children.push_back(name);
        all.insert(info.nodes.begin(), info.nodes.end());
      }
      if (!info.tier_name.empty()) t->tier_names.emplace(info.tier_name, info.tier);
      t->tiers[info.tier].push_back(name);  // views are sorted by name
      t->hypernodes.emplace(name, std::move(info));
    }
    root.tier = highest + 1;
    root.nodes.assign(all.begin(), all.end());
    t->tiers[root.tier].push_back(root.name);
    t->hypernodes.emplace(root.name, std::move(root));
  }
  topology = std::move(t);
  topology_forest_version = forest.version();
  topology_ready_version = ready_version;
  return topology;
}

bool SchedulerCache::Impl::IncludeJob(const JobInfo& job) const {
  if (!job.pod_group()) return false;
  if (known_queues_version != queue_version) {
    known_queues.clear();
    known_queues_version = queue_version;
  }
  const std::string& queue = job.queue();  // the interned name
  auto [it, added] = known_queues.try_emplace(&queue, false);
  if (added) it->second = queues.count(queue) > 0;
  return it->second;
}

bool SchedulerCache::Impl::AskIncluded(Slot<JobInfo>& slot) {
  slot.included = IncludeJob(*slot.info);
  slot.included_known = true;
  slot.included_qv = static_cast<uint32_t>(queue_version);
  return slot.included;
}

bool SchedulerCache::Impl::AskIncluded(Slot<NodeInfo>& slot) {
  slot.included = slot.info->Ready();
  slot.included_known = true;
  return slot.included;
}

void SchedulerCache::Impl::FillStatic(ClusterInfo* snap) const {
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

void SchedulerCache::Impl::RebuildNodeList(ClusterInfo* snap) const {
  const auto& nodes_map = ClusterInfo::Builder::nodes(*snap);
  std::vector<std::string> order = tree.List();
  // A snapshot holds Ready nodes, and a node is Ready only from its Node object, which puts it
  // in the tree: when the snapshot has as many nodes as the tree, they are the tree's, and no
  // name is looked up (hashing every name was a fifth of a full snapshot on L).
  if (nodes_map.size() != order.size()) {
    std::erase_if(order, [&](const std::string& name) { return nodes_map.count(name) == 0; });
  }
  ClusterInfo::Builder::node_list(*snap) = std::move(order);
}

void SchedulerCache::Impl::FullSnapshot(ClusterInfo* snap) {
  using B = ClusterInfo::Builder;
  auto& nmap = B::nodes(*snap);
  auto& jmap = B::jobs(*snap);
  nmap.clear();
  jmap.clear();
  B::revocable_nodes(*snap).clear();
  B::dirty_nodes(*snap).clear();
  B::dirty_jobs(*snap).clear();
  const uint64_t tag = B::slot_tag(*snap) = NewSlotTag();
  Resource total;
  nmap.reserve(nodes.size());
  Prefetcher node_ahead(nodes);
  for (auto& [name, slot] : nodes) {
    node_ahead.Next();
    if (!Included(slot)) continue;
    HoldVersion(nmap, name, slot, nullptr, tag, nullptr);
    total.Add(slot.info->allocatable());
    if (!slot.info->revocable_zone().empty()) B::revocable_nodes(*snap).insert(name);
  }
  jmap.reserve(jobs.size());
  Prefetcher job_ahead(jobs);
  for (auto& [_, slot] : jobs) {
    job_ahead.Next();
    if (!Included(slot)) continue;
    // The snapshot's key is a std::string made from the id's characters (HoldVersion makes it
    // once, in the map's node).
    HoldVersion(jmap, slot.info->uid(), slot, nullptr, tag, nullptr);
  }
  B::total_allocatable(*snap) = std::move(total);
  RebuildNodeList(snap);
  FillStatic(snap);
  snap->topology = Topology();
  snap->volumes = Volumes();
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
bool SchedulerCache::Impl::RefreshNode(ClusterInfo* snap, const std::string& name, Resource* total,
                                       bool* recount, RetiredBatch* retired) {
  auto it = nodes.find(name);
  if (it == nodes.end()) return RefreshNode(snap, name, nullptr, total, recount, retired);
  it->second.snap_tag = 0;  // the rare paths look the name up (the session may have erased it)
  return RefreshNode(snap, name, &it->second, total, recount, retired);
}

// `slot`: the cache's slot for `name`, null when the cache no longer has the node.
bool SchedulerCache::Impl::RefreshNode(ClusterInfo* snap, const std::string& name, Slot<NodeInfo>* slot,
                                       Resource* total, bool* recount, RetiredBatch* retired) {
  using B = ClusterInfo::Builder;
  auto& nmap = B::nodes(*snap);
  const uint64_t tag = B::slot_tag(*snap);
  Slot<NodeInfo>::SnapEntry* cur = FindEntry(nmap, name, slot, tag);
  const bool had = cur != nullptr;
  const bool include = slot != nullptr && Included(*slot);
  if (had) {
    if (!include) {
      *recount = true;
    } else if (cur->second != slot->info) {
      // The entry came from the slot (same tag): the slot knows whether the allocatable
      // changed since; otherwise (found by name) the two versions are compared.
      if (slot->snap_tag == tag ? slot->allocatable_changed
                                : !(cur->second->allocatable() == slot->info->allocatable())) {
        *recount = true;
      }
    }
  } else if (include) {
    total->Add(slot->info->allocatable());
  }
  auto& revocable = B::revocable_nodes(*snap);
  if (include) {
    HoldVersion(nmap, name, *slot, cur, tag, retired);
    NoteRevocable(revocable, *slot->info);
  } else {
    DropEntry(nmap, name, slot, cur, retired);
    if (!revocable.empty()) revocable.erase(name);
  }
  return had != include;
}

void SchedulerCache::Impl::RefreshJob(ClusterInfo* snap, std::string_view id, RetiredBatch* retired) {
  auto it = jobs.find(id);
  if (it == jobs.end()) return RefreshJob(snap, k8s::SharedString(id), nullptr, retired);
  it->second.snap_tag = 0;  // the rare paths look the name up (the session may have erased it)
  RefreshJob(snap, it->second.info->uid(), &it->second, retired);
}

// `slot`: the cache's slot for `id`, null when the cache no longer has the job.
void SchedulerCache::Impl::RefreshJob(ClusterInfo* snap, const k8s::SharedString& id, Slot<JobInfo>* slot,
                                      RetiredBatch* retired) {
  using B = ClusterInfo::Builder;
  auto& jmap = B::jobs(*snap);
  const uint64_t tag = B::slot_tag(*snap);
  Slot<JobInfo>::SnapEntry* cur = FindEntry(jmap, id, slot, tag);
  if (slot != nullptr && Included(*slot)) {
    HoldVersion(jmap, id, *slot, cur, tag, retired);
  } else {
    DropEntry(jmap, id, slot, cur, retired);
  }
}

// Replaced versions go to `retired` instead of being destroyed under the lock (the caller
// frees them later, see cache/reclaimer.h).
void SchedulerCache::Impl::IncrementalSnapshot(ClusterInfo* snap, RetiredVersions* retired) {
  using B = ClusterInfo::Builder;
  const uint64_t since = B::generation(*snap);
  // At most one retired version per write since, and per object: reserved at once (growing
  // it step by step was a third of a refresh after 1 % churn on L, glibc consolidating its
  // free lists for each larger block). Each phase below then sizes its batch in it.
  retired->reserve(retired->size() +
                   static_cast<size_t>(std::min<uint64_t>(
                       gen - since, nodes.size() + jobs.size() + B::dirty_nodes(*snap).size())));
  if (B::slot_tag(*snap) == 0) B::slot_tag(*snap) = NewSlotTag();  // a copy: no slot knows it
  const uint64_t tag = B::slot_tag(*snap);
  Resource total = B::total_allocatable(*snap);
  bool membership_changed = false;
  bool recount_total = false;
  // 1. Undo the session's own changes.
  if (!B::dirty_nodes(*snap).empty() || !B::dirty_jobs(*snap).empty()) {
    RetiredBatch batch(retired, B::dirty_nodes(*snap).size() + B::dirty_jobs(*snap).size());
    if (!B::dirty_nodes(*snap).empty()) {
      // By name (RefreshNode's rare path); the total is recounted below, whatever it says.
      bool recount_unused = false;
      for (const std::string& name : B::dirty_nodes(*snap)) {
        membership_changed |= RefreshNode(snap, name, &total, &recount_unused, &batch);
      }
      B::dirty_nodes(*snap).clear();
      // The session's copies may have changed allocatable; recount from cache versions.
      total = Resource();
      for (const auto& [_, n] : B::nodes(*snap)) total.Add(n->allocatable());
    }
    for (const JobId& id : B::dirty_jobs(*snap)) RefreshJob(snap, id, &batch);
    B::dirty_jobs(*snap).clear();
  }
  // 2. Removals since, in order (before updates: a re-created object is newer).
  auto r = std::upper_bound(removals.begin(), removals.end(), since,
                            [](uint64_t g, const Removal& x) { return g < x.gen; });
  if (r != removals.end()) {
    RetiredBatch batch(retired, static_cast<size_t>(removals.end() - r));
    for (; r != removals.end(); ++r) {
      if (r->is_node) {
        membership_changed |= RefreshNode(snap, r->key, &total, &recount_total, &batch);
      } else {
        RefreshJob(snap, r->key, &batch);
      }
    }
  }
  // 3. Objects changed since, newest first: the tail of each change log. The common case, a
  // slot whose version the snapshot holds in the entry it remembers and still includes, is
  // inline; the rest take RefreshNode/RefreshJob.
  {
    const std::vector<Slot<NodeInfo>*> changed = ChangedSince(node_log, since, gen - since);
    RetiredBatch batch(retired, changed.size());
    auto& revocable = B::revocable_nodes(*snap);
    for (Slot<NodeInfo>* slot : changed) {
      if (slot->snap_tag != tag || !Included(*slot)) {
        membership_changed |= RefreshNode(snap, slot->info->name(), slot, &total, &recount_total, &batch);
        continue;
      }
      // The total keeps this node's allocatable unless it changed since the snapshot took it.
      recount_total |= slot->allocatable_changed;
      slot->allocatable_changed = false;
      Publish(*slot);
      Replace(*slot->snap_entry, *slot, &batch);
      NoteRevocable(revocable, *slot->info);
    }
  }
  {
    const std::vector<Slot<JobInfo>*> changed = ChangedSince(job_log, since, gen - since);
    RetiredBatch batch(retired, changed.size());
    for (Slot<JobInfo>* slot : changed) {
      if (slot->snap_tag != tag || !Included(*slot)) {
        RefreshJob(snap, slot->info->uid(), slot, &batch);
        continue;
      }
      Publish(*slot);
      Replace(*slot->snap_entry, *slot, &batch);
    }
  }
  if (recount_total) {
    total = Resource();
    for (const auto& [_, n] : B::nodes(*snap)) total.Add(n->allocatable());
  }
  B::total_allocatable(*snap) = std::move(total);
  if (membership_changed || B::node_tree_version(*snap) != tree.version()) RebuildNodeList(snap);
  FillStatic(snap);
  if (const auto& t = Topology(); snap->topology != t) snap->topology = t;
  if (const auto& v = Volumes(); snap->volumes != v) snap->volumes = v;
  B::generation(*snap) = gen;
  B::node_tree_version(*snap) = tree.version();
  ++counters.incremental_snapshots;
}

}  // namespace volcache
