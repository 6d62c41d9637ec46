#pragma once
// Clock: the one source of time for timers, rate limiters, TTLs and the simulator.
// RealClock reads std::chrono::steady_clock; FakeClock only moves when a test (or
// `volcache replay`'s tick) advances it, so tests never sleep.
//
// Thread-safety: both implementations are safe for concurrent use.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace volcache {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class RealClock final : public Clock {
 public:
  TimePoint Now() const override;
  static std::shared_ptr<RealClock> Instance();
};

// Starts at the epoch of TimePoint (t = 0) unless told otherwise. Advance() moves time
// forward and runs, in time order, every callback scheduled with AfterFunc that became
// due (outside the clock's lock, so a callback may schedule more work).
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{});
  TimePoint Now() const override;

  void Advance(Duration d);
  void SetTime(TimePoint t);  // never moves backwards
  // Runs `fn` once Now() >= Now() + d (immediately on the next Advance if d <= 0).
  // Returns an id for Cancel.
  uint64_t AfterFunc(Duration d, std::function<void()> fn);
  bool Cancel(uint64_t id);
  size_t PendingTimers() const;

 private:
  void RunDue();

  mutable std::mutex mu_;
  TimePoint now_;
  uint64_t next_id_ = 1;
  std::multimap<TimePoint, std::pair<uint64_t, std::function<void()>>> timers_;
};

}  // namespace volcache
