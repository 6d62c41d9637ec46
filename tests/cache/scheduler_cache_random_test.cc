// SchedulerCache (SPEC §3, §8): Randomized sequences of events, binds, evictions and session scribbles:
// invariants and snapshots hold after every step.

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

// ================================================================ randomized sequences

// Random events, binds, evictions, session scribbles and clock ticks over a small universe.
// After every step: invariants hold, a refused operation changed nothing, and the
// incrementally refreshed snapshot equals a fresh one.
class RandomSequenceTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RandomSequenceTest, InvariantsAndSnapshotsHold) {
  SchedulerCacheOptions opts;
  opts.assumed_ttl = 10s;
  opts.removal_log_capacity = 16;
  CacheHarness h(opts);
  h.cache->EnsureDefaultQueues();
  std::mt19937 rng(GetParam());
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  auto node_name = [&] { return "n" + std::to_string(pick(5)); };
  auto pod_name = [&] { return "p" + std::to_string(pick(12)); };
  const std::vector<std::string> groups = {"g0", "g1", "g2", ""};
  const std::vector<std::string> cpus = {"100m", "500m", "1", "2", "3"};
  std::vector<std::unique_ptr<ClusterInfo>> snaps;
  snaps.push_back(h.cache->Snapshot());
  snaps.push_back(h.cache->Snapshot());
  int refused = 0;

  for (int step = 0; step < 1500; ++step) {
    SCOPED_TRACE("seed " + std::to_string(GetParam()) + " step " + std::to_string(step));
    const std::string before = h.cache->Dump();
    Status s;
    bool all_or_nothing = true;
    const int op = pick(20);
    switch (op) {
      case 0:
      case 1: {  // node add/update
        NodeBuilder b(node_name());
        b.Allocatable(std::to_string(2 + pick(6)), std::to_string(4 + pick(8)) + "Gi",
                      std::to_string(3 + pick(4)));
        if (pick(5) == 0) b.Ready(false);
        if (pick(3) == 0) b.Zone("r", "z" + std::to_string(pick(3)));
        if (pick(6) == 0) b.RevocableZone("rz");
        h.PutNode(b);
        all_or_nothing = false;
        break;
      }
      case 2:
        h.RemoveNode(node_name());
        all_or_nothing = false;
        break;
      case 3:
      case 4:
      case 5: {  // pod add/update
        PodBuilder b("ns", pod_name());
        const std::string& g = groups[pick(4)];
        if (!g.empty()) b.Group(g);
        b.Request(cpus[pick(5)], std::to_string(1 + pick(3)) + "Gi");
        if (pick(10) == 0) b.Request("-1", "");
        if (pick(6) == 0) b.SchedulerName("default-scheduler");
        switch (pick(5)) {
          case 0:
            b.NodeName(node_name()).Phase("Running");
            break;
          case 1:
            b.NodeName(node_name()).Phase("Pending");
            break;
          case 2:
            b.NodeName(node_name()).Phase(pick(2) ? "Succeeded" : "Failed");
            break;
          case 3:
            b.NodeName(node_name()).Phase("Running").Deleting();
            break;
          default:
            break;
        }
        b.ResourceVersion(std::to_string(step));
        s = pick(2) ? h.cache->AddPod(b.Ptr()) : h.cache->UpdatePod(nullptr, b.Ptr());
        if (s.ok()) h.source.PutPod(b.Ptr());
        break;
      }
      case 6: {
        const std::string p = pod_name();
        s = h.cache->DeletePod(PodBuilder("ns", p).Build());
        h.source.DeletePod("ns", p);
        break;
      }
      case 7: {
        const std::string g = groups[pick(3)];
        s = h.cache->AddPodGroup(PodGroupBuilder("ns", g)
                                     .Uid("uid-" + g + "-" + std::to_string(pick(2)))
                                     .ResourceVersion(std::to_string(step))
                                     .Queue(pick(4) == 0 ? "other" : "")
                                     .MinMember(1 + pick(3))
                                     .Ptr());
        break;
      }
      case 8:
        s = h.cache->DeletePodGroup(PodGroupBuilder("ns", groups[pick(3)]).Build());
        break;
      case 9:
        if (pick(2)) {
          s = h.cache->AddQueue(QueueBuilder("other").Weight(1 + pick(3)).Ptr());
        } else {
          s = h.cache->DeleteQueue(QueueBuilder("other").Build());
        }
        break;
      case 10:
      case 11:
        s = h.cache->AddBindTask("ns/" + pod_name(), node_name());
        break;
      case 12:
        s = h.cache->FinishBinding("ns/" + pod_name());
        break;
      case 13:
        s = h.cache->ForgetTask("ns/" + pod_name(), node_name());
        break;
      case 14:
        s = h.cache->Evict("ns/" + pod_name(), "random");
        h.cache->TakeEvictionRequests();
        break;
      case 15:
        h.clock->Advance(std::chrono::seconds(pick(8)));
        h.cache->CleanupExpiredAssumed();
        h.cache->DrainQueuesOnce();
        all_or_nothing = false;
        break;
      case 16:
        if (pick(2)) {
          s = h.cache->AddPriorityClass(
              MakePriorityClass("pc" + std::to_string(pick(2)), pick(100), pick(2) == 0));
        } else {
          s = h.cache->DeletePriorityClass(MakePriorityClass("pc" + std::to_string(pick(2)), 0));
        }
        break;
      case 17: {  // a session scribbles over one of the snapshots
        ClusterInfo& snap = *snaps[pick(2)];
        if (!snap.node_list().empty()) {
          NodeInfo* n = snap.MutableNode(snap.node_list()[pick(static_cast<int>(snap.node_list().size()))]);
          if (pick(2)) {
            n->UnsetNode();
          } else if (!n->tasks().empty()) {
            TaskInfo t = n->tasks().begin()->second;
            (void)n->RemoveTask(t);
          }
        }
        if (!snap.jobs().empty()) {
          auto it = snap.jobs().begin();
          std::advance(it, pick(static_cast<int>(snap.jobs().size())));
          const JobId id = it->first;
          if (pick(3) == 0) {
            snap.EraseJob(id);
          } else if (JobInfo* j = snap.MutableJob(id); !j->tasks().empty()) {
            (void)j->UpdateTaskStatus(j->tasks().begin()->second.uid(), TaskStatus::kPipelined);
          }
        }
        all_or_nothing = false;
        break;
      }
      case 18:
        if (pick(2) == 0) SchedulerCache::MaterializeSnapshot(snaps[pick(2)].get(), 2);
        all_or_nothing = false;
        break;
      default: {  // refresh a snapshot and compare with a fresh one
        auto& snap = snaps[pick(2)];
        h.cache->UpdateSnapshot(snap.get());
        ASSERT_EQ(SnapshotText(*snap), SnapshotText(*h.cache->Snapshot()));
        all_or_nothing = false;
        break;
      }
    }
    if (all_or_nothing && !s.ok()) {
      ++refused;
      ASSERT_EQ(h.cache->Dump(), before) << "refused with " << s.ToString() << " but changed the cache";
    }
    Status inv = h.cache->CheckInvariants();
    ASSERT_TRUE(inv.ok()) << "after op " << op << ": " << inv.ToString();
  }
  for (auto& snap : snaps) {
    h.cache->UpdateSnapshot(snap.get());
    EXPECT_EQ(SnapshotText(*snap), SnapshotText(*h.cache->Snapshot()));
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(h.cache->counters().incremental_snapshots, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomSequenceTest, ::testing::Values(1u, 2u, 3u, 42u, 1234u, 99991u));

}  // namespace
}  // namespace volcache
