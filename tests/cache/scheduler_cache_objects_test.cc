// SchedulerCache (SPEC §3, §8): PodGroups, Queues, PriorityClasses, ResourceQuotas and Apply():
// add/update/delete, generations, cleanup keys, refusals.

#include "tests/cache/scheduler_cache_fixture.h"

namespace volcache {
namespace {

// ========================================================================== PodGroups

TEST_F(SchedulerCacheTest, PodGroupSetsTheJob) {
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "job")
                                   .MinMember(3)
                                   .Queue("q1")
                                   .Phase("Inqueue")
                                   .MinTaskMember("worker", 2)
                                   .Ptr()));
  json job = Job();
  EXPECT_EQ(job["queue"], "q1");
  EXPECT_EQ(job["minAvailable"], 3);
  EXPECT_EQ(job["podGroupPhase"], "Inqueue");
  EXPECT_EQ(job["priority"], 0);
  EXPECT_THAT(job["tasks"], IsEmpty());
}

TEST_F(SchedulerCacheTest, PodGroupWithInvalidMinResourcesIsRefused) {
  ExpectRefused(
      [&] {
        return cache->AddPodGroup(
            PodGroupBuilder("ns", "job").MinResources(Resources({{"cpu", "-1"}})).Ptr());
      },
      StatusCode::kInvalidArgument, {"PodGroup ns/job", "spec.minResources.cpu"});
  EXPECT_EQ(cache->num_jobs(), 0u);
  AddJob("job");
  auto old_pg = PodGroupBuilder("ns", "job").Ptr();
  auto bad = PodGroupBuilder("ns", "job")
                 .ResourceVersion("2")
                 .MinMember(5)
                 .MinResources(Resources({{"memory", "-1"}}));
  ExpectRefused([&] { return cache->UpdatePodGroup(old_pg, bad.Ptr()); }, StatusCode::kInvalidArgument,
                {"PodGroup ns/job", "spec.minResources.memory"});
  EXPECT_EQ(Job()["minAvailable"], 1);
}

TEST_F(SchedulerCacheTest, UpdatePodGroupWithUnchangedResourceVersionIsANoOp) {
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  auto v1 = PodGroupBuilder("ns", "job").MinMember(1).Ptr();
  auto snap = cache->Snapshot();
  const uint64_t gen = snap->FindJob("ns/job")->generation();
  const std::string before = cache->Dump();
  const uint64_t applied = cache->counters().events_applied;
  // Same resourceVersion, even with a different body (a resync): nothing happens.
  ASSERT_OK(cache->UpdatePodGroup(v1, PodGroupBuilder("ns", "job").MinMember(7).Ptr()));
  EXPECT_EQ(cache->Dump(), before);
  EXPECT_EQ(cache->Snapshot()->FindJob("ns/job")->generation(), gen);
  EXPECT_EQ(cache->counters().events_applied, applied);
  cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->FindJob("ns/job")->generation(), gen);

  // A new resourceVersion applies and bumps the generation.
  ASSERT_OK(cache->UpdatePodGroup(v1, PodGroupBuilder("ns", "job").MinMember(7).ResourceVersion("2").Ptr()));
  EXPECT_EQ(Job()["minAvailable"], 7);
  EXPECT_GT(cache->Snapshot()->FindJob("ns/job")->generation(), gen);
  EXPECT_THAT(Names(Job()["tasks"]), ElementsAre("p1"));
}

TEST_F(SchedulerCacheTest, ChangedObjectsArePublishedWithANewGeneration) {
  // Regression: WritableJob/WritableNode stamped the slot generation before the mutation,
  // and JobInfo/NodeInfo mutators then bumped their own counter on top, so a job changed
  // by a PodGroup update could reach a snapshot with the very generation its previous
  // version had been published with.
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  std::set<uint64_t> job_gens, node_gens;
  auto record = [&] {
    auto snap = cache->Snapshot();
    job_gens.insert(snap->FindJob("ns/job")->generation());
    node_gens.insert(snap->FindNode("n1")->generation());
  };
  record();
  ASSERT_OK(
      cache->UpdatePodGroup(nullptr, PodGroupBuilder("ns", "job").MinMember(2).ResourceVersion("2").Ptr()));
  record();
  ASSERT_OK(PutPod(RunningOn(Pod("p2"), "n1")));
  record();
  PutNode(NodeBuilder("n1").Allocatable("8", "8Gi"));
  record();
  ASSERT_OK(cache->Evict("ns/p1", "r"));
  record();
  EXPECT_EQ(job_gens.size(), 4u);   // the node update did not touch the job
  EXPECT_EQ(node_gens.size(), 4u);  // the PodGroup update did not touch the node
}

TEST_F(SchedulerCacheTest, UpdatePodGroupOfUnknownJobAddsIt) {
  ASSERT_OK(cache->UpdatePodGroup(nullptr, PodGroupBuilder("ns", "job").MinMember(2).Ptr()));
  EXPECT_EQ(Job()["minAvailable"], 2);
}

TEST_F(SchedulerCacheTest, DeletePodGroupQueuesJobUidSlashPodGroupUid) {
  AddJob("job");
  ASSERT_OK(cache->DeletePodGroup(PodGroupBuilder("ns", "job").Build()));
  EXPECT_EQ(Job()["podGroupPhase"], "");
  ASSERT_EQ(cache->deleted_jobs().Len(), 1u);
  std::string key;
  ASSERT_TRUE(cache->deleted_jobs().TryGet(&key));
  EXPECT_EQ(key, "ns/job/uid-pg-ns-job");
  // Out of snapshots at once (no PodGroup), out of the cache on cleanup.
  EXPECT_EQ(cache->Snapshot()->FindJob("ns/job"), nullptr);
  ASSERT_OK(cache->CleanupJob(key));
  cache->deleted_jobs().Done(key);
  EXPECT_EQ(cache->num_jobs(), 0u);
}

TEST_F(SchedulerCacheTest, DeletePodGroupWithoutPodsIsCleanedByDrain) {
  AddJob("job");
  ASSERT_OK(cache->DeletePodGroup(PodGroupBuilder("ns", "job").Build()));
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_jobs(), 0u);
}

TEST_F(SchedulerCacheTest, DeletePodGroupWithPodsKeepsTheJobAndRetries) {
  AddNode("n1");
  AddJob("job");
  ASSERT_OK(PutPod(RunningOn(Pod("p1"), "n1")));
  ASSERT_OK(cache->DeletePodGroup(PodGroupBuilder("ns", "job").Build()));
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_jobs(), 1u);
  EXPECT_EQ(cache->deleted_jobs().DelayedLen(), 1u);  // retry, rate-limited
  EXPECT_EQ(cache->CleanupJob("ns/job/uid-pg-ns-job").code(), StatusCode::kUnavailable);
  AdvanceAndDrain(1s);
  EXPECT_EQ(cache->num_jobs(), 1u);
  EXPECT_EQ(cache->deleted_jobs().DelayedLen(), 1u);  // still retrying
  // The task is still accounted on its node meanwhile.
  EXPECT_EQ(Node("n1")["used"], R(1000, kGi, 1));
  ASSERT_OK(cache->DeletePod(Pod("p1").Build()));
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_jobs(), 0u);
  AdvanceAndDrain(1h);  // the pending retry finds nothing to do
  EXPECT_EQ(cache->num_jobs(), 0u);
}

TEST_F(SchedulerCacheTest, RecreatedPodGroupDropsTheStaleCleanupKey) {
  AddJob("job");
  ASSERT_OK(PutPod(Pod("p1")));
  ASSERT_OK(cache->DeletePodGroup(PodGroupBuilder("ns", "job").Build()));
  cache->DrainQueuesOnce();
  ASSERT_EQ(cache->deleted_jobs().DelayedLen(), 1u);
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "job").Uid("uid-2").MinMember(2).Ptr()));
  // The stale key names the old PodGroup: forgotten, no more retries.
  ASSERT_OK(cache->CleanupJob("ns/job/uid-pg-ns-job"));
  AdvanceAndDrain(1s);
  EXPECT_EQ(cache->deleted_jobs().Len() + cache->deleted_jobs().DelayedLen(), 0u);
  EXPECT_EQ(cache->num_jobs(), 1u);
  EXPECT_EQ(Job()["minAvailable"], 2);
  EXPECT_THAT(Names(Job()["tasks"]), ElementsAre("p1"));
  // Even with no tasks left, a job with its (new) PodGroup is never deleted by the old key.
  ASSERT_OK(cache->DeletePod(Pod("p1").Build()));
  ASSERT_OK(cache->CleanupJob("ns/job/uid-pg-ns-job"));
  ASSERT_OK(cache->CleanupJob("ns/job/uid-2"));
  EXPECT_EQ(cache->num_jobs(), 1u);
}

TEST_F(SchedulerCacheTest, RecreatedPodGroupBeforeCleanupKeepsAnEmptyJob) {
  AddJob("job");
  ASSERT_OK(cache->DeletePodGroup(PodGroupBuilder("ns", "job").Build()));
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "job").Uid("uid-2").Ptr()));
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_jobs(), 1u);
  EXPECT_EQ(cache->deleted_jobs().Len() + cache->deleted_jobs().DelayedLen(), 0u);
}

TEST_F(SchedulerCacheTest, CleanupJobKeysAreValidated) {
  EXPECT_EQ(cache->CleanupJob("nokey").code(), StatusCode::kInvalidArgument);
  EXPECT_OK(cache->CleanupJob("ns/unknown/uid"));
}

TEST_F(SchedulerCacheTest, DeletePodGroupUnknownIsNotFound) {
  ExpectRefused([&] { return cache->DeletePodGroup(PodGroupBuilder("ns", "ghost").Build()); },
                StatusCode::kNotFound, {"PodGroup ns/ghost"});
  // A job known only from its pods has no PodGroup to delete either.
  ASSERT_OK(PutPod(Pod("p1", "loose")));
  ExpectRefused([&] { return cache->DeletePodGroup(PodGroupBuilder("ns", "loose").Build()); },
                StatusCode::kNotFound, {"PodGroup ns/loose"});
}

// ============================================================================= queues

TEST_F(SchedulerCacheTest, EnsureDefaultQueuesCreatesRootAndDefault) {
  json d = DumpJson();
  EXPECT_THAT(Names(d["queues"]), ElementsAre("default", "root"));
  json root = FindQueueJson(d, "root");
  EXPECT_EQ(root["reclaimable"], false);
  EXPECT_EQ(root["weight"], 1);
  EXPECT_EQ(root["state"], "Open");
  EXPECT_EQ(root["capability"], json::object());
  json def = FindQueueJson(d, "default");
  EXPECT_EQ(def["reclaimable"], true);
  EXPECT_EQ(def["weight"], 1);
  EXPECT_EQ(def["state"], "Open");
  // Idempotent.
  const std::string before = cache->Dump();
  cache->EnsureDefaultQueues();
  EXPECT_EQ(cache->Dump(), before);
  // The cluster's own default queue replaces ours, and EnsureDefaultQueues keeps it.
  ASSERT_OK(cache->AddQueue(QueueBuilder("default").Weight(3).Ptr()));
  cache->EnsureDefaultQueues();
  EXPECT_EQ(FindQueueJson(DumpJson(), "default")["weight"], 3);
}

TEST_F(SchedulerCacheTest, EnsureDefaultQueuesUsesTheConfiguredDefaultQueue) {
  SchedulerCacheOptions opts;
  opts.default_queue = "batch";
  CacheHarness h(opts);
  h.cache->EnsureDefaultQueues();
  EXPECT_THAT(Names(h.DumpJson()["queues"]), ElementsAre("batch", "root"));
  ASSERT_OK(h.cache->AddPodGroup(PodGroupBuilder("ns", "job").Ptr()));
  EXPECT_EQ(FindJobJson(h.DumpJson(), "ns/job")["queue"], "batch");
  EXPECT_NE(h.cache->Snapshot()->FindJob("ns/job"), nullptr);
}

TEST_F(SchedulerCacheTest, QueueAddUpdateDelete) {
  auto q1 = QueueBuilder("q1").Weight(2).Capability(Resources({{"cpu", "10"}, {"memory", "1Gi"}})).Ptr();
  ASSERT_OK(cache->AddQueue(q1));
  json q = FindQueueJson(DumpJson(), "q1");
  EXPECT_EQ(q["weight"], 2);
  EXPECT_EQ(q["reclaimable"], true);
  EXPECT_EQ(q["state"], "Open");
  EXPECT_EQ(q["capability"], R(10000, kGi, 0));
  auto q1b = QueueBuilder("q1").Weight(5).Reclaimable(false).State("Closed").ResourceVersion("2").Ptr();
  ASSERT_OK(cache->UpdateQueue(q1, q1b));
  q = FindQueueJson(DumpJson(), "q1");
  EXPECT_EQ(q["weight"], 5);
  EXPECT_EQ(q["reclaimable"], false);
  EXPECT_EQ(q["state"], "Closed");
  EXPECT_EQ(q["capability"], json::object());
  EXPECT_EQ(cache->Snapshot()->queues.at("q1").weight, 5);
  ASSERT_OK(cache->DeleteQueue(*q1b));
  EXPECT_TRUE(FindQueueJson(DumpJson(), "q1").is_null());
  EXPECT_EQ(cache->Snapshot()->queues.count("q1"), 0u);
}

TEST_F(SchedulerCacheTest, QueueRefusals) {
  ExpectRefused([&] { return cache->DeleteQueue(QueueBuilder("ghost").Build()); }, StatusCode::kNotFound,
                {"Queue ghost"});
  ExpectRefused(
      [&] {
        return cache->AddQueue(QueueBuilder("q1").Capability(Resources({{"cpu", "-1"}})).Ptr());
      },
      StatusCode::kInvalidArgument, {"Queue q1", "spec.capability.cpu"});
  ASSERT_OK(cache->AddQueue(QueueBuilder("q1").Weight(4).Ptr()));
  ExpectRefused(
      [&] {
        return cache->UpdateQueue(nullptr,
                                  QueueBuilder("q1").Capability(Resources({{"memory", "-1"}})).Ptr());
      },
      StatusCode::kInvalidArgument, {"Queue q1", "spec.capability.memory"});
  EXPECT_EQ(FindQueueJson(DumpJson(), "q1")["weight"], 4);
}

// ===================================================================== PriorityClasses

TEST_F(SchedulerCacheTest, JobPriorityFromClassThenGlobalDefaultThenZero) {
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "hi").PriorityClassName("high").Ptr()));
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "plain").Ptr()));
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "unknown").PriorityClassName("nope").Ptr()));
  auto prio = [&](const std::string& id) { return Job(id)["priority"].get<int>(); };
  auto snap_prio = [&](const std::string& id) { return cache->Snapshot()->FindJob(id)->priority(); };
  EXPECT_EQ(prio("ns/hi"), 0);
  EXPECT_EQ(prio("ns/plain"), 0);

  // A class arriving later recomputes the jobs naming it.
  ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("high", 1000)));
  EXPECT_EQ(prio("ns/hi"), 1000);
  EXPECT_EQ(snap_prio("ns/hi"), 1000);
  EXPECT_EQ(prio("ns/plain"), 0);

  // A globalDefault class sets the priority of jobs without a (known) class.
  ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("normal", 10, /*global_default=*/true)));
  EXPECT_EQ(prio("ns/hi"), 1000);
  EXPECT_EQ(prio("ns/plain"), 10);
  EXPECT_EQ(prio("ns/unknown"), 10);
  EXPECT_EQ(snap_prio("ns/plain"), 10);
  EXPECT_EQ(cache->Snapshot()->default_priority, 10);
  EXPECT_EQ(cache->Snapshot()->priority_classes.at("high"), 1000);

  // Updates recompute.
  ASSERT_OK(cache->UpdatePriorityClass(MakePriorityClass("high", 1000), MakePriorityClass("high", 2000)));
  EXPECT_EQ(prio("ns/hi"), 2000);
  ASSERT_OK(cache->UpdatePriorityClass(MakePriorityClass("normal", 10, true),
                                       MakePriorityClass("normal", 10, false)));
  EXPECT_EQ(prio("ns/plain"), 0);
  ASSERT_OK(
      cache->UpdatePriorityClass(MakePriorityClass("normal", 10), MakePriorityClass("normal", 20, true)));
  EXPECT_EQ(prio("ns/plain"), 20);

  // Deleting the named class falls back to the global default; deleting that gives 0.
  ASSERT_OK(cache->DeletePriorityClass(MakePriorityClass("high", 0)));
  EXPECT_EQ(prio("ns/hi"), 20);
  ASSERT_OK(cache->DeletePriorityClass(MakePriorityClass("normal", 0)));
  EXPECT_EQ(prio("ns/hi"), 0);
  EXPECT_EQ(prio("ns/plain"), 0);
  EXPECT_EQ(snap_prio("ns/plain"), 0);
  EXPECT_EQ(cache->Snapshot()->default_priority, 0);

  // A PodGroup naming a known class gets it at once.
  ASSERT_OK(cache->AddPriorityClass(MakePriorityClass("low", -5)));
  ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", "lo").PriorityClassName("low").Ptr()));
  EXPECT_EQ(prio("ns/lo"), -5);
}

TEST_F(SchedulerCacheTest, DeletePriorityClassUnknownIsNotFound) {
  ExpectRefused([&] { return cache->DeletePriorityClass(MakePriorityClass("ghost", 1)); },
                StatusCode::kNotFound, {"PriorityClass ghost"});
}

// ===================================================================== ResourceQuotas

TEST_F(SchedulerCacheTest, ResourceQuotaAddAndDelete) {
  // Both quotas name every dimension: NamespaceQuota cannot express "this quota does not
  // limit memory" for cpu/memory (see the report on quota combination).
  ASSERT_OK(cache->AddResourceQuota(
      MakeResourceQuota("ns", "q1", Resources({{"cpu", "10"}, {"memory", "20Gi"}, {"nvidia.com/gpu", "4"}}),
                        Resources({{"cpu", "2"}, {"memory", "512Mi"}}))));
  ASSERT_OK(cache->AddResourceQuota(
      MakeResourceQuota("ns", "q2", Resources({{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "2"}}),
                        Resources({{"cpu", "1"}, {"memory", "1Gi"}}))));
  auto snap = cache->Snapshot();
  ASSERT_EQ(snap->namespace_quotas.count("ns"), 1u);
  const NamespaceQuota& q = snap->namespace_quotas.at("ns");
  EXPECT_EQ(q.name, "ns");
  EXPECT_EQ(q.hard.milli_cpu(), 8000);  // minimum over the quotas
  EXPECT_EQ(q.hard.memory(), 20 * kGi);
  EXPECT_EQ(q.hard.Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(q.used.milli_cpu(), 2000);  // maximum over the quotas
  EXPECT_EQ(q.used.memory(), kGi);
  // spec.hard is used until the quota controller has written status.hard.
  auto spec_only = MakeResourceQuota("other", "q", Resources({{"cpu", "3"}}));
  spec_only.status_hard.clear();
  ASSERT_OK(cache->AddResourceQuota(spec_only));
  EXPECT_EQ(cache->Snapshot()->namespace_quotas.at("other").hard.milli_cpu(), 3000);

  ASSERT_OK(cache->DeleteResourceQuota(MakeResourceQuota("ns", "q2", {})));
  EXPECT_EQ(cache->Snapshot()->namespace_quotas.at("ns").hard.milli_cpu(), 10000);
  ASSERT_OK(cache->UpdateResourceQuota(MakeResourceQuota("ns", "q1", {}),
                                       MakeResourceQuota("ns", "q1", Resources({{"cpu", "6"}}))));
  EXPECT_EQ(cache->Snapshot()->namespace_quotas.at("ns").hard.milli_cpu(), 6000);
  ASSERT_OK(cache->DeleteResourceQuota(MakeResourceQuota("ns", "q1", {})));
  EXPECT_EQ(cache->Snapshot()->namespace_quotas.count("ns"), 0u);
  // The existing snapshot did not change.
  EXPECT_EQ(snap->namespace_quotas.at("ns").hard.milli_cpu(), 8000);
}

TEST_F(SchedulerCacheTest, ResourceQuotaRefusals) {
  const CacheCounters before = cache->counters();
  EXPECT_EQ(cache->DeleteResourceQuota(MakeResourceQuota("ns", "ghost", {})).code(), StatusCode::kNotFound);
  Status s = cache->AddResourceQuota(MakeResourceQuota("ns", "bad", Resources({{"cpu", "-1"}})));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ResourceQuota ns/bad"));
  EXPECT_THAT(s.message(), HasSubstr("status.hard.cpu"));
  EXPECT_EQ(cache->Snapshot()->namespace_quotas.count("ns"), 0u);
  EXPECT_EQ(cache->counters().events_refused, before.events_refused + 2);
}

// ============================================================================== Apply

TEST_F(SchedulerCacheTest, ApplyUnstructuredIsRefusedNamingTheKind) {
  k8s::Unstructured u;
  u.api_version = "apps/v1";
  u.kind = "Deployment";
  u.metadata.name = "web";
  u.metadata.namespace_ = "ns";
  for (auto type : {SchedulerCache::EventType::kAdd, SchedulerCache::EventType::kUpdate,
                    SchedulerCache::EventType::kDelete}) {
    ExpectRefused([&] { return cache->Apply(type, k8s::Object(u)); }, StatusCode::kInvalidArgument,
                  {"Deployment", "ns/web"});
  }
}

TEST_F(SchedulerCacheTest, ApplyDispatchesByKind) {
  using ET = SchedulerCache::EventType;
  auto node = NodeBuilder("n1").Allocatable("4", "8Gi").Build();
  source.PutNode(std::make_shared<const k8s::Node>(node));
  ASSERT_OK(cache->Apply(ET::kAdd, k8s::Object(node)));
  EXPECT_EQ(cache->num_nodes(), 0u);  // queued
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_nodes(), 1u);
  ASSERT_OK(cache->Apply(ET::kAdd, k8s::Object(QueueBuilder("q1").Weight(7).Build())));
  ASSERT_OK(cache->Apply(ET::kAdd, k8s::Object(PodGroupBuilder("ns", "job").Queue("q1").Build())));
  ASSERT_OK(cache->Apply(
      ET::kUpdate,
      k8s::Object(PodGroupBuilder("ns", "job").Queue("q1").MinMember(4).ResourceVersion("2").Build())));
  ASSERT_OK(cache->Apply(ET::kAdd, k8s::Object(MakePriorityClass("high", 50))));
  ASSERT_OK(cache->Apply(ET::kAdd, k8s::Object(Pod("p1").Build())));
  ASSERT_OK(cache->Apply(ET::kUpdate, k8s::Object(RunningOn(Pod("p1"), "n1").Build())));
  ASSERT_OK(cache->Apply(ET::kAdd, k8s::Object(MakeResourceQuota("ns", "rq", Resources({{"cpu", "1"}})))));
  json d = DumpJson();
  EXPECT_EQ(FindQueueJson(d, "q1")["weight"], 7);
  EXPECT_EQ(FindJobJson(d, "ns/job")["minAvailable"], 4);
  EXPECT_EQ(FindTaskJson(FindJobJson(d, "ns/job"), "p1")["status"], "Running");
  EXPECT_EQ(FindNodeJson(d, "n1")["used"], R(1000, kGi, 1));
  EXPECT_EQ(cache->Snapshot()->priority_classes.at("high"), 50);
  EXPECT_EQ(cache->Snapshot()->namespace_quotas.count("ns"), 1u);

  ASSERT_OK(cache->Apply(ET::kDelete, k8s::Object(Pod("p1").Build())));
  ASSERT_OK(cache->Apply(ET::kDelete, k8s::Object(PodGroupBuilder("ns", "job").Build())));
  ASSERT_OK(cache->Apply(ET::kDelete, k8s::Object(QueueBuilder("q1").Build())));
  ASSERT_OK(cache->Apply(ET::kDelete, k8s::Object(MakePriorityClass("high", 50))));
  ASSERT_OK(cache->Apply(ET::kDelete, k8s::Object(MakeResourceQuota("ns", "rq", {}))));
  source.DeleteNode("n1");
  ASSERT_OK(cache->Apply(ET::kDelete, k8s::Object(node)));
  cache->DrainQueuesOnce();
  d = DumpJson();
  EXPECT_THAT(d["nodes"], IsEmpty());
  EXPECT_THAT(d["jobs"], IsEmpty());
  EXPECT_THAT(Names(d["queues"]), ElementsAre("default", "root"));
  EXPECT_EQ(cache->num_tasks(), 0u);
  EXPECT_EQ(cache->Apply(ET::kDelete, k8s::Object(Pod("p1").Build())).code(), StatusCode::kNotFound);
}

// ========================================================================= EventSink

// What the feeders see of the cache (cache/event_sink.h): shared versions in, the typed
// add/update underneath.
TEST_F(SchedulerCacheTest, EventSinkAddAndUpdateUseTheTypedCalls) {
  EventSink* sink = cache.get();
  auto obj = [](auto o) { return std::make_shared<const k8s::Object>(std::move(o)); };
  auto node = NodeBuilder("n1").Allocatable("4", "8Gi").Build();
  source.PutNode(std::make_shared<const k8s::Node>(node));
  ASSERT_OK(sink->Add(obj(node)));
  ASSERT_OK(sink->Update(obj(node), obj(node)));  // queues the node name, like UpdateNode
  EXPECT_EQ(cache->node_queue().Len(), 1u);
  cache->DrainQueuesOnce();
  EXPECT_EQ(cache->num_nodes(), 1u);

  auto q1 = obj(QueueBuilder("q1").Weight(2).Build());
  ASSERT_OK(sink->Add(q1));
  ASSERT_OK(sink->Update(q1, obj(QueueBuilder("q1").Weight(7).Build())));
  auto pg1 = obj(PodGroupBuilder("ns", "job").Queue("q1").ResourceVersion("1").Build());
  ASSERT_OK(sink->Add(pg1));
  auto pg2 = obj(PodGroupBuilder("ns", "job").Queue("q1").MinMember(4).ResourceVersion("2").Build());
  ASSERT_OK(sink->Update(pg1, pg2));
  auto p1 = obj(Pod("p1").Build());
  ASSERT_OK(sink->Add(p1));
  ASSERT_OK(sink->Update(p1, obj(RunningOn(Pod("p1"), "n1").Build())));
  auto high = obj(MakePriorityClass("high", 50));
  ASSERT_OK(sink->Add(high));
  ASSERT_OK(sink->Update(high, obj(MakePriorityClass("high", 60))));
  json d = DumpJson();
  EXPECT_EQ(FindQueueJson(d, "q1")["weight"], 7);
  EXPECT_EQ(FindJobJson(d, "ns/job")["minAvailable"], 4);
  EXPECT_EQ(FindTaskJson(FindJobJson(d, "ns/job"), "p1")["status"], "Running");
  EXPECT_EQ(cache->Snapshot()->priority_classes.at("high"), 60);
}

TEST_F(SchedulerCacheTest, EventSinkUpdateAcrossKindsOrOfUnstructuredIsRefused) {
  EventSink* sink = cache.get();
  auto queue = std::make_shared<const k8s::Object>(QueueBuilder("q1").Build());
  ASSERT_OK(sink->Add(queue));
  auto pg = std::make_shared<const k8s::Object>(PodGroupBuilder("ns", "job").Queue("q1").Build());
  ExpectRefused([&] { return sink->Update(queue, pg); }, StatusCode::kInvalidArgument,
                {"PodGroup ns/job", "another kind"});
  k8s::Unstructured u;
  u.api_version = "apps/v1";
  u.kind = "Deployment";
  u.metadata.name = "web";
  u.metadata.namespace_ = "ns";
  auto deployment = std::make_shared<const k8s::Object>(u);
  ExpectRefused([&] { return sink->Add(deployment); }, StatusCode::kInvalidArgument,
                {"Deployment", "ns/web"});
  ExpectRefused([&] { return sink->Update(deployment, deployment); }, StatusCode::kInvalidArgument,
                {"Deployment", "ns/web"});
}

}  // namespace
}  // namespace volcache
