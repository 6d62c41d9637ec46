#pragma once
// CacheRuntime: the SchedulerCache with its decision pipelines and background workers —
// what a scheduler embeds (SPEC §4–§6).
//
// Owns: the cache; the node-sync workers (node queue → SyncNode), the errTasks resync and
// DeletedJobs cleanup workers; the BindFlow (AddBindTask → BindFlowChannel → 20 ms tick →
// pre-binders → Binder → FinishBinding, or ForgetTask + SchedulerError condition + resync);
// the evictor pipeline; the status writer (PodGroup/Queue status and pod conditions on their
// own queue and token bucket — every write takes a token, the first of an object included —
// coalesced per object: a newer status replaces a queued or failed older one and only the
// newest is sent; never on the bind path); the assumed-task expiry timer.
// Borrows (must outlive it): the ClusterSource, Binder, Evictor, StatusUpdater, EventRecorder.
//
// Thread-safety: every public method is safe for concurrent use. No cache lock is held
// across a binder, evictor, status-updater, recorder or plugin call. The runtime's own lock
// (private, annotated in runtime.cc) is a leaf held only around its bookkeeping. The
// cache's lock is private to SchedulerCache (its Impl), so EXCLUDES cannot name it here; the
// rule holds by construction instead: the runtime reaches the cache only through its public
// methods, each of which takes and releases that lock inside, and calls out (binder through
// the BindFlow, evictor, status updater, recorder, BindContextHandlers, observers) only
// between such calls — never from a cache callback.
//
// Lifecycle: construct → Run() → (events flow in; MarkInitialListsApplied()) →
// WaitForCacheSync() → sessions → Stop(). Stop() stops accepting binds, dispatches every
// queued bind and waits for the binds in flight (nothing is lost), then stops the workers.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/job_info.h"
#include "api/queue_info.h"
#include "api/status.h"
#include "binder/binder.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "evictor/evictor.h"
#include "workers/bind_flow.h"
#include "workers/clock.h"
#include "workers/work_queue.h"

namespace volcache {

struct RuntimeOptions {
  SchedulerCacheOptions cache;
  int node_worker_threads = 20;  // --node-worker-threads
  int resync_worker_threads = 1;
  int status_worker_threads = 2;
  int dispatch_threads = 4;   // binds and evictions in flight run here
  BindFlowOptions bind_flow;  // channel capacity, BATCH_BIND_NUM, tick, max concurrent binds
  Duration expiry_period = std::chrono::seconds(1);
  double status_qps = 50;  // status writes' own token bucket (every write, first ones too)
  int status_burst = 100;
  // Tests and replay: run everything inline on the caller (FakeClock ticks drive it).
  bool inline_execution = false;
};

struct RuntimeCounters {
  uint64_t binds_succeeded = 0;
  uint64_t binds_failed = 0;
  uint64_t binds_cancelled = 0;  // queued, handed back by StopNow without an attempt
  uint64_t evictions_ok = 0;
  uint64_t evictions_failed = 0;
  uint64_t status_writes = 0;
  uint64_t status_write_failures = 0;
};

class CacheRuntime final {
 public:
  CacheRuntime(RuntimeOptions options, std::shared_ptr<Clock> clock, const ClusterSource* source,
               Binder* binder, Evictor* evictor, StatusUpdater* status, EventRecorder* recorder);
  ~CacheRuntime();  // Stop()
  CacheRuntime(const CacheRuntime&) = delete;
  CacheRuntime& operator=(const CacheRuntime&) = delete;

  SchedulerCache& cache() { return *cache_; }
  const SchedulerCache& cache() const { return *cache_; }
  PreBinderRegistry& pre_binders() { return pre_binders_; }

  // Starts the workers, the bind tick and the expiry timer. Idempotent.
  void Run();
  // The event feeder calls this once the initial lists have been applied.
  void MarkInitialListsApplied();
  // Returns once the initial lists were applied and every node event queued so far has been
  // synced; DeadlineExceeded after `timeout` (real time; with inline execution the node
  // queue is drained on the caller). Waits on conditions (the lists-applied signal, the node
  // workers finishing a sync), never on a polling period.
  Status WaitForCacheSync(Duration timeout);
  bool synced() const;
  // Stops accepting binds, dispatches everything queued, waits for binds in flight, then
  // stops every worker. Idempotent.
  void Stop();
  // Stop() for a prompt exit (SIGTERM): the binds queued and not yet dispatched are handed
  // back (the tasks are forgotten again, nothing is half-done), the binds in flight finish.
  // Idempotent; after Stop() a no-op.
  void StopNow();

  // Dispatches the queued binds now instead of at the next bind tick (a session calls it
  // once it has committed, so binding starts without waiting up to a tick). A no-op with
  // inline execution (there the clock's tick and RunDueWorkInline drive the flow).
  void FlushBinds();

  // The assume step + hand-off to the BindFlow (blocks while the channel is full; the bind
  // tick runs on its own timer thread, so a caller on the clock's timer thread — a
  // session — is never waiting on itself). On a
  // refusal nothing changed. After Stop the task is forgotten again and Cancelled returned.
  Status AddBindTask(std::unique_ptr<BindContext> ctx);
  // Builds a BindContext for `task_key` on `node` and lets every registered
  // BindContextHandler fill its extension, then AddBindTask.
  Status Bind(const std::string& task_key, const std::string& node, const void* session_state = nullptr);
  void RegisterBindContextHandler(std::shared_ptr<BindContextHandler> handler);

  // Evict accounting in the cache, then the evictor asynchronously; a failure resyncs.
  Status Evict(const std::string& task_key, const std::string& reason);

  // PodGroup status from the session's view of the job (phase, conditions, counts); written
  // asynchronously on the status queue.
  void UpdateJobStatus(const JobInfo& job, const std::string& phase);
  // Queue status (allocated), written only when it changed since the last write.
  void UpdateQueueStatus(const QueueInfo& queue);
  // Unschedulable (Volcano's "n/m tasks in gang unschedulable: <fit error>") or Scheduled event
  // on the PodGroup; for an unschedulable job, PodScheduled=False/Unschedulable with the fit
  // error (and a FailedScheduling event) on each pending pod whose cached condition differs.
  void RecordJobStatusEvent(const JobInfo& job);
  // A session's close of one job: UpdateJobStatus when `write_status`, RecordJobStatusEvent
  // when `record_event`, computing the job's fit error once (returned; "" for a ready job).
  // `fit_errors`: the task fit errors the session kept beside the job (consulted before the
  // job's own); may be null.
  std::string CloseJob(const JobInfo& job, const std::string& phase, bool write_status, bool record_event,
                       const TaskFitErrors* fit_errors);
  // RecordJobStatusEvent's event on the PodGroup alone, with the fit error CloseJob returned
  // for this same version of the job: a session whose verdict repeats the last one (its status
  // and its pods' conditions already say it, or their writes are on the way).
  void RepeatJobStatusEvent(const JobInfo& job, const std::string& fit_error);
  // Warning/FailedScheduling on each Pending pod of a job the snapshots leave out: "pod group
  // ns/name not found" or "queue q of pod group ns/name not found" (the recorder turns the
  // repeats of every session into one Event object's count). Call once per session.
  void RecordLeftOutJobEvents();

  // Runs everything due now on the caller: queues, the bind tick's work, evictions, status
  // writes (inline execution only; tests and replay).
  void RunDueWorkInline();

  // Called after every bind batch with its size and latency (pre-bind start → outcomes
  // handled), on the dispatching thread; for metrics. nullptr removes it.
  void SetBindObserver(std::function<void(size_t batch_size, Duration latency)> observer);
  // Called after every SyncNode run by the node-sync workers with how long it took (on the
  // runtime's clock) and whether it succeeded, on the worker thread; for metrics. nullptr
  // removes it. Syncs run by RunDueWorkInline are not observed.
  void SetNodeSyncObserver(std::function<void(Duration latency, bool ok)> observer);

  RuntimeCounters counters() const;
  BindFlow::Stats bind_flow_stats() const;
  // The status-write queue (its own rate limit; failed writes wait here for their retry).
  WorkQueueStats status_queue_stats() const;

 private:
  class Outcomes;
  struct Impl;
  // UpdateJobStatus / RecordJobStatusEvent with the fit error already computed ("" for a ready job).
  void WriteJobStatus(const JobInfo& job, const std::string& phase, const std::string& fit_error);
  // `pods`: also the PodScheduled conditions and FailedScheduling events of its pending pods.
  void RecordJobStatus(const JobInfo& job, const std::string& fit_error, const TaskFitErrors* fit_errors,
                       bool pods);
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<SchedulerCache> cache_;
  PreBinderRegistry pre_binders_;
};

}  // namespace volcache
