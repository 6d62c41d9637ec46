#include "workers/work_queue.h"

#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache {

// The queue state lives here, owned by the WorkQueue and shared weakly with the clock
// callbacks of delayed adds, so a callback already running on a RealClock's timer thread
// when the WorkQueue is destroyed finds the state gone (or shut down) instead of freed.
struct WorkQueue::Impl : std::enable_shared_from_this<WorkQueue::Impl> {
  using Observer = std::function<void(Duration)>;

  // A delayed add: the item becomes ready at `ready_at` through clock timer `timer_id`.
  // `generation` is unique per scheduled timer; a firing timer whose generation no longer
  // matches (it was superseded by an earlier ready time, or cancelled) does nothing.
  struct Waiting {
    TimePoint ready_at;
    uint64_t timer_id;
    uint64_t generation;
  };

  Impl(std::string n, std::shared_ptr<Clock> c, std::unique_ptr<RateLimiter> l)
      : name(std::move(n)), clock(std::move(c)), limiter(std::move(l)) {
    VC_CHECK(clock != nullptr, "WorkQueue " + name + " needs a clock");
    VC_CHECK(limiter != nullptr, "WorkQueue " + name + " needs a rate limiter");
  }

  const std::string name;
  const std::shared_ptr<Clock> clock;
  const std::unique_ptr<RateLimiter> limiter;

  mutable Mutex mu;
  // Two condition variables so that a wakeup meant for a Get waiter can never be consumed
  // by a ShutDownWithDrain waiter (or the reverse).
  CondVar ready_cv;    // queue non-empty or shutting down
  CondVar drained_cv;  // processing empty or drain called off

  // Invariants: every element of `queue` is in `dirty` and not in `processing`, and appears
  // once; an item is in `waiting` at most once.
  std::deque<std::string> queue GUARDED_BY(mu);
  std::unordered_set<std::string> dirty GUARDED_BY(mu);
  std::unordered_set<std::string> processing GUARDED_BY(mu);
  std::unordered_map<std::string, Waiting> waiting GUARDED_BY(mu);
  uint64_t next_generation GUARDED_BY(mu) = 1;
  bool shutting_down GUARDED_BY(mu) = false;
  bool drain GUARDED_BY(mu) = false;
  uint64_t adds GUARDED_BY(mu) = 0;
  uint64_t retries GUARDED_BY(mu) = 0;
  // Only maintained while an observer is set.
  std::shared_ptr<const Observer> wait_observer GUARDED_BY(mu);
  std::unordered_map<std::string, TimePoint> queued_at GUARDED_BY(mu);

  void PushLocked(const std::string& item) REQUIRES(mu) {
    queue.push_back(item);
    if (wait_observer) queued_at[item] = clock->Now();
    ready_cv.Signal();
  }

  void AddLocked(const std::string& item) REQUIRES(mu) {
    if (shutting_down || dirty.count(item) != 0) return;
    ++adds;
    dirty.insert(item);
    if (processing.count(item) != 0) return;  // queued again by Done
    PushLocked(item);
  }

  // Pops the head into `item`. Returns the observer to call (outside the lock) with the
  // time it waited, if any.
  std::shared_ptr<const Observer> PopLocked(std::string* item, Duration* waited) REQUIRES(mu) {
    *item = std::move(queue.front());
    queue.pop_front();
    processing.insert(*item);
    dirty.erase(*item);
    if (!wait_observer) return nullptr;
    auto it = queued_at.find(*item);
    if (it == queued_at.end()) return nullptr;  // queued before the observer was set
    *waited = clock->Now() - it->second;
    queued_at.erase(it);
    return wait_observer;
  }

  void CancelWaitingLocked() REQUIRES(mu) {
    for (const auto& [item, w] : waiting) clock->Cancel(w.timer_id);
    waiting.clear();
  }

  void ShutDownLocked() REQUIRES(mu) {
    shutting_down = true;
    CancelWaitingLocked();
    ready_cv.SignalAll();
  }

  void AddAfter(const std::string& item, Duration delay) EXCLUDES(mu) {
    MutexLock lock(&mu);
    if (shutting_down) return;
    if (delay <= Duration::zero()) {
      AddLocked(item);
      return;
    }
    TimePoint ready_at = SaturatingAdd(clock->Now(), delay);
    auto it = waiting.find(item);
    if (it != waiting.end()) {
      if (ready_at >= it->second.ready_at) return;  // the earliest ready time wins
      clock->Cancel(it->second.timer_id);
      waiting.erase(it);
    }
    uint64_t generation = next_generation++;
    uint64_t timer_id = clock->AfterFunc(delay, [weak = weak_from_this(), item, generation] {
      if (auto self = weak.lock()) self->OnTimer(item, generation);
    });
    waiting.emplace(item, Waiting{ready_at, timer_id, generation});
  }

  void OnTimer(const std::string& item, uint64_t generation) EXCLUDES(mu) {
    MutexLock lock(&mu);
    auto it = waiting.find(item);
    if (it == waiting.end() || it->second.generation != generation) return;
    waiting.erase(it);
    AddLocked(item);
  }
};

WorkQueue::WorkQueue(std::string name, std::shared_ptr<Clock> clock, std::unique_ptr<RateLimiter> limiter)
    : impl_(std::make_shared<Impl>(std::move(name), std::move(clock), std::move(limiter))) {}

WorkQueue::~WorkQueue() {
  MutexLock lock(&impl_->mu);
  impl_->ShutDownLocked();
  impl_->drain = false;
  impl_->drained_cv.SignalAll();
}

const std::string& WorkQueue::name() const { return impl_->name; }

void WorkQueue::Add(const std::string& item) {
  MutexLock lock(&impl_->mu);
  impl_->AddLocked(item);
}

void WorkQueue::AddAfter(const std::string& item, Duration delay) { impl_->AddAfter(item, delay); }

void WorkQueue::AddRateLimited(const std::string& item) {
  {
    MutexLock lock(&impl_->mu);
    if (impl_->shutting_down) return;  // don't grow the limiter's history for nothing
    ++impl_->retries;
  }
  impl_->AddAfter(item, impl_->limiter->When(item));
}

void WorkQueue::Forget(const std::string& item) { impl_->limiter->Forget(item); }

int WorkQueue::NumRequeues(const std::string& item) const { return impl_->limiter->NumRequeues(item); }

bool WorkQueue::Get(std::string* item) {
  std::shared_ptr<const Impl::Observer> observer;
  Duration waited{};
  {
    MutexLock lock(&impl_->mu);
    while (impl_->queue.empty() && !impl_->shutting_down) impl_->ready_cv.Wait(&impl_->mu);
    if (impl_->queue.empty()) return false;  // shut down and nothing left
    observer = impl_->PopLocked(item, &waited);
  }
  if (observer) (*observer)(waited);
  return true;
}

bool WorkQueue::TryGet(std::string* item) {
  std::shared_ptr<const Impl::Observer> observer;
  Duration waited{};
  {
    MutexLock lock(&impl_->mu);
    if (impl_->queue.empty()) return false;
    observer = impl_->PopLocked(item, &waited);
  }
  if (observer) (*observer)(waited);
  return true;
}

void WorkQueue::Done(const std::string& item) {
  MutexLock lock(&impl_->mu);
  auto it = impl_->processing.find(item);
  if (it == impl_->processing.end()) return;
  impl_->processing.erase(it);
  if (impl_->dirty.count(item) != 0) impl_->PushLocked(item);
  if (impl_->processing.empty()) impl_->drained_cv.SignalAll();
}

size_t WorkQueue::Len() const {
  MutexLock lock(&impl_->mu);
  return impl_->queue.size();
}

size_t WorkQueue::DelayedLen() const {
  MutexLock lock(&impl_->mu);
  return impl_->waiting.size();
}

void WorkQueue::ShutDown() {
  MutexLock lock(&impl_->mu);
  impl_->ShutDownLocked();
  impl_->drain = false;  // releases a ShutDownWithDrain in progress
  impl_->drained_cv.SignalAll();
}

void WorkQueue::ShutDownWithDrain() {
  MutexLock lock(&impl_->mu);
  impl_->drain = true;
  impl_->ShutDownLocked();
  while (!impl_->processing.empty() && impl_->drain) impl_->drained_cv.Wait(&impl_->mu);
}

bool WorkQueue::ShuttingDown() const {
  MutexLock lock(&impl_->mu);
  return impl_->shutting_down;
}

WorkQueueStats WorkQueue::Stats() const {
  MutexLock lock(&impl_->mu);
  WorkQueueStats s;
  s.adds = impl_->adds;
  s.retries = impl_->retries;
  s.depth = impl_->queue.size();
  s.delayed = impl_->waiting.size();
  s.processing = impl_->processing.size();
  return s;
}

void WorkQueue::SetQueueWaitObserver(std::function<void(Duration)> observer) {
  MutexLock lock(&impl_->mu);
  if (observer) {
    impl_->wait_observer = std::make_shared<const Impl::Observer>(std::move(observer));
  } else {
    impl_->wait_observer.reset();
    impl_->queued_at.clear();
  }
}

}  // namespace volcache
