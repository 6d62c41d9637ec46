#include "workers/work_queue.h"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache {

namespace {

// The ready FIFO: one vector and a read position. Unlike std::deque, which allocates its
// map and a 512-byte block up front, an empty Fifo owns no memory (the cache keeps several
// queues that are empty nearly all the time). Popping advances `head_`; the consumed prefix
// is dropped once it is at least half of the vector (so each pop costs amortized O(1)), and
// the storage is given back when the FIFO empties.
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  void push_back(const std::string& item) { items_.push_back(item); }
  // Precondition: !empty().
  std::string pop_front() {
    std::string item = std::move(items_[head_++]);
    if (head_ == items_.size()) {
      std::vector<std::string>().swap(items_);
      head_ = 0;
    } else if (head_ >= kMinCompact && head_ * 2 >= items_.size()) {
      // Moves size() <= head_ strings: paid for by the head_ pops since the last compaction.
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
      if (items_.capacity() > 4 * items_.size()) items_.shrink_to_fit();
    }
    return item;
  }

 private:
  static constexpr size_t kMinCompact = 16;
  std::vector<std::string> items_;  // [0, head_) are moved-from (empty) strings
  size_t head_ = 0;
};

// Gives back a hash container's bucket array once it is empty (erase never shrinks it), so
// a queue that once held many items costs nothing when drained. Cost: the bucket array's
// size, paid for by the inserts that grew it.
template <typename C>
void ReleaseIfEmpty(C& c) {
  if (c.empty() && c.bucket_count() > 1) C().swap(c);
}

}  // namespace

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
  Fifo queue GUARDED_BY(mu);
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
    *item = queue.pop_front();
    processing.insert(*item);
    dirty.erase(*item);
    ReleaseIfEmpty(dirty);
    if (!wait_observer) return nullptr;
    auto it = queued_at.find(*item);
    if (it == queued_at.end()) return nullptr;  // queued before the observer was set
    *waited = clock->Now() - it->second;
    queued_at.erase(it);
    ReleaseIfEmpty(queued_at);
    return wait_observer;
  }

  void CancelWaitingLocked() REQUIRES(mu) {
    for (const auto& [item, w] : waiting) clock->Cancel(w.timer_id);
    waiting.clear();
    ReleaseIfEmpty(waiting);
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
    ReleaseIfEmpty(waiting);
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
  if (impl_->processing.empty()) {
    ReleaseIfEmpty(impl_->processing);
    impl_->drained_cv.SignalAll();
  }
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
    ReleaseIfEmpty(impl_->queued_at);
  }
}

}  // namespace volcache
