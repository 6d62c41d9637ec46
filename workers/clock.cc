#include "workers/clock.h"

#include <thread>
#include <vector>

#include "api/mutex.h"

namespace volcache {

TimePoint SaturatingAdd(TimePoint t, Duration d) {
  if (d > Duration::zero() && t > TimePoint::max() - d) return TimePoint::max();
  if (d < Duration::zero() && t < TimePoint::min() - d) return TimePoint::min();
  return t + d;
}

namespace {

TimePoint SteadyNow() { return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now()); }

}  // namespace

// ---------------------------------------------------------------------------------------
// RealClock

// Everything the timer thread touches. The thread holds its own shared_ptr, so a RealClock
// destroyed from inside one of its callbacks (on the timer thread) can detach the thread
// and let it exit on its own without touching freed memory.
struct RealClock::TimerState {
  using Timers = std::multimap<TimePoint, std::pair<uint64_t, std::function<void()>>>;

  Mutex mu;
  CondVar cv;  // new earliest timer, or stop
  Timers timers GUARDED_BY(mu);
  std::unordered_map<uint64_t, Timers::iterator> by_id GUARDED_BY(mu);  // mirrors timers
  uint64_t next_id GUARDED_BY(mu) = 1;
  bool stop GUARDED_BY(mu) = false;
  std::thread thread GUARDED_BY(mu);  // started lazily

  static void Loop(std::shared_ptr<TimerState> s) EXCLUDES(s->mu) {
    MutexLock lock(&s->mu);
    while (!s->stop) {
      if (s->timers.empty()) {
        s->cv.Wait(&s->mu);
        continue;
      }
      TimePoint due = s->timers.begin()->first;
      if (SteadyNow() < due) {
        s->cv.WaitUntil(&s->mu, due);
        continue;  // re-read: a new earlier timer, a cancel, stop, or a spurious wakeup
      }
      auto node = s->timers.extract(s->timers.begin());
      s->by_id.erase(node.mapped().first);
      {
        MutexUnlock unlock(&s->mu);
        // Run and destroy the callback (and whatever it captured) without the lock.
        std::function<void()> fn = std::move(node.mapped().second);
        node = {};
        fn();
      }
    }
  }
};

RealClock::RealClock() : state_(std::make_shared<TimerState>()) {}

RealClock::~RealClock() {
  std::thread thread;
  TimerState::Timers discarded;
  {
    MutexLock lock(&state_->mu);
    state_->stop = true;
    thread = std::move(state_->thread);
    discarded.swap(state_->timers);
    state_->by_id.clear();
  }
  state_->cv.SignalAll();
  if (thread.joinable()) {
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();  // the last reference went away inside a callback on this thread
    } else {
      thread.join();
    }
  }
  // `discarded` (and the captures of the callbacks that never ran) are destroyed here,
  // outside the lock.
}

TimePoint RealClock::Now() const { return SteadyNow(); }

uint64_t RealClock::AfterFunc(Duration d, std::function<void()> fn) {
  TimePoint due = SaturatingAdd(SteadyNow(), d > Duration::zero() ? d : Duration::zero());
  bool notify;
  uint64_t id;
  {
    MutexLock lock(&state_->mu);
    id = state_->next_id++;
    auto it = state_->timers.emplace(due, std::make_pair(id, std::move(fn)));
    state_->by_id.emplace(id, it);
    // Only a new earliest timer changes how long the thread should wait.
    notify = it == state_->timers.begin();
    if (!state_->thread.joinable() && !state_->stop) {
      state_->thread = std::thread(&TimerState::Loop, state_);
      notify = false;
    }
  }
  if (notify) state_->cv.Signal();
  return id;
}

bool RealClock::Cancel(uint64_t id) {
  std::function<void()> fn;  // destroyed after the lock is released
  MutexLock lock(&state_->mu);
  auto it = state_->by_id.find(id);
  if (it == state_->by_id.end()) return false;
  fn = std::move(it->second->second.second);
  state_->timers.erase(it->second);
  state_->by_id.erase(it);
  // No notify: the thread at worst wakes once at the cancelled time and finds nothing due.
  return true;
}

size_t RealClock::PendingTimers() const {
  MutexLock lock(&state_->mu);
  return state_->timers.size();
}

std::shared_ptr<RealClock> RealClock::Instance() {
  // Deliberately leaked: never destroyed, so components that outlive main() (or are
  // destroyed in static destructors) can still schedule and cancel timers.
  static auto* const clock = new std::shared_ptr<RealClock>(std::make_shared<RealClock>());
  return *clock;
}

// ---------------------------------------------------------------------------------------
// FakeClock

FakeClock::FakeClock(TimePoint start) : now_(start) {}

TimePoint FakeClock::Now() const {
  MutexLock lock(&mu_);
  return now_;
}

void FakeClock::Advance(Duration d) {
  {
    MutexLock lock(&mu_);
    if (d > Duration::zero()) now_ = SaturatingAdd(now_, d);
  }
  RunDue();
}

void FakeClock::SetTime(TimePoint t) {
  {
    MutexLock lock(&mu_);
    if (t > now_) now_ = t;
  }
  RunDue();
}

uint64_t FakeClock::AfterFunc(Duration d, std::function<void()> fn) {
  MutexLock lock(&mu_);
  uint64_t id = next_id_++;
  auto it = timers_.emplace(SaturatingAdd(now_, d > Duration::zero() ? d : Duration::zero()),
                            std::make_pair(id, std::move(fn)));
  by_id_.emplace(id, it);
  return id;
}

bool FakeClock::Cancel(uint64_t id) {
  std::function<void()> fn;  // destroyed after the lock is released
  MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  fn = std::move(it->second->second.second);
  timers_.erase(it->second);
  by_id_.erase(it);
  return true;
}

size_t FakeClock::PendingTimers() const {
  MutexLock lock(&mu_);
  return timers_.size();
}

void FakeClock::RunDue() {
  // Callbacks run one at a time, earliest first, without the lock held; a callback that
  // schedules a timer already due runs in this same pass.
  for (;;) {
    std::function<void()> fn;
    {
      MutexLock lock(&mu_);
      auto it = timers_.begin();
      if (it == timers_.end() || it->first > now_) return;
      fn = std::move(it->second.second);
      by_id_.erase(it->second.first);
      timers_.erase(it);
    }
    fn();
  }
}

}  // namespace volcache
