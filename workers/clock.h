#pragma once
// Clock: the one source of time and timers for work queues, rate limiters, TTLs, the
// 20 ms bind tick and the simulator. Components take a std::shared_ptr<Clock> in their
// constructor, so production code passes RealClock::Instance() and tests pass a FakeClock
// that only moves when the test advances it (tests never sleep).
//
// Timers: AfterFunc(d, fn) runs `fn` once, no earlier than Now() + d, and returns a
// non-zero id; Cancel(id) returns true iff the timer was still pending and now never runs.
// Cancel returning false means the timer already ran, is running right now, or never
// existed; a caller that must know the callback is not running has to synchronize with the
// callback itself (e.g. a generation number checked under its own lock, as WorkQueue does).
// Callbacks never run with the clock's lock held, so a callback may call Now, AfterFunc
// and Cancel on the same clock. Callbacks must not throw.
//
// Thread-safety: both implementations are safe for concurrent use. Lock order: a caller
// may hold its own lock while calling into the clock; the clock never calls back into a
// callback while holding its lock, so that order is never reversed.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "api/mutex.h"

namespace volcache {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

// t + d, clamped to [TimePoint::min(), TimePoint::max()] instead of overflowing (a rate
// limiter may hand back a very long delay).
TimePoint SaturatingAdd(TimePoint t, Duration d);

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // Runs `fn` once Now() >= Now() + max(d, 0). Returns an id (never 0) for Cancel.
  virtual uint64_t AfterFunc(Duration d, std::function<void()> fn) = 0;
  // True iff the timer was pending and has been removed (it will never run).
  virtual bool Cancel(uint64_t id) = 0;
};

// steady_clock time. Timers run on one timer thread per RealClock, started on the first
// AfterFunc; callbacks run on that thread one at a time, earliest first, so a slow callback
// delays the others (post long work to an executor instead).
// Destroying a RealClock discards its pending timers without running them and joins the
// timer thread (or detaches it when the last reference is dropped by a callback on that
// very thread). Instance() is never destroyed, so it is safe to use from static
// destructors and from detached threads until the process exits.
class RealClock final : public Clock {
 public:
  RealClock();
  ~RealClock() override;
  RealClock(const RealClock&) = delete;
  RealClock& operator=(const RealClock&) = delete;

  TimePoint Now() const override;
  uint64_t AfterFunc(Duration d, std::function<void()> fn) override;
  bool Cancel(uint64_t id) override;
  size_t PendingTimers() const;

  static std::shared_ptr<RealClock> Instance();

 private:
  struct TimerState;  // shared with the timer thread so it may outlive the clock
  std::shared_ptr<TimerState> state_;
};

// Starts at the epoch of TimePoint (t = 0) unless told otherwise. Advance() / SetTime()
// move time forward and run, on the calling thread and in time order (ties in the order
// they were scheduled), every callback that became due, outside the clock's lock, so a
// callback may schedule more work; a callback scheduled already due runs in the same pass.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{});
  TimePoint Now() const override EXCLUDES(mu_);

  void Advance(Duration d) EXCLUDES(mu_);
  void SetTime(TimePoint t) EXCLUDES(mu_);  // never moves backwards
  // Due at Now() + d; with d <= 0 it runs on the next Advance/SetTime (even by zero).
  uint64_t AfterFunc(Duration d, std::function<void()> fn) override EXCLUDES(mu_);
  bool Cancel(uint64_t id) override EXCLUDES(mu_);
  size_t PendingTimers() const EXCLUDES(mu_);

 private:
  using Timers = std::multimap<TimePoint, std::pair<uint64_t, std::function<void()>>>;
  void RunDue() EXCLUDES(mu_);  // callbacks run without the lock

  mutable Mutex mu_;
  TimePoint now_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  Timers timers_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, Timers::iterator> by_id_ GUARDED_BY(mu_);  // mirrors timers_
};

}  // namespace volcache
