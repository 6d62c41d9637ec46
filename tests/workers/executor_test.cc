#include "workers/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace volcache {
namespace {

TEST(InlineExecutorTest, RunsOnTheCallerBeforePostReturns) {
  InlineExecutor ex;
  std::vector<int> order;
  const std::thread::id caller = std::this_thread::get_id();
  ex.Post([&] {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(1);
    ex.Post([&] { order.push_back(2); });  // nested: runs right away, inside the first
    order.push_back(3);
  });
  order.push_back(4);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
  ex.Post(nullptr);  // an empty function is ignored
}

TEST(ThreadPoolExecutorTest, RunsEverythingPostedBeforeStop) {
  constexpr int kTasks = 10000;
  std::atomic<int> ran{0};
  ThreadPoolExecutor pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (int i = 0; i < kTasks; ++i) pool.Post([&] { ran.fetch_add(1, std::memory_order_relaxed); });
  pool.Stop();  // waits for accepted work, then joins
  EXPECT_EQ(ran.load(), kTasks);
  EXPECT_TRUE(pool.stopped());
}

TEST(ThreadPoolExecutorTest, WorkPostedByWorkBeforeStopStillRuns) {
  std::atomic<int> ran{0};
  std::latch posted_inner(1);
  ThreadPoolExecutor pool(2);
  pool.Post([&] {
    EXPECT_TRUE(pool.TryPost([&] { ran.fetch_add(1); }));
    posted_inner.count_down();
  });
  posted_inner.wait();
  pool.Stop();
  EXPECT_EQ(ran.load(), 1);
}

TEST(ThreadPoolExecutorTest, PostAfterStopIsDroppedUnrunAndTryPostSaysSo) {
  ThreadPoolExecutor pool(1);
  pool.Stop();
  pool.Stop();  // idempotent
  bool ran = false;
  auto token = std::make_shared<int>(0);
  EXPECT_FALSE(pool.TryPost([&ran, token] { ran = true; }));
  // Dropped means destroyed before TryPost returned: only our reference is left.
  EXPECT_EQ(token.use_count(), 1);
  pool.Post([&ran, token] { ran = true; });
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_FALSE(ran);
}

TEST(ThreadPoolExecutorTest, RunsOnPoolThreadsConcurrently) {
  // Two tasks that each wait for the other can only finish if they run at the same time.
  ThreadPoolExecutor pool(2);
  std::latch both(2);
  std::atomic<int> done{0};
  const std::thread::id caller = std::this_thread::get_id();
  for (int i = 0; i < 2; ++i) {
    pool.Post([&] {
      EXPECT_NE(std::this_thread::get_id(), caller);
      both.arrive_and_wait();
      done.fetch_add(1);
    });
  }
  pool.Stop();
  EXPECT_EQ(done.load(), 2);
}

TEST(ThreadPoolExecutorTest, StrandSerializesAndKeepsOrder) {
  constexpr int kTasks = 20000;
  ThreadPoolExecutor pool(4);
  std::unique_ptr<Executor> strand = pool.MakeStrand();
  // Deliberately unsynchronized: the strand is the only thing keeping these race-free
  // (ThreadSanitizer would report a missing happens-before between tasks).
  std::vector<int> order;
  int counter = 0;
  std::atomic<int> concurrent{0};
  std::atomic<bool> overlapped{false};
  for (int i = 0; i < kTasks; ++i) {
    strand->Post([&, i] {
      if (concurrent.fetch_add(1) != 0) overlapped = true;
      order.push_back(i);
      ++counter;
      concurrent.fetch_sub(1);
    });
  }
  pool.Stop();
  EXPECT_FALSE(overlapped.load());
  EXPECT_EQ(counter, kTasks);
  ASSERT_EQ(order.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ(order[i], i);
}

TEST(ThreadPoolExecutorTest, IndependentStrandsRunConcurrently) {
  ThreadPoolExecutor pool(2);
  std::unique_ptr<Executor> a = pool.MakeStrand();
  std::unique_ptr<Executor> b = pool.MakeStrand();
  std::latch both(2);
  std::atomic<int> done{0};
  a->Post([&] {
    both.arrive_and_wait();
    done.fetch_add(1);
  });
  b->Post([&] {
    both.arrive_and_wait();
    done.fetch_add(1);
  });
  pool.Stop();
  EXPECT_EQ(done.load(), 2);
}

TEST(ThreadPoolExecutorTest, StrandDropsAfterStopAndMayOutliveThePool) {
  std::unique_ptr<Executor> strand;
  {
    ThreadPoolExecutor pool(1);
    strand = pool.MakeStrand();
  }  // destroyed: stopped and joined
  auto token = std::make_shared<int>(0);
  bool ran = false;
  strand->Post([&ran, token] { ran = true; });
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_FALSE(ran);
}

TEST(ThreadPoolExecutorTest, ConcurrentPostersAndStrands) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2500;
  ThreadPoolExecutor pool(2);
  std::unique_ptr<Executor> strand = pool.MakeStrand();
  std::atomic<int> on_pool{0};
  int on_strand = 0;  // strand-confined
  std::latch start(kThreads);
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        pool.Post([&] { on_pool.fetch_add(1, std::memory_order_relaxed); });
        strand->Post([&] { ++on_strand; });
      }
    });
  }
  for (auto& t : posters) t.join();
  pool.Stop();
  EXPECT_EQ(on_pool.load(), kThreads * kPerThread);
  EXPECT_EQ(on_strand, kThreads * kPerThread);
}

TEST(ThreadPoolExecutorDeathTest, StopFromAPoolThreadIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ThreadPoolExecutor pool(1);
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
        pool.Post([&] {
          pool.Stop();
          std::lock_guard<std::mutex> lock(mu);
          done = true;
          cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done; });
      },
      "own threads");
}

}  // namespace
}  // namespace volcache
