// Superseded snapshot versions are freed off the session's path (cache/reclaimer.h).
#include "cache/reclaimer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "cache/scheduler_cache.h"
#include "tests/fakes/cluster_builders.h"

namespace volcache {
namespace {

using testing::CacheHarness;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;

TEST(ReclaimerTest, FreesRetiredObjectsOnItsOwnThread) {
  std::atomic<int> freed{0};
  std::thread::id freed_on;
  std::vector<std::shared_ptr<const void>> batch;
  for (int i = 0; i < 3; ++i) {
    batch.push_back(std::shared_ptr<const int>(new int(i), [&](const int* p) {
      freed_on = std::this_thread::get_id();
      delete p;
      ++freed;
    }));
  }
  Reclaimer reclaimer;
  reclaimer.Retire(std::move(batch));
  reclaimer.Drain();
  EXPECT_EQ(freed.load(), 3);
  EXPECT_NE(freed_on, std::this_thread::get_id());
  reclaimer.Retire({});  // nothing to do
  reclaimer.Drain();
}

TEST(ReclaimerTest, DestructorFreesWhatIsLeft) {
  std::atomic<int> freed{0};
  {
    Reclaimer reclaimer;
    std::vector<std::shared_ptr<const void>> batch;
    for (int i = 0; i < 3; ++i) {
      batch.push_back(std::shared_ptr<const int>(new int(i), [&](const int* p) {
        delete p;
        ++freed;
      }));
    }
    reclaimer.Retire(std::move(batch));
  }
  EXPECT_EQ(freed.load(), 3);
}

// A batch of `n` versions that count into `freed` when destroyed.
std::vector<std::shared_ptr<const void>> CountedBatch(int n, std::atomic<int>* freed) {
  std::vector<std::shared_ptr<const void>> batch;
  for (int i = 0; i < n; ++i) {
    batch.push_back(std::shared_ptr<const int>(new int(i), [freed](const int* p) {
      delete p;
      ++*freed;
    }));
  }
  return batch;
}

ReclaimerOptions Options(std::chrono::milliseconds poll, std::chrono::milliseconds idle_after,
                         size_t wake_at = ReclaimerOptions{}.wake_at) {
  ReclaimerOptions o;
  o.poll = poll;
  o.idle_after = idle_after;
  o.wake_at = wake_at;
  return o;
}
constexpr std::chrono::hours kHour(1);

// Whether `done` became true within a minute (generous: a sanitizer build on a busy machine);
// the conditions waited for here come true within milliseconds when the code is right.
bool Eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The thread sleeps until the first batch (a process that retires nothing never polls): the
// first Retire wakes it, an hour before its poll would.
TEST(ReclaimerTest, TheFirstRetireWakesTheThread) {
  std::atomic<int> freed{0};
  Reclaimer reclaimer(Options(kHour, 2 * kHour));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // asleep by now, or soon
  reclaimer.Retire(CountedBatch(3, &freed));
  EXPECT_TRUE(Eventually([&] { return freed.load() == 3; }));
}

// Once it has had work, Retire only queues; the polling thread frees the batch without being
// woken or drained.
TEST(ReclaimerTest, ThePollFreesARetiredBatchWithoutAWakeUp) {
  std::atomic<int> freed{0};
  Reclaimer reclaimer(Options(std::chrono::milliseconds(1), kHour));  // keeps polling
  reclaimer.Retire(CountedBatch(1, &freed));
  reclaimer.Drain();  // polling from now on
  const uint64_t woken = reclaimer.wakeups();
  reclaimer.Retire(CountedBatch(3, &freed));
  EXPECT_TRUE(Eventually([&] { return freed.load() == 4; }));
  EXPECT_EQ(reclaimer.wakeups(), woken);
}

// The caller of Retire does not pay for a wake-up under the wake_at bound while the thread
// polls: it sees the batch at its next poll (an hour here), or on its way to the wait.
TEST(ReclaimerTest, RetireUnderWakeAtDoesNotWakeAPollingThread) {
  std::atomic<int> freed{0};
  Reclaimer reclaimer(Options(kHour, 2 * kHour));  // never idle once it has worked
  reclaimer.Retire(CountedBatch(1, &freed));
  reclaimer.Drain();  // polling from now on
  const uint64_t woken = reclaimer.wakeups();
  reclaimer.Retire(CountedBatch(3, &freed));
  reclaimer.Retire(CountedBatch(2, &freed));
  EXPECT_EQ(reclaimer.wakeups(), woken);
  reclaimer.Drain();
  EXPECT_EQ(freed.load(), 6);
}

// A queue that reaches wake_at versions is freed at once, long before the next poll.
TEST(ReclaimerTest, ABatchThatReachesWakeAtWakesTheThread) {
  std::atomic<int> freed{0};
  Reclaimer reclaimer(Options(kHour, 2 * kHour, 5));
  reclaimer.Retire(CountedBatch(5, &freed));
  EXPECT_EQ(reclaimer.wakeups(), 1u);
  EXPECT_TRUE(Eventually([&] { return freed.load() == 5; }));
}

// After idle_after without work the thread stops polling; the next Retire wakes it.
TEST(ReclaimerTest, AnIdleThreadSleepsUntilRetireWakesIt) {
  std::atomic<int> freed{0};
  Reclaimer reclaimer(Options(std::chrono::milliseconds(1), std::chrono::milliseconds(5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // asleep by now, or soon
  reclaimer.Retire(CountedBatch(3, &freed));
  EXPECT_TRUE(Eventually([&] { return freed.load() == 3; }));
  // Idle again, then more work: woken again.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  reclaimer.Retire(CountedBatch(2, &freed));
  EXPECT_TRUE(Eventually([&] { return freed.load() == 5; }));
}

// Drain does not wait for the poll.
TEST(ReclaimerTest, DrainFreesAtOnceWhateverThePoll) {
  std::atomic<int> freed{0};
  Reclaimer reclaimer(Options(kHour, 2 * kHour));
  reclaimer.Retire(CountedBatch(3, &freed));
  reclaimer.Retire(CountedBatch(1, &freed));
  reclaimer.Drain();
  EXPECT_EQ(freed.load(), 4);
  reclaimer.Retire(CountedBatch(2, &freed));
  reclaimer.Drain();
  EXPECT_EQ(freed.load(), 6);
}

// The job version an incremental snapshot replaces is not destroyed by UpdateSnapshot under
// the cache lock but by the reclaimer the cache was given; with background_reclaim off, by
// the caller right away.
void ReplacedVersionIsFreed(bool background) {
  Reclaimer reclaimer;  // outlives the cache
  SchedulerCacheOptions o;
  o.background_reclaim = background;
  o.reclaimer = &reclaimer;
  CacheHarness h(o);
  h.cache->EnsureDefaultQueues();
  h.PutNode(NodeBuilder("n1").Allocatable("8", "32Gi"));
  ASSERT_TRUE(h.cache->AddPodGroup(PodGroupBuilder("ns", "job").MinMember(1).Ptr()).ok());
  auto pod = PodBuilder("ns", "p0").Group("job").Request("1", "1Gi");
  ASSERT_TRUE(h.PutPod(pod).ok());
  auto snap = h.cache->Snapshot();
  std::weak_ptr<const JobInfo> old = snap->jobs().at("ns/job");
  std::weak_ptr<const NodeInfo> old_node = snap->nodes().at("n1");
  // The pod lands on n1: the job and the node get new versions.
  ASSERT_TRUE(h.cache->UpdatePod(nullptr, pod.NodeName("n1").Phase("Running").Ptr()).ok());
  h.cache->UpdateSnapshot(snap.get());
  if (background) reclaimer.Drain();
  EXPECT_TRUE(old.expired());
  EXPECT_TRUE(old_node.expired());
  ASSERT_EQ(snap->FindJob("ns/job")->tasks().size(), 1u);
  EXPECT_EQ(snap->FindJob("ns/job")->tasks().begin()->second.status, TaskStatus::kRunning);
  EXPECT_EQ(snap->FindNode("n1")->tasks().size(), 1u);
}

TEST(ReclaimerTest, UpdateSnapshotRetiresReplacedVersionsInTheBackground) { ReplacedVersionIsFreed(true); }
TEST(ReclaimerTest, UpdateSnapshotFreesReplacedVersionsInlineWhenAskedTo) { ReplacedVersionIsFreed(false); }

}  // namespace
}  // namespace volcache
