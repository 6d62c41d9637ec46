#include "server/cache_metrics.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/check.h"
#include "api/cluster_info.h"
#include "api/mutex.h"
#include "api/task_status.h"
#include "cache/runtime.h"
#include "server/metrics.h"
#include "workers/work_queue.h"

namespace volcache {

namespace {

using metrics::ScrapeFamily;
using prometheus::MetricType;

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

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

  // Event-driven series (the registry's families; they live as long as the registry).
  prometheus::Histogram* snapshot_duration = nullptr;
  prometheus::Histogram* session_duration = nullptr;
  prometheus::Histogram* session_placed = nullptr;
  prometheus::Histogram* session_binds = nullptr;
  prometheus::Histogram* bind_latency = nullptr;
  prometheus::Histogram* bind_batch_size = nullptr;
  prometheus::Histogram* node_sync_ok = nullptr;
  prometheus::Histogram* node_sync_failed = nullptr;
  prometheus::Family<prometheus::Histogram>* queue_wait = nullptr;
  prometheus::Counter* sessions = nullptr;
  prometheus::Gauge* session_unschedulable = nullptr;
  prometheus::Counter* session_enqueued = nullptr;
  prometheus::Counter* session_pipelined = nullptr;
  prometheus::Counter* session_evictions_reclaim = nullptr;
  prometheus::Counter* session_evictions_preempt = nullptr;

  Mutex collect_mu;  // guards the snapshot (one scrape at a time anyway)
  std::unique_ptr<ClusterInfo> snapshot GUARDED_BY(collect_mu);  // refreshed incrementally

  void Register();
  // Every scrape-time family: totals mirrored from the runtime's and the cache's counters,
  // queue depths, the bind flow, objects by state, per-queue and per-job series.
  std::vector<prometheus::MetricFamily> Collect() REQUIRES(collect_mu);
};

void CacheMetrics::Impl::Register() {
  auto& r = *registry;
  snapshot_duration = &r.AddHistogram("volcache_snapshot_duration_seconds",
                                      "Time the session took to take or refresh its cluster snapshot.")
                           .Add({}, metrics::ExponentialBuckets(0.0001, 2, 18));
  session_duration = &r.AddHistogram("volcache_session_duration_seconds",
                                     "Time one scheduling session took (snapshot, allocate, commit, close).")
                          .Add({}, metrics::ExponentialBuckets(0.0001, 2, 18));
  session_placed = &r.AddHistogram("volcache_session_tasks_placed", "Tasks placed by one scheduling session.")
                        .Add({}, metrics::ExponentialBuckets(1, 4, 10));
  session_binds = &r.AddHistogram("volcache_session_binds_requested",
                                  "Binds one scheduling session handed to the bind flow.")
                       .Add({}, metrics::ExponentialBuckets(1, 4, 10));
  sessions = &r.AddCounter("volcache_sessions_total", "Scheduling sessions run.").Add({});
  session_unschedulable =
      &r.AddGauge("volcache_session_jobs_unschedulable", "Jobs the last session tried and left not ready.")
           .Add({});
  session_enqueued = &r.AddCounter("volcache_session_jobs_enqueued_total",
                                   "PodGroups the sessions moved Pending to Inqueue.")
                          .Add({});
  session_pipelined = &r.AddCounter("volcache_session_tasks_pipelined_total",
                                    "Placements the sessions reserved on releasing resources (not bound).")
                           .Add({});
  auto& evictions =
      r.AddCounter("volcache_session_evictions_total",
                   "Evictions the sessions made through the cache, by action (reclaim, preempt).");
  session_evictions_reclaim = &evictions.Add({{"action", "reclaim"}});
  session_evictions_preempt = &evictions.Add({{"action", "preempt"}});
  bind_latency = &r.AddHistogram("volcache_bind_latency_seconds",
                                 "Latency of one bind batch, from pre-bind start to its outcomes handled.")
                      .Add({}, metrics::ExponentialBuckets(0.001, 2, 15));
  bind_batch_size = &r.AddHistogram("volcache_bind_batch_size", "Tasks per bind batch handed to the binder.")
                         .Add({}, metrics::ExponentialBuckets(1, 2, 11));
  queue_wait =
      &r.AddHistogram("volcache_workqueue_wait_seconds",
                      "Time an item waited in a work queue between ready and picked up by a worker.");
  auto& node_sync = r.AddHistogram("volcache_node_sync_duration_seconds",
                                   "Time one node sync (SyncNode by a node-sync worker) took, by result.");
  node_sync_ok = &node_sync.Add({{"result", "ok"}}, metrics::ExponentialBuckets(0.00001, 4, 10));
  node_sync_failed = &node_sync.Add({{"result", "failed"}}, metrics::ExponentialBuckets(0.00001, 4, 10));
}

std::vector<prometheus::MetricFamily> CacheMetrics::Impl::Collect() {
  SchedulerCache& cache = runtime->cache();
  std::vector<prometheus::MetricFamily> out;
  auto counter = [&out](const char* name, const char* help, double v) {
    ScrapeFamily(name, help, MetricType::Counter).Add({}, v).AppendTo(&out);
  };
  auto gauge = [&out](const char* name, const char* help, double v) {
    ScrapeFamily(name, help, MetricType::Gauge).Add({}, v).AppendTo(&out);
  };

  const RuntimeCounters rc = runtime->counters();
  const CacheCounters cc = cache.counters();
  const BindFlow::Stats bf = runtime->bind_flow_stats();
  counter("volcache_pods_bound_total", "Binds that succeeded (rate() gives pods bound per second).",
          static_cast<double>(rc.binds_succeeded));
  counter("volcache_binds_failed_total", "Binds that failed (the task was forgotten and resynced).",
          static_cast<double>(rc.binds_failed));
  counter("volcache_bind_batches_total", "Bind batches dispatched.", static_cast<double>(bf.batches));
  ScrapeFamily("volcache_evictions_total", "Evictions executed, by result.", MetricType::Counter, {"result"})
      .Add({"ok"}, static_cast<double>(rc.evictions_ok))
      .Add({"failed"}, static_cast<double>(rc.evictions_failed))
      .AppendTo(&out);
  ScrapeFamily("volcache_status_writes_total", "PodGroup, Queue and pod status writes, by result.",
               MetricType::Counter, {"result"})
      .Add({"ok"}, static_cast<double>(rc.status_writes))
      .Add({"failed"}, static_cast<double>(rc.status_write_failures))
      .AppendTo(&out);
  ScrapeFamily("volcache_cache_events_total", "Cluster events the cache applied or refused.",
               MetricType::Counter, {"result"})
      .Add({"applied"}, static_cast<double>(cc.events_applied))
      .Add({"refused"}, static_cast<double>(cc.events_refused))
      .AppendTo(&out);
  counter("volcache_node_negative_idle_total",
          "Times a node's idle resources went negative (accounting out of step with the cluster).",
          static_cast<double>(cc.negative_idle));

  ScrapeFamily adds("volcache_workqueue_adds_total", "Adds that made an item dirty, per work queue.",
                    MetricType::Counter, {"queue"});
  ScrapeFamily retries("volcache_workqueue_retries_total", "Rate-limited re-adds (retries), per work queue.",
                       MetricType::Counter, {"queue"});
  ScrapeFamily depth("volcache_workqueue_depth", "Items ready in a work queue.", MetricType::Gauge,
                     {"queue"});
  ScrapeFamily delayed("volcache_workqueue_delayed", "Items waiting in a work queue for their retry time.",
                       MetricType::Gauge, {"queue"});
  ScrapeFamily processing("volcache_workqueue_processing", "Items being processed by a work queue's workers.",
                          MetricType::Gauge, {"queue"});
  auto queue = [&](const std::string& name, const WorkQueueStats& s) {
    depth.Add({name}, static_cast<double>(s.depth));
    delayed.Add({name}, static_cast<double>(s.delayed));
    processing.Add({name}, static_cast<double>(s.processing));
    adds.Add({name}, static_cast<double>(s.adds));
    retries.Add({name}, static_cast<double>(s.retries));
  };
  queue(cache.node_queue().name(), cache.node_queue().Stats());
  queue(cache.err_tasks().name(), cache.err_tasks().Stats());
  queue(cache.deleted_jobs().name(), cache.deleted_jobs().Stats());
  queue("status", runtime->status_queue_stats());
  adds.AppendTo(&out);
  retries.AppendTo(&out);
  depth.AppendTo(&out);
  delayed.AppendTo(&out);
  processing.AppendTo(&out);
  gauge("volcache_bind_flow_queued", "Bind contexts waiting in the BindFlow channel.",
        static_cast<double>(bf.queued));
  gauge("volcache_bind_flow_in_flight", "Binds dispatched whose outcome is not yet handled.",
        static_cast<double>(bf.in_flight));

  // Counts from the cache first, then the snapshot: a node or job added in between shows in
  // the snapshot only, so not_ready is clamped at zero.
  const size_t all_nodes = cache.num_nodes();
  ScrapeFamily("volcache_cache_objects", "Objects held by the cache, including those a snapshot leaves out.",
               MetricType::Gauge, {"kind"})
      .Add({"nodes"}, static_cast<double>(all_nodes))
      .Add({"jobs"}, static_cast<double>(cache.num_jobs()))
      .Add({"tasks"}, static_cast<double>(cache.num_tasks()))
      .AppendTo(&out);
  if (snapshot) {
    cache.UpdateSnapshot(snapshot.get());
  } else {
    snapshot = cache.Snapshot();
  }
  const ClusterInfo& ci = *snapshot;
  const size_t ready = ci.nodes().size();
  ScrapeFamily("volcache_nodes", "Nodes by state (ready, not_ready).", MetricType::Gauge, {"state"})
      .Add({"ready"}, static_cast<double>(ready))
      .Add({"not_ready"}, static_cast<double>(all_nodes > ready ? all_nodes - ready : 0))
      .AppendTo(&out);

  std::array<int64_t, kTaskStatusCount> by_status{};
  std::map<std::string, int64_t> by_phase = {
      {"Pending", 0}, {"Inqueue", 0}, {"Running", 0}, {"Unknown", 0}, {"Completed", 0}};
  std::unordered_map<std::string, QueueAgg> by_queue;
  const std::vector<std::string> job_labels = {"namespace", "job", "queue"};
  ScrapeFamily job_share("volcache_job_share",
                         "Dominant resource share of a job's allocation against the cluster's allocatable.",
                         MetricType::Gauge, job_labels);
  ScrapeFamily job_pending("volcache_job_pending_tasks", "A job's pending tasks.", MetricType::Gauge,
                           job_labels);
  ScrapeFamily job_allocated("volcache_job_allocated_tasks",
                             "A job's tasks in Allocated, Binding, Bound or Running.", MetricType::Gauge,
                             job_labels);
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
      const std::vector<std::string> labels = {job->namespace_(), std::string(job->name()), job->queue()};
      job_share.Add(labels, DominantShare(job->allocated(), ci.total_allocatable()));
      job_pending.Add(labels, static_cast<double>(pending));
      job_allocated.Add(labels, static_cast<double>(allocated_tasks));
    }
  }
  // Phases and statuses are small fixed sets: every one is exported, zero included.
  ScrapeFamily jobs("volcache_jobs",
                    "Schedulable jobs (with a PodGroup and a known queue) by PodGroup phase.",
                    MetricType::Gauge, {"phase"});
  for (const auto& [phase, n] : by_phase) jobs.Add({phase}, static_cast<double>(n));
  jobs.AppendTo(&out);
  ScrapeFamily tasks("volcache_tasks", "Tasks of schedulable jobs by status.", MetricType::Gauge, {"status"});
  for (int i = 0; i < kTaskStatusCount; ++i)
    tasks.Add({std::string(TaskStatusName(TaskStatusFromIndex(i)))}, static_cast<double>(by_status[i]));
  tasks.AppendTo(&out);

  // A queue's series exist while the queue is in the cache; a job's while it is schedulable.
  ScrapeFamily weight("volcache_queue_weight", "Queue weight.", MetricType::Gauge, {"queue"});
  ScrapeFamily allocated(
      "volcache_queue_allocated",
      "Resources allocated to a queue's jobs (cpu in cores, memory in bytes, others in units).",
      MetricType::Gauge, {"queue", "resource"});
  ScrapeFamily share("volcache_queue_share",
                     "Dominant resource share of a queue's allocation against the cluster's allocatable.",
                     MetricType::Gauge, {"queue"});
  ScrapeFamily queue_jobs("volcache_queue_jobs", "Schedulable jobs in a queue.", MetricType::Gauge,
                          {"queue"});
  ScrapeFamily queue_pending("volcache_queue_pending_tasks", "Pending tasks of a queue's jobs.",
                             MetricType::Gauge, {"queue"});
  for (const auto& [name, info] : ci.queues) {
    const QueueAgg& agg = by_queue[name];  // a queue without jobs reads as zero
    weight.Add({name}, info.weight);
    for (const auto& [resource, v] : ResourceValues(agg.allocated)) allocated.Add({name, resource}, v);
    share.Add({name}, DominantShare(agg.allocated, ci.total_allocatable()));
    queue_jobs.Add({name}, agg.jobs);
    queue_pending.Add({name}, static_cast<double>(agg.pending_tasks));
  }
  weight.AppendTo(&out);
  allocated.AppendTo(&out);
  share.AppendTo(&out);
  queue_jobs.AppendTo(&out);
  queue_pending.AppendTo(&out);
  if (options.per_job_series) {
    job_share.AppendTo(&out);
    job_pending.AppendTo(&out);
    job_allocated.AppendTo(&out);
  }
  return out;
}

CacheMetrics::CacheMetrics(metrics::Registry* registry, CacheRuntime* runtime, CacheMetricsOptions options)
    : impl_(std::make_unique<Impl>(registry, runtime, options)) {
  VC_CHECK(registry != nullptr && runtime != nullptr, "CacheMetrics needs a registry and a runtime");
  impl_->Register();
  Impl* impl = impl_.get();
  // The observers may still be running on another thread after they were replaced (the
  // runtime and the queues call a copy outside their locks), so they hold the histograms
  // through handles that keep the registry's families alive (Registry::Share), never `impl`.
  runtime->SetBindObserver([batch = registry->Share(*impl->bind_batch_size),
                            latency = registry->Share(*impl->bind_latency)](size_t n, Duration d) {
    batch->Observe(static_cast<double>(n));
    latency->Observe(Seconds(d));
  });
  runtime->SetNodeSyncObserver(
      [ok = registry->Share(*impl->node_sync_ok), failed = registry->Share(*impl->node_sync_failed)](
          Duration d, bool success) { (success ? ok : failed)->Observe(Seconds(d)); });
  for (WorkQueue* q :
       {&runtime->cache().node_queue(), &runtime->cache().err_tasks(), &runtime->cache().deleted_jobs()}) {
    auto wait = registry->Share(
        impl->queue_wait->Add({{"queue", q->name()}}, metrics::ExponentialBuckets(0.0001, 4, 12)));
    q->SetQueueWaitObserver([wait](Duration d) { wait->Observe(Seconds(d)); });
  }
  impl_->collector_id = registry->AddCollector([impl] {
    MutexLock lock(&impl->collect_mu);
    return impl->Collect();
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
  m.sessions->Increment();
  m.session_enqueued->Increment(static_cast<double>(sample.jobs_enqueued));
  m.session_pipelined->Increment(static_cast<double>(sample.tasks_pipelined));
  m.session_evictions_reclaim->Increment(static_cast<double>(sample.evictions_reclaim));
  m.session_evictions_preempt->Increment(static_cast<double>(sample.evictions_preempt));
}

}  // namespace volcache
