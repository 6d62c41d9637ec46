#pragma once
// RandomCluster: a seeded generator of random cluster histories driven into a SchedulerCache
// through its public API only — the randomized cache test and the snapshot differential test
// share it.
//
// It owns the cache, a FakeClock and an ObjectStoreSource (the "cluster": the latest version
// of every Node and Pod the generator has created), and models the objects it has sent
// (pods, PodGroups, queues, priority classes, quotas, binds it believes are in flight) so
// that its random choices hit existing objects most of the time. The cluster is kept small
// (a few node, job and pod names, reused across deletions) so that events collide: pods name
// nodes that do not exist yet, PodGroups arrive after their pods, binds race confirmations.
//
// Every Step() performs one operation. When the operation is exactly one call of a cache
// entry point, RandomStep::single_call is set and `status` is that call's result, so a test
// can check that a refused call left Dump() unchanged (the cache contract: all-or-nothing).
//
// Thread-safety: not thread-safe; one test thread drives it.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "workers/clock.h"

namespace volcache::testing {

// True in Debug and sanitizer builds: tests that check every step scale their most
// expensive checks (full dumps) down there to keep the suite's run time reasonable.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(NDEBUG)
inline constexpr bool kInstrumentedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kInstrumentedBuild = true;
#else
inline constexpr bool kInstrumentedBuild = false;
#endif
#else
inline constexpr bool kInstrumentedBuild = false;
#endif

struct RandomClusterOptions {
  uint64_t seed = 1;
  // Names of nodes that get Node objects ("node-0"...); two more names ("ghost-0/1") only
  // ever appear as pods' nodeName, so their nodes stay placeholders.
  int nodes = 6;
  // Job names per namespace (two namespaces): "j0"...
  int jobs_per_namespace = 3;
  // Pod names per namespace (two namespaces): "p00"...
  int pods_per_namespace = 20;
  // 0 disables expiry (the cache's default).
  Duration assumed_ttl = std::chrono::seconds(30);
  size_t removal_log_capacity = 1 << 16;
  std::string scheduler_name = "volcano";
};

struct RandomStep {
  std::string what;  // human-readable, for failure traces
  Status status;     // result of the cache call when single_call
  bool single_call = false;
};

class RandomCluster {
 public:
  explicit RandomCluster(RandomClusterOptions options);
  ~RandomCluster();
  RandomCluster(const RandomCluster&) = delete;
  RandomCluster& operator=(const RandomCluster&) = delete;

  SchedulerCache& cache() { return *cache_; }
  FakeClock& clock() { return *clock_; }
  ObjectStoreSource& source() { return source_; }
  std::mt19937_64& rng() { return rng_; }
  const RandomClusterOptions& options() const { return options_; }

  // One random operation.
  RandomStep Step();

  // Creates every node (Ready, no zone) and a PodGroup for every job; applied through the
  // same entry points as Step(). For tests that need a populated cluster from the start.
  void Populate();

  // Lets every retry run: advances the clock past the longest rate-limited delay and drains
  // the cache's queues, a few times over.
  void Quiesce();

  // Random helpers for tests that add their own operations.
  size_t Uniform(size_t n);  // [0, n)
  bool Chance(double p);
  // Names of the nodes that currently have a Node object in the source.
  std::vector<std::string> LiveNodeNames() const;
  // Keys ("ns/name") of the pods currently in the source.
  std::vector<std::string> PodKeys() const;
  // Ids ("ns/name") of the PodGroups the generator has sent and not deleted since.
  std::set<std::string> PodGroupIds() const;

 private:
  struct PodDesc {
    std::string ns, name, uid, group, scheduler, node, phase;
    bool deleting = false;
    bool invalid = false;  // carries a negative request: the cache must refuse it
    int64_t cpu_milli = 0, memory_mi = 0, gpu = 0;
    int containers = 1;
    int64_t rv = 1;
    k8s::PodPtr Build() const;
    std::string Key() const { return ns + "/" + name; }
  };
  struct NodeDesc {
    std::string name;
    int64_t cpu = 8, memory_gi = 16, pods = 110, gpu = 0;
    std::string ready = "True";  // "True", "False", "" (no condition)
    int zone = 0;                // index into the zone label sets
    std::string revocable_zone;
    bool invalid = false;
    int64_t rv = 1;
    k8s::NodePtr Build() const;
  };

  std::string ForeignScheduler() const;
  std::string RandomNamespace();
  std::string RandomPodName();
  std::string RandomNodeName(bool include_ghosts);
  PodDesc RandomPod(const std::string& ns, const std::string& name);
  void RandomizeRequest(PodDesc& d);
  NodeDesc RandomNode(const std::string& name);
  std::shared_ptr<const k8s::PodGroup> RandomPodGroup(const std::string& ns, const std::string& name,
                                                      bool keep_uid);
  std::shared_ptr<const k8s::Queue> RandomQueue(const std::string& name);
  template <typename Map>
  const typename Map::value_type* PickFrom(const Map& m);

  // Operations.
  RandomStep AddNewPod();
  RandomStep ReAddPod();
  RandomStep UpdatePod();
  RandomStep ConfirmBind();
  RandomStep DeletePod();
  RandomStep PutNode();
  RandomStep RemoveNode();
  RandomStep SyncNode();
  RandomStep PutPodGroup();
  RandomStep ResendPodGroup();
  RandomStep DeletePodGroup();
  RandomStep PutQueue();
  RandomStep DeleteQueue();
  RandomStep PutPriorityClass();
  RandomStep DeletePriorityClass();
  RandomStep PutQuota();
  RandomStep DeleteQuota();
  RandomStep Bind();
  RandomStep FinishBinding();
  RandomStep Forget();
  RandomStep Evict();
  RandomStep AdvanceClock();
  RandomStep Resync();
  RandomStep Drain();
  RandomStep TakeEvictions();

  RandomStep ApplyPodUpdate(const PodDesc& next, const std::string& what);
  RandomStep MaybeDrain(RandomStep step);
  void PruneBinds();

  RandomClusterOptions options_;
  std::mt19937_64 rng_;
  std::shared_ptr<FakeClock> clock_;
  ObjectStoreSource source_;
  std::unique_ptr<SchedulerCache> cache_;

  std::map<std::string, PodDesc> pods_;               // key → current version (in the source)
  std::map<std::string, k8s::PodPtr> previous_pods_;  // key → the version before (stale tombstones)
  std::map<std::string, NodeDesc> nodes_;             // name → current object (in the source)
  std::map<std::string, std::shared_ptr<const k8s::PodGroup>> pod_groups_;  // "ns/name"
  std::map<std::string, std::shared_ptr<const k8s::Queue>> queues_;
  std::map<std::string, k8s::PriorityClass> priority_classes_;
  std::map<std::string, k8s::ResourceQuota> quotas_;  // "ns/name"
  std::map<std::string, std::string> binds_;          // task key → node, binds believed in flight
  uint64_t next_uid_ = 1;
  int64_t next_rv_ = 1;
};

}  // namespace volcache::testing
