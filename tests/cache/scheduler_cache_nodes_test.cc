// SchedulerCache (SPEC §3, §8): Node events through SyncNode: readiness, recompute from tasks, deletion with
// tasks, order, refusals.

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

// ============================================================================== nodes

TEST_F(SchedulerCacheTest, NodeEventsOnlyEnqueueUntilSyncNode) {
  auto node = NodeBuilder("n1").Allocatable("4", "8Gi").Ptr();
  source.PutNode(node);
  const std::string before = cache->Dump();
  cache->AddNode(*node);
  EXPECT_EQ(cache->Dump(), before);
  EXPECT_EQ(cache->node_queue().Len(), 1u);
  EXPECT_EQ(cache->DrainQueuesOnce(), 1u);
  json n = Node("n1");
  ASSERT_TRUE(n.is_object());
  EXPECT_EQ(n["ready"], true);
  EXPECT_EQ(n["allocatable"], R(4000, 8 * kGi, 110));
  EXPECT_EQ(n["idle"], R(4000, 8 * kGi, 110));
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n1"));
}

TEST_F(SchedulerCacheTest, UpdateNodeRecomputesFromItsTasks) {
  AddNode("n1");
  ASSERT_OK(PutPod(RunningOn(Pod("p1", "job", "1", "1Gi"), "n1")));
  auto old_node = *source.GetNode("n1");
  auto bigger = NodeBuilder("n1").Allocatable("8", "16Gi").Ptr();
  source.PutNode(bigger);
  cache->UpdateNode(*old_node, *bigger);
  EXPECT_EQ(Node("n1")["allocatable"], R(4000, 8 * kGi, 110));  // not yet synced
  cache->DrainQueuesOnce();
  json n = Node("n1");
  EXPECT_EQ(n["allocatable"], R(8000, 16 * kGi, 110));
  EXPECT_EQ(n["idle"], R(7000, 15 * kGi, 109));
  EXPECT_EQ(n["used"], R(1000, kGi, 1));
  // NotReady is kept (with its accounting) but leaves the snapshot.
  PutNode(NodeBuilder("n1").Allocatable("8", "16Gi").Ready(false));
  n = Node("n1");
  EXPECT_EQ(n["ready"], false);
  EXPECT_EQ(n["reason"], "NotReady");
  EXPECT_EQ(n["used"], R(1000, kGi, 1));
  EXPECT_EQ(cache->Snapshot()->FindNode("n1"), nullptr);
}

TEST_F(SchedulerCacheTest, NodeWithoutReadyConditionIsNotReady) {
  PutNode(NodeBuilder("n1").Allocatable("4", "8Gi").NoConditions());
  EXPECT_EQ(Node("n1")["ready"], false);
  EXPECT_EQ(Node("n1")["reason"], "NotReady");
  // Cordoned and tainted nodes stay Ready.
  PutNode(NodeBuilder("n2").Allocatable("4", "8Gi").Unschedulable().Taint("k", "v", "NoSchedule"));
  EXPECT_EQ(Node("n2")["ready"], true);
}

TEST_F(SchedulerCacheTest, SyncNodeMissingFromTheSourceRemovesIt) {
  AddNode("n1");
  AddNode("n2");
  source.DeleteNode("n1");
  ASSERT_OK(cache->SyncNode("n1"));
  EXPECT_TRUE(Node("n1").is_null());
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n2"));
  EXPECT_EQ(cache->num_nodes(), 1u);
  // Syncing a node neither side knows is a no-op.
  const std::string before = cache->Dump();
  ASSERT_OK(cache->SyncNode("never"));
  EXPECT_EQ(cache->Dump(), before);
}

TEST_F(SchedulerCacheTest, DeletedNodeWithTasksKeepsAPlaceholderUntilTheLastTaskLeaves) {
  AddNode("n1");
  AddNode("n2");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  ASSERT_OK(PutPod(RunningOn(Pod("p2"), "n1")));
  auto snap = cache->Snapshot();
  RemoveNode("n1");
  json n = Node("n1");
  ASSERT_TRUE(n.is_object());
  EXPECT_EQ(n["ready"], false);
  EXPECT_EQ(n["reason"], "UnInitialized");
  EXPECT_EQ(n["allocatable"], R(0, 0, 0));
  EXPECT_EQ(n["used"], R(0, 0, 0));
  EXPECT_EQ(n["idle"], R(0, 0, 0));
  EXPECT_THAT(Names(n["tasks"]), ElementsAre("ns/p1", "ns/p2"));
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n2"));
  EXPECT_EQ(cache->Snapshot()->FindNode("n1"), nullptr);
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->FindNode("n1"), nullptr);
  EXPECT_THAT(snap->node_list(), ElementsAre("n2"));
  EXPECT_EQ(SnapshotText(*snap), SnapshotText(*cache->Snapshot()));

  ASSERT_OK(cache->DeletePod(Pod("p1").Build()));
  EXPECT_TRUE(Node("n1").is_object());
  ASSERT_OK(cache->DeletePod(Pod("p2").Build()));
  EXPECT_TRUE(Node("n1").is_null());
  EXPECT_EQ(cache->num_nodes(), 1u);
}

TEST_F(SchedulerCacheTest, DeletedNodeComingBackResumesAccounting) {
  AddNode("n1");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  RemoveNode("n1");
  EXPECT_EQ(Node("n1")["used"], R(0, 0, 0));
  AddNode("n1");
  EXPECT_EQ(Node("n1")["ready"], true);
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n1"));
}

TEST_F(SchedulerCacheTest, NodeListKeepsInsertionOrder) {
  for (const char* n : {"n3", "n1", "n2"}) AddNode(n);
  json d = DumpJson();
  EXPECT_THAT(Names(d["nodeList"]), ElementsAre("n3", "n1", "n2"));
  EXPECT_THAT(Names(d["nodes"]), ElementsAre("n1", "n2", "n3"));  // sorted by name
  // Updating a node does not move it.
  PutNode(NodeBuilder("n3").Allocatable("2", "1Gi"));
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n3", "n1", "n2"));
  // A removed and re-added node goes to the end.
  RemoveNode("n3");
  AddNode("n3");
  EXPECT_THAT(Names(DumpJson()["nodeList"]), ElementsAre("n1", "n2", "n3"));
}

TEST_F(SchedulerCacheTest, SyncNodeWithInvalidQuantityIsRefusedAndRetried) {
  AddNode("n1");
  auto bad = NodeBuilder("n1").Allocatable(Resources({{"cpu", "-4"}})).Ptr();
  source.PutNode(bad);
  ExpectRefused([&] { return cache->SyncNode("n1"); }, StatusCode::kInvalidArgument,
                {"Node n1", "status.capacity.cpu"});
  auto fresh = NodeBuilder("n2").Allocatable(Resources({{"memory", "-1"}})).Ptr();
  source.PutNode(fresh);
  ExpectRefused([&] { return cache->SyncNode("n2"); }, StatusCode::kInvalidArgument, {"Node n2", "memory"});
  EXPECT_TRUE(Node("n2").is_null());
  // Through the queue: the failure is re-queued rate-limited, and succeeds once fixed.
  cache->AddNode(*fresh);
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->node_queue().DelayedLen(), 1u);
  source.PutNode(NodeBuilder("n2").Allocatable("1", "1Gi").Ptr());
  AdvanceAndDrain(1s);
  EXPECT_EQ(Node("n2")["allocatable"], R(1000, kGi, 110));
  source.PutNode(NodeBuilder("n1").Allocatable("4", "8Gi").Ptr());
}

}  // namespace
}  // namespace volcache
