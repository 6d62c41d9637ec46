// Allocate: the reference session's allocation step on small clusters with exact expected
// placements — gang all-or-nothing, queue proportion and capability, job order, each
// predicate both ways, binpack versus least-allocated.
#include "session/allocate.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "api/resource_list.h"
#include "tests/fakes/cluster_builders.h"

namespace volcache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakePriorityClass;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;
using testing::QueueBuilder;
using testing::Resources;

constexpr int64_t kGi = 1024ll * 1024 * 1024;

struct World {
  World() { h.cache->EnsureDefaultQueues(); }

  void Node(const NodeBuilder& b) { h.PutNode(b); }
  void Queue(const QueueBuilder& q) { ASSERT_TRUE(h.cache->AddQueue(q.Ptr()).ok()); }
  void Group(const PodGroupBuilder& pg) { ASSERT_TRUE(h.cache->AddPodGroup(pg.Ptr()).ok()); }
  void Pod(const PodBuilder& p) { ASSERT_TRUE(h.PutPod(p).ok()); }
  void Pod(const k8s::Pod& p) { ASSERT_TRUE(h.PutPod(std::make_shared<const k8s::Pod>(p)).ok()); }
  // A job "ns/<name>" of `n` tasks <name>-0.. requesting cpu/memory, gang `min`.
  void Job(const std::string& name, int n, int min, const char* cpu = "1", const char* mem = "1Gi",
           const std::string& queue = "", k8s::TimeMs created = 0, const std::string& pc = "") {
    PodGroupBuilder pg("ns", name);
    pg.MinMember(min).CreationTimestamp(created);
    if (!queue.empty()) pg.Queue(queue);
    if (!pc.empty()) pg.PriorityClassName(pc);
    Group(pg);
    for (int i = 0; i < n; ++i)
      Pod(PodBuilder("ns", name + "-" + std::to_string(i)).Group(name).Request(cpu, mem));
  }

  AllocationPlan Run(const SessionOptions& o = {}) {
    auto snap = h.cache->Snapshot();
    return Allocate(*snap, o);
  }

  testing::CacheHarness h;
};

std::map<std::string, std::string> Placed(const AllocationPlan& plan) {
  std::map<std::string, std::string> out;
  for (const auto& p : plan.placements) out[p.task_key] = p.node;
  return out;
}

const JobOutcome* FindJob(const AllocationPlan& plan, const std::string& uid) {
  for (const auto& j : plan.jobs)
    if (j.job == uid) return &j;
  return nullptr;
}

const QueueOutcome* FindQueue(const AllocationPlan& plan, const std::string& name) {
  for (const auto& q : plan.queues)
    if (q.name == name) return &q;
  return nullptr;
}

int PlacedInQueue(const AllocationPlan& plan, const std::string& queue) {
  int n = 0;
  for (const auto& j : plan.jobs)
    if (j.queue == queue) n += j.placed;
  return n;
}

// ------------------------------------------------------------------ reused storage

// What a plan holds, field by field (a plan has no operator==).
std::string Describe(const AllocationPlan& plan) {
  std::string out = fmt::format("discarded {} pipelined {}\n", plan.discarded, plan.pipelined);
  for (const auto& p : plan.placements)
    out += fmt::format("place {} {} {} {} {}\n", p.job, p.task_uid, p.task_key, p.node, p.pipelined);
  for (const auto& j : plan.jobs) {
    out += fmt::format("job {} {} {} {} {} {} [{}]", j.job, j.queue, j.pending, j.placed, j.pipelined,
                       j.ready, j.reason);
    for (const auto& [task, why] : j.task_fit_errors) out += fmt::format(" ({}: {})", task, why);
    out += "\n";
  }
  for (const auto& q : plan.queues)
    out += fmt::format("queue {} {} {} {} {} {} {} {}\n", q.name, q.weight, q.request.ToString(),
                       q.deserved.ToString(), q.allocated.ToString(), q.share, q.overused, q.closed);
  return out;
}

TEST(AllocateTest, PlanBuiltInAReusedPlansStorageIsThePlanOfAFreshOne) {
  // The Scheduler's path: jobs sorted by the caller, the last plan's storage reused. Whatever
  // that storage held (more jobs, other texts, placements), the plan is Allocate's own.
  World w;
  w.Node(NodeBuilder("n1").Allocatable("4", "16Gi"));
  w.Node(NodeBuilder("n2").Allocatable("2", "8Gi"));
  w.Queue(QueueBuilder("qa").Weight(1).Capability(Resources({{"cpu", "2"}})));
  w.Queue(QueueBuilder("qb").Weight(2));
  w.Job("gang", 3, 3, "2", "1Gi", "qb", 1);  // fits only in part: discarded, with a fit error
  w.Job("big", 1, 1, "8", "1Gi", "qb", 2);   // fits no node
  for (int i = 0; i < 4; ++i) w.Job("a" + std::to_string(i), 1, 1, "1", "1Gi", "qa", 3 + i);  // capability
  w.Job("b", 4, 1, "1", "1Gi", "qb", 9);  // ready, not all placed
  auto snap = w.h.cache->Snapshot();
  const AllocationPlan fresh = Allocate(*snap);
  ASSERT_FALSE(fresh.jobs.empty());

  std::vector<const JobInfo*> by_uid;
  for (const auto& [id, job] : snap->jobs()) by_uid.push_back(job.get());
  std::sort(by_uid.begin(), by_uid.end(),
            [](const JobInfo* a, const JobInfo* b) { return a->uid() < b->uid(); });

  AllocationPlan used = fresh;  // storage holding more of everything than the plan needs
  for (int i = 0; i < 5; ++i) {
    JobOutcome extra;
    extra.job = "zz/" + std::string(40, 'x');
    extra.reason = std::string(200, 'r');
    extra.task_fit_errors = {{"t1", "why"}, {"t2", "why not"}};
    used.jobs.push_back(extra);
    used.jobs.insert(used.jobs.begin(), extra);
  }
  used.placements.push_back({"ns/x", "uid-x", "ns/x", "n9", true});
  used.discarded = 7;
  std::vector<uint32_t> positions;
  const AllocationPlan reused = Allocate(*snap, SessionOptions(), by_uid, std::move(used), &positions);
  EXPECT_EQ(Describe(reused), Describe(fresh));
  ASSERT_EQ(positions.size(), reused.jobs.size());
  for (size_t i = 0; i < positions.size(); ++i) EXPECT_EQ(by_uid[positions[i]]->uid(), reused.jobs[i].job);
  // And once more in its own storage, as the Scheduler does session after session.
  EXPECT_EQ(Describe(Allocate(*snap, SessionOptions(), by_uid, AllocationPlan(reused))), Describe(fresh));
}

// ------------------------------------------------------------------ gang

TEST(AllocateTest, GangThatFitsOnlyTwoOfThreePlacesNothingAndFreesItsResources) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("2", "8Gi"));
  w.Job("a", 3, 3, "1", "1Gi", "", /*created=*/1);
  w.Job("b", 2, 2, "1", "1Gi", "", /*created=*/2);
  AllocationPlan plan = w.Run();
  // a goes first (older), places two tentatively, fails the third, discards both; b then
  // gets the very resources a gave back.
  EXPECT_EQ(Placed(plan), (std::map<std::string, std::string>{{"ns/b-0", "n1"}, {"ns/b-1", "n1"}}));
  EXPECT_EQ(plan.discarded, 2);
  const JobOutcome* a = FindJob(plan, "ns/a");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->ready);
  EXPECT_EQ(a->placed, 0);
  EXPECT_EQ(a->reason, "3/3 tasks in gang unschedulable: 0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_THAT(a->task_fit_errors, ElementsAre(std::pair<std::string, std::string>{
                                      "uid-ns-a-2", "0/1 nodes are available: 1 Insufficient cpu."}));
  const JobOutcome* b = FindJob(plan, "ns/b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->ready);
  EXPECT_EQ(b->placed, 2);
  EXPECT_EQ(b->reason, "");
}

TEST(AllocateTest, TasksBeyondMinAvailableArePlacedWhenTheyFit) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("3", "8Gi"));
  w.Job("a", 4, 2);
  AllocationPlan plan = w.Run();
  EXPECT_EQ(plan.placements.size(), 3u);
  const JobOutcome* a = FindJob(plan, "ns/a");
  EXPECT_TRUE(a->ready);
  EXPECT_EQ(a->placed, 3);
  EXPECT_EQ(a->reason, "1/4 pending tasks not placed: 0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_EQ(plan.discarded, 0);
}

TEST(AllocateTest, GangCountsTasksAlreadyRunning) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("3", "8Gi"));
  w.Group(PodGroupBuilder("ns", "a").MinMember(3));
  w.Pod(PodBuilder("ns", "a-0").Group("a").Request("1", "1Gi").NodeName("n1").Phase("Running"));
  w.Pod(PodBuilder("ns", "a-1").Group("a").Request("1", "1Gi").NodeName("n1").Phase("Running"));
  w.Pod(PodBuilder("ns", "a-2").Group("a").Request("1", "1Gi"));
  AllocationPlan plan = w.Run();
  EXPECT_EQ(Placed(plan), (std::map<std::string, std::string>{{"ns/a-2", "n1"}}));
  EXPECT_TRUE(FindJob(plan, "ns/a")->ready);
}

TEST(AllocateTest, GangWithFewerValidTasksThanMinAvailableIsNotTried) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "8Gi"));
  w.Job("a", 2, 3);
  AllocationPlan plan = w.Run();
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_EQ(plan.discarded, 0);
  EXPECT_THAT(FindJob(plan, "ns/a")->reason,
              HasSubstr("not enough valid tasks for gang-scheduling, valid: 2, min: 3"));
}

TEST(AllocateTest, SchedulingGatedTasksAreNotPlaced) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "8Gi"));
  w.Group(PodGroupBuilder("ns", "a").MinMember(1));
  k8s::Pod gated = PodBuilder("ns", "a-0").Group("a").Request("1", "1Gi").Build();
  gated.spec.mutable_rare().scheduling_gates.push_back("example.com/wait");
  w.Pod(gated);
  w.Pod(PodBuilder("ns", "a-1").Group("a").Request("1", "1Gi"));
  AllocationPlan plan = w.Run();
  EXPECT_EQ(Placed(plan), (std::map<std::string, std::string>{{"ns/a-1", "n1"}}));
  EXPECT_EQ(FindJob(plan, "ns/a")->pending, 1);
}

// ------------------------------------------------------------------ queues

TEST(AllocateTest, QueuesShareByWeightOneToThree) {
  World w;
  for (int i = 1; i <= 4; ++i) w.Node(NodeBuilder("n" + std::to_string(i)).Allocatable("4", "16Gi"));
  w.Queue(QueueBuilder("qa").Weight(1));
  w.Queue(QueueBuilder("qb").Weight(3));
  for (int i = 0; i < 16; ++i) {
    w.Job("a" + std::to_string(i), 1, 1, "1", "1Gi", "qa", i);
    w.Job("b" + std::to_string(i), 1, 1, "1", "1Gi", "qb", i);
  }
  AllocationPlan plan = w.Run();
  EXPECT_EQ(plan.placements.size(), 16u);
  EXPECT_EQ(PlacedInQueue(plan, "qa"), 4);
  EXPECT_EQ(PlacedInQueue(plan, "qb"), 12);
  const QueueOutcome* qa = FindQueue(plan, "qa");
  const QueueOutcome* qb = FindQueue(plan, "qb");
  ASSERT_NE(qa, nullptr);
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ(qa->deserved.milli_cpu(), 4000);
  EXPECT_EQ(qb->deserved.milli_cpu(), 12000);
  EXPECT_EQ(qa->deserved.memory(), 16 * kGi);  // capped by its request; the rest is qb's
  EXPECT_EQ(qb->deserved.memory(), 16 * kGi);
  EXPECT_DOUBLE_EQ(qa->share, 1.0);
  EXPECT_DOUBLE_EQ(qb->share, 1.0);
  // Older jobs first inside each queue.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(FindJob(plan, "ns/a" + std::to_string(i))->ready) << i;
  EXPECT_FALSE(FindJob(plan, "ns/a4")->ready);
}

TEST(AllocateTest, QueuesInterleaveMultiTaskJobsOneTaskPerTurnOnceReady) {
  // Two big jobs without a gang (minAvailable 1): after the first task each gets one more
  // task per turn, so the 1:3 split holds within one task.
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "64Gi"));
  w.Queue(QueueBuilder("qa").Weight(1));
  w.Queue(QueueBuilder("qb").Weight(3));
  w.Job("a", 8, 1, "1", "1Gi", "qa");
  w.Job("b", 8, 1, "1", "1Gi", "qb");
  AllocationPlan plan = w.Run();
  EXPECT_EQ(PlacedInQueue(plan, "qa"), 2);
  EXPECT_EQ(PlacedInQueue(plan, "qb"), 6);
}

TEST(AllocateTest, CapabilityCapsAQueueAndItsDeservedGoesToTheOthers) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "64Gi"));
  w.Queue(QueueBuilder("qa").Weight(1).Capability(Resources({{"cpu", "2"}})));
  w.Queue(QueueBuilder("qb").Weight(1));
  for (int i = 0; i < 8; ++i) {
    w.Job("a" + std::to_string(i), 1, 1, "1", "1Gi", "qa", i);
    w.Job("b" + std::to_string(i), 1, 1, "1", "1Gi", "qb", i);
  }
  AllocationPlan plan = w.Run();
  EXPECT_EQ(PlacedInQueue(plan, "qa"), 2);
  EXPECT_EQ(PlacedInQueue(plan, "qb"), 6);
  EXPECT_EQ(FindQueue(plan, "qa")->deserved.milli_cpu(), 2000);
  EXPECT_EQ(FindQueue(plan, "qb")->deserved.milli_cpu(), 6000);
  EXPECT_THAT(FindJob(plan, "ns/a2")->reason, HasSubstr("qa"));
}

TEST(AllocateTest, CapabilityStopsAQueueEvenWhenTheClusterIsIdle) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "64Gi"));
  w.Queue(QueueBuilder("qa").Capability(Resources({{"cpu", "3"}})));
  w.Job("a", 4, 1, "1", "1Gi", "qa");
  AllocationPlan plan = w.Run();
  EXPECT_EQ(plan.placements.size(), 3u);
  const JobOutcome* a = FindJob(plan, "ns/a");
  EXPECT_EQ(a->reason, "1/4 pending tasks not placed: queue qa capability reached (cpu)");
}

TEST(AllocateTest, ClosedQueueGetsNothing) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "64Gi"));
  w.Queue(QueueBuilder("qa").State("Closed"));
  w.Job("a", 1, 1, "1", "1Gi", "qa");
  AllocationPlan plan = w.Run();
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_THAT(FindJob(plan, "ns/a")->reason, HasSubstr("queue qa is closed"));
  EXPECT_TRUE(FindQueue(plan, "qa")->closed);
}

TEST(AllocateTest, WaterFillRedistributesWhatCappedQueuesCannotUse) {
  Resource total(12000, 0);
  // Caps: q0 needs only 1 cpu, q1 up to 100, q2 up to 100; weights 1:1:2.
  auto d = WaterFill(total, {1, 1, 2}, {Resource(1000, 0), Resource(100000, 0), Resource(100000, 0)});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].milli_cpu(), 1000);
  EXPECT_EQ(d[1].milli_cpu(), 11000 / 3);
  EXPECT_EQ(d[2].milli_cpu(), 22000 / 3);
  // Everything fits under the caps: everyone gets its cap.
  d = WaterFill(total, {1, 5}, {Resource(2000, 0), Resource(3000, 0)});
  EXPECT_EQ(d[0].milli_cpu(), 2000);
  EXPECT_EQ(d[1].milli_cpu(), 3000);
  // Scalars take part; an absent cap is zero.
  Resource gpus(0, 0, {{"nvidia.com/gpu", 8000}});
  d = WaterFill(gpus, {1, 1}, {Resource(0, 0, {{"nvidia.com/gpu", 8000}}), Resource(0, 0)});
  EXPECT_EQ(d[0].Get("nvidia.com/gpu"), 8000);
  EXPECT_EQ(d[1].Get("nvidia.com/gpu"), 0);
}

// ------------------------------------------------------------------ job order

TEST(AllocateTest, HigherPriorityJobGoesFirst) {
  World w;
  ASSERT_TRUE(w.h.cache->AddPriorityClass(MakePriorityClass("high", 100)).ok());
  ASSERT_TRUE(w.h.cache->AddPriorityClass(MakePriorityClass("low", 10)).ok());
  w.Node(NodeBuilder("n1").Allocatable("1", "8Gi"));
  w.Job("old-low", 1, 1, "1", "1Gi", "", /*created=*/1, "low");
  w.Job("new-high", 1, 1, "1", "1Gi", "", /*created=*/2, "high");
  AllocationPlan plan = w.Run();
  EXPECT_EQ(Placed(plan), (std::map<std::string, std::string>{{"ns/new-high-0", "n1"}}));
}

TEST(AllocateTest, OlderJobGoesFirstThenSmallerUid) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("1", "8Gi"));
  w.Job("b", 1, 1, "1", "1Gi", "", /*created=*/1);
  w.Job("a", 1, 1, "1", "1Gi", "", /*created=*/2);
  EXPECT_EQ(Placed(w.Run()), (std::map<std::string, std::string>{{"ns/b-0", "n1"}}));

  World same;
  same.Node(NodeBuilder("n1").Allocatable("1", "8Gi"));
  same.Job("b", 1, 1, "1", "1Gi", "", 5);
  same.Job("a", 1, 1, "1", "1Gi", "", 5);
  EXPECT_EQ(Placed(same.Run()), (std::map<std::string, std::string>{{"ns/a-0", "n1"}}));
}

// ------------------------------------------------------------------ predicates

struct PredicateCase {
  const char* name;
  NodeBuilder node;
  std::function<void(k8s::Pod&)> pod;
  bool fits;
  const char* reason;  // when it does not fit
};

k8s::Toleration Tol(std::string key, std::string op, std::string value, std::string effect) {
  k8s::Toleration t;
  t.key = std::move(key);
  t.operator_ = std::move(op);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

TEST(AllocateTest, PredicatesBothWays) {
  auto base = [] { return NodeBuilder("n1").Allocatable("4", "8Gi"); };
  auto none = [](k8s::Pod&) {};
  const std::vector<PredicateCase> cases = {
      {"resources fit", base(), none, true, ""},
      {"cpu short", NodeBuilder("n1").Allocatable("500m", "8Gi"), none, false, "1 Insufficient cpu"},
      {"cpu and memory short", NodeBuilder("n1").Allocatable("500m", "512Mi"), none, false,
       "1 Insufficient cpu, 1 Insufficient memory"},
      {"max pods reached", NodeBuilder("n1").Allocatable("4", "8Gi", "0"), none, false, "1 Too many pods"},
      {"selector matches", base().Label("disk", "ssd"),
       [](k8s::Pod& p) { p.spec.node_selector["disk"] = "ssd"; }, true, ""},
      {"selector value differs", base().Label("disk", "hdd"),
       [](k8s::Pod& p) { p.spec.node_selector["disk"] = "ssd"; }, false,
       "1 node(s) didn't match Pod's node affinity/selector"},
      {"selector label absent", base(), [](k8s::Pod& p) { p.spec.node_selector["disk"] = "ssd"; }, false,
       "1 node(s) didn't match Pod's node affinity/selector"},
      {"NoSchedule taint untolerated", base().Taint("gpu", "true", "NoSchedule"), none, false,
       "1 node(s) had untolerated taint {gpu: true}"},
      {"NoExecute taint untolerated", base().Taint("gpu", "true", "NoExecute"), none, false,
       "1 node(s) had untolerated taint {gpu: true}"},
      {"PreferNoSchedule ignored", base().Taint("gpu", "true", "PreferNoSchedule"), none, true, ""},
      {"tolerated by Equal", base().Taint("gpu", "true", "NoSchedule"),
       [](k8s::Pod& p) { p.spec.tolerations.push_back(Tol("gpu", "Equal", "true", "NoSchedule")); }, true,
       ""},
      {"Equal with another value", base().Taint("gpu", "true", "NoSchedule"),
       [](k8s::Pod& p) { p.spec.tolerations.push_back(Tol("gpu", "Equal", "false", "NoSchedule")); }, false,
       "1 node(s) had untolerated taint {gpu: true}"},
      {"tolerated by Exists, any effect", base().Taint("gpu", "true", "NoExecute"),
       [](k8s::Pod& p) { p.spec.tolerations.push_back(Tol("gpu", "Exists", "", "")); }, true, ""},
      {"other effect not tolerated", base().Taint("gpu", "true", "NoExecute"),
       [](k8s::Pod& p) { p.spec.tolerations.push_back(Tol("gpu", "Exists", "", "NoSchedule")); }, false,
       "1 node(s) had untolerated taint {gpu: true}"},
      {"empty key Exists tolerates all", base().Taint("a", "1", "NoSchedule").Taint("b", "2", "NoExecute"),
       [](k8s::Pod& p) { p.spec.tolerations.push_back(Tol("", "Exists", "", "")); }, true, ""},
      {"unschedulable", base().Unschedulable(), none, false, "1 node(s) were unschedulable"},
      {"unschedulable tolerated", base().Unschedulable(),
       [](k8s::Pod& p) {
         p.spec.tolerations.push_back(Tol("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"));
       },
       true, ""},
  };
  for (const auto& c : cases) {
    World w;
    w.Node(c.node);
    w.Group(PodGroupBuilder("ns", "a").MinMember(1));
    k8s::Pod pod = PodBuilder("ns", "a-0").Group("a").Request("1", "1Gi").Build();
    c.pod(pod);
    w.Pod(pod);
    AllocationPlan plan = w.Run();
    if (c.fits) {
      EXPECT_EQ(Placed(plan), (std::map<std::string, std::string>{{"ns/a-0", "n1"}})) << c.name;
    } else {
      EXPECT_THAT(plan.placements, IsEmpty()) << c.name;
      ASSERT_EQ(plan.jobs.size(), 1u) << c.name;
      EXPECT_EQ(plan.jobs[0].reason,
                std::string("1/1 tasks in gang unschedulable: 0/1 nodes are available: ") + c.reason + ".")
          << c.name;
    }
  }
}

TEST(AllocateTest, MaxPodsCountsTasksPlacedInThisSession) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("8", "8Gi", "2"));
  w.Job("a", 3, 1);
  AllocationPlan plan = w.Run();
  EXPECT_EQ(plan.placements.size(), 2u);
  EXPECT_THAT(FindJob(plan, "ns/a")->reason, HasSubstr("1 Too many pods"));
}

// The "<count> <reason>" strings sorted as strings, as kube-scheduler's FitError sorts them.
TEST(AllocateTest, FitErrorHistogramsReasonsOverNodes) {
  World w;
  w.Node(NodeBuilder("n1").Allocatable("500m", "8Gi"));
  w.Node(NodeBuilder("n2").Allocatable("500m", "8Gi"));
  w.Node(NodeBuilder("n3").Allocatable("4", "8Gi").Unschedulable());
  w.Job("a", 1, 1);
  AllocationPlan plan = w.Run();
  EXPECT_EQ(FindJob(plan, "ns/a")->task_fit_errors[0].second,
            "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.");
}

// ------------------------------------------------------------------ score

TEST(AllocateTest, BinpackPrefersTheFullerNodeLeastAllocatedTheEmptierOne) {
  auto build = [](World& w) {
    w.Node(NodeBuilder("n1").Allocatable("4", "8Gi"));
    w.Node(NodeBuilder("n2").Allocatable("4", "8Gi"));
    w.Group(PodGroupBuilder("ns", "run").MinMember(1));
    w.Pod(PodBuilder("ns", "run-0").Group("run").Request("2", "2Gi").NodeName("n2").Phase("Running"));
    w.Job("a", 1, 1);
  };
  World bp;
  build(bp);
  EXPECT_EQ(Placed(bp.Run()), (std::map<std::string, std::string>{{"ns/a-0", "n2"}}));
  World la;
  build(la);
  SessionOptions o;
  o.score = ScoreStrategy::kLeastAllocated;
  EXPECT_EQ(Placed(la.Run(o)), (std::map<std::string, std::string>{{"ns/a-0", "n1"}}));
}

TEST(AllocateTest, BinpackFillsOneNodeBeforeTheNextAndTiesGoToTheSmallerName) {
  World w;
  w.Node(NodeBuilder("n2").Allocatable("2", "8Gi"));
  w.Node(NodeBuilder("n1").Allocatable("2", "8Gi"));
  w.Job("a", 3, 1);
  EXPECT_EQ(Placed(w.Run()),
            (std::map<std::string, std::string>{{"ns/a-0", "n1"}, {"ns/a-1", "n1"}, {"ns/a-2", "n2"}}));
  SessionOptions o;
  o.score = ScoreStrategy::kLeastAllocated;
  EXPECT_EQ(Placed(w.Run(o)),
            (std::map<std::string, std::string>{{"ns/a-0", "n1"}, {"ns/a-1", "n2"}, {"ns/a-2", "n1"}}));
}

// Large clusters: the search stops after enough feasible nodes and the next one starts where
// it stopped (kube-scheduler's percentageOfNodesToScore); small ones are scanned whole.
TEST(AllocateTest, LargeClustersScoreARoundRobinSampleOfFeasibleNodes) {
  World w;
  for (int i = 0; i < 200; ++i) w.Node(NodeBuilder(fmt::format("n{:03d}", i)).Allocatable("4", "16Gi"));
  w.Job("a", 2, 1);
  // 200 nodes: adaptive 48 % = 96 < 100 → the first search scores n000..n099 (all equal under
  // binpack: n000), the second starts at n100 and never sees the fuller n000.
  EXPECT_EQ(Placed(w.Run()), (std::map<std::string, std::string>{{"ns/a-0", "n000"}, {"ns/a-1", "n100"}}));
  SessionOptions whole;
  whole.min_feasible_nodes = 1000;
  EXPECT_EQ(Placed(w.Run(whole)),
            (std::map<std::string, std::string>{{"ns/a-0", "n000"}, {"ns/a-1", "n000"}}));
  SessionOptions pct;
  pct.min_feasible_nodes = 10;
  pct.percentage_of_nodes_to_find = 10;  // 20 feasible nodes per search
  EXPECT_EQ(Placed(w.Run(pct)), (std::map<std::string, std::string>{{"ns/a-0", "n000"}, {"ns/a-1", "n020"}}));
}

TEST(AllocateTest, BinpackWeighsGpus) {
  // n1 has a GPU half used and lots of free cpu; n2 has free GPUs but busy cpu. A GPU task
  // with a heavy GPU weight goes to the node whose GPUs are fuller.
  World w;
  w.Node(NodeBuilder("n1").Allocatable(
      Resources({{"cpu", "16"}, {"memory", "64Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}})));
  w.Node(NodeBuilder("n2").Allocatable(
      Resources({{"cpu", "16"}, {"memory", "64Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}})));
  w.Group(PodGroupBuilder("ns", "run").MinMember(1));
  w.Pod(PodBuilder("ns", "g-0")
            .Group("run")
            .Container(Resources({{"cpu", "1"}, {"nvidia.com/gpu", "2"}}))
            .NodeName("n1")
            .Phase("Running"));
  w.Pod(PodBuilder("ns", "c-0")
            .Group("run")
            .Container(Resources({{"cpu", "12"}}))
            .NodeName("n2")
            .Phase("Running"));
  w.Group(PodGroupBuilder("ns", "a").MinMember(1));
  w.Pod(PodBuilder("ns", "a-0").Group("a").Container(Resources({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})));
  SessionOptions o;
  o.scalar_weights = {{"nvidia.com/gpu", 10}};
  EXPECT_EQ(Placed(w.Run(o)), (std::map<std::string, std::string>{{"ns/a-0", "n1"}}));
  o.scalar_weights = {};  // cpu alone: n2 is fuller
  EXPECT_EQ(Placed(w.Run(o)), (std::map<std::string, std::string>{{"ns/a-0", "n2"}}));
}

// The Philly shape behind `volcache run --shared-pool` (docs/BENCHMARKS.md, issue 13): 8-GPU
// nodes, requests whose cpu and memory grow with their GPUs. Binpack puts 1-GPU tasks on the
// partly used nodes, so a whole node stays free for the 8-GPU task that comes after the first
// of them; least-allocated spreads the first one onto the empty node and the 8-GPU task finds
// no node.
TEST(AllocateTest, BinpackKeepsAWholeGpuNodeForAnEightGpuTask) {
  auto gpus = [](int n) {
    return Resources({{"cpu", std::to_string(4 * n)},
                      {"memory", std::to_string(16 * n) + "Gi"},
                      {"nvidia.com/gpu", std::to_string(n)}});
  };
  auto build = [&](World& w) {
    for (const char* name : {"p0", "p1", "p2"}) {
      w.Node(NodeBuilder(name).Allocatable(
          Resources({{"cpu", "96"}, {"memory", "768Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}})));
    }
    w.Group(PodGroupBuilder("ns", "run").MinMember(1));
    w.Pod(PodBuilder("ns", "run-0").Group("run").Container(gpus(4)).NodeName("p0").Phase("Running"));
    w.Pod(PodBuilder("ns", "run-1").Group("run").Container(gpus(4)).NodeName("p1").Phase("Running"));
    w.Group(PodGroupBuilder("ns", "small").MinMember(1).CreationTimestamp(1));
    for (int i = 0; i < 4; ++i)
      w.Pod(PodBuilder("ns", "small-" + std::to_string(i)).Group("small").Container(gpus(1)));
    w.Group(PodGroupBuilder("ns", "big").MinMember(1).CreationTimestamp(2));
    w.Pod(PodBuilder("ns", "big-0").Group("big").Container(gpus(8)));
  };
  World bp;
  build(bp);
  EXPECT_EQ(Placed(bp.Run()), (std::map<std::string, std::string>{{"ns/big-0", "p2"},
                                                                  {"ns/small-0", "p0"},
                                                                  {"ns/small-1", "p0"},
                                                                  {"ns/small-2", "p0"},
                                                                  {"ns/small-3", "p0"}}));
  World la;
  build(la);
  SessionOptions o;
  o.score = ScoreStrategy::kLeastAllocated;
  const AllocationPlan spread = la.Run(o);
  EXPECT_EQ(Placed(spread).count("ns/big-0"), 0u);
  EXPECT_EQ(Placed(spread).at("ns/small-0"), "p2");
  ASSERT_NE(FindJob(spread, "ns/big"), nullptr);
  EXPECT_THAT(FindJob(spread, "ns/big")->reason, HasSubstr("3 Insufficient nvidia.com/gpu"));
}

TEST(AllocateTest, SameSnapshotSamePlan) {
  World w;
  for (int i = 0; i < 5; ++i) w.Node(NodeBuilder("n" + std::to_string(i)).Allocatable("3", "8Gi"));
  for (int i = 0; i < 10; ++i) w.Job("j" + std::to_string(i), 3, 2, "1", "1Gi", "", i % 3);
  auto snap = w.h.cache->Snapshot();
  AllocationPlan a = Allocate(*snap), b = Allocate(*snap);
  ASSERT_EQ(a.placements.size(), b.placements.size());
  for (size_t i = 0; i < a.placements.size(); ++i) {
    EXPECT_EQ(a.placements[i].task_key, b.placements[i].task_key);
    EXPECT_EQ(a.placements[i].node, b.placements[i].node);
  }
  EXPECT_EQ(a.placements.size(), 15u);
}

// Randomized clusters: whatever the plan, no node is overcommitted, every gang is placed
// all-or-nothing, no queue passes its capability, and the plan is the same twice.
TEST(AllocateTest, RandomClustersKeepTheInvariants) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    World w;
    const int nodes = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < nodes; ++i) {
      NodeBuilder n("n" + std::to_string(i));
      n.Allocatable(std::to_string(1 + rng() % 8), std::to_string(1 + rng() % 16) + "Gi",
                    std::to_string(rng() % 6));
      if (rng() % 5 == 0) n.Taint("t", "x", "NoSchedule");
      if (rng() % 3 == 0) n.Label("zone", rng() % 2 ? "a" : "b");
      w.Node(n);
    }
    w.Queue(QueueBuilder("qa").Weight(1 + static_cast<int>(rng() % 4)).Capability(Resources({{"cpu", "6"}})));
    w.Queue(QueueBuilder("qb").Weight(1 + static_cast<int>(rng() % 4)));
    std::map<std::string, int> min_of;
    const int jobs = static_cast<int>(rng() % 15);
    for (int j = 0; j < jobs; ++j) {
      const std::string name = "j" + std::to_string(j);
      const int n = 1 + static_cast<int>(rng() % 4);
      const int min = 1 + static_cast<int>(rng() % n);
      min_of["ns/" + name] = min;
      w.Group(PodGroupBuilder("ns", name)
                  .MinMember(min)
                  .Queue(rng() % 2 ? "qa" : "qb")
                  .CreationTimestamp(rng() % 5));
      for (int t = 0; t < n; ++t) {
        k8s::Pod pod = PodBuilder("ns", name + "-" + std::to_string(t))
                           .Group(name)
                           .Request(std::to_string(1 + rng() % 3), std::to_string(1 + rng() % 4) + "Gi")
                           .Build();
        if (rng() % 4 == 0) pod.spec.node_selector["zone"] = "a";
        if (rng() % 4 == 0) pod.spec.tolerations.push_back(Tol("t", "Exists", "", ""));
        w.Pod(pod);
      }
    }
    auto snap = w.h.cache->Snapshot();
    AllocationPlan plan = Allocate(*snap);
    std::map<std::string, Resource> used;
    std::map<std::string, int> pods;
    std::map<std::string, int> per_job;
    std::map<std::string, int64_t> queue_cpu;
    for (const auto& p : plan.placements) {
      const JobInfo* job = snap->FindJob(p.job);
      ASSERT_NE(job, nullptr);
      const TaskInfo* t = job->FindTask(p.task_uid);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->status, TaskStatus::kPending);
      used[p.node].Add(t->resreq());
      ++pods[p.node];
      ++per_job[p.job];
      queue_cpu[job->queue()] += t->resreq().milli_cpu();
      const k8s::Node& node = *snap->FindNode(p.node)->node();
      for (const auto& [k, v] : t->pod().spec.node_selector) EXPECT_EQ(node.metadata.labels.at(k), v);
      if (!node.spec.taints.empty()) {
        EXPECT_FALSE(t->pod().spec.tolerations.empty());
      }
    }
    for (const auto& [node, r] : used) {
      const NodeInfo* n = snap->FindNode(node);
      EXPECT_LE(r.milli_cpu(), n->idle().milli_cpu()) << node;
      EXPECT_LE(r.memory(), n->idle().memory()) << node;
      EXPECT_LE(pods[node], n->idle().Get(ResourceNames::kPods)) << node;
    }
    for (const auto& [job, n] : per_job) EXPECT_GE(n, min_of[job]) << job;
    EXPECT_LE(queue_cpu["qa"], 6000);
    AllocationPlan again = Allocate(*snap);
    ASSERT_EQ(again.placements.size(), plan.placements.size());
    for (size_t i = 0; i < plan.placements.size(); ++i) {
      EXPECT_EQ(again.placements[i].task_key, plan.placements[i].task_key);
      EXPECT_EQ(again.placements[i].node, plan.placements[i].node);
    }
  }
}

}  // namespace
}  // namespace volcache
