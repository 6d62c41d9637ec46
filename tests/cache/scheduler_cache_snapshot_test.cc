// SchedulerCache (SPEC §3, §8): Snapshots (Ready nodes only, nodeTree order, isolation both ways, incremental
// == fresh), the invariant checker, the comparer and the counters.

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

// =========================================================================== snapshot

TEST_F(SchedulerCacheTest, SnapshotHoldsReadyNodesOnly) {
  AddNode("ready", "4", "8Gi");
  PutNode(NodeBuilder("notready").Allocatable("8", "8Gi").Ready(false));
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "placeholder")));
  auto snap = cache->Snapshot();
  std::vector<std::string> names;
  for (const auto& [name, _] : snap->nodes()) names.push_back(name);
  EXPECT_THAT(names, ElementsAre("ready"));
  EXPECT_THAT(snap->node_list(), ElementsAre("ready"));
  EXPECT_EQ(snap->total_allocatable().milli_cpu(), 4000);
  EXPECT_EQ(snap->total_allocatable().memory(), 8 * kGi);
  EXPECT_EQ(cache->num_nodes(), 3u);
}

TEST_F(SchedulerCacheTest, SnapshotRevocableNodes) {
  PutNode(NodeBuilder("r1").Allocatable("4", "8Gi").RevocableZone("rz1"));
  PutNode(NodeBuilder("r2").Allocatable("4", "8Gi").RevocableZone("rz1").Ready(false));
  AddNode("n1");
  auto snap = cache->Snapshot();
  EXPECT_THAT(snap->revocable_nodes(), UnorderedElementsAre("r1"));
  EXPECT_EQ(snap->FindNode("r1")->revocable_zone(), "rz1");
  // The revocable label going away is followed by the next refresh.
  PutNode(NodeBuilder("r1").Allocatable("4", "8Gi"));
  PutNode(NodeBuilder("n1").Allocatable("4", "8Gi").RevocableZone("rz2"));
  cache->UpdateSnapshot(snap.get());
  EXPECT_THAT(snap->revocable_nodes(), UnorderedElementsAre("n1"));
  EXPECT_THAT(cache->Snapshot()->revocable_nodes(), UnorderedElementsAre("n1"));
}

TEST_F(SchedulerCacheTest, SnapshotLeavesOutJobsWithoutPodGroupOrKnownQueue) {
  AddJob("good");
  AddJob("lost", "nope");
  ASSERT_OK(PutPod(Pod("p1", "loose")));
  ASSERT_OK(PutPod(Pod("p2", "good")));
  auto snap = cache->Snapshot();
  std::vector<std::string> ids;
  for (const auto& [id, _] : snap->jobs()) ids.push_back(id);
  EXPECT_THAT(ids, ElementsAre("ns/good"));
  EXPECT_EQ(snap->FindJob("ns/good")->tasks().size(), 1u);
  EXPECT_EQ(cache->num_jobs(), 3u);
  // The queue arriving brings the job in; its deletion takes it out again.
  ASSERT_OK(cache->AddQueue(QueueBuilder("nope").Ptr()));
  cache->UpdateSnapshot(snap.get());
  EXPECT_NE(snap->FindJob("ns/lost"), nullptr);
  ASSERT_OK(cache->DeleteQueue(QueueBuilder("nope").Build()));
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->FindJob("ns/lost"), nullptr);
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
}

TEST_F(SchedulerCacheTest, SnapshotCarriesJobPriority) {
  ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("high", 100)));
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "job").PriorityClassName("high").Ptr()));
  auto snap = cache->Snapshot();
  EXPECT_EQ(snap->FindJob("ns/job")->priority(), 100);
  ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("high", 200)));
  EXPECT_EQ(snap->FindJob("ns/job")->priority(), 100);  // the old snapshot stands still
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->FindJob("ns/job")->priority(), 200);
}

TEST_F(SchedulerCacheTest, SnapshotNodeListFollowsTheNodeTree) {
  PutNode(NodeBuilder("a1").Allocatable("1", "1Gi").Zone("r", "za"));
  PutNode(NodeBuilder("a2").Allocatable("1", "1Gi").Zone("r", "za"));
  PutNode(NodeBuilder("b1").Allocatable("1", "1Gi").Zone("r", "zb"));
  // Beta labels take precedence: this node is in zb although topology says za.
  PutNode(NodeBuilder("b2").Allocatable("1", "1Gi").Zone("r", "za").BetaZone("r", "zb"));
  PutNode(NodeBuilder("a3").Allocatable("1", "1Gi").Zone("r", "za"));
  PutNode(NodeBuilder("u1").Allocatable("1", "1Gi"));  // the unnamed zone
  PutNode(NodeBuilder("down").Allocatable("1", "1Gi").Zone("r", "zb").Ready(false));
  const std::vector<std::string> want = {"a1", "b1", "u1", "a2", "b2", "a3"};
  EXPECT_EQ(cache->Snapshot()->node_list(), want);
  // The cache's own list keeps the NotReady node (third of zone zb).
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("a1", "b1", "u1", "a2", "b2", "a3", "down"));

  // A node changing zone moves in the list of the next snapshot.
  auto snap = cache->Snapshot();
  PutNode(NodeBuilder("a1").Allocatable("1", "1Gi").Zone("r", "zb"));
  cache->UpdateSnapshot(snap.get());
  EXPECT_THAT(snap->node_list(), ElementsAre("a2", "b1", "u1", "a3", "b2", "a1"));
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
  // The zone emptied by removals disappears.
  RemoveNode("u1");
  cache->UpdateSnapshot(snap.get());
  EXPECT_THAT(snap->node_list(), ElementsAre("a2", "b1", "a3", "b2", "a1"));
}

TEST_F(SchedulerCacheTest, SessionMutationsNeverReachTheCache) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(PutPod(RunningOn(Pod("p2"), "n1")));
  auto snap = cache->Snapshot();
  const std::string cache_before = cache->Dump();

  // The session allocates p1 on n1 (pipelined), changes p2's status and drops a job.
  JobInfo* job = snap->MutableJob("ns/job");
  ASSERT_NE(job, nullptr);
  const TaskInfo* p1 = nullptr;
  for (const auto& [uid, t] : job->tasks()) {
    if (t.name() == "p1") p1 = &t;
  }
  ASSERT_NE(p1, nullptr);
  TaskInfo pipelined = *p1;
  pipelined.status = TaskStatus::kPipelined;
  pipelined.node_name = "n1";
  NodeInfo* node = snap->MutableNode("n1");
  ASSERT_NE(node, nullptr);
  ASSERT_OK(node->AddTask(pipelined));
  ASSERT_OK(job->UpdateTaskStatus(pipelined.uid(), TaskStatus::kPipelined));
  ASSERT_OK(job->UpdateTaskStatus("uid-ns-p2", TaskStatus::kReleasing));
  EXPECT_EQ(snap->FindNode("n1")->pipelined().milli_cpu(), 1000);
  snap->queues.erase("default");
  snap->EraseJob("ns/job");
  EXPECT_EQ(snap->FindJob("ns/job"), nullptr);

  EXPECT_EQ(cache->Dump(), cache_before);
  auto fresh = cache->Snapshot();
  EXPECT_EQ(fresh->FindNode("n1")->pipelined().milli_cpu(), 0);
  EXPECT_EQ(fresh->FindJob("ns/job")->CountWithStatus(TaskStatus::kPipelined), 0u);
  EXPECT_EQ(fresh->FindJob("ns/job")->CountWithStatus(TaskStatus::kRunning), 1u);

  // UpdateSnapshot discards the session's changes.
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*fresh));
}

TEST_F(SchedulerCacheTest, CacheChangesNeverReachAnExistingSnapshot) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(PutPod(RunningOn(Pod("p2"), "n1")));
  auto snap = cache->Snapshot();
  const std::string snap_before = SnapshotText(*snap);

  ASSERT_OK(cache->AddBindTask("ns/p1", "n2"));
  ASSERT_OK(cache->Evict("ns/p2", "r"));
  ASSERT_OK(PutPod(RunningOn(Pod("p3"), "n2")));
  PutNode(NodeBuilder("n1").Allocatable("64", "64Gi"));
  RemoveNode("n2");
  AddNode("n3");
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "job").MinMember(9).ResourceVersion("2").Ptr()));
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "other").Ptr()));
  ASSERT_OK(cache->AddQueue(QueueBuilder("default").Weight(9).Ptr()));
  ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("x", 5, true)));

  EXPECT_EQ(SnapshotText(*snap), snap_before);
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
  EXPECT_NE(SnapshotText(*snap), snap_before);
}

TEST_F(SchedulerCacheTest, UpdateSnapshotEqualsAFreshSnapshotStepByStep) {
  auto snap = cache->Snapshot();
  std::vector<std::function<void()>> steps = {
      [&] { AddNode("n1"); },
      [&] { PutNode(NodeBuilder("n2").Allocatable("8", "16Gi").Zone("r", "z2")); },
      [&] { AddJob("job"); },
      [&] { ASSERT_OK(PutPod(Pod("p1"))); },
      [&] { ASSERT_OK(PutPod(RunningOn(Pod("p2"), "n1"))); },
      [&] { ASSERT_OK(cache->AddBindTask("ns/p1", "n2")); },
      [&] { ASSERT_OK(cache->FinishBinding("ns/p1")); },
      [&] { ASSERT_OK(cache->UpdatePod(nullptr, RunningOn(Pod("p1"), "n2").Ptr())); },
      [&] { ASSERT_OK(cache->Evict("ns/p2", "r")); },
      [&] { PutNode(NodeBuilder("n1").Allocatable("4", "8Gi").Ready(false)); },
      [&] { PutNode(NodeBuilder("n1").Allocatable("4", "8Gi").RevocableZone("rz")); },
      [&] { RemoveNode("n2"); },
      [&] { ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("p", 7, true))); },
      [&] {
        ASSERT_OK(cache->AddResourceQuota(MakeResourceQuota("ns", "rq", Resources({{"cpu", "3"}}))));
      },
      [&] { ASSERT_OK(cache->AddQueue(QueueBuilder("q2").Ptr())); },
      [&] { ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "j2").Queue("q2").Ptr())); },
      [&] { ASSERT_OK(cache->DeletePod(Pod("p1").Build())); },
      [&] { AddNode("n2"); },
      [&] { ASSERT_OK(cache->DeletePodGroup(PodGroupBuilder("ns", "j2").Build())); },
      [&] { cache->DrainQueuesOnce(); },
      [&] { ASSERT_OK(cache->DeleteQueue(QueueBuilder("q2").Build())); },
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    steps[i]();
    // The session scribbles over its copy before every refresh.
    if (NodeInfo* n = snap->MutableNode("n1")) n->UnsetNode();
    if (JobInfo* j = snap->MutableJob("ns/job")) j->set_priority(12345);
    snap->default_priority = -1;
    cache->UpdateSnapshot(snap.get());
    ASSERT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
  }
  EXPECT_GT(cache->counters().incremental_snapshots, 0u);
}

TEST_F(SchedulerCacheTest, UpdateSnapshotOfAForeignSnapshotRebuildsIt) {
  AddNode("n1");
  CacheHarness other;
  other.cache->EnsureDefaultQueues();
  other.PutNode(NodeBuilder("x").Allocatable("1", "1Gi"));
  auto snap = other.cache->Snapshot();
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
}

TEST_F(SchedulerCacheTest, UpdateSnapshotAfterTheRemovalLogOverflowsRebuildsIt) {
  SchedulerCacheOptions opts;
  opts.removal_log_capacity = 2;
  CacheHarness h(opts);
  h.cache->EnsureDefaultQueues();
  for (const char* n : {"a", "b", "c", "d"}) h.PutNode(NodeBuilder(n).Allocatable("1", "1Gi"));
  auto snap = h.cache->Snapshot();
  for (const char* n : {"a", "b", "c"}) h.RemoveNode(n);
  h.cache->UpdateSnapshot(snap.get());
  EXPECT_THAT(snap->node_list(), ElementsAre("d"));
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*h.cache->Snapshot()));
  EXPECT_OK(h.cache->CheckInvariants());
}

TEST_F(SchedulerCacheTest, MaterializedSnapshotIsPrivateAndRefreshable) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  auto snap = cache->Snapshot();
  SchedulerCache::MaterializeSnapshot(snap.get(), 2);
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
  const std::string before = cache->Dump();
  snap->MutableNode("n1")->UnsetNode();
  ASSERT_OK(snap->MutableJob("ns/job")->DeleteTask("uid-ns-p1"));
  EXPECT_EQ(cache->Dump(), before);
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));
}

// A materialized snapshot owns what it reads: it stays whole after the cache that built it,
// and every task record the cache held, are gone.
TEST_F(SchedulerCacheTest, MaterializedSnapshotOutlivesTheCache) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  ASSERT_OK(PutPod(Pod("p2")));
  auto snap = cache->Snapshot();
  SchedulerCache::MaterializeSnapshot(snap.get(), 2);
  const std::string text = SnapshotText(*snap);
  // The cache and every task record it held go (TearDown checks a fresh, empty cache).
  cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, clock, &source);
  EXPECT_EQ(SnapshotText(*snap), text);
  const JobInfo* job = snap->FindJob("ns/job");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->tasks().size(), 2u);
  for (const auto& [uid, task] : job->tasks()) EXPECT_EQ(task.uid(), uid);
  EXPECT_EQ(snap->FindNode("n1")->tasks().size(), 1u);
}

// ========================================================== invariants and comparer

TEST_F(SchedulerCacheTest, CompareReportsDifferencesWithTheSource) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  ASSERT_OK(PutPod(Pod("p2")));
  EXPECT_EQ(cache->Compare(), "");

  // The source moves on without the cache seeing events.
  source.PutNode(NodeBuilder("n2").Allocatable("1", "1Gi").Ptr());
  source.PutNode(NodeBuilder("n1").Allocatable("2", "8Gi").Ptr());
  source.PutPod(Pod("p3").Ptr());
  source.PutPod(RunningOn(Pod("p2"), "n1").Ptr());
  source.DeletePod("ns", "p1");
  const std::string report = cache->Compare();
  EXPECT_THAT(report, HasSubstr("missing node n2\n"));
  EXPECT_THAT(report, HasSubstr("node n1 allocatable is {"));
  EXPECT_THAT(report, HasSubstr("missing pod ns/p3\n"));
  EXPECT_THAT(report, HasSubstr("extra pod ns/p1\n"));
  EXPECT_THAT(report, HasSubstr("pod ns/p2 is on node '' in the cache, 'n1' in the cluster"));
  EXPECT_THAT(report, HasSubstr("pod ns/p2 is Pending in the cache, Running in the cluster"));
  // Foreign unbound pods are not expected in the cache.
  source.PutPod(Pod("web", "").SchedulerName("default-scheduler").Ptr());
  EXPECT_THAT(cache->Compare(), ::testing::Not(HasSubstr("web")));

  source.DeleteNode("n1");
  EXPECT_THAT(cache->Compare(), HasSubstr("extra node n1\n"));
}

TEST_F(SchedulerCacheTest, CompareIgnoresAssumedTasksAndPlaceholders) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  EXPECT_EQ(cache->Compare(), "");
  ASSERT_OK(PutPod(RunningOn(Pod("p2"), "ghost-node")));
  EXPECT_EQ(cache->Compare(), "");
}

TEST_F(SchedulerCacheTest, CountersCountAppliedAndRefusedEvents) {
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  EXPECT_FALSE(cache->AddPod(Pod("bad", "job", "-1", "").Ptr()).ok());
  EXPECT_FALSE(cache->DeletePod(Pod("ghost").Build()).ok());
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.events_applied, 2u);
  EXPECT_EQ(c.events_refused, 2u);
  auto snap = cache->Snapshot();
  cache->UpdateSnapshot(snap.get());
  c = cache->counters();
  EXPECT_EQ(c.full_snapshots, 1u);
  EXPECT_EQ(c.incremental_snapshots, 1u);
}

TEST_F(SchedulerCacheTest, NegativeIdleIsCountedNotRefused) {
  // Pods the kubelet admitted are facts: they are accounted even past allocatable.
  AddNode("n1", "1", "1Gi");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "2", "512Mi"), "n1")));
  EXPECT_EQ(Node("n1")["idle"], (json{{"cpu", -1000}, {"memory", 512 * kMi}, {"pods", 109}}));
  EXPECT_EQ(cache->counters().negative_idle, 1u);
}

}  // namespace
}  // namespace volcache
