#include "workers/clock.h"

#include <vector>

namespace volcache {

TimePoint RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

std::shared_ptr<RealClock> RealClock::Instance() {
  static auto clock = std::make_shared<RealClock>();
  return clock;
}

FakeClock::FakeClock(TimePoint start) : now_(start) {}

TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

void FakeClock::Advance(Duration d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (d > Duration::zero()) now_ += d;
  }
  RunDue();
}

void FakeClock::SetTime(TimePoint t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (t > now_) now_ = t;
  }
  RunDue();
}

uint64_t FakeClock::AfterFunc(Duration d, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  timers_.emplace(now_ + (d > Duration::zero() ? d : Duration::zero()), std::make_pair(id, std::move(fn)));
  return id;
}

bool FakeClock::Cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->second.first == id) {
      timers_.erase(it);
      return true;
    }
  }
  return false;
}

size_t FakeClock::PendingTimers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timers_.size();
}

void FakeClock::RunDue() {
  // Callbacks run one at a time, earliest first, without the lock held; a callback that
  // schedules a timer already due runs in this same pass.
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = timers_.begin();
      if (it == timers_.end() || it->first > now_) return;
      fn = std::move(it->second.second);
      timers_.erase(it);
    }
    fn();
  }
}

}  // namespace volcache
