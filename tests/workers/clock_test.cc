#include "workers/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace volcache {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Generous: only reached when the code under test is broken.
constexpr auto kTimeout = seconds(30);

// ----------------------------------------------------------------------------------------
// FakeClock

TEST(FakeClockTest, StartsAtGivenTimeAndOnlyMovesForward) {
  FakeClock clock(TimePoint(seconds(10)));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(10)));
  clock.Advance(milliseconds(5));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(10) + milliseconds(5)));
  clock.Advance(-seconds(1));
  clock.SetTime(TimePoint(seconds(1)));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(10) + milliseconds(5)));
  clock.SetTime(TimePoint(seconds(20)));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(20)));
}

TEST(FakeClockTest, AfterFuncRunsExactlyWhenDueEarliestFirst) {
  FakeClock clock;
  std::vector<std::string> fired;
  clock.AfterFunc(milliseconds(30), [&] { fired.push_back("30a"); });
  clock.AfterFunc(milliseconds(10), [&] { fired.push_back("10"); });
  clock.AfterFunc(milliseconds(30), [&] { fired.push_back("30b"); });
  EXPECT_EQ(clock.PendingTimers(), 3u);

  clock.Advance(milliseconds(9));
  EXPECT_TRUE(fired.empty());
  clock.Advance(milliseconds(1));
  EXPECT_EQ(fired, (std::vector<std::string>{"10"}));
  clock.Advance(milliseconds(100));  // both due in one Advance: time order, then FIFO
  EXPECT_EQ(fired, (std::vector<std::string>{"10", "30a", "30b"}));
  EXPECT_EQ(clock.PendingTimers(), 0u);
}

TEST(FakeClockTest, NonPositiveDelayRunsOnNextAdvance) {
  FakeClock clock;
  int fired = 0;
  clock.AfterFunc(Duration::zero(), [&] { ++fired; });
  clock.AfterFunc(-seconds(1), [&] { ++fired; });
  EXPECT_EQ(fired, 0);
  clock.Advance(Duration::zero());
  EXPECT_EQ(fired, 2);
}

TEST(FakeClockTest, CancelPreventsFiringAndReportsWhetherPending) {
  FakeClock clock;
  bool fired = false;
  uint64_t id = clock.AfterFunc(milliseconds(5), [&] { fired = true; });
  EXPECT_NE(id, 0u);
  EXPECT_TRUE(clock.Cancel(id));
  EXPECT_FALSE(clock.Cancel(id));
  clock.Advance(seconds(1));
  EXPECT_FALSE(fired);

  uint64_t ran = clock.AfterFunc(milliseconds(5), [] {});
  clock.Advance(milliseconds(5));
  EXPECT_FALSE(clock.Cancel(ran));
  EXPECT_FALSE(clock.Cancel(12345));
}

TEST(FakeClockTest, CallbackMayScheduleAndCancelOnTheSameClock) {
  FakeClock clock;
  std::vector<int> fired;
  uint64_t victim = clock.AfterFunc(milliseconds(20), [&] { fired.push_back(20); });
  clock.AfterFunc(milliseconds(10), [&] {
    fired.push_back(10);
    EXPECT_TRUE(clock.Cancel(victim));
    clock.AfterFunc(Duration::zero(), [&] { fired.push_back(11); });  // due now: same pass
    clock.AfterFunc(milliseconds(5), [&] { fired.push_back(15); });
    (void)clock.Now();
  });
  clock.Advance(milliseconds(10));
  EXPECT_EQ(fired, (std::vector<int>{10, 11}));
  clock.Advance(milliseconds(100));
  EXPECT_EQ(fired, (std::vector<int>{10, 11, 15}));
}

TEST(FakeClockTest, HugeDelaySaturatesInsteadOfOverflowing) {
  FakeClock clock(TimePoint(seconds(5)));
  bool fired = false;
  clock.AfterFunc(Duration::max(), [&] { fired = true; });
  clock.Advance(hours(24 * 365));
  EXPECT_FALSE(fired);
  EXPECT_EQ(clock.PendingTimers(), 1u);
}

TEST(FakeClockTest, UsableThroughTheClockInterface) {
  auto fake = std::make_shared<FakeClock>();
  std::shared_ptr<Clock> clock = fake;
  int fired = 0;
  clock->AfterFunc(seconds(1), [&] { ++fired; });
  uint64_t cancelled = clock->AfterFunc(seconds(1), [&] { ++fired; });
  EXPECT_TRUE(clock->Cancel(cancelled));
  fake->Advance(seconds(1));
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(clock->Now(), TimePoint(seconds(1)));
}

TEST(SaturatingAddTest, ClampsAtBothEnds) {
  EXPECT_EQ(SaturatingAdd(TimePoint(seconds(1)), seconds(1)), TimePoint(seconds(2)));
  EXPECT_EQ(SaturatingAdd(TimePoint(seconds(1)), Duration::max()), TimePoint::max());
  EXPECT_EQ(SaturatingAdd(TimePoint(-seconds(1)), Duration::min()), TimePoint::min());
}

// ----------------------------------------------------------------------------------------
// RealClock: real time, so every wait is on a condition/future with a generous timeout
// that is only hit on failure; nothing sleeps.

// Records callback order and lets the test wait for a count.
class Recorder {
 public:
  std::function<void()> Fn(int tag) {
    return [this, tag] {
      std::lock_guard<std::mutex> lock(mu_);
      order_.push_back(tag);
      cv_.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kTimeout, [&] { return order_.size() >= n; });
  }
  std::vector<int> order() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> order_;
};

TEST(RealClockTest, NowIsMonotonic) {
  RealClock clock;
  TimePoint a = clock.Now();
  TimePoint b = clock.Now();
  EXPECT_LE(a, b);
}

TEST(RealClockTest, AfterFuncFiresNoEarlierThanDue) {
  std::promise<TimePoint> fired;
  RealClock clock;  // declared last: destroyed (thread joined) before what callbacks touch
  TimePoint start = clock.Now();
  clock.AfterFunc(milliseconds(5), [&] { fired.set_value(clock.Now()); });
  auto future = fired.get_future();
  ASSERT_EQ(future.wait_for(kTimeout), std::future_status::ready);
  EXPECT_GE(future.get() - start, milliseconds(5));
  EXPECT_EQ(clock.PendingTimers(), 0u);
}

// Holds the timer thread inside a callback until released, so a test can set up several
// timers (and cancel some) while none of them can run, and let real time pass until all are
// due. Order and cancellation are then proven without racing the clock: a descheduled test
// thread only makes the test slower, never wrong.
class TimerThreadGate {
 public:
  explicit TimerThreadGate(RealClock& clock) {
    clock.AfterFunc(Duration::zero(), [this] {
      entered_.set_value();
      release_.get_future().wait();
    });
    EXPECT_EQ(entered_.get_future().wait_for(kTimeout), std::future_status::ready);
  }
  ~TimerThreadGate() { Release(); }
  void Release() {
    if (!released_) release_.set_value();
    released_ = true;
  }

 private:
  std::promise<void> entered_;
  std::promise<void> release_;
  bool released_ = false;
};

// Waits (without sleeping a fixed amount) until `clock` has passed `t`.
void WaitUntil(const RealClock& clock, TimePoint t) {
  while (clock.Now() < t) std::this_thread::yield();
}

TEST(RealClockTest, FiresInTimeOrder) {
  Recorder rec;
  RealClock clock;
  TimerThreadGate gate(clock);
  const TimePoint start = clock.Now();
  clock.AfterFunc(milliseconds(30), rec.Fn(30));
  clock.AfterFunc(milliseconds(1), rec.Fn(1));
  clock.AfterFunc(milliseconds(15), rec.Fn(15));
  WaitUntil(clock, start + milliseconds(31));  // all three due while the thread is held
  gate.Release();
  ASSERT_TRUE(rec.WaitFor(3));
  EXPECT_EQ(rec.order(), (std::vector<int>{1, 15, 30}));
}

TEST(RealClockTest, FiresInTimeOrderWhenDueOneByOne) {
  // Real time is the point here: spacing of seconds, so a loaded machine cannot reorder them.
  Recorder rec;
  RealClock clock;
  clock.AfterFunc(milliseconds(2000), rec.Fn(2));
  clock.AfterFunc(milliseconds(1), rec.Fn(0));
  clock.AfterFunc(milliseconds(1000), rec.Fn(1));
  ASSERT_TRUE(rec.WaitFor(3));
  EXPECT_EQ(rec.order(), (std::vector<int>{0, 1, 2}));
}

TEST(RealClockTest, CancelPreventsFiring) {
  Recorder rec;
  RealClock clock;
  TimerThreadGate gate(clock);
  const TimePoint start = clock.Now();
  uint64_t cancelled = clock.AfterFunc(milliseconds(1), rec.Fn(1));
  clock.AfterFunc(milliseconds(20), rec.Fn(20));
  EXPECT_TRUE(clock.Cancel(cancelled));  // the timer thread is held: it cannot have run
  EXPECT_FALSE(clock.Cancel(cancelled));
  WaitUntil(clock, start + milliseconds(21));  // the cancelled one would be due too
  gate.Release();
  ASSERT_TRUE(rec.WaitFor(1));
  // Both would have been due at release; time order means 1 would have run before 20.
  EXPECT_EQ(rec.order(), (std::vector<int>{20}));

  uint64_t far = clock.AfterFunc(hours(1), rec.Fn(3600));
  EXPECT_EQ(clock.PendingTimers(), 1u);
  EXPECT_TRUE(clock.Cancel(far));
  EXPECT_EQ(clock.PendingTimers(), 0u);
}

TEST(RealClockTest, CallbackMayScheduleAndCancelOnTheSameClock) {
  Recorder rec;
  RealClock clock;
  uint64_t victim = clock.AfterFunc(hours(1), rec.Fn(-1));
  clock.AfterFunc(milliseconds(1), [&] {
    EXPECT_TRUE(clock.Cancel(victim));
    clock.AfterFunc(milliseconds(1), rec.Fn(2));
  });
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.order(), (std::vector<int>{2}));
}

TEST(RealClockTest, EarlierTimerAddedWhileWaitingIsNotDelayed) {
  Recorder rec;
  RealClock clock;
  clock.AfterFunc(hours(1), rec.Fn(3600));  // the thread now waits for an hour
  clock.AfterFunc(milliseconds(1), rec.Fn(1));
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.order(), (std::vector<int>{1}));
}

TEST(RealClockTest, DestructionDiscardsPendingTimersAndJoins) {
  auto flag = std::make_shared<int>(0);
  std::weak_ptr<int> weak = flag;
  {
    RealClock clock;
    clock.AfterFunc(hours(1), [flag] { ++*flag; });
    flag.reset();
    EXPECT_FALSE(weak.expired());  // captured by the pending callback
  }
  EXPECT_TRUE(weak.expired());  // callback destroyed with the clock, never run
}

TEST(RealClockTest, LastReferenceDroppedInsideItsOwnCallback) {
  // The timer thread is detached in this case, so what it touches is shared, not borrowed.
  auto released = std::make_shared<std::promise<void>>();
  auto done = std::make_shared<std::promise<void>>();
  auto clock = std::make_shared<RealClock>();
  clock->AfterFunc(milliseconds(1), [c = clock, gate = released->get_future().share(), done]() mutable {
    gate.wait();  // until the test has dropped its own reference
    c.reset();    // the last owner: ~RealClock runs here, on the timer thread
    done->set_value();
  });
  clock.reset();
  released->set_value();
  auto future = done->get_future();
  ASSERT_EQ(future.wait_for(kTimeout), std::future_status::ready);
}

TEST(RealClockTest, InstanceIsSharedAndRunsTimers) {
  auto a = RealClock::Instance();
  auto b = RealClock::Instance();
  EXPECT_EQ(a.get(), b.get());
  // Instance's thread is never joined: share the promise instead of lending it.
  auto fired = std::make_shared<std::promise<void>>();
  a->AfterFunc(milliseconds(1), [fired] { fired->set_value(); });
  ASSERT_EQ(fired->get_future().wait_for(kTimeout), std::future_status::ready);
}

TEST(RealClockTest, ConcurrentScheduleAndCancel) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::mutex mu;
  std::condition_variable cv;
  int fired = 0;
  int expected = 0;
  RealClock clock;
  std::vector<std::thread> threads;
  std::vector<int> kept(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t id = clock.AfterFunc(milliseconds(i % 3), [&] {
          std::lock_guard<std::mutex> lock(mu);
          ++fired;
          cv.notify_all();
        });
        // Cancel every other one; a cancel that loses the race counts as fired.
        if (i % 2 == 1 && clock.Cancel(id)) continue;
        ++kept[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int k : kept) expected += k;
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, kTimeout, [&] { return fired == expected; }));
  EXPECT_EQ(fired, expected);
}

}  // namespace
}  // namespace volcache
