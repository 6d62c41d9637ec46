#pragma once
// Connector: volcache against a Kubernetes API server — the reflectors for Pods, Nodes,
// PodGroups, Queues, PriorityClasses and ResourceQuotas feeding a volcache::EventSink (a CacheRuntime's
// cache, of which the connector sees only that), the ClusterSource over their stores, and the
// REST binder/evictor/status updater/event recorder the runtime borrows (SPEC §6, §7).
//
// Wiring (the runtime borrows the connector's pieces, so the connector outlives it):
//   Connector conn(std::move(client), opts);
//   CacheRuntime rt(rt_opts, clock, conn.source(), conn.binder(), conn.evictor(),
//                   conn.status_updater(), conn.event_recorder());
//   rt.Run(); conn.Start(&rt); rt.WaitForCacheSync(...); ... rt.Stop(); conn.Stop();
// Start() launches the reflectors and a starter thread that creates the `root` and default
// queues on the server (retrying until both exist; "already exists" is success) and calls
// MarkInitialListsApplied() once every reflector has applied its first LIST. Queue creation
// is paced like Volcano's (steps of `queue_retry`, 1 s, with jitter 0.1; after
// `queue_retry_steps` failed steps it says so once and keeps retrying at that pace); a
// failure is logged once and its identical repeats counted (LogThrottle); a 403 names the
// missing permission once.
//
// Pod filter (SPEC §3): pods whose schedulerName is ours, plus any pod bound to a node.
// A pod that enters or leaves the filter on an update is added or deleted (client-go's
// FilteringResourceEventHandler). Cache refusals (bad objects) are logged with the cache's
// message and counted; they never stop the reflector.
//
// Shard filter (ConnectorOptions::shard set: Volcano's multi-scheduler mode, kube/shard.h),
// exactly Volcano's informer filters: a node is kept when the ring gives its name to this
// instance; a PodGroup when the ring gives its key (first owner reference's name, else its
// name) to this instance; a pod when it is ours (our schedulerName and its key is ours) or it
// is bound to one of our nodes (whatever its scheduler: a foreign pod on our node keeps the
// node's accounting exact). Everything else is dropped before the cache, and the
// ClusterSource answers with the same view (a node or pod outside the shard is NotFound).
//
// Thread-safety: the accessors are safe from any thread; Start/Stop from one thread.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/mutex.h"
#include "cache/cluster_source.h"
#include "cache/event_sink.h"
#include "cache/runtime.h"
#include "kube/events.h"
#include "kube/reflector.h"
#include "kube/rest_client.h"
#include "kube/rest_writers.h"
#include "kube/shard.h"

namespace volcache::kube {

struct ConnectorOptions {
  std::string scheduler_name = "volcano";
  std::string default_queue = "default";
  ReflectorOptions reflector;
  bool use_eviction_api = false;                   // --eviction-api
  RestBinderOptions binder;                        // --kube-bind-concurrency
  bool create_default_queues = true;               // root + default on the server
  Duration queue_retry = std::chrono::seconds(1);  // queue creation: the backoff step
  double queue_retry_jitter = 0.1;
  int queue_retry_steps = 60;
  std::string event_component = "volcano";
  // When set and false, the root/default queues are not created (leader election: only the
  // leader writes); the starter tries again once it says true.
  std::function<bool()> may_write;
  // Multi-scheduler sharding (kube/shard.h); null: this instance owns the whole cluster.
  std::shared_ptr<const Shard> shard;
  // The clock of the queue-creation pacing, the event recorder and (unless the reflector
  // options name their own) the reflectors' backoff. Null: RealClock::Instance().
  std::shared_ptr<Clock> clock;
};

struct ConnectorStats {
  uint64_t cache_errors = 0;        // events the cache refused
  uint64_t decode_errors = 0;       // objects the decoder refused
  uint64_t filtered_pods = 0;       // pod events outside the scheduler (and shard) filter
  uint64_t filtered_nodes = 0;      // node events outside this instance's shard
  uint64_t filtered_podgroups = 0;  // PodGroup events outside this instance's shard
  bool queues_created = false;
  uint64_t queue_create_attempts = 0;  // POSTs of the root/default queues
};

class Connector {
 public:
  Connector(std::unique_ptr<RestClient> client, ConnectorOptions options);
  ~Connector();  // Stop()
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  const ClusterSource* source() const;
  Binder* binder();
  Evictor* evictor();
  StatusUpdater* status_updater();
  EventRecorder* event_recorder();
  RestClient& client() { return *client_; }
  Reflector& reflector(ResourceKind kind);
  const Reflector& reflector(ResourceKind kind) const;

  // Starts the reflectors feeding `sink` (pods through the scheduler filter) and the starter,
  // which calls `initial_lists_applied` once, on its thread, when every reflector has applied
  // its first LIST. The sink must outlive Stop().
  void Start(volcache::EventSink* sink, std::function<void()> initial_lists_applied) EXCLUDES(mu_);
  // The usual wiring: the runtime's cache is the sink, MarkInitialListsApplied the callback.
  void Start(CacheRuntime* runtime);
  // True once every reflector applied its first LIST.
  bool HasSynced() const;
  Status WaitForInitialLists(Duration timeout) const;
  // Stops the reflectors, the starter and the event poster. Call after CacheRuntime::Stop().
  void Stop() EXCLUDES(mu_);

  ConnectorStats stats() const;

  // What this instance owns, as the /debug/shard JSON (docs/ADMIN.md, "Sharding"):
  //   {"enabled", "identity", "base", "members": [...], "nodes": {"count", "names"},
  //    "jobs": {"count", "names": ["ns/podgroup", ...]}, "filtered": {"pods", "nodes",
  //    "podGroups"}}
  // from the reflectors' stores through the shard filter (names sorted). Without sharding:
  // "enabled": false, no identity or members, every node and PodGroup.
  std::string ShardJson() const;

  // The filters (see the file comment); safe from any thread.
  bool PodIsOurs(const k8s::Pod& pod) const;
  bool NodeIsOurs(const std::string& name) const;
  bool PodGroupIsOurs(const k8s::PodGroup& pg) const;

 private:
  class Feeder;
  class Source;
  void Starter(const std::function<void()>& initial_lists_applied) EXCLUDES(mu_);
  // Waits until `until` on clock_ (a timer wakes it), at most `poll` of real time, or Stop.
  void WaitUntil(TimePoint until, Duration poll) EXCLUDES(mu_);

  std::unique_ptr<RestClient> client_;
  const ConnectorOptions options_;
  const std::shared_ptr<Clock> clock_;  // before the recorder and reflectors that use it
  std::unique_ptr<Source> source_;
  RestBinder binder_;
  RestEvictor evictor_;
  RestStatusUpdater status_;
  RestEventSink event_sink_;
  RestEventRecorder recorder_;
  std::vector<std::unique_ptr<Feeder>> feeders_;
  std::vector<std::unique_ptr<Reflector>> reflectors_;  // indexed by ResourceKind

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  uint64_t wakes_ GUARDED_BY(mu_) = 0;  // bumped by the starter's timers
  std::atomic<uint64_t> cache_errors_{0}, decode_errors_{0}, filtered_pods_{0};
  std::atomic<uint64_t> filtered_nodes_{0}, filtered_podgroups_{0};
  std::atomic<bool> queues_created_{false};
  std::atomic<uint64_t> queue_create_attempts_{0};
  std::thread starter_;
};

}  // namespace volcache::kube
