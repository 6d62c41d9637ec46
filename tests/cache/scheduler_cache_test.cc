// SchedulerCache through its public API (SPEC §3, §8): event entry points and their
// refusals (all-or-nothing, proven by comparing Dump() before and after), the assume/bind
// state machine, Volcano's bind/evict accounting, snapshots (filtering, nodeTree order,
// isolation both ways, incremental refresh == fresh snapshot), the invariant checker and
// the comparer. Every fixture checks CheckInvariants() when the test ends.

#include "cache/scheduler_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/cluster_info.h"
#include "api/k8s/objects.h"
#include "api/resource.h"
#include "tests/fakes/cluster_builders.h"
#include "workers/work_queue.h"

namespace volcache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::CacheHarness;
using testing::FindJobJson;
using testing::FindNodeJson;
using testing::FindQueueJson;
using testing::FindTaskJson;
using testing::MakePriorityClass;
using testing::MakeResourceQuota;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;
using testing::QueueBuilder;
using testing::Resources;

#define ASSERT_OK(expr)                                     \
  do {                                                      \
    const ::volcache::Status s_ = (expr);                   \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                     \
  do {                                                      \
    const ::volcache::Status s_ = (expr);                   \
    EXPECT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)

constexpr int64_t kGi = 1024ll * 1024 * 1024;
constexpr int64_t kMi = 1024ll * 1024;

// A resource object as Dump() writes it: zero dimensions omitted.
json R(int64_t cpu, int64_t memory, int64_t pods) {
  json j = json::object();
  if (cpu != 0) j["cpu"] = cpu;
  if (memory != 0) j["memory"] = memory;
  if (pods != 0) j["pods"] = pods;
  return j;
}

std::vector<std::string> Names(const json& arr) {
  std::vector<std::string> out;
  for (const auto& e : arr)
    out.push_back(e.is_string() ? e.get<std::string>() : e["name"].get<std::string>());
  return out;
}

// A resource with zero dimensions omitted (a scalar present at 0 and an absent one are the
// same amount), scalars sorted by name.
std::string Canonical(const Resource& r) {
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->value != 0) dims.emplace_back(ResourceNames::Name(s->id), s->value);
  }
  std::sort(dims.begin(), dims.end());
  std::string out = "cpu " + std::to_string(r.milli_cpu()) + ", memory " + std::to_string(r.memory());
  for (const auto& [name, v] : dims) out += ", " + name + " " + std::to_string(v);
  return out;
}

// Everything observable in a snapshot: the §8 dump plus the fields it does not carry.
std::string SnapshotText(const ClusterInfo& snap) {
  std::string out = DumpClusterInfo(snap);
  std::vector<std::string> revocable(snap.revocable_nodes().begin(), snap.revocable_nodes().end());
  std::sort(revocable.begin(), revocable.end());
  out += "\nrevocable:";
  for (const auto& n : revocable) out += " " + n;
  out += "\ntotal: " + Canonical(snap.total_allocatable());
  out += "\ndefault priority: " + std::to_string(snap.default_priority);
  for (const auto& [name, v] : snap.priority_classes) out += "\npc " + name + "=" + std::to_string(v);
  for (const auto& [ns, q] : snap.namespace_quotas) {
    out += "\nquota " + ns + " hard {" + Canonical(q.hard) + "} used {" + Canonical(q.used) + "}";
  }
  std::vector<std::string> names;
  for (const auto& [name, _] : snap.nodes()) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const NodeInfo& n = *snap.nodes().at(name);
    out += "\nnode " + name + " future idle {" + Canonical(n.FutureIdle()) + "} nz " +
           std::to_string(n.non_zero_requested().milli_cpu) + "/" +
           std::to_string(n.non_zero_requested().memory) + " images " + std::to_string(n.images().size()) +
           " ports " + std::to_string(n.used_ports().size());
  }
  std::vector<std::string> ids;
  for (const auto& [id, _] : snap.jobs()) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    const JobInfo& j = *snap.jobs().at(id);
    out += "\njob " + id + " ready " + std::to_string(j.ReadyTaskNum()) + " waiting " +
           std::to_string(j.WaitingTaskNum()) + " valid " + std::to_string(j.ValidTaskNum());
  }
  return out;
}

class SchedulerCacheTest : public ::testing::Test, protected CacheHarness {
 protected:
  explicit SchedulerCacheTest(SchedulerCacheOptions options = {}) : CacheHarness(std::move(options)) {}

  void SetUp() override { cache->EnsureDefaultQueues(); }
  void TearDown() override {
    Status s = cache->CheckInvariants();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  // A Ready node with 4 cpu, 8Gi, 110 pods unless told otherwise.
  void AddNode(const std::string& name, std::string_view cpu = "4", std::string_view memory = "8Gi") {
    PutNode(NodeBuilder(name).Allocatable(cpu, memory));
  }
  void AddJob(const std::string& name, const std::string& queue = "", int32_t min_member = 1) {
    ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", name).Queue(queue).MinMember(min_member).Ptr()));
  }
  // A pending pod of job ns/<group> requesting cpu/memory.
  static PodBuilder Pod(const std::string& name, const std::string& group = "job", std::string_view cpu = "1",
                        std::string_view memory = "1Gi") {
    PodBuilder b("ns", name);
    if (!group.empty()) b.Group(group);
    b.Request(cpu, memory);
    return b;
  }
  static PodBuilder RunningOn(PodBuilder b, const std::string& node) {
    b.NodeName(node).Phase("Running");
    return b;
  }

  // `op` must be refused with `code` and a message containing every needle, and leave the
  // cache exactly as it was.
  void ExpectRefused(const std::function<Status()>& op, StatusCode code,
                     const std::vector<std::string>& needles) {
    const std::string before = cache->Dump();
    const CacheCounters counters_before = cache->counters();
    Status s = op();
    EXPECT_EQ(s.code(), code) << s.ToString();
    for (const auto& n : needles) EXPECT_THAT(s.message(), HasSubstr(n));
    EXPECT_EQ(cache->Dump(), before);
    EXPECT_EQ(cache->counters().events_applied, counters_before.events_applied);
  }

  json Node(const std::string& name) { return FindNodeJson(DumpJson(), name); }
  json Job(const std::string& id = "ns/job") { return FindJobJson(DumpJson(), id); }
  json Task(const std::string& name, const std::string& job = "ns/job") {
    return FindTaskJson(Job(job), name);
  }
};

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
  pod.spec.overhead = Resources({{"memory", "-5Mi"}});
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
            (void)j->UpdateTaskStatus(j->tasks().begin()->first, TaskStatus::kPipelined);
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
