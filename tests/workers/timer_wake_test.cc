#include "workers/timer_wake.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

namespace volcache {
namespace {

using std::chrono::milliseconds;

TEST(TimerWakeTest, FiringBumpsTheGenerationAndWakesTheWaiter) {
  FakeClock clock;
  Mutex mu;
  CondVar cv;
  uint64_t generation = 0;
  bool woken = false;
  std::thread waiter([&] {
    uint64_t seen;
    {
      MutexLock l(&mu);
      seen = generation;
    }
    TimerWake wake(&clock, milliseconds(100), &mu, &cv, &generation);
    MutexLock l(&mu);
    while (generation == seen) cv.Wait(&mu);
    woken = true;
  });
  while (clock.PendingTimers() == 0) std::this_thread::yield();
  clock.Advance(milliseconds(99));
  {
    MutexLock l(&mu);
    EXPECT_EQ(generation, 0u);
  }
  clock.Advance(milliseconds(1));
  waiter.join();
  MutexLock l(&mu);
  EXPECT_EQ(generation, 1u);
  EXPECT_TRUE(woken);
}

TEST(TimerWakeTest, AfterDestructionTheTimerNeitherRunsNorTouchesTheWaiter) {
  FakeClock clock;
  auto mu = std::make_unique<Mutex>();
  auto cv = std::make_unique<CondVar>();
  auto generation = std::make_unique<uint64_t>(0);
  { TimerWake wake(&clock, milliseconds(10), mu.get(), cv.get(), generation.get()); }
  EXPECT_EQ(clock.PendingTimers(), 0u);  // cancelled
  mu.reset();                            // the waiter is gone (ASan would see a late callback touch it)
  cv.reset();
  clock.Advance(milliseconds(50));
  EXPECT_EQ(*generation, 0u);
}

}  // namespace
}  // namespace volcache
