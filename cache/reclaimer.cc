#include "cache/reclaimer.h"

#include <deque>
#include <thread>

#include "api/mutex.h"

namespace volcache {

struct Reclaimer::Impl {
  explicit Impl(ReclaimerOptions o) : options(o) {}

  const ReclaimerOptions options;
  Mutex mu;
  CondVar wake;     // work that cannot wait for the next poll, a Drain, or stop
  CondVar drained;  // pending went to zero
  std::deque<std::vector<std::shared_ptr<const void>>> batches GUARDED_BY(mu);
  size_t pending GUARDED_BY(mu) = 0;  // batches queued or being freed
  size_t queued_versions GUARDED_BY(mu) = 0;
  bool draining GUARDED_BY(mu) = false;  // a Drain waits: free now
  bool asleep GUARDED_BY(mu) = false;    // not polling: Retire must wake the thread
  bool stop GUARDED_BY(mu) = false;
  uint64_t wakeups GUARDED_BY(mu) = 0;
  std::thread thread;

  bool UrgentWork() const REQUIRES(mu) {
    return !batches.empty() && (draining || queued_versions >= options.wake_at);
  }

  void Loop() EXCLUDES(mu) {
    using Clock = std::chrono::steady_clock;
    MutexLock lock(&mu);
    // Asleep until the first batch: a process that retires nothing never polls.
    bool worked = false;
    Clock::time_point last_work;
    for (;;) {
      if (batches.empty() && !stop) {
        if (!worked || Clock::now() - last_work >= options.idle_after) {
          asleep = true;
          while (!stop && batches.empty()) wake.Wait(&mu);
          asleep = false;
        } else {
          // Until the poll is due; earlier for stop, or for work a Drain or wake_at wants now.
          const Clock::time_point until = Clock::now() + options.poll;
          while (!stop && !UrgentWork() && Clock::now() < until) wake.WaitUntil(&mu, until);
          if (batches.empty() && !stop) continue;
        }
      }
      if (batches.empty()) return;  // stop, nothing left
      worked = true;
      last_work = Clock::now();
      auto batch = std::move(batches.front());
      batches.pop_front();
      queued_versions -= batch.size();
      {
        MutexUnlock unlock(&mu);
        batch.clear();  // the destructors run here, without the lock
      }
      if (--pending == 0) drained.SignalAll();
    }
  }
};

Reclaimer::Reclaimer(ReclaimerOptions options) : impl_(std::make_unique<Impl>(options)) {
  impl_->thread = std::thread([this] { impl_->Loop(); });
}

Reclaimer::~Reclaimer() {
  {
    MutexLock lock(&impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.SignalAll();
  impl_->thread.join();
}

void Reclaimer::Retire(std::vector<std::shared_ptr<const void>> batch) {
  if (batch.empty()) return;
  bool wake = false;
  {
    MutexLock lock(&impl_->mu);
    if (!impl_->stop) {
      impl_->queued_versions += batch.size();
      impl_->batches.push_back(std::move(batch));
      ++impl_->pending;
      batch.clear();
      wake = impl_->asleep || impl_->queued_versions >= impl_->options.wake_at;
      impl_->wakeups += wake ? 1 : 0;
    }
  }
  if (wake) impl_->wake.Signal();
  // After stop (the destructor is running): freed right here, by the caller.
}

uint64_t Reclaimer::wakeups() const {
  MutexLock lock(&impl_->mu);
  return impl_->wakeups;
}

void Reclaimer::Drain() {
  MutexLock lock(&impl_->mu);
  if (impl_->pending == 0) return;
  impl_->draining = true;
  impl_->wake.Signal();
  while (impl_->pending != 0) impl_->drained.Wait(&impl_->mu);
  impl_->draining = false;
}

}  // namespace volcache
