#pragma once
// WorkQueue: a rate-limited, delaying work queue of string keys with the semantics of
// client-go's workqueue (Type + delaying + rate limiting):
//  - FIFO of ready items, a dirty set (needs processing) and a processing set (handed out
//    by Get, not yet Done). An item is never handed out twice at once: Add of a dirty item
//    is a no-op; Add of an item being processed marks it dirty and it is queued again when
//    its Done arrives.
//  - AddAfter(item, d) makes the item ready at Now() + d, through the injected Clock's
//    AfterFunc (with a FakeClock, exactly when the test advances time). While an item
//    waits, a later AddAfter only moves its ready time earlier, never later. A plain Add
//    does not cancel a pending delayed add (as in client-go: the timer still fires later).
//  - AddRateLimited(item) = AddAfter(item, limiter->When(item)) — the retry path after a
//    failure; Forget(item) clears the limiter's history once the item succeeded.
//  - ShutDown(): new adds are ignored and pending delayed adds dropped; Get keeps handing
//    out what is already queued and returns false once the queue is empty (at once for
//    waiters blocked on an empty queue). ShutDownWithDrain() additionally blocks until
//    every item handed out by Get is Done (a later ShutDown() releases it early).
//
// Owns: the queued item keys, the limiter, the timers it scheduled (cancelled on
// ShutDown/destruction; a timer already firing on another thread is harmless because the
// queue's state is shared with it weakly and each delayed entry carries a generation).
// Memory: an empty queue holds no item storage; the FIFO and the item sets give theirs back
// when they empty (the cache keeps several queues that are idle most of the time).
// Thread-safety: every method is safe for concurrent use (one mutex). Get blocks; every
// other call returns promptly. Every item obtained from Get/TryGet must be passed to Done.
// Lock order: queue -> clock (Now/AfterFunc/Cancel under the queue lock); the limiter and
// the observer are called without the queue lock; clock callbacks take the queue lock
// without holding the clock's.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "workers/clock.h"
#include "workers/rate_limiter.h"

namespace volcache {

struct WorkQueueStats {
  uint64_t adds = 0;      // adds that made an item dirty (client-go "adds_total")
  uint64_t retries = 0;   // AddRateLimited calls (client-go "retries_total")
  size_t depth = 0;       // ready items (Len())
  size_t delayed = 0;     // items waiting for their ready time (DelayedLen())
  size_t processing = 0;  // handed out by Get/TryGet, not yet Done
};

class WorkQueue {
 public:
  // `name` labels metrics and logs. `clock` and `limiter` must be non-null.
  WorkQueue(std::string name, std::shared_ptr<Clock> clock, std::unique_ptr<RateLimiter> limiter);
  // ShutDown() and cancel pending timers. No thread may be blocked in Get any more.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  const std::string& name() const;

  void Add(const std::string& item);
  // delay <= 0 is Add. An item already waiting keeps the earliest ready time.
  void AddAfter(const std::string& item, Duration delay);
  void AddRateLimited(const std::string& item);
  void Forget(const std::string& item);
  int NumRequeues(const std::string& item) const;

  // Blocks until an item is ready (returns true, item moved to processing) or the queue is
  // shut down and empty (returns false).
  bool Get(std::string* item);
  // Get without blocking: false when nothing is ready right now.
  bool TryGet(std::string* item);
  // Ends processing of an item from Get/TryGet; re-queues it if it was re-added meanwhile.
  // Done of an item not being processed is a no-op.
  void Done(const std::string& item);

  size_t Len() const;         // ready items
  size_t DelayedLen() const;  // items waiting for their ready time
  void ShutDown();
  void ShutDownWithDrain();
  bool ShuttingDown() const;

  // Counters and gauges for the metrics sampler (one consistent snapshot).
  WorkQueueStats Stats() const;
  // Called by Get/TryGet with how long the item waited in the ready queue (queue-wait
  // histogram); nullptr to remove. Called without the queue lock held.
  void SetQueueWaitObserver(std::function<void(Duration)> observer);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared (weakly) with pending clock callbacks
};

}  // namespace volcache
