// SchedulerCache (SPEC §3, §8): The assume/bind state machine (assume, FinishBinding, Forget, resync, assumed
// TTL) and evictions, with Volcano's accounting.

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

// ======================================================== assume / bind state machine

TEST_F(SchedulerCacheTest, BindWithSufficientResourcesAccountsExactly) {
  AddNode("n1", "4", "8Gi");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1", "job", "1500m", "3Gi")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  json n = Node("n1");
  EXPECT_EQ(n["idle"], R(2500, 5 * kGi, 109));
  EXPECT_EQ(n["used"], R(1500, 3 * kGi, 1));
  EXPECT_THAT(Names(n["tasks"]), ElementsAre("ns/p1"));
  json t = Task("p1");
  EXPECT_EQ(t["status"], "Binding");
  EXPECT_EQ(t["node"], "n1");
  EXPECT_EQ(Job()["allocated"], R(1500, 3 * kGi, 1));
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  EXPECT_THAT(Names(DumpJson()["assumed"]), ElementsAre("ns/p1"));
  // Exactly filling the node is fine.
  ASSERT_OK(PutPod(Pod("p2", "job", "2500m", "5Gi")));
  ASSERT_OK(cache->AddBindTask("ns/p2", "n1"));
  EXPECT_EQ(Node("n1")["idle"], R(0, 0, 108));
}

TEST_F(SchedulerCacheTest, BindWithInsufficientResourcesNamesTheDimension) {
  AddNode("n1", "2", "8Gi");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("r", "job", "1", "1Gi"), "n1")));
  ASSERT_OK(PutPod(Pod("cpu-hog", "job", "1500m", "1Gi")));
  ExpectRefused([&] { return cache->AddBindTask("ns/cpu-hog", "n1"); }, StatusCode::kFailedPrecondition,
                {"ns/cpu-hog", "n1", "insufficient cpu"});
  Status s = cache->AddBindTask("ns/cpu-hog", "n1");
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("memory")));
  EXPECT_FALSE(cache->IsAssumed("ns/cpu-hog"));
  ASSERT_OK(PutPod(Pod("mem-hog", "job", "100m", "8Gi")));
  ExpectRefused([&] { return cache->AddBindTask("ns/mem-hog", "n1"); }, StatusCode::kFailedPrecondition,
                {"insufficient memory"});
  ASSERT_OK(PutPod(Pod("both", "job", "4", "16Gi")));
  ExpectRefused([&] { return cache->AddBindTask("ns/both", "n1"); }, StatusCode::kFailedPrecondition,
                {"cpu", "memory"});
  EXPECT_EQ(Task("both")["status"], "Pending");
}

TEST_F(SchedulerCacheTest, BindRunsOutOfPodSlots) {
  PutNode(NodeBuilder("n1").Allocatable("8", "8Gi", "1"));
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(PutPod(Pod("p2")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ExpectRefused([&] { return cache->AddBindTask("ns/p2", "n1"); }, StatusCode::kFailedPrecondition,
                {"insufficient pods"});
}

TEST_F(SchedulerCacheTest, BindRefusals) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("elsewhere"), "n9")));  // makes placeholder n9
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(PutPod(RunningOn(Pod("running"), "n1")));
  ASSERT_OK(PutPod(Pod("loner", "")));
  ExpectRefused([&] { return cache->AddBindTask("ns/p1", "n9"); }, StatusCode::kFailedPrecondition,
                {"ns/p1", "n9"});
  ExpectRefused([&] { return cache->AddBindTask("ns/p1", "nope"); }, StatusCode::kNotFound,
                {"ns/p1", "nope"});
  ExpectRefused([&] { return cache->AddBindTask("ns/ghost", "n1"); }, StatusCode::kNotFound, {"ns/ghost"});
  ExpectRefused([&] { return cache->AddBindTask("ns/running", "n1"); }, StatusCode::kFailedPrecondition,
                {"ns/running", "Running"});
  ExpectRefused([&] { return cache->AddBindTask("ns/loner", "n1"); }, StatusCode::kFailedPrecondition,
                {"ns/loner", "no job"});
}

TEST_F(SchedulerCacheTest, AssumingTwiceIsAlreadyExists) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ExpectRefused([&] { return cache->AddBindTask("ns/p1", "n1"); }, StatusCode::kAlreadyExists,
                {"ns/p1", "n1"});
  ExpectRefused([&] { return cache->AddBindTask("ns/p1", "n2"); }, StatusCode::kAlreadyExists,
                {"ns/p1", "n1"});
}

TEST_F(SchedulerCacheTest, ForgetTaskThatIsNotAssumedIsRefused) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(PutPod(RunningOn(Pod("r1"), "n1")));
  ExpectRefused([&] { return cache->ForgetTask("ns/p1", "n1"); }, StatusCode::kFailedPrecondition,
                {"ns/p1", "not assumed"});
  ExpectRefused([&] { return cache->ForgetTask("ns/r1", "n1"); }, StatusCode::kFailedPrecondition, {"ns/r1"});
  ExpectRefused([&] { return cache->ForgetTask("ns/ghost", "n1"); }, StatusCode::kFailedPrecondition,
                {"ns/ghost"});
  EXPECT_EQ(cache->err_tasks().Len(), 0u);
}

TEST_F(SchedulerCacheTest, ForgetOnAnotherNodeThanAssumedIsRefused) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ExpectRefused([&] { return cache->ForgetTask("ns/p1", "n2"); }, StatusCode::kFailedPrecondition,
                {"ns/p1", "n1", "n2"});
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(cache->err_tasks().Len(), 0u);
}

TEST_F(SchedulerCacheTest, ForgetReturnsTheTaskToPendingAndQueuesAResync) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1", "job", "2", "2Gi")));
  const json node_before = Node("n1");
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->ForgetTask("ns/p1", "n1"));
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Node("n1"), node_before);
  EXPECT_EQ(Task("p1")["status"], "Pending");
  EXPECT_EQ(Task("p1")["node"], "");
  EXPECT_EQ(Job()["allocated"], R(0, 0, 0));
  EXPECT_EQ(cache->err_tasks().Len(), 1u);
  // The bind really failed: the source still has the pod pending; the resync keeps it so.
  cache->DrainQueuesOnce();
  EXPECT_EQ(Task("p1")["status"], "Pending");
  EXPECT_EQ(Node("n1"), node_before);
  // It can be assumed again.
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
}

TEST_F(SchedulerCacheTest, ForgetResyncRestoresTheTaskWhenTheBindHadSucceeded) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1", "job", "2", "2Gi")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->ForgetTask("ns/p1", "n1"));
  // The binder timed out but the API server did bind it.
  source.PutPod(Pod("p1", "job", "2", "2Gi").NodeName("n1").ResourceVersion("2").Ptr());
  cache->DrainQueuesOnce();
  EXPECT_EQ(Task("p1")["status"], "Bound");
  EXPECT_EQ(Task("p1")["node"], "n1");
  EXPECT_EQ(Node("n1")["used"], R(2000, 2 * kGi, 1));
  EXPECT_EQ(Node("n1")["idle"], R(2000, 6 * kGi, 109));
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(cache->Compare(), "");
}

TEST_F(SchedulerCacheTest, ResyncOfADeletedPodRemovesIt) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->ForgetTask("ns/p1", "n1"));
  source.DeletePod("ns", "p1");
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_tasks(), 0u);
  EXPECT_OK(cache->ResyncTask("ns/unknown"));
}

TEST_F(SchedulerCacheTest, ResyncDoesNotUndoANewerAssume) {
  // Regression: a task forgotten after a failed bind and assumed again (on another node)
  // before its errTasks resync ran was reset to Pending by the resync — the pod in the
  // cluster has no nodeName yet — although the new bind was in flight. The resync must
  // follow UpdatePod's bind-in-flight rule.
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->ForgetTask("ns/p1", "n1"));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n2"));
  const std::string before = cache->Dump();
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->Dump(), before);
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Task("p1")["status"], "Binding");
  EXPECT_EQ(Node("n2")["used"], R(1000, kGi, 1));
  ASSERT_OK(cache->FinishBinding("ns/p1"));
}

TEST_F(SchedulerCacheTest, PodArrivingWithNodeNameConfirmsTheAssumedTask) {
  AddNode("n1");
  AddJob("job");
  auto v1 = Pod("p1", "job", "1", "1Gi").Ptr();
  ASSERT_OK(PutPod(v1));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->FinishBinding("ns/p1"));
  auto v2 = Pod("p1", "job", "1", "1Gi").NodeName("n1").ResourceVersion("2").Ptr();
  source.PutPod(v2);
  ASSERT_OK(cache->UpdatePod(v1, v2));
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_THAT(DumpJson()["assumed"], IsEmpty());
  EXPECT_EQ(Task("p1")["status"], "Bound");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));  // counted once
  EXPECT_EQ(Node("n1")["idle"], R(3000, 7 * kGi, 109));
  auto v3 = RunningOn(Pod("p1", "job", "1", "1Gi"), "n1").ResourceVersion("3").Ptr();
  source.PutPod(v3);
  ASSERT_OK(cache->UpdatePod(v2, v3));
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  EXPECT_EQ(cache->Compare(), "");
  // Confirmed tasks are no longer assumed: forgetting or finishing them is refused.
  EXPECT_EQ(cache->ForgetTask("ns/p1", "n1").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache->FinishBinding("ns/p1").code(), StatusCode::kFailedPrecondition);
}

TEST_F(SchedulerCacheTest, PodAddedWithNodeNameAlsoConfirms) {
  // The watch may deliver the bound pod as an ADDED event (e.g. after a relist).
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
}

TEST_F(SchedulerCacheTest, PodLandingOnAnotherNodeMovesIt) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  auto v1 = Pod("p1", "job", "1", "1Gi").Ptr();
  ASSERT_OK(PutPod(v1));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  auto v2 = RunningOn(Pod("p1", "job", "1", "1Gi"), "n2").Ptr();
  ASSERT_OK(cache->UpdatePod(v1, v2));
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Node("n1")["used"], R(0, 0, 0));
  EXPECT_EQ(Node("n1")["idle"], R(4000, 8 * kGi, 110));
  EXPECT_THAT(Node("n1")["tasks"], IsEmpty());
  EXPECT_EQ(Node("n2")["used"], R(1000, kGi, 1));
  EXPECT_THAT(Names(Node("n2")["tasks"]), ElementsAre("ns/p1"));
  EXPECT_EQ(Task("p1")["node"], "n2");
  EXPECT_EQ(Task("p1")["status"], "Running");
}

TEST_F(SchedulerCacheTest, DeletingAnAssumedPodReleasesItsNode) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->DeletePod(Pod("p1").Build()));
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Node("n1")["used"], R(0, 0, 0));
  EXPECT_EQ(cache->FinishBinding("ns/p1").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache->ForgetTask("ns/p1", "n1").code(), StatusCode::kFailedPrecondition);
}

TEST_F(SchedulerCacheTest, FinishBindingRefusals) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ExpectRefused([&] { return cache->FinishBinding("ns/p1"); }, StatusCode::kFailedPrecondition,
                {"ns/p1", "not assumed"});
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->FinishBinding("ns/p1"));
  ExpectRefused([&] { return cache->FinishBinding("ns/p1"); }, StatusCode::kFailedPrecondition,
                {"ns/p1", "already finished"});
}

TEST_F(SchedulerCacheTest, TtlZeroNeverExpires) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->FinishBinding("ns/p1"));
  clock->Advance(24h * 365);
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 0u);
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Task("p1")["status"], "Binding");
}

class AssumedTtlTest : public SchedulerCacheTest {
 protected:
  static SchedulerCacheOptions Options() {
    SchedulerCacheOptions o;
    o.assumed_ttl = 30s;
    return o;
  }
  AssumedTtlTest() : SchedulerCacheTest(Options()) {}
};

TEST_F(AssumedTtlTest, NothingExpiresBeforeFinishBinding) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  clock->Advance(24h);
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 0u);
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  // The TTL counts from FinishBinding, not from the assume.
  ASSERT_OK(cache->FinishBinding("ns/p1"));
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 0u);
  clock->Advance(29s);
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 0u);
  EXPECT_TRUE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  clock->Advance(2s);
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 1u);
  EXPECT_FALSE(cache->IsAssumed("ns/p1"));
  EXPECT_EQ(Task("p1")["status"], "Pending");
  EXPECT_EQ(Task("p1")["node"], "");
  EXPECT_EQ(Node("n1")["used"], R(0, 0, 0));
  EXPECT_EQ(Node("n1")["idle"], R(4000, 8 * kGi, 110));
  EXPECT_EQ(cache->err_tasks().Len(), 1u);
  // Only once.
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 0u);
  cache->DrainQueuesOnce();
  EXPECT_EQ(Task("p1")["status"], "Pending");
}

TEST_F(AssumedTtlTest, ExpiresOnlyTheTasksWhoseTtlPassed) {
  AddNode("n1");
  AddJob("job");
  for (const char* p : {"a", "b", "c"}) ASSERT_OK(PutPod(Pod(p)));
  for (const char* p : {"ns/a", "ns/b", "ns/c"}) ASSERT_OK(cache->AddBindTask(p, "n1"));
  ASSERT_OK(cache->FinishBinding("ns/a"));
  clock->Advance(20s);
  ASSERT_OK(cache->FinishBinding("ns/b"));
  clock->Advance(15s);  // a: 35 s, b: 15 s, c: not finished
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 1u);
  EXPECT_FALSE(cache->IsAssumed("ns/a"));
  EXPECT_TRUE(cache->IsAssumed("ns/b"));
  EXPECT_TRUE(cache->IsAssumed("ns/c"));
  EXPECT_EQ(Node("n1")["used"], R(2000, 2 * kGi, 2));
}

TEST_F(AssumedTtlTest, ConfirmedTaskNeverExpires) {
  AddNode("n1");
  AddJob("job");
  auto v1 = Pod("p1").Ptr();
  ASSERT_OK(PutPod(v1));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->FinishBinding("ns/p1"));
  ASSERT_OK(cache->UpdatePod(v1, RunningOn(Pod("p1"), "n1").Ptr()));
  clock->Advance(1h);
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 0u);
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
}

TEST_F(AssumedTtlTest, ExpiredTaskWhoseBindHappenedIsRestoredByTheResync) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->AddBindTask("ns/p1", "n1"));
  ASSERT_OK(cache->FinishBinding("ns/p1"));
  clock->Advance(31s);
  source.PutPod(RunningOn(Pod("p1"), "n1").Ptr());
  EXPECT_EQ(cache->CleanupExpiredAssumed(), 1u);
  cache->DrainQueuesOnce();
  EXPECT_EQ(Task("p1")["status"], "Running");
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
}

// ============================================================================== evict

TEST_F(SchedulerCacheTest, EvictMovesTheTaskIntoReleasing) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "1", "2Gi"), "n1")));
  ASSERT_OK(PutPod(RunningOn(Pod("p2", "job", "500m", "1Gi"), "n1")));
  ASSERT_OK(cache->Evict("ns/p1", "preempted by ns/vip"));
  json n = Node("n1");
  EXPECT_EQ(n["releasing"], R(1000, 2 * kGi, 1));
  EXPECT_EQ(n["used"], R(1500, 3 * kGi, 2));
  EXPECT_EQ(n["idle"], R(2500, 5 * kGi, 108));
  EXPECT_EQ(Task("p1")["status"], "Releasing");
  EXPECT_EQ(Task("p1")["node"], "n1");
  EXPECT_EQ(Job()["allocated"], R(500, kGi, 1));
  EXPECT_EQ(Job()["totalRequest"], R(1500, 3 * kGi, 2));
  auto snap = cache->Snapshot();
  EXPECT_EQ(snap->FindNode("n1")->FutureIdle().milli_cpu(), 3500);
  EXPECT_EQ(snap->FindNode("n1")->FutureIdle().memory(), 7 * kGi);

  auto reqs = cache->TakeEvictionRequests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].task.key(), "ns/p1");
  EXPECT_EQ(reqs[0].task.status, TaskStatus::kReleasing);
  EXPECT_EQ(reqs[0].task.node_name, "n1");
  EXPECT_EQ(reqs[0].reason, "preempted by ns/vip");
  EXPECT_TRUE(cache->TakeEvictionRequests().empty());

  // The pod then terminates and goes away: the node is whole again.
  ASSERT_OK(cache->DeletePod(Pod("p1").Build()));
  EXPECT_EQ(Node("n1")["releasing"], R(0, 0, 0));
  EXPECT_EQ(Node("n1")["used"], R(500, kGi, 1));
}

TEST_F(SchedulerCacheTest, EvictRefusals) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("loose-pod", "loose"), "n1")));  // job without PodGroup
  ASSERT_OK(PutPod(RunningOn(Pod("jobless", ""), "n1")));
  ASSERT_OK(PutPod(Pod("pending")));
  ASSERT_OK(PutPod(Pod("binding")));
  ASSERT_OK(PutPod(RunningOn(Pod("victim"), "n1")));
  ASSERT_OK(cache->AddBindTask("ns/binding", "n1"));
  ExpectRefused([&] { return cache->Evict("ns/loose-pod", "r"); }, StatusCode::kFailedPrecondition,
                {"ns/loose-pod", "PodGroup"});
  ExpectRefused([&] { return cache->Evict("ns/jobless", "r"); }, StatusCode::kFailedPrecondition,
                {"ns/jobless"});
  ExpectRefused([&] { return cache->Evict("ns/ghost", "r"); }, StatusCode::kNotFound, {"ns/ghost"});
  ExpectRefused([&] { return cache->Evict("ns/pending", "r"); }, StatusCode::kFailedPrecondition,
                {"ns/pending", "Pending"});
  ExpectRefused([&] { return cache->Evict("ns/binding", "r"); }, StatusCode::kFailedPrecondition,
                {"ns/binding"});
  ASSERT_OK(cache->Evict("ns/victim", "r"));
  ExpectRefused([&] { return cache->Evict("ns/victim", "again"); }, StatusCode::kFailedPrecondition,
                {"ns/victim", "Releasing"});
  EXPECT_EQ(cache->TakeEvictionRequests().size(), 1u);
}

}  // namespace
}  // namespace volcache
