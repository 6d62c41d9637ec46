#pragma once
// SimCluster: the embedded simulated cluster — an in-process API server and kubelet behind
// the same interfaces the Kubernetes connector implements (ClusterSource for listing,
// Binder, Evictor, StatusUpdater, EventRecorder), emitting the watch events a real cluster
// would through `Deliver` (to an EventSink: the cache).
//
// Behaviour, all on the injected clock:
//  - Jobs arrive at their submit time: the PodGroup, then its pods (ADDED events).
//  - A bind sets the pod's nodeName (MODIFIED after `watch_latency`); the kubelet starts the
//    pod `start_delay` later (phase Running) and finishes it after the job's run time
//    (Succeeded). Once every pod of a job has finished, the pods and the PodGroup are
//    deleted after `cleanup_delay` (DELETED events).
//  - Before it starts a pod the kubelet admits it against its node, as kubelet v1.24's
//    lifecycle/predicate.go does with the general predicates, the first failure winning:
//    resources (the node's `pods` allocatable, when it lists one, then cpu, memory and every
//    scalar by name: the requests of the pods admitted on the node and not finished, plus
//    this one's, within the allocatable), node affinity (nodeSelector and required node
//    affinity), host ports (against the admitted pods'), and untolerated taints. A refused
//    pod is not started: its phase becomes Failed, a `kAdmissionConditionType` condition
//    (status False) carries the kubelet's reason (OutOfpods, OutOfcpu, OutOf<resource>,
//    NodeAffinity, NodePorts, TaintToleration) and status message ("Pod Node didn't have
//    enough resource: cpu, requested: 1000, used: 7500, capacity: 8000", "Pod Predicate
//    NodePorts failed"), SimStats counts it, and it counts as finished for its job (a gang
//    with a refused pod finishes when its other pods have). Two deliberate differences from
//    the kubelet, which trusts the scheduler further than a simulator meant to check one
//    should: NoSchedule taints are checked as well as NoExecute ones, and an extended
//    resource the node does not list counts as 0 allocatable (the kubelet ignores it,
//    leaving it to a scheduler extender).
//  - An eviction marks the pod terminating (deletionTimestamp), deletes it after
//    `eviction_grace`, and the job controller recreates it Pending (new uid) to run again.
//  - Status writes update the stored PodGroup / Queue / pod condition and emit MODIFIED.
//  - Faults: a bind fails (`bind_error_rate`, 500-style Unavailable) or conflicts
//    (`bind_conflict_rate`, 409 Conflict) without taking effect; a watch event is dropped
//    (`watch_drop_rate`) and only delivered by the next relist (every `relist_period`, the
//    latest version of every object whose event was lost, like a reflector's relist).
// Every write gets a new resourceVersion. Deliveries never happen inside a caller's call:
// they are scheduled on the clock (a FakeClock delivers them on its next Advance).
// Thread-safety: safe for concurrent use; `Deliver` is called without the simulator's lock.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/resource.h"
#include "binder/binder.h"
#include "cache/cluster_source.h"
#include "cache/event_sink.h"
#include "evictor/evictor.h"
#include "sim/workload.h"
#include "workers/clock.h"

namespace volcache::sim {

struct SimOptions {
  Duration start_delay = std::chrono::seconds(1);
  Duration watch_latency = std::chrono::milliseconds(0);
  Duration cleanup_delay = std::chrono::seconds(1);
  Duration eviction_grace = std::chrono::seconds(1);
  Duration relist_period = std::chrono::seconds(30);
  double bind_error_rate = 0;
  double bind_conflict_rate = 0;
  double watch_drop_rate = 0;
  uint64_t seed = 1;
};

struct JobRecord {
  std::string name;  // ns/name of the PodGroup
  std::string queue;
  int tasks = 0;
  int64_t gpus_milli = 0;
  TimePoint submit{};
  std::optional<TimePoint> all_started;  // the whole gang Running
  std::optional<TimePoint> finished;     // every pod Succeeded (or refused by the kubelet)
  std::set<std::string> nodes;           // every node a pod of the job started on
};

struct SimStats {
  uint64_t jobs_submitted = 0, jobs_running = 0, jobs_finished = 0;
  uint64_t binds = 0, bind_faults = 0, bind_conflicts = 0;
  uint64_t evictions = 0, status_writes = 0, pod_starts = 0, pod_finishes = 0;
  uint64_t events_emitted = 0, events_dropped = 0, relists = 0;
  std::map<std::string, uint64_t> recorded_events;  // reason → count (EventRecorder)
  // Pods the kubelet refused at admission (see the file comment), by the kubelet's reason, and
  // the first few as "ns/name on node: reason: message".
  uint64_t admission_refusals = 0;
  std::map<std::string, uint64_t> admission_refusal_reasons;
  std::vector<std::string> admission_refusal_examples;
};

// The pod condition a kubelet refusal writes (the object model keeps no status.reason or
// status.message): status "False", the kubelet's reason and message.
inline constexpr const char* kAdmissionConditionType = "KubeletAdmission";
inline constexpr size_t kAdmissionRefusalExamples = 5;

class SimCluster final : public ClusterSource,
                         public Binder,
                         public Evictor,
                         public StatusUpdater,
                         public EventRecorder {
 public:
  using Deliver = std::function<void(EventType, const k8s::Object&)>;

  SimCluster(SimOptions options, std::shared_ptr<Clock> clock);
  ~SimCluster() override;
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  // The watch. Set before Load.
  void SetDeliver(Deliver deliver);
  // Creates nodes, HyperNodes, queues and priority classes now and schedules every job's
  // arrival.
  void Load(const SimWorkload& workload);
  // Stops scheduling further work (pending timers become no-ops).
  void Shutdown();
  // Turns every fault off from now on (lost events still arrive with the next relist).
  void StopFaults();

  // ClusterSource
  Result<k8s::NodePtr> GetNode(const std::string& name) const override;
  Result<k8s::PodPtr> GetPod(const std::string& ns, const std::string& name) const override;
  std::vector<k8s::NodePtr> ListNodes() const override;
  std::vector<k8s::PodPtr> ListPods() const override;
  // Binder
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override;
  // Evictor
  Status Evict(const k8s::Pod& pod, const std::string& reason) override;
  // StatusUpdater
  Status UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) override;
  Status UpdatePodGroup(const k8s::PodGroup& pg) override;
  Status UpdateQueueStatus(const k8s::Queue& queue) override;
  // EventRecorder
  void Event(const EventRef& object, const std::string& type, const std::string& reason,
             const std::string& message) override;

  SimStats stats() const;
  std::vector<JobRecord> jobs() const;
  // Sum of the requests of Running pods, and of the nodes' allocatable.
  Resource running_requests() const;
  Resource total_allocatable() const;
  // Sum of the requests of the pods the kubelet admitted on `node` and that have not finished
  // (what its admission checks the next pod against).
  Resource node_requests(const std::string& node) const;
  // Every job submitted has finished and no arrival is still scheduled.
  bool AllJobsFinished() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace volcache::sim
