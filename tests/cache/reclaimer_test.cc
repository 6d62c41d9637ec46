// Superseded snapshot versions are freed off the session's path (cache/reclaimer.h).
#include "cache/reclaimer.h"

#include <gtest/gtest.h>

#include <atomic>
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
