#include "workers/backoff.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace volcache {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BackoffTest, DoublesUpToTheCapWithoutJitter) {
  Backoff b({.initial = milliseconds(800), .factor = 2, .max = seconds(30), .jitter = 0});
  std::vector<int64_t> got;
  for (int i = 0; i < 8; ++i) got.push_back(std::chrono::duration_cast<milliseconds>(b.Next()).count());
  EXPECT_EQ(got, (std::vector<int64_t>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
  EXPECT_EQ(b.steps(), 8u);
  b.Reset();
  EXPECT_EQ(b.steps(), 0u);
  EXPECT_EQ(b.Next(), milliseconds(800));
}

TEST(BackoffTest, JitterStaysWithinItsFractionAndVaries) {
  Backoff b({.initial = seconds(1), .factor = 1, .max = seconds(60), .jitter = 0.1}, /*seed=*/7);
  std::set<int64_t> distinct;
  for (int i = 0; i < 200; ++i) {
    Duration d = b.Next();
    EXPECT_GE(d, seconds(1));
    EXPECT_LT(d, milliseconds(1100));
    distinct.insert(d.count());
  }
  EXPECT_GT(distinct.size(), 100u);  // not a constant: retries of many clients spread out
}

TEST(LogThrottleTest, RepeatsWithinTheWindowAreCountedAndReportedOnTheNextLine) {
  auto clock = std::make_shared<FakeClock>();
  LogThrottle t(clock, seconds(60));
  uint64_t n = 99;
  EXPECT_TRUE(t.ShouldLog("q", "connection refused", &n));
  EXPECT_EQ(n, 0u);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(t.ShouldLog("q", "connection refused", &n));
  EXPECT_TRUE(t.ShouldLog("other", "connection refused", &n));  // keys are independent
  clock->Advance(seconds(60));
  EXPECT_TRUE(t.ShouldLog("q", "connection refused", &n));
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(LogThrottle::WithRepeats("connection refused", n), "connection refused (repeated 5 times)");
  EXPECT_FALSE(t.ShouldLog("q", "connection refused", &n));
  EXPECT_TRUE(t.ShouldLog("q", "403 forbidden", &n));  // a new message is logged at once
  EXPECT_EQ(n, 0u);
}

}  // namespace
}  // namespace volcache
