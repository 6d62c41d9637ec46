#include "cache/reclaimer.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace volcache {

struct Reclaimer::Impl {
  std::mutex mu;
  std::condition_variable wake;     // work arrived, or stop
  std::condition_variable drained;  // pending went to zero
  std::deque<std::vector<std::shared_ptr<const void>>> batches;  // guarded by mu
  size_t pending = 0;  // batches queued or being freed; guarded by mu
  bool stop = false;   // guarded by mu
  std::thread thread;

  void Loop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      wake.wait(lock, [&] { return stop || !batches.empty(); });
      if (batches.empty()) return;  // stop, nothing left
      auto batch = std::move(batches.front());
      batches.pop_front();
      lock.unlock();
      batch.clear();  // the destructors run here, without the lock
      lock.lock();
      if (--pending == 0) drained.notify_all();
    }
  }
};

Reclaimer::Reclaimer() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([this] { impl_->Loop(); });
}

Reclaimer::~Reclaimer() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  impl_->thread.join();
}

Reclaimer& Reclaimer::Instance() {
  static Reclaimer instance;
  return instance;
}

void Reclaimer::Retire(std::vector<std::shared_ptr<const void>> batch) {
  if (batch.empty()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->stop) {
      impl_->batches.push_back(std::move(batch));
      ++impl_->pending;
      batch.clear();
    }
  }
  impl_->wake.notify_one();
  // After stop (process exit): freed right here, by the caller.
}

void Reclaimer::Drain() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->drained.wait(lock, [&] { return impl_->pending == 0; });
}

}  // namespace volcache
