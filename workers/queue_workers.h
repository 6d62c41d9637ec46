#pragma once
// QueueWorkers: N threads that drain a WorkQueue through a process function, with
// client-go's worker loop (processNextWorkItem):
//   Get -> process(item) -> OK: Forget(item)
//                        -> error: should_retry(item, error) ? AddRateLimited(item)
//                                                            : Forget(item)   (dropped)
//   -> Done(item), always, for every item Get handed out.
// Used for the node-sync workers (`--node-worker-threads`, default 20), the errTasks resync
// worker and the DeletedJobs cleanup worker.
//
// Owns: its threads. Does not own the queue (which must outlive the workers) but shuts it
// down in Stop().
// Thread-safety: every method is safe for concurrent use. `process` and `should_retry` run
// on the worker threads, concurrently for different items (never for the same item at
// once: the queue guarantees that) and with no QueueWorkers lock held; they must not throw
// and must not call Stop() (it would wait for the calling thread).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/mutex.h"
#include "api/status.h"
#include "workers/work_queue.h"

namespace volcache {

inline constexpr int kDefaultNodeWorkerThreads = 20;

class QueueWorkers {
 public:
  using ProcessFn = std::function<Status(const std::string& item)>;
  using ShouldRetryFn = std::function<bool(const std::string& item, const Status& error)>;

  struct Stats {
    uint64_t processed = 0;  // items handed out by Get and finished (Done), any result
    uint64_t failed = 0;     // process returned an error
    uint64_t retried = 0;    // failures sent back through AddRateLimited
    uint64_t dropped = 0;    // failures forgotten: should_retry said no
  };

  // `queue` and `process` must be non-null, threads >= 1 (VC_CHECK). A null
  // `should_retry` retries every failure.
  QueueWorkers(WorkQueue* queue, int threads, ProcessFn process, ShouldRetryFn should_retry);
  // Stop().
  ~QueueWorkers();
  QueueWorkers(const QueueWorkers&) = delete;
  QueueWorkers& operator=(const QueueWorkers&) = delete;

  // Launches the threads. Only the first call does anything; a no-op after Stop().
  void Start() EXCLUDES(mu_);

  // Shuts the queue down (WorkQueue::ShutDown) and joins the threads. The workers finish
  // the item in hand and still drain the items that were ready at shutdown (client-go
  // semantics: Get hands out what is queued until the queue is empty); items waiting for a
  // delayed or rate-limited retry are dropped by the queue, and a failure during the drain
  // can no longer be retried (the queue ignores adds after shutdown; it is still counted in
  // `retried`). Idempotent; concurrent callers all return once the threads are joined.
  // Must not be called from a worker thread (VC_CHECK).
  void Stop() EXCLUDES(mu_, join_mu_);

  Stats stats() const EXCLUDES(mu_);

  // Blocks until at least `n` items have been processed (Stats::processed >= n) or
  // `timeout` (real time) passes; returns whether the count was reached. For tests and for
  // start-up code that waits for an initial sync.
  bool WaitForProcessed(uint64_t n, std::chrono::milliseconds timeout) const EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);  // process and should_retry run with no lock held

  WorkQueue* const queue_;
  const int threads_;
  const ProcessFn process_;
  const ShouldRetryFn should_retry_;

  mutable Mutex mu_;
  mutable CondVar processed_cv_;  // signalled on every processed item
  Stats stats_ GUARDED_BY(mu_);
  bool started_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_ GUARDED_BY(mu_);  // until Stop takes them
  Mutex join_mu_ ACQUIRED_BEFORE(mu_);  // serializes Stop's joins; taken before mu_, never under it
};

}  // namespace volcache
