#include "workers/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "workers/clock.h"
#include "workers/rate_limiter.h"

namespace volcache {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kTimeout = seconds(30);  // only reached when the code under test is broken

std::unique_ptr<RateLimiter> ExpLimiter() {
  return std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(5), seconds(1000));
}

class WorkQueueTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  WorkQueue q_{"test", clock_, ExpLimiter()};

  // Non-blocking Get that must succeed.
  std::string MustGet() {
    std::string item;
    EXPECT_TRUE(q_.TryGet(&item)) << "nothing ready";
    return item;
  }
  std::vector<std::string> DrainReady() {
    std::vector<std::string> out;
    std::string item;
    while (q_.TryGet(&item)) {
      out.push_back(item);
      q_.Done(item);
    }
    return out;
  }
};

TEST_F(WorkQueueTest, FifoOrder) {
  for (const char* s : {"c", "a", "b", "d"}) q_.Add(s);
  EXPECT_EQ(q_.Len(), 4u);
  EXPECT_EQ(DrainReady(), (std::vector<std::string>{"c", "a", "b", "d"}));
  EXPECT_EQ(q_.Len(), 0u);
}

TEST_F(WorkQueueTest, AddOfDirtyItemIsANoOp) {
  q_.Add("a");
  q_.Add("b");
  q_.Add("a");
  q_.Add("a");
  EXPECT_EQ(q_.Len(), 2u);
  EXPECT_EQ(q_.Stats().adds, 2u);
  EXPECT_EQ(DrainReady(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(WorkQueueTest, ReAddWhileProcessingIsReplayedAfterDone) {
  q_.Add("a");
  q_.Add("b");
  EXPECT_EQ(MustGet(), "a");
  q_.Add("a");  // dirty again while being processed: not handed out now
  q_.Add("a");
  EXPECT_EQ(q_.Len(), 1u);
  EXPECT_EQ(MustGet(), "b");
  std::string item;
  EXPECT_FALSE(q_.TryGet(&item));  // "a" is processing: not available a second time
  EXPECT_EQ(q_.Stats().processing, 2u);
  q_.Done("a");  // replayed now
  EXPECT_EQ(q_.Len(), 1u);
  EXPECT_EQ(MustGet(), "a");
  q_.Done("a");
  q_.Done("b");
  EXPECT_EQ(q_.Len(), 0u);
  EXPECT_EQ(q_.Stats().processing, 0u);
}

TEST_F(WorkQueueTest, DoneWithoutReAddDoesNotRequeue) {
  q_.Add("a");
  EXPECT_EQ(MustGet(), "a");
  q_.Done("a");
  q_.Done("a");        // second Done: no-op
  q_.Done("unknown");  // never handed out: no-op
  EXPECT_EQ(q_.Len(), 0u);
}

TEST_F(WorkQueueTest, DoneOfAQueuedButNotProcessingItemDoesNotDuplicateIt) {
  q_.Add("a");
  q_.Done("a");  // misuse: "a" was never handed out
  EXPECT_EQ(DrainReady(), (std::vector<std::string>{"a"}));
}

// The FIFO and the dirty/processing sets give their memory back when they empty: fill and
// drain the queue many times, at sizes either side of the FIFO's compaction threshold, and
// check that order, dedup and re-add during processing hold on every round.
TEST_F(WorkQueueTest, OrderAndDedupHoldAcrossRepeatedFillAndDrain) {
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int n = 1 + (round % 7) * 23;  // 1 .. 139 items
    std::vector<std::string> want;
    for (int i = 0; i < n; ++i) want.push_back("r" + std::to_string(round) + "-" + std::to_string(i));
    for (const std::string& s : want) q_.Add(s);
    for (const std::string& s : want) q_.Add(s);  // dirty: no-ops
    ASSERT_EQ(q_.Len(), static_cast<size_t>(n));

    // Take the first half without Done, re-adding each (dirty while processing).
    std::vector<std::string> got;
    const int half = n / 2;
    for (int i = 0; i < half; ++i) {
      got.push_back(MustGet());
      q_.Add(got.back());
      q_.Add(got.back());
    }
    ASSERT_EQ(q_.Len(), static_cast<size_t>(n - half));
    ASSERT_EQ(q_.Stats().processing, static_cast<size_t>(half));
    // Done re-queues them behind what is still queued, in the order of the Done calls.
    for (int i = half - 1; i >= 0; --i) q_.Done(got[i]);
    ASSERT_EQ(q_.Len(), static_cast<size_t>(n));
    std::vector<std::string> rest = DrainReady();
    got.insert(got.end(), rest.begin(), rest.end());

    std::vector<std::string> expected = want;
    for (int i = half - 1; i >= 0; --i) expected.push_back(want[i]);
    ASSERT_EQ(got, expected);
    WorkQueueStats s = q_.Stats();
    ASSERT_EQ(s.depth, 0u);
    ASSERT_EQ(s.processing, 0u);
    std::string item;
    ASSERT_FALSE(q_.TryGet(&item));
  }
}

// A queue that never empties (one Get per Add behind a backlog) still hands items out in
// FIFO order and deduplicates them while its consumed prefix is compacted away.
TEST_F(WorkQueueTest, FifoOrderHoldsWhileTheBacklogNeverEmpties) {
  constexpr int kBacklog = 40;
  constexpr int kItems = 2000;
  std::vector<std::string> got;
  for (int i = 0; i < kItems; ++i) {
    q_.Add("i" + std::to_string(i));
    if (i >= 10) q_.Add("i" + std::to_string(i - 10));  // still queued: a no-op
    if (i >= kBacklog) {
      got.push_back(MustGet());
      q_.Done(got.back());
    }
  }
  std::vector<std::string> rest = DrainReady();
  got.insert(got.end(), rest.begin(), rest.end());
  // Every item comes out once, in order.
  std::vector<std::string> expected;
  for (int i = 0; i < kItems; ++i) expected.push_back("i" + std::to_string(i));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(q_.Stats().adds, static_cast<uint64_t>(kItems));
}

TEST_F(WorkQueueTest, AddAfterBecomesReadyExactlyAtItsTime) {
  q_.AddAfter("a", milliseconds(100));
  EXPECT_EQ(q_.Len(), 0u);
  EXPECT_EQ(q_.DelayedLen(), 1u);
  clock_->Advance(milliseconds(99));
  EXPECT_EQ(q_.Len(), 0u);
  clock_->Advance(milliseconds(1));
  EXPECT_EQ(q_.Len(), 1u);
  EXPECT_EQ(q_.DelayedLen(), 0u);
  EXPECT_EQ(MustGet(), "a");
}

TEST_F(WorkQueueTest, AddAfterNonPositiveDelayIsAdd) {
  q_.AddAfter("a", Duration::zero());
  q_.AddAfter("b", -seconds(1));
  EXPECT_EQ(q_.Len(), 2u);
  EXPECT_EQ(q_.DelayedLen(), 0u);
}

TEST_F(WorkQueueTest, AddAfterEarliestReadyTimeWins) {
  q_.AddAfter("a", milliseconds(100));
  q_.AddAfter("a", milliseconds(50));   // earlier: moves the ready time
  q_.AddAfter("a", milliseconds(200));  // later: ignored
  EXPECT_EQ(q_.DelayedLen(), 1u);
  EXPECT_EQ(clock_->PendingTimers(), 1u);  // the superseded timer was cancelled
  clock_->Advance(milliseconds(49));
  EXPECT_EQ(q_.Len(), 0u);
  clock_->Advance(milliseconds(1));
  EXPECT_EQ(q_.Len(), 1u);
  EXPECT_EQ(MustGet(), "a");
  q_.Done("a");
  // Neither the 100 ms nor the 200 ms request comes back.
  clock_->Advance(seconds(1));
  EXPECT_EQ(q_.Len(), 0u);
  EXPECT_EQ(q_.DelayedLen(), 0u);
}

TEST_F(WorkQueueTest, EarliestReadyTimeIsMeasuredFromEachCall) {
  q_.AddAfter("a", milliseconds(100));  // ready at 100
  clock_->Advance(milliseconds(40));
  q_.AddAfter("a", milliseconds(70));  // ready at 110: later, ignored
  clock_->Advance(milliseconds(60));
  EXPECT_EQ(q_.Len(), 1u);
  q_.AddAfter("b", milliseconds(100));  // ready at 200
  clock_->Advance(milliseconds(40));
  q_.AddAfter("b", milliseconds(30));  // ready at 170: earlier, wins
  clock_->Advance(milliseconds(30));
  EXPECT_EQ(q_.Len(), 2u);
}

TEST_F(WorkQueueTest, DelayedItemsComeOutInReadyOrder) {
  q_.AddAfter("late", milliseconds(30));
  q_.AddAfter("early", milliseconds(10));
  q_.AddAfter("mid", milliseconds(20));
  clock_->Advance(seconds(1));
  EXPECT_EQ(DrainReady(), (std::vector<std::string>{"early", "mid", "late"}));
}

TEST_F(WorkQueueTest, DelayedAddOfDirtyItemIsDeduplicated) {
  q_.Add("a");
  q_.AddAfter("a", milliseconds(10));
  clock_->Advance(milliseconds(10));
  EXPECT_EQ(q_.Len(), 1u);  // was already dirty
  EXPECT_EQ(DrainReady(), (std::vector<std::string>{"a"}));
}

TEST_F(WorkQueueTest, AddRateLimitedBacksOffExponentiallyAndForgetResets) {
  auto ready_after = [&](Duration expected) {
    q_.AddRateLimited("a");
    EXPECT_EQ(q_.DelayedLen(), 1u);
    clock_->Advance(expected - Duration(1));
    EXPECT_EQ(q_.Len(), 0u) << "ready before " << expected.count() << "ns";
    clock_->Advance(Duration(1));
    EXPECT_EQ(q_.Len(), 1u) << "not ready at " << expected.count() << "ns";
    std::string item;
    EXPECT_TRUE(q_.TryGet(&item));
    q_.Done(item);
  };
  ready_after(milliseconds(5));
  ready_after(milliseconds(10));
  ready_after(milliseconds(20));
  ready_after(milliseconds(40));
  EXPECT_EQ(q_.NumRequeues("a"), 4);
  EXPECT_EQ(q_.Stats().retries, 4u);
  q_.Forget("a");
  EXPECT_EQ(q_.NumRequeues("a"), 0);
  ready_after(milliseconds(5));
  EXPECT_EQ(q_.NumRequeues("a"), 1);
}

TEST_F(WorkQueueTest, PlainAddDoesNotCountAsRequeue) {
  q_.Add("a");
  EXPECT_EQ(q_.NumRequeues("a"), 0);
  EXPECT_EQ(q_.Stats().retries, 0u);
}

TEST(WorkQueueDefaultsTest, NodeQueueLimiterThroughTheQueue) {
  auto clock = std::make_shared<FakeClock>();
  WorkQueue q("nodes", clock, DefaultNodeQueueRateLimiter(clock));
  for (int i = 0; i < 100; ++i) q.AddRateLimited("n" + std::to_string(i));
  q.AddRateLimited("over-burst");  // 101st token: 100 ms at 10 qps
  clock->Advance(milliseconds(5));
  EXPECT_EQ(q.Len(), 100u);
  EXPECT_EQ(q.DelayedLen(), 1u);
  clock->Advance(milliseconds(95));
  EXPECT_EQ(q.Len(), 101u);
}

TEST_F(WorkQueueTest, StatsSnapshot) {
  q_.Add("a");
  q_.Add("b");
  q_.AddAfter("c", seconds(1));
  q_.AddRateLimited("d");
  MustGet();
  WorkQueueStats s = q_.Stats();
  EXPECT_EQ(s.adds, 2u);
  EXPECT_EQ(s.retries, 1u);
  EXPECT_EQ(s.depth, 1u);
  EXPECT_EQ(s.delayed, 2u);
  EXPECT_EQ(s.processing, 1u);
  EXPECT_EQ(q_.name(), "test");
}

TEST_F(WorkQueueTest, QueueWaitObserverSeesTimeSpentReady) {
  std::vector<Duration> waits;
  q_.SetQueueWaitObserver([&](Duration d) { waits.push_back(d); });
  q_.Add("a");
  clock_->Advance(seconds(3));
  q_.Add("b");
  clock_->Advance(seconds(1));
  DrainReady();
  EXPECT_EQ(waits, (std::vector<Duration>{seconds(4), seconds(1)}));
  q_.SetQueueWaitObserver(nullptr);
  q_.Add("c");
  DrainReady();
  EXPECT_EQ(waits.size(), 2u);
}

TEST_F(WorkQueueTest, ShutDownDropsNewAndDelayedAddsButHandsOutQueuedOnes) {
  q_.Add("a");
  q_.Add("b");
  q_.AddAfter("later", seconds(1));
  q_.ShutDown();
  EXPECT_TRUE(q_.ShuttingDown());
  EXPECT_EQ(q_.DelayedLen(), 0u);
  EXPECT_EQ(clock_->PendingTimers(), 0u);
  q_.Add("c");
  q_.AddAfter("d", seconds(1));
  q_.AddRateLimited("e");
  EXPECT_EQ(q_.NumRequeues("e"), 0);
  clock_->Advance(seconds(10));
  // As in client-go: what was queued is still handed out, then Get reports shutdown.
  std::string item;
  ASSERT_TRUE(q_.Get(&item));
  EXPECT_EQ(item, "a");
  ASSERT_TRUE(q_.Get(&item));
  EXPECT_EQ(item, "b");
  EXPECT_FALSE(q_.Get(&item));
  EXPECT_FALSE(q_.TryGet(&item));
  q_.Done("a");
  q_.Done("b");
}

TEST_F(WorkQueueTest, DestructionCancelsPendingTimers) {
  auto clock = std::make_shared<FakeClock>();
  {
    WorkQueue q("short-lived", clock, ExpLimiter());
    q.AddAfter("a", seconds(1));
    q.AddRateLimited("b");
    EXPECT_EQ(clock->PendingTimers(), 2u);
  }
  EXPECT_EQ(clock->PendingTimers(), 0u);
  clock->Advance(seconds(10));  // nothing left to fire into a dead queue
}

// ----------------------------------------------------------------------------------------
// Threads. Waits are on joins, latches and futures; nothing sleeps.

TEST_F(WorkQueueTest, BlockedGetReturnsWhenAnItemArrives) {
  std::promise<std::string> got;
  std::thread worker([&] {
    std::string item;
    if (q_.Get(&item))
      got.set_value(item);
    else
      got.set_value("<shutdown>");
  });
  q_.AddAfter("a", milliseconds(10));
  clock_->Advance(milliseconds(10));  // the timer callback wakes the blocked Get
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(kTimeout), std::future_status::ready);
  EXPECT_EQ(f.get(), "a");
  worker.join();
}

TEST_F(WorkQueueTest, ShutDownWakesBlockedGet) {
  std::latch started(1);
  std::atomic<int> result{-1};
  std::thread worker([&] {
    started.count_down();
    std::string item;
    result = q_.Get(&item) ? 1 : 0;
  });
  started.wait();
  q_.ShutDown();
  worker.join();
  EXPECT_EQ(result.load(), 0);
}

TEST_F(WorkQueueTest, ShutDownWakesEveryBlockedGet) {
  constexpr int kWorkers = 4;
  std::atomic<int> returned_false{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&] {
      std::string item;
      if (!q_.Get(&item)) ++returned_false;
    });
  }
  q_.ShutDown();
  for (auto& w : workers) w.join();
  EXPECT_EQ(returned_false.load(), kWorkers);
}

TEST_F(WorkQueueTest, ShutDownWithDrainWaitsForDone) {
  q_.Add("a");
  std::string item = MustGet();
  std::atomic<bool> drained{false};
  std::thread stopper([&] {
    q_.ShutDownWithDrain();
    drained = true;
  });
  // Wait (without sleeping) until the stopper is inside ShutDownWithDrain.
  while (!q_.ShuttingDown()) std::this_thread::yield();
  EXPECT_FALSE(drained.load());  // "a" is still being processed
  q_.Add("b");                   // ignored: shutting down
  EXPECT_EQ(q_.Len(), 0u);
  q_.Done(item);
  stopper.join();
  EXPECT_TRUE(drained.load());
}

TEST_F(WorkQueueTest, ShutDownWithDrainReturnsAtOnceWhenIdle) {
  q_.ShutDownWithDrain();
  EXPECT_TRUE(q_.ShuttingDown());
}

TEST_F(WorkQueueTest, ShutDownReleasesAShutDownWithDrain) {
  q_.Add("a");
  MustGet();  // never Done
  std::thread stopper([&] { q_.ShutDownWithDrain(); });
  while (!q_.ShuttingDown()) std::this_thread::yield();
  q_.ShutDown();
  stopper.join();
  q_.Done("a");
}

TEST_F(WorkQueueTest, ReAddWhileProcessingIsNotHandedOutToASecondWorker) {
  q_.Add("a");
  std::string first = MustGet();  // worker 1 (this thread) holds "a"
  q_.Add("a");                    // dirty while processing
  std::promise<std::string> second;
  std::latch started(1);
  std::thread worker2([&] {
    started.count_down();
    std::string item;
    second.set_value(q_.Get(&item) ? item : "<shutdown>");
  });
  started.wait();
  auto f = second.get_future();
  std::string item;
  EXPECT_FALSE(q_.TryGet(&item));  // nobody may take "a" while worker 1 holds it
  EXPECT_EQ(q_.Len(), 0u);
  q_.Done(first);  // now it is replayed, to worker 2
  ASSERT_EQ(f.wait_for(kTimeout), std::future_status::ready);
  EXPECT_EQ(f.get(), "a");
  worker2.join();
  q_.Done("a");
}

// Two workers on a real-clock queue, one producer re-adding a handful of keys as fast as it
// can. Invariants: a key is never held by two workers at once, and every key completes at
// least once after the producer's final round of Adds began.
TEST(WorkQueueConcurrencyTest, NeverHandsOutAnItemTwiceAtOnce) {
  constexpr int kWorkers = 2;
  constexpr int kAdds = 20000;
  const std::vector<std::string> keys = {"k0", "k1", "k2", "k3"};
  auto clock = RealClock::Instance();
  WorkQueue q("stress", clock, ExpLimiter());

  std::mutex mu;
  std::map<std::string, int> holders;          // guarded by mu
  std::map<std::string, int> processed_after;  // guarded by mu: completions in the final round
  bool adds_finished = false;                  // guarded by mu
  std::atomic<int> violations{0};
  std::barrier start(kWorkers + 1);

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      start.arrive_and_wait();
      std::string item;
      while (q.Get(&item)) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (++holders[item] != 1) ++violations;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          --holders[item];
          if (adds_finished) ++processed_after[item];
        }
        q.Done(item);
      }
    });
  }
  start.arrive_and_wait();
  for (int i = 0; i < kAdds; ++i) {
    if (i == kAdds - static_cast<int>(keys.size())) {
      // Final round: each key must be processed (again) after this point.
      std::lock_guard<std::mutex> lock(mu);
      adds_finished = true;
    }
    q.Add(keys[i % keys.size()]);
  }
  q.ShutDownWithDrain();  // workers still hand out what is queued, then see shutdown
  for (auto& w : workers) w.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(q.Len(), 0u);
  for (const auto& key : keys) EXPECT_GE(processed_after[key], 1) << key;
}

TEST(WorkQueueConcurrencyTest, RealClockDelayedAddWakesGet) {
  // Ordering between delayed items is covered on the FakeClock; on real time only check
  // that the timer thread wakes a blocked Get, and not before the item's ready time.
  auto clock = std::make_shared<RealClock>();
  WorkQueue q("real", clock, ExpLimiter());
  TimePoint start = clock->Now();
  q.AddAfter("a", milliseconds(5));
  std::string item;
  ASSERT_TRUE(q.Get(&item));  // blocks until the timer thread makes "a" ready
  EXPECT_EQ(item, "a");
  EXPECT_GE(clock->Now() - start, milliseconds(5));
  q.Done(item);
}

TEST(WorkQueueConcurrencyTest, QueueDestroyedWithTimersPendingOnARealClock) {
  auto clock = std::make_shared<RealClock>();
  for (int i = 0; i < 50; ++i) {
    WorkQueue q("short", clock, ExpLimiter());
    q.AddAfter("a", Duration(1));  // may fire while the queue is being destroyed
    q.AddAfter("b", hours(1));
  }
  // Destroying the clock joins its thread: any straggler callback has finished.
  clock.reset();
}

}  // namespace
}  // namespace volcache
