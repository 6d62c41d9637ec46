// SchedulerCache (SPEC §3, §8): Pod events: ours and foreign pods, placeholders, refusals, updates and
// deletes, jobless pods.

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

// =============================================================================== pods

TEST_F(SchedulerCacheTest, AddPodOfOursPendingJoinsItsJob) {
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1", "job", "1500m", "512Mi")));
  EXPECT_EQ(cache->num_tasks(), 1u);
  json job = Job();
  ASSERT_TRUE(job.is_object());
  EXPECT_EQ(job["name"], "job");
  EXPECT_EQ(job["namespace"], "ns");
  EXPECT_EQ(job["queue"], "default");
  EXPECT_EQ(job["minAvailable"], 1);
  EXPECT_EQ(job["podGroupPhase"], "Pending");
  EXPECT_EQ(job["allocated"], R(0, 0, 0));
  EXPECT_EQ(job["totalRequest"], R(1500, 512 * kMi, 1));
  json t = FindTaskJson(job, "p1");
  EXPECT_EQ(t["uid"], "uid-ns-p1");
  EXPECT_EQ(t["namespace"], "ns");
  EXPECT_EQ(t["status"], "Pending");
  EXPECT_EQ(t["node"], "");
  EXPECT_EQ(t["request"], R(1500, 512 * kMi, 1));
  EXPECT_EQ(cache->counters().events_applied, 2u);  // PodGroup + Pod
}

TEST_F(SchedulerCacheTest, AddPodCreatesItsJobOnDemand) {
  ASSERT_OK(PutPod(Pod("p1", "nogroup")));
  EXPECT_EQ(cache->num_jobs(), 1u);
  json job = Job("ns/nogroup");
  ASSERT_TRUE(job.is_object());
  EXPECT_EQ(job["podGroupPhase"], "");
  EXPECT_EQ(FindTaskJson(job, "p1")["status"], "Pending");
}

TEST_F(SchedulerCacheTest, AddRunningPodAccountsOnItsNode) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "1", "1Gi"), "n1")));
  json n = Node("n1");
  EXPECT_EQ(n["ready"], true);
  EXPECT_EQ(n["reason"], "");
  EXPECT_EQ(n["allocatable"], R(4000, 8 * kGi, 110));
  EXPECT_EQ(n["idle"], R(3000, 7 * kGi, 109));
  EXPECT_EQ(n["used"], R(1000, kGi, 1));
  EXPECT_EQ(n["requested"], R(1000, kGi, 1));
  EXPECT_EQ(n["nonZeroRequested"], (json{{"cpu", 1000}, {"memory", kGi}}));
  EXPECT_EQ(n["releasing"], R(0, 0, 0));
  EXPECT_THAT(Names(n["tasks"]), ElementsAre("ns/p1"));
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Task("p1")["node"], "n1");
  EXPECT_EQ(Job()["allocated"], R(1000, kGi, 1));
}

TEST_F(SchedulerCacheTest, NonZeroRequestCountsDefaultsForMissingRequests) {
  AddNode("n1");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "", ""), "n1")));
  json n = Node("n1");
  EXPECT_EQ(n["used"], R(0, 0, 1));
  EXPECT_EQ(n["nonZeroRequested"], (json{{"cpu", 100}, {"memory", 200 * kMi}}));
}

TEST_F(SchedulerCacheTest, ForeignUnboundPodIsIgnored) {
  AddNode("n1");
  const std::string before = cache->Dump();
  ASSERT_OK(cache->AddPod(Pod("web", "").SchedulerName("default-scheduler").Ptr()));
  EXPECT_EQ(cache->Dump(), before);
  EXPECT_EQ(cache->num_tasks(), 0u);
  // Deleting it is fine too (it was never ours).
  EXPECT_OK(cache->DeletePod(Pod("web", "").SchedulerName("default-scheduler").Build()));
  EXPECT_EQ(cache->Dump(), before);
}

TEST_F(SchedulerCacheTest, ForeignBoundPodCountsOnItsNode) {
  AddNode("n1");
  ASSERT_OK(PutPod(RunningOn(Pod("web", "", "2", "1Gi").SchedulerName("default-scheduler"), "n1")));
  EXPECT_EQ(cache->num_tasks(), 1u);
  EXPECT_EQ(cache->num_jobs(), 0u);
  json n = Node("n1");
  EXPECT_EQ(n["used"], R(2000, kGi, 1));
  EXPECT_EQ(n["idle"], R(2000, 7 * kGi, 109));
  EXPECT_THAT(Names(n["tasks"]), ElementsAre("ns/web"));

  ASSERT_OK(cache->DeletePod(Pod("web", "").SchedulerName("default-scheduler").Build()));
  EXPECT_EQ(cache->num_tasks(), 0u);
  EXPECT_EQ(Node("n1")["idle"], R(4000, 8 * kGi, 110));
  EXPECT_EQ(Node("n1")["used"], R(0, 0, 0));
}

TEST_F(SchedulerCacheTest, ForeignPodBecomingBoundIsAddedByItsUpdate) {
  // The informer delivers the binding of a foreign pod as an update of a pod the cache
  // filtered out: the update must add it.
  AddNode("n1");
  auto unbound = Pod("web", "").SchedulerName("default-scheduler").Ptr();
  ASSERT_OK(cache->AddPod(unbound));
  EXPECT_EQ(cache->num_tasks(), 0u);
  auto bound = RunningOn(Pod("web", "").SchedulerName("default-scheduler"), "n1").Ptr();
  ASSERT_OK(cache->UpdatePod(unbound, bound));
  EXPECT_EQ(cache->num_tasks(), 1u);
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
}

TEST_F(SchedulerCacheTest, PodOnUnknownNodeGetsPlaceholderUntilTheNodeArrives) {
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "1", "1Gi"), "n9")));
  json n = Node("n9");
  ASSERT_TRUE(n.is_object());
  EXPECT_EQ(n["ready"], false);
  EXPECT_EQ(n["reason"], "UnInitialized");
  EXPECT_EQ(n["allocatable"], R(0, 0, 0));
  EXPECT_EQ(n["idle"], R(0, 0, 0));
  EXPECT_EQ(n["used"], R(0, 0, 0));
  EXPECT_EQ(n["requested"], R(0, 0, 0));
  EXPECT_THAT(Names(n["tasks"]), ElementsAre("ns/p1"));
  EXPECT_THAT(DumpJson()["nodeList"], IsEmpty());
  EXPECT_EQ(cache->Snapshot()->FindNode("n9"), nullptr);

  AddNode("n9");
  n = Node("n9");
  EXPECT_EQ(n["ready"], true);
  EXPECT_EQ(n["reason"], "");
  EXPECT_EQ(n["used"], R(1000, kGi, 1));
  EXPECT_EQ(n["idle"], R(3000, 7 * kGi, 109));
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n9"));
  EXPECT_NE(cache->Snapshot()->FindNode("n9"), nullptr);
}

TEST_F(SchedulerCacheTest, PlaceholderNodeLeavesWithItsLastTask) {
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n9")));
  ASSERT_OK(PutPod(RunningOn(Pod("p2"), "n9")));
  ASSERT_OK(cache->DeletePod(Pod("p1").Build()));
  EXPECT_TRUE(Node("n9").is_object());
  ASSERT_OK(cache->DeletePod(Pod("p2").Build()));
  EXPECT_TRUE(Node("n9").is_null());
  EXPECT_EQ(cache->num_nodes(), 0u);
}

TEST_F(SchedulerCacheTest, AddPodWithInvalidQuantityIsRefusedNamingPodAndField) {
  AddNode("n1");
  AddJob("job");
  ExpectRefused([&] { return cache->AddPod(RunningOn(Pod("bad", "job", "-1", "1Gi"), "n1").Ptr()); },
                StatusCode::kInvalidArgument, {"Pod ns/bad", "spec.containers[0].resources.requests.cpu"});
  EXPECT_EQ(cache->num_tasks(), 0u);
  EXPECT_EQ(cache->counters().events_refused, 1u);
  // An invalid overhead is named too.
  auto pod = Pod("bad2", "job").Build();
  pod.spec.mutable_rare().overhead = Resources({{"memory", "-5Mi"}});
  ExpectRefused([&] { return cache->AddPod(std::make_shared<const k8s::Pod>(pod)); },
                StatusCode::kInvalidArgument, {"Pod ns/bad2", "spec.overhead.memory"});
}

TEST_F(SchedulerCacheTest, UpdatePodWithInvalidQuantityKeepsTheOldTask) {
  AddNode("n1");
  AddJob("job");
  auto good = RunningOn(Pod("p1", "job", "1", "1Gi"), "n1").Ptr();
  ASSERT_OK(PutPod(good));
  auto bad = RunningOn(Pod("p1", "job", "1", "-1Gi"), "n1").Ptr();
  ExpectRefused([&] { return cache->UpdatePod(good, bad); }, StatusCode::kInvalidArgument,
                {"Pod ns/p1", "spec.containers[0].resources.requests.memory"});
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
}

TEST_F(SchedulerCacheTest, AddingACachedPodAgainIsAnUpdate) {
  AddNode("n1");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  EXPECT_EQ(cache->num_tasks(), 1u);
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
}

TEST_F(SchedulerCacheTest, PodWithSameUidUnderAnotherNameIsRefused) {
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1").Uid("same")));
  ExpectRefused([&] { return cache->AddPod(Pod("p2").Uid("same").Ptr()); }, StatusCode::kAlreadyExists,
                {"same", "ns/p2", "ns/p1"});
}

TEST_F(SchedulerCacheTest, UpdatePodIsRemovePlusAdd) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  auto v1 = Pod("p1", "job", "1", "1Gi").Ptr();
  ASSERT_OK(PutPod(v1));
  // Pending → Running on n1.
  auto v2 = RunningOn(Pod("p1", "job", "1", "1Gi"), "n1").Ptr();
  ASSERT_OK(cache->UpdatePod(v1, v2));
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  EXPECT_EQ(Job()["allocated"], R(1000, kGi, 1));
  // Terminating: Running + deletionTimestamp → Releasing, still on the node.
  auto v3 = RunningOn(Pod("p1", "job", "1", "1Gi"), "n1").Deleting().Ptr();
  ASSERT_OK(cache->UpdatePod(v2, v3));
  EXPECT_EQ(Task("p1")["status"], "Releasing");
  EXPECT_EQ(Node("n1")["releasing"], R(1000, kGi, 1));
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  EXPECT_EQ(Node("n1")["idle"], R(3000, 7 * kGi, 109));
  EXPECT_EQ(Job()["allocated"], R(0, 0, 0));
  // Succeeded: off the node, still in the job.
  auto v4 = RunningOn(Pod("p1", "job", "1", "1Gi"), "n1").Phase("Succeeded").Ptr();
  ASSERT_OK(cache->UpdatePod(v3, v4));
  EXPECT_EQ(Task("p1")["status"], "Succeeded");
  EXPECT_THAT(Node("n1")["tasks"], IsEmpty());
  EXPECT_EQ(Node("n1")["used"], R(0, 0, 0));
  EXPECT_EQ(Node("n1")["idle"], R(4000, 8 * kGi, 110));
  EXPECT_EQ(Node("n1")["releasing"], R(0, 0, 0));
  EXPECT_EQ(Job()["totalRequest"], R(1000, kGi, 1));
}

TEST_F(SchedulerCacheTest, UpdatePodOfUnknownPodAddsIt) {
  // Informers may coalesce an add into an update (e.g. after a relist).
  AddJob("job");
  ASSERT_OK(cache->UpdatePod(nullptr, Pod("p1").Ptr()));
  EXPECT_EQ(cache->num_tasks(), 1u);
  EXPECT_EQ(Task("p1")["status"], "Pending");
}

TEST_F(SchedulerCacheTest, UpdatePodLeavingOurSchedulerRemovesIt) {
  AddJob("job");
  auto v1 = Pod("p1").Ptr();
  ASSERT_OK(PutPod(v1));
  ASSERT_OK(cache->UpdatePod(v1, Pod("p1").SchedulerName("other").Ptr()));
  EXPECT_EQ(cache->num_tasks(), 0u);
  EXPECT_THAT(Job()["tasks"], IsEmpty());
}

TEST_F(SchedulerCacheTest, UpdateWithoutNodeNameWhileBindIsInFlightIsIgnored) {
  AddNode("n1");
  AddJob("job");
  auto v1 = Pod("p1").Ptr();
  ASSERT_OK(PutPod(v1));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_EQ(Task("p1")["status"], "Binding");
  // An update that predates the binding (a label change, say) must not undo it.
  const std::string before = cache->Dump();
  ASSERT_OK(cache->UpdatePod(v1, Pod("p1").Label("touched", "yes").ResourceVersion("2").Ptr()));
  EXPECT_EQ(cache->Dump(), before);
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  // Even a terminating pod without nodeName: the delete event will remove it.
  ASSERT_OK(cache->UpdatePod(v1, Pod("p1").Deleting().Ptr()));
  EXPECT_EQ(cache->Dump(), before);
}

TEST_F(SchedulerCacheTest, DeletePodUsesTheCachedTaskNotTheTombstone) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "2", "2Gi"), "n1")));
  // A tombstone with a stale final state: Pending, no node, another request.
  ASSERT_OK(cache->DeletePod(Pod("p1", "job", "100m", "1Mi").Build()));
  json n = Node("n1");
  EXPECT_EQ(n["idle"], R(4000, 8 * kGi, 110));
  EXPECT_EQ(n["used"], R(0, 0, 0));
  EXPECT_EQ(n["requested"], R(0, 0, 0));
  EXPECT_EQ(n["nonZeroRequested"], json::object());
  EXPECT_THAT(n["tasks"], IsEmpty());
  EXPECT_THAT(Job()["tasks"], IsEmpty());
  EXPECT_EQ(Job()["allocated"], R(0, 0, 0));
  EXPECT_EQ(Job()["totalRequest"], R(0, 0, 0));
  EXPECT_EQ(cache->num_tasks(), 0u);
  // The job keeps its PodGroup: it stays.
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_jobs(), 1u);
}

TEST_F(SchedulerCacheTest, DeletePodUnknownIsNotFoundAndChangesNothing) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ExpectRefused([&] { return cache->DeletePod(Pod("ghost").Build()); }, StatusCode::kNotFound, {"ns/ghost"});
  ExpectRefused([&] { return cache->DeletePod(RunningOn(Pod("ghost2"), "n1").Build()); },
                StatusCode::kNotFound, {"ns/ghost2"});
}

TEST_F(SchedulerCacheTest, JobWithoutPodGroupGoesToDeletedJobsAndIsCleanedUp) {
  ASSERT_OK(PutPod(Pod("p1", "loose")));
  ASSERT_OK(PutPod(Pod("p2", "loose")));
  EXPECT_EQ(cache->num_jobs(), 1u);
  ASSERT_OK(cache->DeletePod(Pod("p1", "loose").Build()));
  EXPECT_EQ(cache->deleted_jobs().Len(), 0u);  // one task left
  ASSERT_OK(cache->DeletePod(Pod("p2", "loose").Build()));
  // Queued, not yet removed.
  EXPECT_EQ(cache->deleted_jobs().Len(), 1u);
  EXPECT_TRUE(Job("ns/loose").is_object());
  EXPECT_EQ(cache->DrainQueuesOnce(), 1u);
  EXPECT_EQ(cache->num_jobs(), 0u);
  EXPECT_TRUE(Job("ns/loose").is_null());
  EXPECT_EQ(cache->deleted_jobs().Len() + cache->deleted_jobs().DelayedLen(), 0u);
}

TEST_F(SchedulerCacheTest, JoblessPodEmptiedJobIsCleanedUpWhenTheTaskMovesToAnotherJob) {
  // Regression: ReplaceTaskLocked passed queue_empty_job=false, so a PodGroup-less job that
  // an update emptied by moving its last pod to another job (group annotation changed)
  // stayed in the cache forever.
  auto v1 = Pod("p1", "old").Ptr();
  ASSERT_OK(PutPod(v1));
  ASSERT_OK(cache->UpdatePod(v1, Pod("p1", "new").ResourceVersion("2").Ptr()));
  EXPECT_THAT(Job("ns/old")["tasks"], IsEmpty());
  EXPECT_EQ(Task("p1", "ns/new")["status"], "Pending");
  cache->DrainQueuesOnce();
  EXPECT_TRUE(Job("ns/old").is_null());
  EXPECT_TRUE(Job("ns/new").is_object());
  EXPECT_EQ(cache->num_jobs(), 1u);
  // And an update within the same job never queues it.
  auto v3 = Pod("p1", "new").ResourceVersion("3").Ptr();
  ASSERT_OK(cache->UpdatePod(nullptr, v3));
  EXPECT_EQ(cache->deleted_jobs().Len() + cache->deleted_jobs().DelayedLen(), 0u);
}

}  // namespace
}  // namespace volcache
