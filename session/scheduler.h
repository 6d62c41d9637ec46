#pragma once
// Scheduler: the reference session loop (SPEC §9) over a CacheRuntime.
//
// Each cycle (RunOnce):
//   open     refresh the scheduler's own snapshot (Snapshot() the first time, then the
//            incremental UpdateSnapshot(), which also drops what the last cycle wrote into it);
//   allocate Allocate() (session/allocate.h) on it;
//   commit   CacheRuntime::Bind for every placement, in plan order. A refused bind (the cache
//            changed since the snapshot: task gone, node full) drops the rest of that job's
//            placements in this cycle; it is counted, never fatal;
//   close    marks the bound tasks Allocated and the fit errors in the snapshot's jobs, then
//            UpdateJobStatus for every job that was tried or whose phase changes (see
//            NextPodGroupPhase), RecordJobStatusEvent for jobs left not ready, and
//            UpdateQueueStatus (allocated) for every queue.
// RunOnce is synchronous and deterministic: no threads of its own, time read only for the
// stats. The embedded simulator calls it once per simulated second; a daemon calls Start().
//
// Thread-safety: safe for concurrent use (one mutex serializes cycles). Start/Stop must not be
// called from inside a cycle (e.g. a bind observer), and the runtime must outlive the Scheduler.
// A cycle calls the runtime with the Scheduler's lock held (that lock is above the runtime's
// and the cache's, which the runtime takes and releases inside each call).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "api/cluster_info.h"
#include "api/job_info.h"
#include "api/mutex.h"
#include "api/status.h"
#include "cache/runtime.h"
#include "session/allocate.h"
#include "session/reclaim.h"
#include "workers/clock.h"

namespace volcache {

struct SchedulerOptions {
  SessionOptions session;
  Duration period = std::chrono::seconds(1);  // Start()'s cycle period
  // Start()'s first cycle runs this long after Start (unset: one period). A daemon that
  // starts the scheduler once the cache synced sets 0: the first placements need not wait
  // a period (issue 11 #9).
  std::optional<Duration> first_cycle_delay;
  // When > 0, no new job starts committing once this many binds were made in the cycle
  // (a job that started is finished, so gangs are never split); the rest waits for the next
  // cycle. (A cycle binding more than the bind channel holds waits in Bind until the bind
  // tick, on its own timer thread, makes room; with inline execution the runtime flushes
  // the channel on the caller instead.)
  int64_t max_binds_per_cycle = 0;
  // Fairness under contention (docs/SESSION.md "Enqueue, reclaim, preempt"): `enqueue` runs
  // the enqueue action first and makes Allocate try Inqueue jobs only (it sets
  // session.require_inqueue); `reclaim`/`preempt` plan victims after Allocate
  // (session/reclaim.h) and evict them through CacheRuntime::Evict. Pipelining onto the
  // releasing resources is session.pipeline.
  bool enqueue = false;
  bool reclaim = false;
  bool preempt = false;
  // Checks every eviction plan with CheckEvictionPlan before evicting (the simulator's
  // invariant checker); a violating plan is not executed and is reported in the stats.
  bool check_evictions = false;
};

// Volcano's `actions` list ("enqueue, allocate, reclaim, preempt"): sets enqueue/reclaim/
// preempt, and session.pipeline when something evicts (Volcano's allocate pipelines onto
// releasing resources). "allocate" is required; the cycle runs the listed actions in its
// fixed order (enqueue, allocate, reclaim, preempt) whatever the list's order. Refuses, with
// the action named, unknown actions, repeats and the ones the session does not implement
// (backfill, shuffle); `options` is unchanged on error.
Status ApplyActions(std::string_view actions, SchedulerOptions* options);
// The actions `o` runs, in the cycle's order ("enqueue, allocate, reclaim, preempt").
std::string ActionsName(const SchedulerOptions& o);

struct CycleStats {
  uint64_t cycle = 0;   // 1 for the first RunOnce
  double total_ms = 0;  // the whole cycle
  double open_ms = 0;   // snapshot refresh
  double allocate_ms = 0;
  double commit_ms = 0;  // Bind calls
  double close_ms = 0;   // status writes and events
  double enqueue_ms = 0;
  double evict_ms = 0;     // victim planning and Evict calls
  int64_t placements = 0;  // planned
  int64_t binds = 0;       // accepted by the runtime
  int64_t bind_refusals = 0;
  int64_t placements_dropped = 0;   // not tried after a refusal of the same job
  int64_t placements_deferred = 0;  // not tried: max_binds_per_cycle reached
  int64_t discarded = 0;            // tentative placements of failed gangs
  int64_t jobs_scheduled = 0;       // got at least one bind this cycle
  int64_t jobs_unschedulable = 0;   // tried and left not ready
  int64_t enqueued = 0;             // PodGroups moved Pending → Inqueue
  int64_t pipelined = 0;            // placements reserved on releasing resources (not bound)
  int64_t evictions = 0;            // accepted by CacheRuntime::Evict (reclaim + preempt)
  int64_t evictions_reclaim = 0;
  int64_t evictions_preempt = 0;
  int64_t eviction_refusals = 0;     // refused by the cache (task changed since the snapshot)
  std::string eviction_check_error;  // CheckEvictionPlan's message when the plan broke an invariant
};

// The PodGroup phase after a session, from the session's view of the job (bound tasks
// marked Allocated), keeping it simple (documented in docs/SESSION.md):
//   allocated-or-succeeded tasks >= max(minAvailable, 1) → "Running", or "Completed" when all
//   of them succeeded; otherwise a job with Running tasks that is left not ready → "Unknown";
//   otherwise "Inqueue" stays "Inqueue" and anything else becomes "Pending".
std::string NextPodGroupPhase(const JobInfo& job);

class Scheduler {
 public:
  Scheduler(CacheRuntime* runtime, SchedulerOptions options = {});
  ~Scheduler();  // Stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // One session, synchronously.
  CycleStats RunOnce() EXCLUDES(mu_);

  // Called after every cycle (RunOnce or timer) with its stats, on the cycle's thread, with
  // the Scheduler's lock held: it must not call back into the Scheduler. For metrics.
  // nullptr removes it. Set it before Start().
  void SetCycleObserver(std::function<void(const CycleStats&)> observer) EXCLUDES(mu_);

  // Runs a cycle every `options.period` on `clock` (first one after
  // `options.first_cycle_delay`, by default a period from now) until
  // Stop(), at a fixed rate: cycle k is due at start + k·period; a cycle that starts late
  // (slow cycle, or a FakeClock advanced by several periods at once) is followed by one
  // immediate catch-up cycle, never by a burst. Idempotent; Stop() waits for a cycle in
  // progress.
  void Start(std::shared_ptr<Clock> clock) EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

  CycleStats last_stats() const EXCLUDES(mu_);
  // The last cycle's plan (copied).
  AllocationPlan last_plan() const EXCLUDES(mu_);
  // Its queue outcomes only (a per-cycle reader need not copy every job's outcome).
  std::vector<QueueOutcome> last_queues() const EXCLUDES(mu_);
  // The last cycle's eviction plan (empty without reclaim/preempt).
  EvictionPlan last_evictions() const EXCLUDES(mu_);

 private:
  // Shared with the timer callbacks, so a callback that fires during or after Stop() finds
  // `self` cleared instead of a destroyed Scheduler. Lock order: TimerState::mu, then mu_.
  struct TimerState {
    explicit TimerState(Scheduler* s) : self(s) {}
    Mutex mu;
    Scheduler* self GUARDED_BY(mu);
  };

  CycleStats RunOnceLocked() REQUIRES(mu_);
  void ScheduleLocked() REQUIRES(mu_);
  void Tick() EXCLUDES(mu_);

  CacheRuntime* runtime_;
  SchedulerOptions options_;

  mutable Mutex mu_;
  std::unique_ptr<ClusterInfo> snapshot_ GUARDED_BY(mu_);
  std::function<void(const CycleStats&)> observer_ GUARDED_BY(mu_);
  AllocationPlan last_plan_ GUARDED_BY(mu_);
  EvictionPlan last_evictions_ GUARDED_BY(mu_);
  // Jobs this scheduler enqueued whose Inqueue phase may not be back from the API server yet.
  std::unordered_set<JobId> enqueued_ GUARDED_BY(mu_);
  // What the last close did for each job that session left unchanged: a job whose cache
  // version (generation), phase, session fit errors and close work are the same again gets the
  // same status, pod conditions and fit error, so only its PodGroup event is repeated (a deep
  // backlog of unchanged pending jobs costs a step of a walk each, not a fit error, a status
  // and pod condition checks). Sorted by job uid (the close walks it beside the jobs).
  struct CloseMemo {
    JobId job;
    uint64_t generation = 0;
    std::string phase;
    TaskFitErrors fit_errors;
    bool write_status = false;
    bool unschedulable = false;
    std::string fit_error;
  };
  std::vector<CloseMemo> close_memo_ GUARDED_BY(mu_);
  CycleStats last_stats_ GUARDED_BY(mu_);
  uint64_t cycles_ GUARDED_BY(mu_) = 0;
  std::shared_ptr<Clock> clock_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  std::shared_ptr<TimerState> timer_state_ GUARDED_BY(mu_);  // one per Start()
  uint64_t timer_ GUARDED_BY(mu_) = 0;
  TimePoint next_due_ GUARDED_BY(mu_){};
};

}  // namespace volcache
