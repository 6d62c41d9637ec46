#pragma once
// SimRun: the `volcache run` driver. Application layer (app/, beside cmd/): it wires the
// embedded simulated cluster (sim/), the CacheRuntime it feeds (cache/) and the reference
// Scheduler (session/), advanced together on one fake clock (20 ms steps: the bind tick; a
// session every `scheduler.period`), as fast as possible or paced to `speed` simulated
// seconds per wall second. Everything runs on the caller's thread, deterministically (the
// runtime in inline mode), so a run is reproducible from its options and seed; the cache is
// still safe to read from other threads (the HTTP admin server) while it runs.
//
// The report: makespan, job completion and wait times (mean, p95), GPU and CPU utilization
// (time-weighted, sampled every session), binds, per-queue GPU share against weight, and the
// errors seen (refused events, bind failures, pods the simulated kubelet refused at admission,
// invariant violations, cache ≠ cluster).
// Thread-safety: one thread drives Run(); runtime() may be shared with readers.

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/runtime.h"
#include "session/scheduler.h"
#include "sim/cluster.h"
#include "sim/workload.h"

namespace volcache::app {

struct RunOptions {
  std::string workload = "trace:philly";
  sim::TraceOptions trace;
  // `--topology racks:N,spines:M`: HyperNodes over the simulated nodes (sim::AddTopology);
  // rack_nodes 0 = none (a manifest's own HyperNodes are used either way).
  sim::TopologyOptions topology;
  sim::SimOptions sim;
  RuntimeOptions runtime;  // inline_execution is forced on
  SchedulerOptions scheduler;
  Duration duration{};                             // simulated time limit; 0 = until every job finished
  Duration max_duration = std::chrono::hours(48);  // hard cap when duration is 0
  double speed = 0;  // simulated seconds per wall second; 0 = as fast as possible
  Duration step = std::chrono::milliseconds(20);
  // Progress: a line every `progress_every` of wall time ('\r'-updated when `progress_tty`).
  std::ostream* progress = nullptr;
  bool progress_tty = false;
  std::chrono::milliseconds progress_every{1000};
  // Called after every session (metrics).
  std::function<void(const CycleStats&)> on_cycle;
};

struct Percentiles {
  double mean = 0, p50 = 0, p95 = 0, max = 0;
  size_t count = 0;
};

struct QueueReport {
  std::string name;
  int32_t weight = 0;
  double weight_fraction = 0;  // of the queues that had jobs
  double gpu_seconds = 0;      // GPU time its jobs ran
  double gpu_fraction = 0;     // of all GPU time
  // From the session's own plan, averaged over the sessions in which the queue was contended
  // (it still had pending GPU demand after the session): GPUs it deserved (weight-
  // proportional water-filling, capped by capability and demand) and GPUs it held. When
  // shares follow the weights, held ≈ deserved.
  size_t contended_sessions = 0;
  double deserved_gpus = 0;
  double allocated_gpus = 0;
  double share_error = 0;  // allocated_gpus / deserved_gpus − 1 (0 when never contended)
  // The issue-13 target's measure: the same averages over the sessions in which the cluster
  // was contended (GPU requests of all queues > cluster GPUs) and the queue wanted more than
  // it deserved (demand above its water-filling level, deserved < request). A queue whose
  // whole demand fits under its weight share deserves all of it: its held < deserved while it
  // waits is its jobs' wait (the convergence figure), not a share it is kept from.
  size_t over_share_sessions = 0;
  double over_share_deserved_gpus = 0, over_share_held_gpus = 0;
  double over_share_error = 0;  // over_share_held_gpus / over_share_deserved_gpus − 1
  uint64_t evicted = 0;         // its tasks evicted by reclaim/preempt
  uint64_t evicted_for = 0;     // evictions made for its jobs
  // Deserved against held GPUs over time: one point per `kShareSeriesPeriod` sessions
  // (session index, deserved, held; the session's plan). JSON report only.
  struct SharePoint {
    size_t session = 0;
    double deserved_gpus = 0, held_gpus = 0;
  };
  std::vector<SharePoint> share_series;
  size_t jobs = 0, finished = 0;
};

// Fairness under contention (SchedulerOptions enqueue/reclaim/preempt; `volcache run
// --shared-pool`). A session is contended when the queues' GPU requests exceed the cluster's
// GPUs; Jain's index is over the queues with GPU demand, of held / deserved (deserved is
// weight-proportional, capped by demand: a queue at 1 holds exactly its weighted share),
// averaged over the contended sessions. A burst: a queue's deserved GPUs grow by at least
// 5 % (and a GPU) from one session to the next while it holds less than 95 % of it; it has
// converged at the first session where it holds >= 95 % of its deserved GPUs, or has no
// GPU demand left waiting.
struct FairnessReport {
  bool enqueue = false, reclaim = false, preempt = false;
  uint64_t enqueued = 0, pipelined = 0, evictions_reclaim = 0, evictions_preempt = 0, eviction_refusals = 0;
  size_t contended_sessions = 0;
  double jain_index = 0;
  size_t bursts = 0, unconverged = 0;
  Percentiles convergence_periods;  // schedule periods from a burst to convergence
};

// Where the jobs ran against the network topology, when the workload has HyperNodes (SPEC
// §12; `--topology` or a manifest's). A job's span tier is the lowest tier of a HyperNode whose
// leaf set holds every node a pod of the job started on (0: no HyperNode holds them all); only
// jobs whose whole gang started count. A gang is a job with minMember > 1; it is "in one rack"
// when its span tier is 1 (with `--topology`, tier 1 is the rack).
struct TopologyReport {
  bool enabled = false;  // the workload has HyperNodes
  struct JobSpan {
    std::string name;  // ns/name of the PodGroup
    int32_t min_member = 0;
    size_t nodes = 0;  // distinct nodes its pods started on
    int32_t tier = 0;
  };
  std::vector<JobSpan> jobs;                 // by name
  std::map<int32_t, size_t> span_histogram;  // span tier → jobs
  size_t gangs = 0, gangs_in_one_rack = 0;   // gangs whose whole gang started
  double gang_rack_share = 0;                // gangs_in_one_rack / gangs (0 without gangs)
};

inline constexpr size_t kShareSeriesPeriod = 60;

struct RunReport {
  std::string workload;
  double simulated_seconds = 0;
  double wall_seconds = 0;
  double makespan_seconds = 0;  // first arrival → last job finished (or the end of the run)
  bool all_finished = false;
  bool stopped_by_limit = false;
  size_t jobs = 0, jobs_finished = 0, jobs_running = 0, jobs_pending = 0;
  Percentiles completion_s;                         // finished - submitted
  Percentiles wait_s;                               // whole gang running - submitted
  double gpu_utilization = 0, cpu_utilization = 0;  // time-weighted, 0..1
  uint64_t binds = 0, bind_failures = 0, evictions = 0, sessions = 0;
  double binds_per_sim_second = 0;
  Percentiles snapshot_ms;  // session open
  Percentiles session_ms;   // whole cycle (CycleStats::total_ms)
  // Mean per session of each phase (CycleStats: open, enqueue, allocate, evict, commit, close):
  // what a slow session spends its time on.
  std::vector<std::pair<std::string, double>> phase_ms_mean;
  std::vector<QueueReport> queues;
  FairnessReport fairness;
  TopologyReport topology;
  sim::SimStats sim;
  // Refused events, kubelet refusals ("kubelet refused N pods: 2 NodePorts, 1 OutOfcpu (first:
  // ...)"; the JSON report's cluster.admission_refusal_* keys hold them too), invariant
  // violations, cache ≠ cluster.
  std::vector<std::string> errors;

  std::string ToJson() const;
  std::string ToText() const;
};

class SimRun {
 public:
  explicit SimRun(RunOptions options);
  ~SimRun();
  SimRun(const SimRun&) = delete;
  SimRun& operator=(const SimRun&) = delete;

  // Loads the workload and starts the runtime; errors name the workload and field.
  Status Load();
  // Runs to the end (every job finished, `duration`, or the cap) and reports.
  RunReport Run();
  // Asks a running Run() to stop at its next step (signal handlers: set a flag instead).
  void RequestStop();

  CacheRuntime& runtime();
  sim::SimCluster& cluster();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace volcache::app
