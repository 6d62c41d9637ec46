#include "workers/rate_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "workers/clock.h"

namespace volcache {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A limiter that returns a fixed delay and counts calls (for MaxOf).
class FixedRateLimiter final : public RateLimiter {
 public:
  FixedRateLimiter(Duration d, int requeues) : d_(d), requeues_(requeues) {}
  Duration When(const std::string&) override {
    ++whens;
    return d_;
  }
  void Forget(const std::string&) override { ++forgets; }
  int NumRequeues(const std::string&) override { return requeues_; }
  int whens = 0;
  int forgets = 0;

 private:
  Duration d_;
  int requeues_;
};

// ----------------------------------------------------------------------------------------
// ItemExponentialFailureRateLimiter

TEST(ItemExponentialFailureRateLimiterTest, DoublesPerFailureFromBase) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  EXPECT_EQ(rl.When("a"), milliseconds(5));
  EXPECT_EQ(rl.When("a"), milliseconds(10));
  EXPECT_EQ(rl.When("a"), milliseconds(20));
  EXPECT_EQ(rl.When("a"), milliseconds(40));
  EXPECT_EQ(rl.NumRequeues("a"), 4);
  // Items are independent.
  EXPECT_EQ(rl.When("b"), milliseconds(5));
  EXPECT_EQ(rl.NumRequeues("b"), 1);
  EXPECT_EQ(rl.NumRequeues("never-seen"), 0);
}

TEST(ItemExponentialFailureRateLimiterTest, ForgetResets) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  rl.When("a");
  rl.When("a");
  rl.When("b");
  rl.Forget("a");
  EXPECT_EQ(rl.NumRequeues("a"), 0);
  EXPECT_EQ(rl.When("a"), milliseconds(5));
  EXPECT_EQ(rl.NumRequeues("b"), 1);  // untouched
  rl.Forget("unknown");               // harmless
}

TEST(ItemExponentialFailureRateLimiterTest, CapsAtMax) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  // 5ms * 2^17 = 655.36 s < 1000 s; 5ms * 2^18 = 1310.72 s > 1000 s.
  for (int i = 0; i < 17; ++i) rl.When("a");
  EXPECT_EQ(rl.When("a"), milliseconds(655360));
  EXPECT_EQ(rl.When("a"), seconds(1000));
  EXPECT_EQ(rl.When("a"), seconds(1000));
}

TEST(ItemExponentialFailureRateLimiterTest, NoOverflowAfterManyFailures) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  for (int i = 0; i < 100; ++i) {
    Duration d = rl.When("a");
    EXPECT_GT(d, Duration::zero()) << "failure " << i;
    EXPECT_LE(d, seconds(1000)) << "failure " << i;
  }
  EXPECT_EQ(rl.When("a"), seconds(1000));
  EXPECT_EQ(rl.NumRequeues("a"), 101);

  // Even with a max near the representable limit.
  ItemExponentialFailureRateLimiter huge(Duration(1), Duration::max());
  Duration prev = Duration::zero();
  for (int i = 0; i < 100; ++i) {
    Duration d = huge.When("x");
    EXPECT_GE(d, prev) << "failure " << i;
    prev = d;
  }
  EXPECT_EQ(prev, Duration::max());
}

// ----------------------------------------------------------------------------------------
// BucketRateLimiter

TEST(BucketRateLimiterTest, BurstImmediatelyThenOnePerInterval) {
  auto clock = std::make_shared<FakeClock>();
  BucketRateLimiter rl(10, 5, clock);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rl.When("x" + std::to_string(i)), Duration::zero()) << i;
  // Bucket empty: each reservation is 1/qps later than the previous one.
  EXPECT_EQ(rl.When("a"), milliseconds(100));
  EXPECT_EQ(rl.When("b"), milliseconds(200));
  EXPECT_EQ(rl.When("c"), milliseconds(300));
  EXPECT_EQ(rl.NumRequeues("a"), 0);
}

TEST(BucketRateLimiterTest, RefillsOverTimeUpToBurst) {
  auto clock = std::make_shared<FakeClock>();
  BucketRateLimiter rl(10, 5, clock);
  for (int i = 0; i < 5; ++i) rl.When("a");
  EXPECT_EQ(rl.When("a"), milliseconds(100));  // debt of one token

  clock->Advance(milliseconds(350));  // +3.5 tokens: 2.5 available
  EXPECT_EQ(rl.When("a"), Duration::zero());
  EXPECT_EQ(rl.When("a"), Duration::zero());
  EXPECT_EQ(rl.When("a"), milliseconds(50));  // 0.5 short

  clock->Advance(seconds(3600));  // refill is capped at burst
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rl.When("a"), Duration::zero()) << i;
  EXPECT_EQ(rl.When("a"), milliseconds(100));
}

TEST(BucketRateLimiterTest, ForgetDoesNotReturnTokens) {
  auto clock = std::make_shared<FakeClock>();
  BucketRateLimiter rl(1, 1, clock);
  EXPECT_EQ(rl.When("a"), Duration::zero());
  rl.Forget("a");
  EXPECT_EQ(rl.When("a"), seconds(1));
}

TEST(BucketRateLimiterTest, InfiniteQpsNeverWaits) {
  auto clock = std::make_shared<FakeClock>();
  BucketRateLimiter rl(std::numeric_limits<double>::infinity(), 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(rl.When("a"), Duration::zero());
}

TEST(BucketRateLimiterDeathTest, RejectsNonPositiveQpsOrBurst) {
  auto clock = std::make_shared<FakeClock>();
  EXPECT_DEATH(BucketRateLimiter(0, 1, clock), "qps");
  EXPECT_DEATH(BucketRateLimiter(10, 0, clock), "burst");
}

TEST(BucketRateLimiterTest, ConcurrentReservationsAreEachCountedOnce) {
  auto clock = std::make_shared<FakeClock>();
  BucketRateLimiter rl(1000, 100, clock);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::vector<std::vector<Duration>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) got[t].push_back(rl.When("a"));
    });
  }
  for (auto& th : threads) th.join();
  // Time never moved: 100 immediate, then 1 ms, 2 ms, ... 900 ms, each exactly once.
  std::vector<Duration> all;
  for (auto& v : got) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(all[i], Duration::zero());
  for (int i = 100; i < kThreads * kPerThread; ++i) EXPECT_EQ(all[i], milliseconds(i - 99)) << i;
}

// ----------------------------------------------------------------------------------------
// MaxOfRateLimiter

TEST(MaxOfRateLimiterTest, PicksTheLargerAndFansOut) {
  auto small = std::make_unique<FixedRateLimiter>(milliseconds(1), 7);
  auto large = std::make_unique<FixedRateLimiter>(milliseconds(9), 3);
  FixedRateLimiter* s = small.get();
  FixedRateLimiter* l = large.get();
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::move(small));
  v.push_back(std::move(large));
  MaxOfRateLimiter rl(std::move(v));
  EXPECT_EQ(rl.When("a"), milliseconds(9));
  EXPECT_EQ(s->whens, 1);  // every limiter records the request
  EXPECT_EQ(l->whens, 1);
  EXPECT_EQ(rl.NumRequeues("a"), 7);
  rl.Forget("a");
  EXPECT_EQ(s->forgets, 1);
  EXPECT_EQ(l->forgets, 1);
}

TEST(MaxOfRateLimiterTest, ExponentialVersusBucket) {
  auto clock = std::make_shared<FakeClock>();
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(1), seconds(1)));
  v.push_back(std::make_unique<BucketRateLimiter>(1, 1, clock));
  MaxOfRateLimiter rl(std::move(v));
  EXPECT_EQ(rl.When("a"), milliseconds(1));  // bucket had a token; exponential wins
  EXPECT_EQ(rl.When("a"), seconds(1));       // bucket empty: 1 s beats 2 ms
  EXPECT_EQ(rl.NumRequeues("a"), 2);
}

TEST(MaxOfRateLimiterTest, EmptyNeverWaits) {
  MaxOfRateLimiter rl({});
  EXPECT_EQ(rl.When("a"), Duration::zero());
  EXPECT_EQ(rl.NumRequeues("a"), 0);
}

// ----------------------------------------------------------------------------------------
// Factories (SPEC §4)

TEST(DefaultRateLimitersTest, NodeQueueIsExp5msTo1000sAndBucket10QpsBurst100) {
  auto clock = std::make_shared<FakeClock>();
  auto rl = DefaultNodeQueueRateLimiter(clock);
  // Per item exponential while the bucket has tokens.
  EXPECT_EQ(rl->When("n1"), milliseconds(5));
  EXPECT_EQ(rl->When("n1"), milliseconds(10));
  EXPECT_EQ(rl->When("n1"), milliseconds(20));
  EXPECT_EQ(rl->NumRequeues("n1"), 3);
  rl->Forget("n1");
  EXPECT_EQ(rl->NumRequeues("n1"), 0);
  // 3 tokens used above; 97 more first failures stay at 5 ms.
  for (int i = 0; i < 97; ++i) ASSERT_EQ(rl->When("m" + std::to_string(i)), milliseconds(5)) << i;
  // Burst of 100 exhausted: 10 qps spacing dominates.
  EXPECT_EQ(rl->When("x"), milliseconds(100));
  EXPECT_EQ(rl->When("y"), milliseconds(200));
  // Cap.
  for (int i = 0; i < 40; ++i) rl->When("cap");
  clock->Advance(seconds(3600));
  EXPECT_EQ(rl->When("cap"), seconds(1000));
}

TEST(DefaultRateLimitersTest, RetryQueueIsExp5msTo1000sAndBucket100QpsBurst1000) {
  auto clock = std::make_shared<FakeClock>();
  auto rl = DefaultRetryQueueRateLimiter(clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(rl->When("t" + std::to_string(i)), milliseconds(5)) << i;
  EXPECT_EQ(rl->When("x"), milliseconds(10));  // 1/100 qps, beats 5 ms
  EXPECT_EQ(rl->When("y"), milliseconds(20));
  clock->Advance(seconds(3600));
  EXPECT_EQ(rl->When("t0"), milliseconds(10));  // second failure of t0
  for (int i = 0; i < 40; ++i) rl->When("cap");
  clock->Advance(seconds(3600));
  EXPECT_EQ(rl->When("cap"), seconds(1000));
}

TEST(DefaultRateLimitersTest, Constants) {
  EXPECT_EQ(kDefaultRetryBaseDelay, milliseconds(5));
  EXPECT_EQ(kDefaultRetryMaxDelay, seconds(1000));
  EXPECT_EQ(kNodeQueueQps, 10);
  EXPECT_EQ(kNodeQueueBurst, 100);
  EXPECT_EQ(kRetryQueueQps, 100);
  EXPECT_EQ(kRetryQueueBurst, 1000);
}

}  // namespace
}  // namespace volcache
