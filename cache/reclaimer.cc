#include "cache/reclaimer.h"

#include <deque>
#include <thread>

#include "api/mutex.h"

namespace volcache {

struct Reclaimer::Impl {
  Mutex mu;
  CondVar wake;     // work arrived, or stop
  CondVar drained;  // pending went to zero
  std::deque<std::vector<std::shared_ptr<const void>>> batches GUARDED_BY(mu);
  size_t pending GUARDED_BY(mu) = 0;  // batches queued or being freed
  bool stop GUARDED_BY(mu) = false;
  std::thread thread;

  void Loop() EXCLUDES(mu) {
    MutexLock lock(&mu);
    for (;;) {
      while (!stop && batches.empty()) wake.Wait(&mu);
      if (batches.empty()) return;  // stop, nothing left
      auto batch = std::move(batches.front());
      batches.pop_front();
      {
        MutexUnlock unlock(&mu);
        batch.clear();  // the destructors run here, without the lock
      }
      if (--pending == 0) drained.SignalAll();
    }
  }
};

Reclaimer::Reclaimer() : impl_(std::make_unique<Impl>()) {
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
  {
    MutexLock lock(&impl_->mu);
    if (!impl_->stop) {
      impl_->batches.push_back(std::move(batch));
      ++impl_->pending;
      batch.clear();
    }
  }
  impl_->wake.Signal();
  // After stop (the destructor is running): freed right here, by the caller.
}

void Reclaimer::Drain() {
  MutexLock lock(&impl_->mu);
  while (impl_->pending != 0) impl_->drained.Wait(&impl_->mu);
}

}  // namespace volcache
