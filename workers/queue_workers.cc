#include "workers/queue_workers.h"

#include <utility>

#include "api/check.h"

namespace volcache {

QueueWorkers::QueueWorkers(WorkQueue* queue, int threads, ProcessFn process, ShouldRetryFn should_retry)
    : queue_(queue), threads_(threads), process_(std::move(process)), should_retry_(std::move(should_retry)) {
  VC_CHECK(queue_ != nullptr, "QueueWorkers needs a queue");
  VC_CHECK(process_ != nullptr, "QueueWorkers for queue " + queue_->name() + " needs a process function");
  VC_CHECK(threads_ >= 1, "QueueWorkers for queue " + queue_->name() + " needs at least one thread");
}

QueueWorkers::~QueueWorkers() { Stop(); }

void QueueWorkers::Start() {
  MutexLock lock(&mu_);
  if (started_ || stopped_) return;
  started_ = true;
  workers_.reserve(static_cast<size_t>(threads_));
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Run(); });
}

void QueueWorkers::Stop() {
  // join_mu_ is held for the whole stop so that a concurrent second caller returns only
  // once the first has joined every thread.
  MutexLock join_lock(&join_mu_);
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    for (const std::thread& t : workers_) {
      VC_CHECK(t.get_id() != std::this_thread::get_id(),
               "QueueWorkers::Stop called from a worker of queue " + queue_->name());
    }
    stopped_ = true;
    threads.swap(workers_);
  }
  queue_->ShutDown();
  for (std::thread& t : threads) t.join();
}

void QueueWorkers::Run() {
  std::string item;
  while (queue_->Get(&item)) {
    const Status result = process_(item);
    bool retried = false;
    if (result.ok()) {
      queue_->Forget(item);
    } else if (!should_retry_ || should_retry_(item, result)) {
      queue_->AddRateLimited(item);
      retried = true;
    } else {
      queue_->Forget(item);
    }
    queue_->Done(item);  // always, whatever happened above
    {
      MutexLock lock(&mu_);
      ++stats_.processed;
      if (!result.ok()) {
        ++stats_.failed;
        ++(retried ? stats_.retried : stats_.dropped);
      }
    }
    processed_cv_.SignalAll();
  }
}

QueueWorkers::Stats QueueWorkers::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

bool QueueWorkers::WaitForProcessed(uint64_t n, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mu_);
  while (stats_.processed < n) {
    if (!processed_cv_.WaitUntil(&mu_, deadline)) return stats_.processed >= n;
  }
  return true;
}

}  // namespace volcache
