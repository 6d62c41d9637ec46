#include "server/cache_metrics.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/check.h"
#include "api/cluster_info.h"
#include "api/task_status.h"
#include "cache/runtime.h"
#include "server/metrics.h"
#include "workers/work_queue.h"

namespace volcache {

namespace {

using metrics::Counter;
using metrics::Family;
using metrics::Gauge;
using metrics::Histogram;
using LabelValues = std::vector<std::string>;

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Sets the series written during one scrape and removes every other series of the family:
// objects that left the cache take their series with them.
class ScrapeSet {
 public:
  explicit ScrapeSet(Family<Gauge>* family) : family_(family) {}
  void Set(const LabelValues& values, double v) {
    family_->WithLabels(values)->Set(v);
    seen_.insert(values);
  }
  void Finish() {
    family_->RemoveIf([this](const LabelValues& v) { return seen_.count(v) == 0; });
  }

 private:
  Family<Gauge>* family_;
  std::set<LabelValues> seen_;
};

// Resources in the units users read: cpu in cores, memory in bytes, pods as a count, other
// scalars (milli-units inside) in units. Zero dimensions other than cpu and memory omitted.
std::vector<std::pair<std::string, double>> ResourceValues(const Resource& r) {
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back("cpu", r.milli_cpu() / 1000.0);
  out.emplace_back("memory", static_cast<double>(r.memory()));
  for (const auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->value == 0) continue;
    double v = s->id == ResourceNames::kPods ? static_cast<double>(s->value) : s->value / 1000.0;
    out.emplace_back(ResourceNames::Name(s->id), v);
  }
  return out;
}

// Dominant resource share of `allocated` against the cluster's allocatable (DRF).
double DominantShare(const Resource& allocated, const Resource& total) {
  double share = 0;
  auto consider = [&share](int64_t used, int64_t cap) {
    if (cap > 0) share = std::max(share, static_cast<double>(used) / static_cast<double>(cap));
  };
  consider(allocated.milli_cpu(), total.milli_cpu());
  consider(allocated.memory(), total.memory());
  for (const auto* s = allocated.scalars_begin(); s != allocated.scalars_end(); ++s) {
    if (s->id != ResourceNames::kPods) consider(s->value, total.Get(s->id));
  }
  return share;
}

struct QueueAgg {
  Resource allocated;
  int jobs = 0;
  int64_t pending_tasks = 0;
};

}  // namespace

struct CacheMetrics::Impl {
  Impl(metrics::Registry* registry, CacheRuntime* runtime, CacheMetricsOptions options)
      : registry(registry), runtime(runtime), options(options) {}

  metrics::Registry* const registry;
  CacheRuntime* const runtime;
  const CacheMetricsOptions options;
  int collector_id = 0;

  // Event-driven.
  std::shared_ptr<Histogram> snapshot_duration, bind_latency, bind_batch_size;
  std::shared_ptr<Histogram> session_duration, session_placed, session_binds;
  std::shared_ptr<Counter> sessions;
  std::shared_ptr<Gauge> session_unschedulable;
  Family<Histogram>* queue_wait = nullptr;
  Family<Histogram>* node_sync = nullptr;

  // Mirrored totals.
  std::shared_ptr<Counter> pods_bound, binds_failed, bind_batches, negative_idle;
  Family<Counter>* evictions = nullptr;
  Family<Counter>* status_writes = nullptr;
  Family<Counter>* cache_events = nullptr;
  Family<Counter>* queue_adds = nullptr;
  Family<Counter>* queue_retries = nullptr;

  // Gauges computed at scrape time.
  Family<Gauge>* queue_depth = nullptr;
  Family<Gauge>* queue_delayed = nullptr;
  Family<Gauge>* queue_processing = nullptr;
  std::shared_ptr<Gauge> bind_queued, bind_in_flight;
  Family<Gauge>* cache_objects = nullptr;
  Family<Gauge>* nodes = nullptr;
  Family<Gauge>* jobs = nullptr;
  Family<Gauge>* tasks = nullptr;
  Family<Gauge>* queue_weight = nullptr;
  Family<Gauge>* queue_allocated = nullptr;
  Family<Gauge>* queue_share = nullptr;
  Family<Gauge>* queue_jobs = nullptr;
  Family<Gauge>* queue_pending_tasks = nullptr;
  Family<Gauge>* job_share = nullptr;
  Family<Gauge>* job_pending_tasks = nullptr;
  Family<Gauge>* job_allocated_tasks = nullptr;

  std::mutex collect_mu;                  // Collect may also be called directly
  std::unique_ptr<ClusterInfo> snapshot;  // guarded by collect_mu; refreshed incrementally

  void Register();
  void CollectLocked();
};

void CacheMetrics::Impl::Register() {
  auto& r = *registry;
  snapshot_duration = r.AddHistogram("volcache_snapshot_duration_seconds",
                                     "Time the session took to take or refresh its cluster snapshot.", {},
                                     metrics::ExponentialBuckets(0.0001, 2, 18))
                          .WithLabels({});
  session_duration = r.AddHistogram("volcache_session_duration_seconds",
                                    "Time one scheduling session took (snapshot, allocate, commit, close).",
                                    {}, metrics::ExponentialBuckets(0.0001, 2, 18))
                         .WithLabels({});
  session_placed = r.AddHistogram("volcache_session_tasks_placed", "Tasks placed by one scheduling session.",
                                  {}, metrics::ExponentialBuckets(1, 4, 10))
                       .WithLabels({});
  session_binds = r.AddHistogram("volcache_session_binds_requested",
                                 "Binds one scheduling session handed to the bind flow.", {},
                                 metrics::ExponentialBuckets(1, 4, 10))
                      .WithLabels({});
  sessions = r.AddCounter("volcache_sessions_total", "Scheduling sessions run.").WithLabels({});
  session_unschedulable =
      r.AddGauge("volcache_session_jobs_unschedulable", "Jobs the last session tried and left not ready.")
          .WithLabels({});
  bind_latency = r.AddHistogram("volcache_bind_latency_seconds",
                                "Latency of one bind batch, from pre-bind start to its outcomes handled.", {},
                                metrics::ExponentialBuckets(0.001, 2, 15))
                     .WithLabels({});
  bind_batch_size = r.AddHistogram("volcache_bind_batch_size", "Tasks per bind batch handed to the binder.",
                                   {}, metrics::ExponentialBuckets(1, 2, 11))
                        .WithLabels({});
  queue_wait = &r.AddHistogram("volcache_workqueue_wait_seconds",
                               "Time an item waited in a work queue between ready and picked up by a worker.",
                               {"queue"}, metrics::ExponentialBuckets(0.0001, 4, 12));
  node_sync = &r.AddHistogram("volcache_node_sync_duration_seconds",
                              "Time one node sync (SyncNode by a node-sync worker) took, by result.",
                              {"result"}, metrics::ExponentialBuckets(0.00001, 4, 10));

  pods_bound =
      r.AddCounter("volcache_pods_bound_total", "Binds that succeeded (rate() gives pods bound per second).")
          .WithLabels({});
  binds_failed =
      r.AddCounter("volcache_binds_failed_total", "Binds that failed (the task was forgotten and resynced).")
          .WithLabels({});
  bind_batches = r.AddCounter("volcache_bind_batches_total", "Bind batches dispatched.").WithLabels({});
  evictions = &r.AddCounter("volcache_evictions_total", "Evictions executed, by result.", {"result"});
  status_writes = &r.AddCounter("volcache_status_writes_total",
                                "PodGroup, Queue and pod status writes, by result.", {"result"});
  cache_events = &r.AddCounter("volcache_cache_events_total", "Cluster events the cache applied or refused.",
                               {"result"});
  negative_idle = r.AddCounter("volcache_node_negative_idle_total",
                               "Times a node's idle resources went negative (accounting out of step with the "
                               "cluster).")
                      .WithLabels({});
  queue_adds = &r.AddCounter("volcache_workqueue_adds_total", "Adds that made an item dirty, per work queue.",
                             {"queue"});
  queue_retries = &r.AddCounter("volcache_workqueue_retries_total",
                                "Rate-limited re-adds (retries), per work queue.", {"queue"});

  queue_depth = &r.AddGauge("volcache_workqueue_depth", "Items ready in a work queue.", {"queue"});
  queue_delayed = &r.AddGauge("volcache_workqueue_delayed",
                              "Items waiting in a work queue for their retry time.", {"queue"});
  queue_processing = &r.AddGauge("volcache_workqueue_processing",
                                 "Items being processed by a work queue's workers.", {"queue"});
  bind_queued = r.AddGauge("volcache_bind_flow_queued", "Bind contexts waiting in the BindFlow channel.")
                    .WithLabels({});
  bind_in_flight =
      r.AddGauge("volcache_bind_flow_in_flight", "Binds dispatched whose outcome is not yet handled.")
          .WithLabels({});
  cache_objects = &r.AddGauge("volcache_cache_objects",
                              "Objects held by the cache, including those a snapshot leaves out.", {"kind"});
  nodes = &r.AddGauge("volcache_nodes", "Nodes by state (ready, not_ready).", {"state"});
  jobs = &r.AddGauge("volcache_jobs",
                     "Schedulable jobs (with a PodGroup and a known queue) by PodGroup phase.", {"phase"});
  tasks = &r.AddGauge("volcache_tasks", "Tasks of schedulable jobs by status.", {"status"});
  queue_weight = &r.AddGauge("volcache_queue_weight", "Queue weight.", {"queue"});
  queue_allocated =
      &r.AddGauge("volcache_queue_allocated",
                  "Resources allocated to a queue's jobs (cpu in cores, memory in bytes, others in "
                  "units).",
                  {"queue", "resource"});
  queue_share = &r.AddGauge(
      "volcache_queue_share",
      "Dominant resource share of a queue's allocation against the cluster's allocatable.", {"queue"});
  queue_jobs = &r.AddGauge("volcache_queue_jobs", "Schedulable jobs in a queue.", {"queue"});
  queue_pending_tasks =
      &r.AddGauge("volcache_queue_pending_tasks", "Pending tasks of a queue's jobs.", {"queue"});
  if (options.per_job_series) {
    job_share =
        &r.AddGauge("volcache_job_share",
                    "Dominant resource share of a job's allocation against the cluster's allocatable.",
                    {"namespace", "job", "queue"});
    job_pending_tasks =
        &r.AddGauge("volcache_job_pending_tasks", "A job's pending tasks.", {"namespace", "job", "queue"});
    job_allocated_tasks =
        &r.AddGauge("volcache_job_allocated_tasks", "A job's tasks in Allocated, Binding, Bound or Running.",
                    {"namespace", "job", "queue"});
  }
}

void CacheMetrics::Impl::CollectLocked() {
  SchedulerCache& cache = runtime->cache();

  const RuntimeCounters rc = runtime->counters();
  pods_bound->Set(static_cast<double>(rc.binds_succeeded));
  binds_failed->Set(static_cast<double>(rc.binds_failed));
  evictions->WithLabels({"ok"})->Set(static_cast<double>(rc.evictions_ok));
  evictions->WithLabels({"failed"})->Set(static_cast<double>(rc.evictions_failed));
  status_writes->WithLabels({"ok"})->Set(static_cast<double>(rc.status_writes));
  status_writes->WithLabels({"failed"})->Set(static_cast<double>(rc.status_write_failures));
  const CacheCounters cc = cache.counters();
  cache_events->WithLabels({"applied"})->Set(static_cast<double>(cc.events_applied));
  cache_events->WithLabels({"refused"})->Set(static_cast<double>(cc.events_refused));
  negative_idle->Set(static_cast<double>(cc.negative_idle));

  const BindFlow::Stats bf = runtime->bind_flow_stats();
  bind_batches->Set(static_cast<double>(bf.batches));
  bind_queued->Set(static_cast<double>(bf.queued));
  bind_in_flight->Set(static_cast<double>(bf.in_flight));

  auto queue = [this](const std::string& name, const WorkQueueStats& s) {
    queue_depth->WithLabels({name})->Set(static_cast<double>(s.depth));
    queue_delayed->WithLabels({name})->Set(static_cast<double>(s.delayed));
    queue_processing->WithLabels({name})->Set(static_cast<double>(s.processing));
    queue_adds->WithLabels({name})->Set(static_cast<double>(s.adds));
    queue_retries->WithLabels({name})->Set(static_cast<double>(s.retries));
  };
  queue(cache.node_queue().name(), cache.node_queue().Stats());
  queue(cache.err_tasks().name(), cache.err_tasks().Stats());
  queue(cache.deleted_jobs().name(), cache.deleted_jobs().Stats());
  queue("status", runtime->status_queue_stats());

  // Counts from the cache first, then the snapshot: a node or job added in between shows in
  // the snapshot only, so not_ready is clamped at zero.
  const size_t all_nodes = cache.num_nodes();
  cache_objects->WithLabels({"nodes"})->Set(static_cast<double>(all_nodes));
  cache_objects->WithLabels({"jobs"})->Set(static_cast<double>(cache.num_jobs()));
  cache_objects->WithLabels({"tasks"})->Set(static_cast<double>(cache.num_tasks()));
  if (snapshot) {
    cache.UpdateSnapshot(snapshot.get());
  } else {
    snapshot = cache.Snapshot();
  }
  const ClusterInfo& ci = *snapshot;
  const size_t ready = ci.nodes().size();
  nodes->WithLabels({"ready"})->Set(static_cast<double>(ready));
  nodes->WithLabels({"not_ready"})->Set(static_cast<double>(all_nodes > ready ? all_nodes - ready : 0));

  std::array<int64_t, kTaskStatusCount> by_status{};
  std::map<std::string, int64_t> by_phase = {
      {"Pending", 0}, {"Inqueue", 0}, {"Running", 0}, {"Unknown", 0}, {"Completed", 0}};
  std::unordered_map<std::string, QueueAgg> by_queue;
  ScrapeSet job_share_set(job_share), job_pending_set(job_pending_tasks), job_alloc_set(job_allocated_tasks);
  for (const auto& [_, job] : ci.jobs()) {
    const std::string& phase = job->pod_group_phase();
    ++by_phase[phase.empty() ? "Unknown" : phase];
    int64_t allocated_tasks = 0;
    for (int i = 0; i < kTaskStatusCount; ++i) {
      const TaskStatus s = TaskStatusFromIndex(i);
      const int64_t n = static_cast<int64_t>(job->CountWithStatus(s));
      by_status[i] += n;
      if (IsAllocatedStatus(s)) allocated_tasks += n;
    }
    const int64_t pending = static_cast<int64_t>(job->CountWithStatus(TaskStatus::kPending));
    QueueAgg& q = by_queue[job->queue()];
    q.allocated.Add(job->allocated());
    ++q.jobs;
    q.pending_tasks += pending;
    if (options.per_job_series) {
      const LabelValues labels = {job->namespace_(), job->name(), job->queue()};
      job_share_set.Set(labels, DominantShare(job->allocated(), ci.total_allocatable()));
      job_pending_set.Set(labels, static_cast<double>(pending));
      job_alloc_set.Set(labels, static_cast<double>(allocated_tasks));
    }
  }
  if (options.per_job_series) {
    job_share_set.Finish();
    job_pending_set.Finish();
    job_alloc_set.Finish();
  }
  // Phases and statuses are small fixed sets: every one is exported, zero included.
  for (const auto& [phase, n] : by_phase) jobs->WithLabels({phase})->Set(static_cast<double>(n));
  for (int i = 0; i < kTaskStatusCount; ++i) {
    tasks->WithLabels({std::string(TaskStatusName(TaskStatusFromIndex(i)))})
        ->Set(static_cast<double>(by_status[i]));
  }

  ScrapeSet weight_set(queue_weight), alloc_set(queue_allocated), share_set(queue_share),
      jobs_set(queue_jobs), pending_set(queue_pending_tasks);
  for (const auto& [name, info] : ci.queues) {
    const QueueAgg& agg = by_queue[name];  // a queue without jobs reads as zero
    weight_set.Set({name}, info.weight);
    for (const auto& [resource, v] : ResourceValues(agg.allocated)) alloc_set.Set({name, resource}, v);
    share_set.Set({name}, DominantShare(agg.allocated, ci.total_allocatable()));
    jobs_set.Set({name}, agg.jobs);
    pending_set.Set({name}, static_cast<double>(agg.pending_tasks));
  }
  weight_set.Finish();
  alloc_set.Finish();
  share_set.Finish();
  jobs_set.Finish();
  pending_set.Finish();
}

CacheMetrics::CacheMetrics(metrics::Registry* registry, CacheRuntime* runtime, CacheMetricsOptions options)
    : impl_(std::make_unique<Impl>(registry, runtime, options)) {
  VC_CHECK(registry != nullptr && runtime != nullptr, "CacheMetrics needs a registry and a runtime");
  impl_->Register();
  Impl* impl = impl_.get();
  // The observers may still be running on another thread after they were replaced (the
  // runtime and the queues call a copy outside their locks), so they hold the histograms,
  // never `impl`.
  runtime->SetBindObserver(
      [batch = impl->bind_batch_size, latency = impl->bind_latency](size_t n, Duration d) {
        batch->Observe(static_cast<double>(n));
        latency->Observe(Seconds(d));
      });
  runtime->SetNodeSyncObserver(
      [ok = impl->node_sync->WithLabels({"ok"}), failed = impl->node_sync->WithLabels({"failed"})](
          Duration d, bool success) { (success ? ok : failed)->Observe(Seconds(d)); });
  for (WorkQueue* q :
       {&runtime->cache().node_queue(), &runtime->cache().err_tasks(), &runtime->cache().deleted_jobs()}) {
    auto wait = impl->queue_wait->WithLabels({q->name()});
    q->SetQueueWaitObserver([wait](Duration d) { wait->Observe(Seconds(d)); });
  }
  impl_->collector_id = registry->AddCollector([impl] {
    std::lock_guard<std::mutex> lock(impl->collect_mu);
    impl->CollectLocked();
  });
}

CacheMetrics::~CacheMetrics() {
  impl_->registry->RemoveCollector(impl_->collector_id);
  impl_->runtime->SetBindObserver(nullptr);
  impl_->runtime->SetNodeSyncObserver(nullptr);
  SchedulerCache& cache = impl_->runtime->cache();
  for (WorkQueue* q : {&cache.node_queue(), &cache.err_tasks(), &cache.deleted_jobs()})
    q->SetQueueWaitObserver(nullptr);
}

void CacheMetrics::ObserveSnapshot(Duration duration) {
  impl_->snapshot_duration->Observe(Seconds(duration));
}

void CacheMetrics::ObserveSession(const SessionSample& sample) {
  Impl& m = *impl_;
  m.snapshot_duration->Observe(sample.snapshot_seconds);
  m.session_duration->Observe(sample.duration_seconds);
  m.session_placed->Observe(static_cast<double>(sample.tasks_placed));
  m.session_binds->Observe(static_cast<double>(sample.binds_requested));
  m.session_unschedulable->Set(static_cast<double>(sample.jobs_unschedulable));
  m.sessions->Inc();
}

void CacheMetrics::Collect() {
  std::lock_guard<std::mutex> lock(impl_->collect_mu);
  impl_->CollectLocked();
}

}  // namespace volcache
