#include "sim/cluster.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>
#include <unordered_map>

#include "api/k8s/decode.h"
#include "api/mutex.h"
#include "api/placement.h"
#include "api/resource_list.h"
#include "api/task_info.h"

namespace volcache::sim {

namespace {

int64_t WallMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch()).count();
}

// A kubelet refusal: its reason and the message it writes (lifecycle/predicate.go).
struct Refusal {
  std::string reason, message;
};

// InsufficientResourceError: reason OutOf<resource>.
Refusal OutOf(std::string_view name, const std::string& requested, const std::string& used,
              const std::string& capacity) {
  return {fmt::format("OutOf{}", name),
          fmt::format("Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}", name,
                      requested, used, capacity)};
}

// PredicateFailureError.
Refusal PredicateFailed(std::string_view predicate) {
  return {std::string(predicate), fmt::format("Predicate {} failed", predicate)};
}

// A scalar in the kubelet's units: Resource keeps them in milli-units (a fraction, which only
// the GPU-share model of the traces has, keeps the "m").
std::string ScalarAmount(int64_t milli) {
  return milli % 1000 == 0 ? std::to_string(milli / 1000) : fmt::format("{}m", milli);
}

}  // namespace

struct SimCluster::State : std::enable_shared_from_this<SimCluster::State> {
  SimOptions options;
  std::shared_ptr<Clock> clock;
  ObjectStoreSource store;  // pods and nodes: what listers see

  mutable Mutex mu;
  Deliver deliver GUARDED_BY(mu);
  bool shut_down GUARDED_BY(mu) = false;
  std::mt19937_64 rng GUARDED_BY(mu);
  uint64_t resource_version GUARDED_BY(mu) = 1;
  std::map<std::string, k8s::PodGroup> pod_groups GUARDED_BY(mu);  // ns/name
  std::map<std::string, k8s::Queue> queues GUARDED_BY(mu);         // name
  std::map<std::string, SimJob> job_specs GUARDED_BY(mu);          // ns/name of the PodGroup
  std::map<std::string, JobRecord> records GUARDED_BY(mu);         // ns/name of the PodGroup
  std::map<std::string, int> running_pods GUARDED_BY(mu);          // per job
  std::map<std::string, int> finished_pods GUARDED_BY(mu);         // per job
  std::map<std::string, uint64_t> incarnation GUARDED_BY(mu);      // pod key → bumps on recreate/delete
  // The store's pods by job (JobOf), keys in the store's order: a finished job's cleanup
  // visits its own pods, not every pod of the cluster.
  std::unordered_map<std::string, std::set<std::string>> pods_of_job GUARDED_BY(mu);
  std::map<std::string, std::pair<EventType, k8s::Object>> stale GUARDED_BY(mu);  // dropped events
  size_t arrivals_pending GUARDED_BY(mu) = 0;
  Resource running GUARDED_BY(mu);
  Resource allocatable GUARDED_BY(mu);
  SimStats stats GUARDED_BY(mu);
  // The kubelet's admission (see cluster.h), kept incrementally: what the pods admitted on
  // each node and not finished hold (added at start; removed at finish, or at deletion for a
  // pod evicted or cleaned up while running), and what each such pod holds. A pod is admitted
  // exactly while it is Running here, so `running` and `running_pods` move with these.
  struct NodeUsage {
    Resource requested;  // its scalar `pods` counts the pods
    int64_t pods = 0;
    std::vector<HostPort> ports;
  };
  struct Admitted {
    std::string job, node;
    Resource request;
    std::vector<HostPort> ports;
  };
  std::unordered_map<std::string, Resource> node_allocatable GUARDED_BY(mu);  // by node name
  std::unordered_map<std::string, NodeUsage> node_usage GUARDED_BY(mu);       // by node name
  std::unordered_map<std::string, Admitted> admitted GUARDED_BY(mu);          // by pod key

  State(SimOptions o, std::shared_ptr<Clock> c) : options(o), clock(std::move(c)), rng(o.seed) {}

  std::string NextRv() REQUIRES(mu) { return std::to_string(++resource_version); }
  bool Roll(double p) REQUIRES(mu) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  // Runs `fn` with the lock held after `d`, unless the simulator was shut down. The analysis
  // does not follow the std::function, so each `fn` starts with mu.AssertHeld().
  void After(Duration d, std::function<void(State&)> fn) {
    clock->AfterFunc(d, [weak = weak_from_this(), fn = std::move(fn)] {
      auto self = weak.lock();
      if (!self) return;
      MutexLock lock(&self->mu);
      if (self->shut_down) return;
      fn(*self);
    });
  }

  // The watch: schedules delivery of one event (or loses it until the next relist).
  void EmitLocked(EventType type, k8s::Object obj) REQUIRES(mu) {
    const std::string key = std::string(k8s::KindOf(obj)) + ":" +
                            std::visit([](const auto& o) { return k8s::ObjectKey(o.metadata); }, obj);
    ++stats.events_emitted;
    if (Roll(options.watch_drop_rate)) {
      ++stats.events_dropped;
      stale[key] = {type, std::move(obj)};
      return;
    }
    stale.erase(key);
    DeliverAfter(options.watch_latency, type, std::move(obj));
  }

  // Hands one event to `deliver` after `d`, without the lock (unless shut down by then).
  void DeliverAfter(Duration d, EventType type, k8s::Object obj) {
    clock->AfterFunc(d, [weak = weak_from_this(), type, obj = std::move(obj)] {
      auto self = weak.lock();
      if (!self) return;
      Deliver deliver;
      {
        MutexLock lock(&self->mu);
        if (self->shut_down) return;
        deliver = self->deliver;
      }
      if (deliver) deliver(type, obj);
    });
  }

  void ScheduleRelist() {
    After(options.relist_period, [](State& s) {
      s.mu.AssertHeld();
      ++s.stats.relists;
      auto lost = std::move(s.stale);
      s.stale.clear();
      for (auto& [key, ev] : lost) {
        ++s.stats.events_emitted;
        s.DeliverAfter(Duration::zero(), ev.first, std::move(ev.second));
      }
      s.ScheduleRelist();
    });
  }

  void PutPodLocked(std::shared_ptr<k8s::Pod> pod, EventType type) REQUIRES(mu) {
    pod->metadata.resource_version = NextRv();
    k8s::Pod copy = *pod;
    pods_of_job[JobOf(copy)].insert(k8s::ObjectKey(copy.metadata));
    store.PutPod(std::move(pod));
    EmitLocked(type, std::move(copy));
  }

  void SubmitLocked(const std::string& job_key) REQUIRES(mu) {
    --arrivals_pending;
    const SimJob& job = job_specs.at(job_key);
    k8s::PodGroup pg = *job.pod_group;
    pg.metadata.resource_version = NextRv();
    pg.metadata.creation_timestamp = WallMs(*clock);
    pod_groups[job_key] = pg;
    EmitLocked(EventType::kAdd, pg);
    JobRecord& r = records[job_key];
    r.name = job_key;
    r.queue = pg.spec.queue.empty() ? "default" : pg.spec.queue;
    r.tasks = static_cast<int>(job.pods.size());
    r.gpus_milli = job.gpus_milli;
    r.submit = clock->Now();
    ++stats.jobs_submitted;
    for (const auto& p : job.pods) {
      auto pod = std::make_shared<k8s::Pod>(*p);
      pod->metadata.creation_timestamp = WallMs(*clock);
      PutPodLocked(std::move(pod), EventType::kAdd);
    }
  }

  static std::string JobOf(const k8s::Pod& pod) {
    auto it = pod.metadata.annotations.find("scheduling.k8s.io/group-name");
    return pod.metadata.namespace_ + "/" + (it == pod.metadata.annotations.end() ? "" : it->second);
  }

  // The pod's request by the same rule the cache accounts it with (the cache refused the pod
  // if it does not parse, so it never runs here).
  static Resource RequestOf(const k8s::Pod& pod) {
    auto r = PodRequest(pod);
    return r.ok() ? *r : Resource();
  }

  void StartLocked(const std::string& key, uint64_t inc) REQUIRES(mu) {
    if (incarnation[key] != inc) return;
    auto slash = key.find('/');
    auto cur = store.GetPod(key.substr(0, slash), key.substr(slash + 1));
    if (!cur.ok() || (*cur)->metadata.deletion_timestamp) return;
    auto pod = std::make_shared<k8s::Pod>(**cur);
    const std::string job = JobOf(*pod);
    Resource request = RequestOf(*pod);
    std::vector<HostPort> ports = placement::WantedHostPorts(pod->spec);
    if (std::optional<Refusal> refusal = AdmissionLocked(*pod, request, ports)) {
      RefuseLocked(std::move(pod), job, *refusal);
      return;
    }
    pod->status.phase = "Running";
    pod->status.start_time = WallMs(*clock);
    AdmitLocked(key, job, pod->spec.node_name, std::move(request), std::move(ports));
    ++stats.pod_starts;
    records[job].nodes.insert(pod->spec.node_name);
    PutPodLocked(pod, EventType::kUpdate);
    if (++running_pods[job] == records[job].tasks && !records[job].all_started) {
      records[job].all_started = clock->Now();
      ++stats.jobs_running;
    }
    const Duration run = job_specs.count(job) ? job_specs.at(job).run_time : Duration::zero();
    if (run > Duration::zero()) {
      After(run, [key, inc](State& s) {
        s.mu.AssertHeld();
        s.FinishLocked(key, inc);
      });
    }
  }

  // The kubelet's admission of `pod` on its node: the first of the general predicates that
  // fails, in the kubelet's order (resources, node affinity, host ports, taints); none when it
  // may start.
  std::optional<Refusal> AdmissionLocked(const k8s::Pod& pod, const Resource& request,
                                         const std::vector<HostPort>& ports) REQUIRES(mu) {
    const std::string& node_name = pod.spec.node_name;
    auto node = store.GetNode(node_name);
    if (!node.ok()) return std::nullopt;  // the simulator never deletes a node
    auto a = node_allocatable.find(node_name);
    const Resource& alloc = a == node_allocatable.end() ? Resource::Zero() : a->second;
    auto u = node_usage.find(node_name);
    static const NodeUsage kIdle{};
    const NodeUsage& used = u == node_usage.end() ? kIdle : u->second;
    // noderesources.Fits: the pod count first, then each requested dimension.
    if (alloc.Has(ResourceNames::kPods) && used.pods + 1 > alloc.max_task_num()) {
      return OutOf("pods", "1", std::to_string(used.pods), std::to_string(alloc.max_task_num()));
    }
    if (request.milli_cpu() > 0 && request.milli_cpu() > alloc.milli_cpu() - used.requested.milli_cpu()) {
      return OutOf("cpu", std::to_string(request.milli_cpu()), std::to_string(used.requested.milli_cpu()),
                   std::to_string(alloc.milli_cpu()));
    }
    if (request.memory() > 0 && request.memory() > alloc.memory() - used.requested.memory()) {
      return OutOf("memory", std::to_string(request.memory()), std::to_string(used.requested.memory()),
                   std::to_string(alloc.memory()));
    }
    std::optional<Refusal> short_scalar;  // the first short scalar by name
    std::string_view short_name;
    for (const Resource::Scalar* it = request.scalars_begin(); it != request.scalars_end(); ++it) {
      const Resource::Scalar sc = *it;  // packed: copied out before its fields are bound
      if (sc.id == ResourceNames::kPods || sc.value <= 0) continue;
      const int64_t cap = alloc.Get(sc.id), in_use = used.requested.Get(sc.id);
      if (sc.value <= cap - in_use) continue;
      const std::string& name = ResourceNames::Name(sc.id);
      if (short_scalar && short_name <= name) continue;
      short_name = name;
      short_scalar = OutOf(name, ScalarAmount(sc.value), ScalarAmount(in_use), ScalarAmount(cap));
    }
    if (short_scalar) return short_scalar;
    if (!placement::MatchesNodeAffinity(pod.spec, **node)) return PredicateFailed("NodeAffinity");
    for (const HostPort& want : ports) {
      for (const HostPort& held : used.ports) {
        if (placement::HostPortsConflict(want, held)) return PredicateFailed("NodePorts");
      }
    }
    if (placement::FirstUntoleratedTaint(pod.spec.tolerations, **node) != nullptr) {
      return PredicateFailed("TaintToleration");
    }
    return std::nullopt;
  }

  void AdmitLocked(const std::string& key, const std::string& job, const std::string& node, Resource request,
                   std::vector<HostPort> ports) REQUIRES(mu) {
    NodeUsage& u = node_usage[node];
    u.requested.Add(request);
    ++u.pods;
    u.ports.insert(u.ports.end(), ports.begin(), ports.end());
    running.Add(request);
    admitted[key] = Admitted{job, node, std::move(request), std::move(ports)};
  }

  // Gives back what an admitted pod held on its node (the pod finished, or is being deleted);
  // nothing when it holds nothing (it never started, or already gave it back).
  void ReleaseLocked(const std::string& key) REQUIRES(mu) {
    auto it = admitted.find(key);
    if (it == admitted.end()) return;
    Admitted& a = it->second;
    running.SubUnchecked(a.request);
    --running_pods[a.job];
    if (auto u = node_usage.find(a.node); u != node_usage.end()) {
      NodeUsage& nu = u->second;
      if (--nu.pods <= 0) {
        node_usage.erase(u);
      } else {
        nu.requested.SubUnchecked(a.request);
        for (const HostPort& p : a.ports) {
          if (auto at = std::find(nu.ports.begin(), nu.ports.end(), p); at != nu.ports.end())
            nu.ports.erase(at);
        }
      }
    }
    admitted.erase(it);
  }

  // The kubelet's rejectPod: the pod fails without starting, and counts as finished for its job.
  void RefuseLocked(std::shared_ptr<k8s::Pod> pod, const std::string& job, const Refusal& refusal)
      REQUIRES(mu) {
    const int64_t now = WallMs(*clock);
    pod->status.phase = "Failed";
    pod->status.start_time = now;
    pod->status.conditions.push_back(
        {kAdmissionConditionType, "False", refusal.reason, "Pod " + refusal.message, now});
    ++stats.admission_refusals;
    ++stats.admission_refusal_reasons[refusal.reason];
    const std::string who = k8s::ObjectKey(pod->metadata) + " on " + std::string(pod->spec.node_name);
    if (stats.admission_refusal_examples.size() < kAdmissionRefusalExamples) {
      stats.admission_refusal_examples.push_back(
          fmt::format("{}: {}: Pod {}", who, refusal.reason, refusal.message));
    }
    spdlog::debug("sim: kubelet refused {}: {}: Pod {}", who, refusal.reason, refusal.message);
    PutPodLocked(std::move(pod), EventType::kUpdate);
    PodDoneLocked(job);
  }

  void FinishLocked(const std::string& key, uint64_t inc) REQUIRES(mu) {
    if (incarnation[key] != inc) return;
    auto slash = key.find('/');
    auto cur = store.GetPod(key.substr(0, slash), key.substr(slash + 1));
    if (!cur.ok() || (*cur)->status.phase != "Running") return;
    auto pod = std::make_shared<k8s::Pod>(**cur);
    pod->status.phase = "Succeeded";
    const std::string job = JobOf(*pod);
    ReleaseLocked(key);
    ++stats.pod_finishes;
    PutPodLocked(pod, EventType::kUpdate);
    PodDoneLocked(job);
  }

  // One more pod of `job` is done (Succeeded, or Failed at admission): once all are, the job
  // has finished and is cleaned up after `cleanup_delay`.
  void PodDoneLocked(const std::string& job) REQUIRES(mu) {
    JobRecord& r = records[job];
    if (++finished_pods[job] >= r.tasks && !r.finished) {
      r.finished = clock->Now();
      ++stats.jobs_finished;
      if (stats.jobs_running > 0 && r.all_started) --stats.jobs_running;
      After(options.cleanup_delay, [job](State& s) {
        s.mu.AssertHeld();
        s.CleanupLocked(job);
      });
    }
  }

  void DeletePodLocked(const k8s::Pod& pod) REQUIRES(mu) {
    const std::string job = JobOf(pod);
    if (auto it = pods_of_job.find(job); it != pods_of_job.end()) {
      it->second.erase(k8s::ObjectKey(pod.metadata));
      if (it->second.empty()) pods_of_job.erase(it);
    }
    store.DeletePod(pod.metadata.namespace_, pod.metadata.name);
  }

  void CleanupLocked(const std::string& job) REQUIRES(mu) {
    auto it = pods_of_job.find(job);
    const std::set<std::string> keys = it == pods_of_job.end() ? std::set<std::string>{} : it->second;
    for (const auto& key : keys) {
      const auto slash = key.find('/');
      auto p = store.GetPod(key.substr(0, slash), key.substr(slash + 1));
      if (!p.ok()) continue;
      const k8s::PodPtr pod = *p;
      ++incarnation[key];
      ReleaseLocked(key);  // a pod still running when its job is cleaned up gives its node back
      DeletePodLocked(*pod);
      EmitLocked(EventType::kDelete, *pod);
    }
    if (auto it = pod_groups.find(job); it != pod_groups.end()) {
      EmitLocked(EventType::kDelete, it->second);
      pod_groups.erase(it);
    }
  }
};

SimCluster::SimCluster(SimOptions options, std::shared_ptr<Clock> clock)
    : state_(std::make_shared<State>(options, std::move(clock))) {}

SimCluster::~SimCluster() { Shutdown(); }

void SimCluster::SetDeliver(Deliver deliver) {
  MutexLock lock(&state_->mu);
  state_->deliver = std::move(deliver);
}

void SimCluster::Shutdown() {
  MutexLock lock(&state_->mu);
  state_->shut_down = true;
}

void SimCluster::Load(const SimWorkload& w) {
  State& s = *state_;
  MutexLock lock(&s.mu);
  for (const auto& pc : w.priority_classes) s.EmitLocked(EventType::kAdd, *pc);
  for (const auto& q : w.queues) {
    s.queues[q->metadata.name] = *q;
    s.EmitLocked(EventType::kAdd, *q);
  }
  for (const auto& n : w.nodes) {
    s.store.PutNode(n);
    auto a = ResourceFromList(n->status.allocatable, "status.allocatable");
    if (a.ok()) s.allocatable.Add(*a);
    s.node_allocatable[n->metadata.name] = a.ok() ? *a : Resource();
    s.EmitLocked(EventType::kAdd, *n);
  }
  for (const auto& hn : w.hypernodes) s.EmitLocked(EventType::kAdd, *hn);
  // Before the jobs arrive: a pod's claims are known when it is first scheduled.
  for (const auto& sc : w.storage_classes) s.EmitLocked(EventType::kAdd, *sc);
  for (const auto& pv : w.persistent_volumes) s.EmitLocked(EventType::kAdd, *pv);
  for (const auto& pvc : w.persistent_volume_claims) s.EmitLocked(EventType::kAdd, *pvc);
  for (const auto& job : w.jobs) {
    const std::string key = k8s::ObjectKey(job.pod_group->metadata);
    s.job_specs[key] = job;
    ++s.arrivals_pending;
    s.After(job.submit, [key](State& st) {
      st.mu.AssertHeld();
      st.SubmitLocked(key);
    });
  }
  s.ScheduleRelist();
}

void SimCluster::StopFaults() {
  MutexLock lock(&state_->mu);
  state_->options.bind_error_rate = 0;
  state_->options.bind_conflict_rate = 0;
  state_->options.watch_drop_rate = 0;
}

Result<k8s::NodePtr> SimCluster::GetNode(const std::string& name) const {
  return state_->store.GetNode(name);
}
Result<k8s::PodPtr> SimCluster::GetPod(const std::string& ns, const std::string& name) const {
  return state_->store.GetPod(ns, name);
}
std::vector<k8s::NodePtr> SimCluster::ListNodes() const { return state_->store.ListNodes(); }
std::vector<k8s::PodPtr> SimCluster::ListPods() const { return state_->store.ListPods(); }

std::vector<Status> SimCluster::Bind(const std::vector<BindContext*>& batch) {
  State& s = *state_;
  std::vector<Status> out;
  out.reserve(batch.size());
  MutexLock lock(&s.mu);
  for (BindContext* ctx : batch) {
    const std::string& ns = ctx->task.namespace_();
    const std::string& name = ctx->task.name();
    auto cur = s.store.GetPod(ns, name);
    if (!cur.ok()) {
      out.push_back(Status::NotFound(fmt::format("pods \"{}\" not found", name)));
      continue;
    }
    if ((*cur)->metadata.uid != ctx->task.uid()) {
      out.push_back(Status::Conflict(fmt::format("pod {}/{}: uid {} is not the bound task's {}", ns, name,
                                                 (*cur)->metadata.uid, ctx->task.uid())));
      continue;
    }
    if (!(*cur)->spec.node_name.empty()) {
      out.push_back(Status::Conflict(
          fmt::format("pod {}/{} is already assigned to node \"{}\"", ns, name, (*cur)->spec.node_name)));
      continue;
    }
    if (!s.store.GetNode(ctx->node_name).ok()) {
      out.push_back(Status::NotFound(fmt::format("nodes \"{}\" not found", ctx->node_name)));
      continue;
    }
    if (s.Roll(s.options.bind_error_rate)) {
      ++s.stats.bind_faults;
      out.push_back(Status::Unavailable(
          fmt::format("injected: binding {}/{} failed: the server is unavailable", ns, name)));
      continue;
    }
    if (s.Roll(s.options.bind_conflict_rate)) {
      ++s.stats.bind_conflicts;
      out.push_back(Status::Conflict(
          fmt::format("injected: Operation cannot be fulfilled on pods/binding \"{}\"", name)));
      continue;
    }
    auto pod = std::make_shared<k8s::Pod>(**cur);
    pod->spec.node_name = ctx->node_name;
    for (const auto& [k, v] : ctx->task.annotations()) pod->metadata.annotations[k] = v;
    // The pre-binders' pod changes land with the binding (in one step here: the simulated
    // server has no refused-binding-after-patch window to undo).
    ApplyPodPatch(ctx->pod_patch, pod->metadata);
    s.PutPodLocked(pod, EventType::kUpdate);
    ++s.stats.binds;
    const std::string key = ns + "/" + name;
    const uint64_t inc = s.incarnation[key];
    s.After(s.options.start_delay, [key, inc](State& st) {
      st.mu.AssertHeld();
      st.StartLocked(key, inc);
    });
    out.push_back(Status::Ok());
  }
  return out;
}

Status SimCluster::Evict(const k8s::Pod& target, const std::string& reason) {
  State& s = *state_;
  MutexLock lock(&s.mu);
  auto cur = s.store.GetPod(target.metadata.namespace_, target.metadata.name);
  if (!cur.ok()) return Status::NotFound(fmt::format("pods \"{}\" not found", target.metadata.name));
  if ((*cur)->metadata.deletion_timestamp) return Status::Ok();  // already terminating
  auto pod = std::make_shared<k8s::Pod>(**cur);
  pod->metadata.deletion_timestamp = WallMs(*s.clock);
  pod->status.conditions.push_back(
      {"DisruptionTarget", "True", "EvictionByEvictionAPI", reason, WallMs(*s.clock)});
  const std::string key = k8s::ObjectKey(pod->metadata);
  s.PutPodLocked(pod, EventType::kUpdate);
  ++s.stats.evictions;
  const uint64_t inc = ++s.incarnation[key];  // the kubelet's timers for this pod stop
  s.After(s.options.eviction_grace, [key, inc](State& st) {
    st.mu.AssertHeld();
    if (st.incarnation[key] != inc) return;
    auto slash = key.find('/');
    auto gone = st.store.GetPod(key.substr(0, slash), key.substr(slash + 1));
    if (!gone.ok()) return;
    const std::string job = State::JobOf(**gone);
    st.ReleaseLocked(key);  // a running pod holds its node until it is deleted
    st.DeletePodLocked(**gone);
    st.EmitLocked(EventType::kDelete, **gone);
    // The job controller recreates the pod, Pending, with a new uid.
    auto spec = st.job_specs.find(job);
    if (spec == st.job_specs.end() || st.records[job].finished) return;
    for (const auto& p : spec->second.pods) {
      if (p->metadata.name != (*gone)->metadata.name) continue;
      auto again = std::make_shared<k8s::Pod>(*p);
      again->metadata.uid = fmt::format("{}-{}", p->metadata.uid, inc);
      again->metadata.creation_timestamp = WallMs(*st.clock);
      st.PutPodLocked(std::move(again), EventType::kAdd);
    }
  });
  return Status::Ok();
}

Status SimCluster::UpdatePodCondition(const k8s::Pod& target, const k8s::PodCondition& condition) {
  State& s = *state_;
  MutexLock lock(&s.mu);
  auto cur = s.store.GetPod(target.metadata.namespace_, target.metadata.name);
  if (!cur.ok()) return Status::NotFound(fmt::format("pods \"{}\" not found", target.metadata.name));
  auto pod = std::make_shared<k8s::Pod>(**cur);
  bool replaced = false;
  for (auto& c : pod->status.conditions.mut()) {
    if (c.type == condition.type) {
      c = condition;
      replaced = true;
    }
  }
  if (!replaced) pod->status.conditions.push_back(condition);
  ++s.stats.status_writes;
  s.PutPodLocked(pod, EventType::kUpdate);
  return Status::Ok();
}

Status SimCluster::UpdatePodGroup(const k8s::PodGroup& pg) {
  State& s = *state_;
  MutexLock lock(&s.mu);
  auto it = s.pod_groups.find(k8s::ObjectKey(pg.metadata));
  if (it == s.pod_groups.end())
    return Status::NotFound(fmt::format("podgroups \"{}\" not found", pg.metadata.name));
  it->second.status = pg.status;
  it->second.metadata.resource_version = s.NextRv();
  ++s.stats.status_writes;
  s.EmitLocked(EventType::kUpdate, it->second);
  return Status::Ok();
}

Status SimCluster::UpdateQueueStatus(const k8s::Queue& queue) {
  State& s = *state_;
  MutexLock lock(&s.mu);
  auto it = s.queues.find(queue.metadata.name);
  if (it == s.queues.end()) {
    // root/default queues the cache created itself: the API server would have them.
    it = s.queues.emplace(queue.metadata.name, queue).first;
  }
  it->second.status = queue.status;
  it->second.metadata.resource_version = s.NextRv();
  ++s.stats.status_writes;
  s.EmitLocked(EventType::kUpdate, it->second);
  return Status::Ok();
}

void SimCluster::Event(const EventRef&, const std::string&, const std::string& reason, const std::string&) {
  MutexLock lock(&state_->mu);
  ++state_->stats.recorded_events[reason];
}

SimStats SimCluster::stats() const {
  MutexLock lock(&state_->mu);
  return state_->stats;
}

std::vector<JobRecord> SimCluster::jobs() const {
  MutexLock lock(&state_->mu);
  std::vector<JobRecord> out;
  out.reserve(state_->records.size());
  for (const auto& [k, r] : state_->records) out.push_back(r);
  return out;
}

Resource SimCluster::running_requests() const {
  MutexLock lock(&state_->mu);
  return state_->running;
}

Resource SimCluster::total_allocatable() const {
  MutexLock lock(&state_->mu);
  return state_->allocatable;
}

Resource SimCluster::node_requests(const std::string& node) const {
  MutexLock lock(&state_->mu);
  auto it = state_->node_usage.find(node);
  return it == state_->node_usage.end() ? Resource() : it->second.requested;
}

bool SimCluster::AllJobsFinished() const {
  MutexLock lock(&state_->mu);
  return state_->arrivals_pending == 0 && state_->stats.jobs_finished == state_->stats.jobs_submitted;
}

}  // namespace volcache::sim
