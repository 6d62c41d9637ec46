#pragma once
// ClusterInfo: the snapshot a scheduling session works on.
//
// Ownership: a ClusterInfo is exclusively owned by its session. Node and job objects are held
// as shared, immutable versions published by the cache (copy-on-write): reading is free, and
// the first MutableNode()/MutableJob() on an object gives the session its own private copy.
// So the session may change anything, the cache never sees it, and the session never sees
// the cache change underneath (the cache clones an object before mutating a version it has
// published). Observably this is a deep copy; it costs a pointer per object.
//
// The cache's incremental UpdateSnapshot() relies on the bookkeeping here (generation,
// dirty sets): sessions must mutate only through the Mutable*/Erase* methods, which the
// const accessors enforce by type.
//
// Thread-safety: externally synchronized (one session at a time); the shared immutable
// versions may be read concurrently by many threads.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/job_info.h"
#include "api/node_info.h"
#include "api/queue_info.h"
#include "api/resource.h"
#include "api/topology_info.h"
#include "api/volume_info.h"

namespace volcache {

struct NamespaceQuota {
  std::string name;  // namespace
  Resource hard;     // per dimension, the minimum over the namespace's ResourceQuotas
  Resource used;     // per dimension, the maximum over their status.used
  friend bool operator==(const NamespaceQuota&, const NamespaceQuota&) = default;
};

class ClusterInfo {
 public:
  using NodeMap = std::unordered_map<std::string, std::shared_ptr<const NodeInfo>>;
  using JobMap = std::unordered_map<JobId, std::shared_ptr<const JobInfo>>;

  ClusterInfo() = default;
  ClusterInfo(const ClusterInfo&) = delete;
  ClusterInfo& operator=(const ClusterInfo&) = delete;
  ClusterInfo(ClusterInfo&&) = default;
  ClusterInfo& operator=(ClusterInfo&&) = default;

  // Ready nodes only.
  const NodeMap& nodes() const { return nodes_; }
  const NodeInfo* FindNode(const std::string& name) const;
  NodeInfo* MutableNode(const std::string& name);  // nullptr when absent
  // Names of Ready nodes with a revocable zone.
  const std::unordered_set<std::string>& revocable_nodes() const { return revocable_nodes_; }
  // Ready nodes in nodeTree order.
  const std::vector<std::string>& node_list() const { return node_list_; }
  // Sum of the Ready nodes' allocatable.
  const Resource& total_allocatable() const { return total_allocatable_; }

  const JobMap& jobs() const { return jobs_; }
  const JobInfo* FindJob(const JobId& id) const;
  JobInfo* MutableJob(const JobId& id);  // nullptr when absent
  // True when this session copied (MutableJob) or erased the job: it is no longer the cache's
  // version of that generation.
  bool ChangedBySession(std::string_view id) const { return dirty_jobs_.contains(id); }
  void EraseJob(const JobId& id);

  std::unordered_map<std::string, QueueInfo> queues;
  std::map<std::string, int32_t, std::less<>> priority_classes;  // name → value
  int32_t default_priority = 0;
  std::map<std::string, NamespaceQuota, std::less<>> namespace_quotas;
  // The HyperNode forest (never null in a cache snapshot; shared and immutable: sessions
  // replace it, never write through it).
  std::shared_ptr<const TopologyInfo> topology = std::make_shared<const TopologyInfo>();
  // The PersistentVolumeClaims, PersistentVolumes and StorageClasses (never null in a cache
  // snapshot; shared and immutable as the topology).
  std::shared_ptr<const VolumeInfo> volumes = std::make_shared<const VolumeInfo>();

  // ---- bookkeeping for the cache (not for sessions) ----
  uint64_t generation() const { return generation_; }
  // Cache-side writers used by SchedulerCache::Snapshot/UpdateSnapshot.
  struct Builder;
  friend struct Builder;

 private:
  NodeMap nodes_;
  JobMap jobs_;
  std::unordered_set<std::string> revocable_nodes_;
  std::vector<std::string> node_list_;
  Resource total_allocatable_;
  // What the session changed since the cache last refreshed this snapshot.
  std::unordered_set<std::string> dirty_nodes_;
  JobIdSet dirty_jobs_;
  uint64_t generation_ = 0;         // cache generation this snapshot reflects
  uint64_t structure_version_ = 0;  // cache's queue-set version (job filter)
  uint64_t node_tree_version_ = 0;  // cache's nodeTree version (node_list order)
  const void* owner_ = nullptr;     // the cache that built it
  // Names this snapshot's maps for the cache's slots, which remember where their entry is
  // (cache/cache_state.h, Slot::snap_entry). A move hands it over with the map entries (they
  // do not move in memory) and leaves the moved-from snapshot without one (0).
  struct SlotTag {
    uint64_t value = 0;
    SlotTag() = default;
    SlotTag(SlotTag&& o) noexcept : value(o.value) { o.value = 0; }
    SlotTag& operator=(SlotTag&& o) noexcept {
      value = o.value;
      o.value = 0;
      return *this;
    }
  };
  SlotTag slot_tag_;
};

// Direct access to a ClusterInfo's internals for the cache that builds and refreshes it.
struct ClusterInfo::Builder {
  static ClusterInfo::NodeMap& nodes(ClusterInfo& c) { return c.nodes_; }
  static ClusterInfo::JobMap& jobs(ClusterInfo& c) { return c.jobs_; }
  static std::unordered_set<std::string>& revocable_nodes(ClusterInfo& c) { return c.revocable_nodes_; }
  static std::vector<std::string>& node_list(ClusterInfo& c) { return c.node_list_; }
  static Resource& total_allocatable(ClusterInfo& c) { return c.total_allocatable_; }
  static std::unordered_set<std::string>& dirty_nodes(ClusterInfo& c) { return c.dirty_nodes_; }
  static JobIdSet& dirty_jobs(ClusterInfo& c) { return c.dirty_jobs_; }
  static uint64_t& generation(ClusterInfo& c) { return c.generation_; }
  static uint64_t& structure_version(ClusterInfo& c) { return c.structure_version_; }
  static uint64_t& node_tree_version(ClusterInfo& c) { return c.node_tree_version_; }
  static const void*& owner(ClusterInfo& c) { return c.owner_; }
  static uint64_t& slot_tag(ClusterInfo& c) { return c.slot_tag_.value; }
};

}  // namespace volcache
