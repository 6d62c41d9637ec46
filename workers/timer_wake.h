#pragma once
// TimerWake: "wake me after `d` on the injected clock" for a thread that waits on its own
// CondVar (so that Stop, or anything else, can also wake it).
//
// The constructor arms a timer on `clock`; when it fires it increments *generation under *mu
// and signals *cv. The waiter reads *generation (under *mu) BEFORE constructing the
// TimerWake and waits until it changes. The destructor cancels the timer and disarms it: a
// timer that fires late, or runs while Cancel fails, never touches the waiter afterwards.
// Destroy it without holding *mu (the timer's callback takes *mu).
//
//   uint64_t seen;
//   { MutexLock l(&mu_); if (stopping_) return; seen = wakes_; }
//   TimerWake wake(clock_.get(), d, &mu_, &cv_, &wakes_);
//   { MutexLock l(&mu_); while (!stopping_ && wakes_ == seen) cv_.Wait(&mu_); }
//
// Thread-safety: one TimerWake per wait, on the waiting thread.

#include <cstdint>
#include <memory>

#include "api/mutex.h"
#include "workers/clock.h"

namespace volcache {

class TimerWake {
 public:
  TimerWake(Clock* clock, Duration d, Mutex* mu, CondVar* cv, uint64_t* generation);
  ~TimerWake();
  TimerWake(const TimerWake&) = delete;
  TimerWake& operator=(const TimerWake&) = delete;

 private:
  struct Target;  // shared with the timer's callback
  Clock* const clock_;
  std::shared_ptr<Target> target_;
  uint64_t timer_ = 0;
};

}  // namespace volcache
