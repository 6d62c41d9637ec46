#include "workers/timer_wake.h"

namespace volcache {

struct TimerWake::Target {
  Target(Mutex* m, CondVar* c, uint64_t* g) : waiter_mu(m), cv(c), generation(g) {}
  Mutex mu;
  Mutex* waiter_mu GUARDED_BY(mu);  // null once disarmed
  CondVar* cv GUARDED_BY(mu);
  uint64_t* generation GUARDED_BY(mu) PT_GUARDED_BY(waiter_mu);
};

TimerWake::TimerWake(Clock* clock, Duration d, Mutex* mu, CondVar* cv, uint64_t* generation)
    : clock_(clock), target_(std::make_shared<Target>(mu, cv, generation)) {
  timer_ = clock_->AfterFunc(d, [target = target_] {
    MutexLock t(&target->mu);
    if (target->waiter_mu == nullptr) return;
    {
      MutexLock l(target->waiter_mu);
      ++*target->generation;
    }
    target->cv->SignalAll();
  });
}

TimerWake::~TimerWake() {
  clock_->Cancel(timer_);
  MutexLock t(&target_->mu);
  target_->waiter_mu = nullptr;
}

}  // namespace volcache
