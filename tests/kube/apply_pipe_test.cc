#include "kube/apply_pipe.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace volcache::kube {
namespace {

TEST(ApplyPipeTest, AppliesEveryItemInPushOrderOnItsOwnThread) {
  std::vector<int> seen;  // written by the pipe's thread only; read after Drain
  std::thread::id applier;
  ApplyPipe<int> pipe(8, [&](int& v) {
    applier = std::this_thread::get_id();
    seen.push_back(v);
  });
  for (int i = 0; i < 10000; ++i) pipe.Push(i);
  pipe.Drain();
  ASSERT_EQ(seen.size(), 10000u);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i) << "item " << i;
  EXPECT_NE(applier, std::this_thread::get_id());
}

TEST(ApplyPipeTest, DrainWaitsForTheItemBeingApplied) {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, release = false;
  std::atomic<int> applied{0};
  ApplyPipe<int> pipe(4, [&](int&) {
    std::unique_lock<std::mutex> l(mu);
    started = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
    ++applied;
  });
  pipe.Push(1);
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30), [&] { return started; }));
  }
  // The item is taken but not applied: Drain must not return until it is.
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    pipe.Drain();
    drained = true;
  });
  // Nothing can make Drain return while the apply is held; check it did not, then release.
  EXPECT_FALSE(drained.load());
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_FALSE(drained.load());
    release = true;
  }
  cv.notify_all();
  drainer.join();
  EXPECT_TRUE(drained.load());
  EXPECT_EQ(applied.load(), 1);
}

TEST(ApplyPipeTest, ProducerWaitsWhenCapacityIsReached) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  ApplyPipe<int> pipe(2, [&](int&) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return release; });
  });
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    // The consumer holds at most one batch; two more fill the pipe, the next one waits.
    for (int i = 0; i < 6; ++i) {
      pipe.Push(i);
      ++pushed;
    }
  });
  // While the consumer is held the producer gets at least 3 items in (one taken, two
  // pending) and never more than 4 (a taken batch holds at most 2): the 5th push waits.
  for (int i = 0; i < 6000 && pushed.load() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(pushed.load(), 3);
  EXPECT_LE(pushed.load(), 4);
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  producer.join();
  pipe.Drain();
  EXPECT_EQ(pushed.load(), 6);
}

TEST(ApplyPipeTest, DestructorAppliesWhatWasPushed) {
  std::atomic<int> applied{0};
  {
    ApplyPipe<int> pipe(1024, [&](int&) { ++applied; });
    for (int i = 0; i < 500; ++i) pipe.Push(i);
  }
  EXPECT_EQ(applied.load(), 500);
}

}  // namespace
}  // namespace volcache::kube
