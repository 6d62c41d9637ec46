#pragma once
// CacheMetrics: volcache's metrics for one CacheRuntime, exported through a metrics::Registry
// (prometheus-cpp; docs/ADMIN.md lists every metric).
//
//  - Event-driven (series in the registry's prometheus-cpp families): bind batch size and
//    latency (it takes the runtime's bind observer — SetBindObserver has one slot, so nothing
//    else may set it while this object lives), node sync durations (likewise the runtime's
//    node-sync observer), the wait of items in the node, errTasks and deletedJobs queues (it
//    takes those queues' wait observers too), and the sessions (ObserveSession,
//    ObserveSnapshot).
//  - At scrape time (a registry collector that builds its families fresh at every scrape,
//    nothing stored): totals mirrored from the runtime's and the cache's counters, queue
//    depths/adds/retries, the bind flow, nodes/jobs/tasks by state and the per-queue and
//    per-job series. Counting by state reads a private snapshot that is refreshed
//    incrementally (SchedulerCache::UpdateSnapshot: cost grows with what changed since the
//    previous scrape, not with the cluster), so a scrape stays cheap. Like any snapshot it
//    makes the cache copy-on-write an object it shares at its next change: at most one extra
//    clone per object changed between a session's snapshot and a scrape.
//  - Lifecycle: a queue's series are exported while the queue is in the cache, a job's while
//    it is schedulable (has its PodGroup and queue): once it leaves, the next scrape has no
//    series for it.
//
// Borrows: the registry and the runtime must outlive it. The destructor detaches every
// observer and the collector (waiting for a scrape in progress); the event-driven families
// stay in the registry.
// Thread-safety: ObserveSnapshot/ObserveSession may be called from any thread; the collector
// runs on the scraping thread.

#include <cstdint>
#include <memory>

#include "workers/clock.h"

namespace volcache {

class CacheRuntime;
namespace metrics {
class Registry;
}

// One scheduling session, as the daemon's session loop reports it (ObserveSession).
struct SessionSample {
  double duration_seconds = 0;  // the whole session
  double snapshot_seconds = 0;  // taking or refreshing its snapshot
  int64_t tasks_placed = 0;     // placements in the session's plan
  int64_t binds_requested = 0;  // placements handed to the bind flow
  int64_t jobs_unschedulable = 0;
  // Fairness actions (session/enqueue.h, session/reclaim.h): zero when they are off.
  int64_t jobs_enqueued = 0;
  int64_t tasks_pipelined = 0;
  int64_t evictions_reclaim = 0;
  int64_t evictions_preempt = 0;
};

struct CacheMetricsOptions {
  // Per-job series (volcache_job_*): one series per job with a PodGroup. Turn off for
  // clusters with very many short jobs if the cardinality is a concern.
  bool per_job_series = true;
};

class CacheMetrics {
 public:
  CacheMetrics(metrics::Registry* registry, CacheRuntime* runtime, CacheMetricsOptions options = {});
  ~CacheMetrics();
  CacheMetrics(const CacheMetrics&) = delete;
  CacheMetrics& operator=(const CacheMetrics&) = delete;

  // The session calls this with how long taking (or refreshing) its snapshot took.
  void ObserveSnapshot(Duration duration);
  // After every session: volcache_sessions_total, volcache_session_duration_seconds,
  // volcache_session_tasks_placed / volcache_session_binds_requested (per-session
  // histograms), volcache_session_jobs_unschedulable (gauge: the last session), and the
  // snapshot duration (ObserveSnapshot).
  void ObserveSession(const SessionSample& sample);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache
