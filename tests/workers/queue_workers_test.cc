#include "workers/queue_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "workers/clock.h"
#include "workers/rate_limiter.h"
#include "workers/work_queue.h"

namespace volcache {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kTimeout = milliseconds(30000);  // only reached when the code under test is broken

std::unique_ptr<RateLimiter> ExpLimiter() {
  return std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(5), seconds(1000));
}

// A gate a process function can block on until the test opens it, and that tells the test
// when something is waiting at it.
class Gate {
 public:
  void WaitUntilOpen() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void AwaitWaiters(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kTimeout, [&] { return waiting_ >= n; }));
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

class QueueWorkersTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  WorkQueue queue_{"test", clock_, ExpLimiter()};
};

TEST_F(QueueWorkersTest, ProcessesEverythingAndForgetsSuccesses) {
  std::mutex mu;
  std::multiset<std::string> seen;
  QueueWorkers workers(
      &queue_, 4,
      [&](const std::string& item) {
        std::lock_guard<std::mutex> lock(mu);
        seen.insert(item);
        return Status::Ok();
      },
      nullptr);
  for (int i = 0; i < 100; ++i) queue_.Add("n" + std::to_string(i));
  workers.Start();
  workers.Start();  // only the first call starts threads
  ASSERT_TRUE(workers.WaitForProcessed(100, kTimeout));
  workers.Stop();
  EXPECT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(seen.count("n" + std::to_string(i)), 1u);
    EXPECT_EQ(queue_.NumRequeues("n" + std::to_string(i)), 0);
  }
  QueueWorkers::Stats s = workers.stats();
  EXPECT_EQ(s.processed, 100u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.retried, 0u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(queue_.Stats().processing, 0u);
}

TEST_F(QueueWorkersTest, FailuresAreRetriedRateLimitedUntilTheySucceed) {
  std::atomic<int> calls{0};
  std::vector<std::pair<std::string, Status>> retry_asks;  // only touched by the single worker
  QueueWorkers workers(
      &queue_, 1,
      [&](const std::string& item) {
        return ++calls <= 2 ? Status::Unavailable("api server down") : Status::Ok();
      },
      [&](const std::string& item, const Status& error) {
        retry_asks.emplace_back(item, error);
        return true;
      });
  workers.Start();
  queue_.Add("node-a");
  ASSERT_TRUE(workers.WaitForProcessed(1, kTimeout));
  EXPECT_EQ(queue_.NumRequeues("node-a"), 1);
  EXPECT_EQ(queue_.DelayedLen(), 1u);  // waiting 5 ms (exponential base)

  clock_->Advance(milliseconds(4));
  EXPECT_EQ(queue_.DelayedLen(), 1u);  // not yet
  clock_->Advance(milliseconds(1));    // 5 ms: released
  ASSERT_TRUE(workers.WaitForProcessed(2, kTimeout));
  EXPECT_EQ(queue_.NumRequeues("node-a"), 2);
  EXPECT_EQ(queue_.DelayedLen(), 1u);  // second failure waits 10 ms

  clock_->Advance(milliseconds(9));
  EXPECT_EQ(queue_.DelayedLen(), 1u);
  clock_->Advance(milliseconds(1));
  ASSERT_TRUE(workers.WaitForProcessed(3, kTimeout));
  EXPECT_EQ(queue_.NumRequeues("node-a"), 0);  // success forgets the history
  workers.Stop();

  QueueWorkers::Stats s = workers.stats();
  EXPECT_EQ(s.processed, 3u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.retried, 2u);
  EXPECT_EQ(s.dropped, 0u);
  ASSERT_EQ(retry_asks.size(), 2u);
  EXPECT_EQ(retry_asks[0].first, "node-a");
  EXPECT_EQ(retry_asks[0].second.code(), StatusCode::kUnavailable);
}

TEST_F(QueueWorkersTest, ShouldRetryFalseDropsTheItem) {
  QueueWorkers workers(
      &queue_, 2,
      [&](const std::string& item) {
        return item == "gone" ? Status::NotFound("pod gone") : Status::Unavailable("flaky");
      },
      [&](const std::string& item, const Status& error) { return error.code() != StatusCode::kNotFound; });
  workers.Start();
  queue_.Add("gone");
  ASSERT_TRUE(workers.WaitForProcessed(1, kTimeout));
  EXPECT_EQ(queue_.DelayedLen(), 0u);
  EXPECT_EQ(queue_.Len(), 0u);
  EXPECT_EQ(queue_.NumRequeues("gone"), 0);
  clock_->Advance(seconds(10));  // nothing comes back
  EXPECT_EQ(queue_.Len() + queue_.DelayedLen(), 0u);

  queue_.Add("flaky");
  ASSERT_TRUE(workers.WaitForProcessed(2, kTimeout));
  EXPECT_EQ(queue_.DelayedLen(), 1u);
  workers.Stop();
  QueueWorkers::Stats s = workers.stats();
  EXPECT_EQ(s.processed, 2u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.retried, 1u);
}

// An item re-added while it is being processed is handed out again only after Done; so a
// second processing proves Done followed the first Get, whatever the outcome.
class DoneAfterGetTest : public QueueWorkersTest, public ::testing::WithParamInterface<int> {};

TEST_P(DoneAfterGetTest, ReAddDuringProcessingIsReplayedAfterDone) {
  const int outcome = GetParam();  // 0 success, 1 failure retried, 2 failure dropped
  Gate gate;
  std::atomic<int> calls{0};
  std::atomic<int> concurrent{0};
  std::atomic<bool> overlapped{false};
  QueueWorkers workers(
      &queue_, 4,
      [&](const std::string& item) {
        if (concurrent.fetch_add(1) != 0) overlapped = true;
        const int call = ++calls;
        if (call == 1) gate.WaitUntilOpen();
        concurrent.fetch_sub(1);
        return call == 1 && outcome != 0 ? Status::Unavailable("first attempt fails") : Status::Ok();
      },
      [&](const std::string&, const Status&) { return outcome == 1; });
  workers.Start();
  queue_.Add("a");
  gate.AwaitWaiters(1);
  queue_.Add("a");  // dirty while processing: not handed to another worker
  EXPECT_EQ(queue_.Len(), 0u);
  EXPECT_EQ(queue_.Stats().processing, 1u);
  gate.Open();
  ASSERT_TRUE(workers.WaitForProcessed(2, kTimeout));
  EXPECT_FALSE(overlapped.load());
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(queue_.Stats().processing, 0u);
  workers.Stop();
  EXPECT_EQ(queue_.Stats().processing, 0u);
}

INSTANTIATE_TEST_SUITE_P(Outcomes, DoneAfterGetTest, ::testing::Values(0, 1, 2));

TEST_F(QueueWorkersTest, StopDrainsReadyItemsDropsDelayedOnesAndJoins) {
  std::atomic<int> in_process{0};
  std::mutex mu;
  std::vector<std::string> done;
  QueueWorkers workers(
      &queue_, 1,
      [&](const std::string& item) {
        in_process.fetch_add(1);
        {
          std::lock_guard<std::mutex> lock(mu);
          done.push_back(item);
        }
        in_process.fetch_sub(1);
        return item == "retry" ? Status::Unavailable("later") : Status::Ok();
      },
      nullptr);
  workers.Start();
  queue_.Add("retry");
  ASSERT_TRUE(workers.WaitForProcessed(1, kTimeout));
  EXPECT_EQ(queue_.DelayedLen(), 1u);
  for (const char* s : {"a", "b", "c"}) queue_.Add(s);
  workers.Stop();  // ready items are still handed out before the workers exit
  EXPECT_EQ(in_process.load(), 0);
  EXPECT_TRUE(queue_.ShuttingDown());
  EXPECT_EQ(workers.stats().processed, 4u);
  EXPECT_EQ(queue_.DelayedLen(), 0u);  // the pending retry was dropped
  clock_->Advance(seconds(1));
  queue_.Add("late");  // ignored after shutdown
  workers.Stop();      // idempotent
  workers.Start();     // no-op after Stop
  EXPECT_EQ(workers.stats().processed, 4u);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(done, (std::vector<std::string>{"retry", "a", "b", "c"}));
}

TEST_F(QueueWorkersTest, StopWakesIdleWorkersAndWorksBeforeStart) {
  {
    QueueWorkers idle(
        &queue_, 8, [](const std::string&) { return Status::Ok(); }, nullptr);
    idle.Start();
    idle.Stop();  // all 8 blocked in Get on an empty queue
  }
  WorkQueue other("other", clock_, ExpLimiter());
  QueueWorkers never_started(
      &other, 2, [](const std::string&) { return Status::Ok(); }, nullptr);
  never_started.Stop();
  EXPECT_TRUE(other.ShuttingDown());
}

TEST_F(QueueWorkersTest, ManyWorkersRetriesAddUpAndAnItemIsNeverProcessedTwiceAtOnce) {
  constexpr int kItems = 2000;
  constexpr int kThreads = 8;
  auto failures_of = [](int i) { return i % 3; };  // item i fails i%3 times, then succeeds
  std::mutex mu;
  std::set<std::string> in_progress;    // guarded by mu
  std::map<std::string, int> attempts;  // guarded by mu
  bool overlapped = false;              // guarded by mu
  QueueWorkers workers(
      &queue_, kThreads,
      [&](const std::string& item) {
        int attempt;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!in_progress.insert(item).second) overlapped = true;
          attempt = ++attempts[item];
        }
        const int i = std::stoi(item.substr(1));
        Status result = attempt <= failures_of(i) ? Status::Unavailable("attempt " + std::to_string(attempt))
                                                  : Status::Ok();
        std::lock_guard<std::mutex> lock(mu);
        in_progress.erase(item);
        return result;
      },
      nullptr);
  workers.Start();
  for (int i = 0; i < kItems; ++i) queue_.Add("i" + std::to_string(i));

  // Round r processes every item with at least r failures; the retries of a round are all
  // scheduled on the clock by the time its items count as processed.
  uint64_t expected = 0;
  for (int round = 0; round <= 2; ++round) {
    for (int i = 0; i < kItems; ++i) expected += failures_of(i) >= round ? 1 : 0;
    ASSERT_TRUE(workers.WaitForProcessed(expected, kTimeout)) << "round " << round;
    clock_->Advance(seconds(1));  // releases this round's retries (5 ms, then 10 ms)
  }
  workers.Stop();
  QueueWorkers::Stats s = workers.stats();
  EXPECT_EQ(s.processed, expected);
  EXPECT_EQ(s.failed, expected - kItems);
  EXPECT_EQ(s.retried, expected - kItems);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_FALSE(overlapped);
  ASSERT_EQ(attempts.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) {
    EXPECT_EQ(attempts["i" + std::to_string(i)], failures_of(i) + 1);
    EXPECT_EQ(queue_.NumRequeues("i" + std::to_string(i)), 0);
  }
  EXPECT_EQ(queue_.Stats().processing, 0u);
}

TEST_F(QueueWorkersTest, DeathOnStopFromAWorker) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
        WorkQueue queue("death", clock, ExpLimiter());
        QueueWorkers* self = nullptr;
        std::mutex mu;
        std::condition_variable cv;
        QueueWorkers workers(
            &queue, 1,
            [&](const std::string&) {
              std::unique_lock<std::mutex> lock(mu);
              cv.wait(lock, [&] { return self != nullptr; });
              self->Stop();
              return Status::Ok();
            },
            nullptr);
        {
          std::lock_guard<std::mutex> lock(mu);
          self = &workers;
          cv.notify_all();
        }
        workers.Start();
        queue.Add("x");
        workers.WaitForProcessed(1, kTimeout);
      },
      "called from a worker");
}

}  // namespace
}  // namespace volcache
