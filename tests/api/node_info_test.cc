#include "api/node_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/k8s/objects.h"
#include "api/quantity.h"
#include "api/task_info.h"
#include "tests/fakes/log_capture.h"

namespace volcache {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr int64_t kMi = 1024 * 1024;
constexpr int64_t kGi = 1024 * kMi;

// The cache holds each node's NodeInfo in a make_shared block: with its 16-byte count, at
// most tcmalloc's 448-byte class (the memory bench's S shape has one node per five tasks).
static_assert(sizeof(NodeInfo) <= 432);

k8s::ResourceList RL(std::initializer_list<std::pair<std::string, std::string>> items) {
  k8s::ResourceList out;
  for (const auto& [name, text] : items) {
    Result<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
    out.emplace_back(name, q.ok() ? *q : Quantity());
  }
  return out;
}

k8s::ResourceList DefaultAllocatable() { return RL({{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}); }

k8s::Node MakeNode(std::string name, k8s::ResourceList allocatable, bool ready = true) {
  k8s::Node node;
  node.metadata.name = std::move(name);
  node.metadata.uid = "uid-" + node.metadata.name;
  node.status.capacity = allocatable;
  node.status.allocatable = std::move(allocatable);
  node.status.conditions.push_back(k8s::NodeCondition{"MemoryPressure", "False", "", ""});
  node.status.conditions.push_back(k8s::NodeCondition{"Ready", ready ? "True" : "False", "KubeletReady", ""});
  return node;
}

k8s::NodePtr NodePtrOf(k8s::Node node) { return std::make_shared<const k8s::Node>(std::move(node)); }

NodeInfo ReadyNode(std::string name = "n1", k8s::ResourceList allocatable = DefaultAllocatable()) {
  Result<NodeInfo> ni = NodeInfo::FromNode(NodePtrOf(MakeNode(std::move(name), std::move(allocatable))));
  EXPECT_TRUE(ni.ok()) << ni.status().ToString();
  return ni.ok() ? std::move(ni).value() : NodeInfo("invalid");
}

struct TaskSpec {
  std::string name = "";
  TaskStatus status = TaskStatus::kRunning;
  k8s::ResourceList requests = {};
  std::string node = "n1";
  std::vector<k8s::ContainerPort> ports = {};
  std::vector<std::string> pvcs = {};
  bool affinity = false;
  bool anti_affinity = false;
};

TaskInfo MakeTask(const TaskSpec& spec) {
  k8s::Pod pod;
  pod.metadata.namespace_ = "ns";
  pod.metadata.name = spec.name;
  pod.metadata.uid = "uid-" + spec.name;
  pod.spec.node_name = spec.node;
  pod.status.phase = "Running";
  k8s::Container c;
  c.name = "main";
  c.requests = spec.requests;
  c.ports = spec.ports;
  pod.spec.containers.push_back(std::move(c));
  pod.spec.mutable_rare().pvc_names = spec.pvcs;
  pod.spec.has_pod_affinity = spec.affinity;
  pod.spec.has_pod_anti_affinity = spec.anti_affinity;
  Result<TaskInfo> t = TaskInfo::FromPod(std::make_shared<const k8s::Pod>(std::move(pod)));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return TaskInfo();
  TaskInfo task = std::move(t).value();
  task.status = spec.status;
  return task;
}

TaskInfo CpuTask(std::string name, TaskStatus status, std::string cpu, std::string memory = "1Gi") {
  return MakeTask(
      {.name = std::move(name), .status = status, .requests = RL({{"cpu", cpu}, {"memory", memory}})});
}

// Everything observable about a node's accounting, for "unchanged on error" checks.
struct Dump {
  NodeState state;
  bool placeholder;
  Resource allocatable, capacity, idle, used, releasing, pipelined, requested;
  int64_t nz_cpu, nz_memory;
  std::vector<std::pair<HostPort, int32_t>> ports;
  std::map<std::string, int32_t, std::less<>> pvcs;
  int32_t affinity, anti_affinity;
  int64_t negative_idle_events;
  std::vector<std::pair<std::string, TaskStatus>> tasks;
  uint64_t generation;
  bool operator==(const Dump&) const = default;
};

Dump DumpOf(const NodeInfo& n) {
  Dump d{n.state(),
         n.is_placeholder(),
         n.allocatable(),
         n.capacity(),
         n.idle(),
         n.used(),
         n.releasing(),
         n.pipelined(),
         n.requested(),
         n.non_zero_requested().milli_cpu,
         n.non_zero_requested().memory,
         n.used_ports(),
         n.pvc_ref_counts(),
         n.pods_with_affinity(),
         n.pods_with_required_anti_affinity(),
         n.negative_idle_events(),
         {},
         n.generation()};
  for (const auto& [key, t] : n.tasks()) d.tasks.emplace_back(key, t.status);
  std::sort(d.tasks.begin(), d.tasks.end());
  return d;
}

void ExpectUnchanged(const Dump& before, const NodeInfo& n) {
  const Dump after = DumpOf(n);
  EXPECT_EQ(before.state, after.state);
  EXPECT_EQ(before.allocatable, after.allocatable) << after.allocatable.ToString();
  EXPECT_EQ(before.capacity, after.capacity) << after.capacity.ToString();
  EXPECT_EQ(before.idle, after.idle) << after.idle.ToString();
  EXPECT_EQ(before.used, after.used) << after.used.ToString();
  EXPECT_EQ(before.releasing, after.releasing) << after.releasing.ToString();
  EXPECT_EQ(before.pipelined, after.pipelined) << after.pipelined.ToString();
  EXPECT_EQ(before.requested, after.requested) << after.requested.ToString();
  EXPECT_EQ(before.tasks, after.tasks);
  EXPECT_EQ(before.generation, after.generation);
  EXPECT_TRUE(before == after) << "some aggregate changed";
}

bool IsZero(const Resource& r) { return r.Equal(Resource(), DimensionDefault::kZero); }

// ------------------------------------------------------------- per-status accounting

struct AccountingRow {
  TaskStatus status;
  int64_t idle_cpu, used_cpu, releasing_cpu, pipelined_cpu, requested_cpu;
};

class NodeAccountingTest : public ::testing::TestWithParam<AccountingRow> {};

TEST_P(NodeAccountingTest, AddThenRemoveByStatus) {
  const AccountingRow& row = GetParam();
  NodeInfo n = ReadyNode();
  const Dump empty = DumpOf(n);
  TaskInfo t = CpuTask("t", row.status, "1500m", "2Gi");
  ASSERT_TRUE(n.AddTask(t).ok());

  const bool takes = row.status != TaskStatus::kPipelined;
  EXPECT_EQ(n.idle().milli_cpu(), row.idle_cpu);
  EXPECT_EQ(n.used().milli_cpu(), row.used_cpu);
  EXPECT_EQ(n.releasing().milli_cpu(), row.releasing_cpu);
  EXPECT_EQ(n.pipelined().milli_cpu(), row.pipelined_cpu);
  EXPECT_EQ(n.requested().milli_cpu(), row.requested_cpu);
  EXPECT_EQ(n.idle().memory(), takes ? 14 * kGi : 16 * kGi);
  EXPECT_EQ(n.used().memory(), takes ? 2 * kGi : 0);
  EXPECT_EQ(n.idle().Get("pods"), takes ? 109 : 110);
  EXPECT_EQ(n.used().Get("pods"), takes ? 1 : 0);
  EXPECT_EQ(n.pipelined().Get("pods"), takes ? 0 : 1);
  EXPECT_EQ(n.non_zero_requested().milli_cpu, takes ? 1500 : 0);
  EXPECT_EQ(n.non_zero_requested().memory, takes ? 2 * kGi : 0);
  EXPECT_EQ(n.negative_idle_events(), 0);
  ASSERT_NE(n.FindTask("ns/t"), nullptr);
  EXPECT_EQ(n.FindTask("ns/t")->status, row.status);
  EXPECT_EQ(n.generation(), empty.generation + 1);

  // Removal reverses the stored copy's contribution, whatever the caller's copy says now.
  TaskInfo changed = t;
  changed.status = row.status == TaskStatus::kPipelined ? TaskStatus::kRunning : TaskStatus::kPipelined;
  ASSERT_TRUE(n.RemoveTask(changed).ok());
  EXPECT_TRUE(n.idle().Equal(empty.idle, DimensionDefault::kZero)) << n.idle().ToString();
  EXPECT_TRUE(IsZero(n.used())) << n.used().ToString();
  EXPECT_TRUE(IsZero(n.releasing()));
  EXPECT_TRUE(IsZero(n.pipelined()));
  EXPECT_TRUE(IsZero(n.requested()));
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 0);
  EXPECT_EQ(n.non_zero_requested().memory, 0);
  EXPECT_TRUE(n.tasks().empty());
  EXPECT_EQ(n.generation(), empty.generation + 2);
}

INSTANTIATE_TEST_SUITE_P(EveryStatus, NodeAccountingTest,
                         ::testing::Values(AccountingRow{TaskStatus::kPending, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kAllocated, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kPipelined, 8000, 0, 0, 1500, 0},
                                           AccountingRow{TaskStatus::kBinding, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kBound, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kRunning, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kReleasing, 6500, 1500, 1500, 0, 1500},
                                           AccountingRow{TaskStatus::kSucceeded, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kFailed, 6500, 1500, 0, 0, 1500},
                                           AccountingRow{TaskStatus::kUnknown, 6500, 1500, 0, 0, 1500}),
                         [](const ::testing::TestParamInfo<AccountingRow>& info) {
                           return std::string(TaskStatusName(info.param.status));
                         });

// ------------------------------------------------------------------ Binding fit

TEST(NodeInfoTest, BindingThatDoesNotFitIsRefusedAndChangesNothing) {
  NodeInfo n = ReadyNode("n1", RL({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}));
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1500m", "1Gi")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("p", TaskStatus::kPipelined, "1", "1Gi")).ok());
  const Dump before = DumpOf(n);

  Status st = n.AddTask(CpuTask("b", TaskStatus::kBinding, "1", "1Gi"));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("ns/b"));
  EXPECT_THAT(st.message(), HasSubstr("n1"));
  EXPECT_THAT(st.message(), HasSubstr("cpu"));
  EXPECT_THAT(st.message(), Not(HasSubstr("memory")));
  ExpectUnchanged(before, n);
  EXPECT_EQ(n.FindTask("ns/b"), nullptr);

  // Both dimensions short.
  st = n.AddTask(CpuTask("c", TaskStatus::kBinding, "1", "8Gi"));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("cpu"));
  EXPECT_THAT(st.message(), HasSubstr("memory"));
  ExpectUnchanged(before, n);

  // A scalar the node does not have.
  st = n.AddTask(MakeTask({.name = "g",
                           .status = TaskStatus::kBinding,
                           .requests = RL({{"cpu", "100m"}, {"nvidia.com/gpu", "1"}})}));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("nvidia.com/gpu"));
  ExpectUnchanged(before, n);

  // Exactly the idle amount fits (Pipelined does not count against Idle).
  ASSERT_TRUE(n.AddTask(CpuTask("d", TaskStatus::kBinding, "500m", "3Gi")).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 0);
  EXPECT_EQ(n.idle().memory(), 0);
  EXPECT_EQ(n.negative_idle_events(), 0);
}

TEST(NodeInfoTest, NonBindingOvercommitGoesNegativeAndIsCounted) {
  NodeInfo n = ReadyNode("n1", RL({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}));
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1500m")).ok());
  EXPECT_EQ(n.negative_idle_events(), 0);
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kBound, "1")).ok());
  EXPECT_EQ(n.idle().milli_cpu(), -500);
  EXPECT_EQ(n.used().milli_cpu(), 2500);
  EXPECT_EQ(n.negative_idle_events(), 1);
  // Pipelined tasks do not take from Idle.
  ASSERT_TRUE(n.AddTask(CpuTask("c", TaskStatus::kPipelined, "4")).ok());
  EXPECT_EQ(n.negative_idle_events(), 1);
  ASSERT_TRUE(n.RemoveTask(CpuTask("b", TaskStatus::kBound, "1")).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 500);
}

// Every task that leaves idle negative is counted; only the crossing is logged, so a node
// that stays over-committed (the XXL benchmark logged 60,000 such adds) logs once.
TEST(NodeInfoTest, StayingNegativeCountsEveryTaskButWarnsOncePerCrossing) {
  LogCapture logs;
  NodeInfo n = ReadyNode("n1", RL({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}));
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1500m")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kRunning, "1")).ok());  // 2.5 of 2 cpus
  ASSERT_TRUE(n.AddTask(CpuTask("c", TaskStatus::kRunning, "1")).ok());  // still negative
  ASSERT_TRUE(n.UpdateTask(CpuTask("c", TaskStatus::kBound, "1")).ok());
  EXPECT_EQ(n.negative_idle_events(), 3);
  EXPECT_EQ(logs.Count("idle is negative"), 1u);
  EXPECT_EQ(logs.Count("after adding task ns/b"), 1u) << "the first crossing names its task";
  // Back above zero, then over again: a second crossing, a second warning.
  ASSERT_TRUE(n.RemoveTask(CpuTask("b", TaskStatus::kRunning, "1")).ok());
  ASSERT_TRUE(n.RemoveTask(CpuTask("c", TaskStatus::kBound, "1")).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 500);
  ASSERT_TRUE(n.AddTask(CpuTask("d", TaskStatus::kRunning, "1")).ok());
  EXPECT_EQ(n.negative_idle_events(), 4);
  EXPECT_EQ(logs.Count("idle is negative"), 2u);
}

// ------------------------------------------------------------- placeholder, SetNode

TEST(NodeInfoTest, PlaceholderHoldsTasksButAccountsNothing) {
  NodeInfo n("n1");
  EXPECT_TRUE(n.is_placeholder());
  EXPECT_FALSE(n.Ready());
  EXPECT_EQ(n.state(), (NodeState{NodePhase::kNotReady, "UnInitialized"}));
  EXPECT_EQ(n.generation(), 0u);

  TaskInfo with_ports = MakeTask({.name = "r",
                                  .status = TaskStatus::kRunning,
                                  .requests = RL({{"cpu", "1"}, {"memory", "1Gi"}}),
                                  .ports = {k8s::ContainerPort{80, 80, "TCP", ""}},
                                  .pvcs = {"data"},
                                  .affinity = true});
  ASSERT_TRUE(n.AddTask(with_ports).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("p", TaskStatus::kPipelined, "2")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("rel", TaskStatus::kReleasing, "500m")).ok());
  // No fit check without a Node object (Volcano accounts nothing for placeholders).
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kBinding, "64")).ok());
  EXPECT_EQ(n.tasks().size(), 4u);
  EXPECT_EQ(n.generation(), 4u);
  for (const Resource* r :
       {&n.allocatable(), &n.idle(), &n.used(), &n.releasing(), &n.pipelined(), &n.requested()}) {
    EXPECT_EQ(*r, Resource()) << r->ToString();
  }
  EXPECT_EQ(n.capacity(), Resource()) << n.capacity().ToString();
  Resource future = n.FutureIdle();
  EXPECT_TRUE(IsZero(future)) << future.ToString();
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 0);
  EXPECT_EQ(n.non_zero_requested().memory, 0);
  EXPECT_TRUE(n.used_ports().empty());
  EXPECT_TRUE(n.pvc_ref_counts().empty());
  EXPECT_EQ(n.pods_with_affinity(), 0);
  EXPECT_EQ(n.negative_idle_events(), 0);

  // The Node arrives: everything is recomputed from the stored tasks; the Binding task counts
  // like Allocated without a fit check.
  ASSERT_TRUE(n.SetNode(NodePtrOf(MakeNode("n1", DefaultAllocatable()))).ok());
  EXPECT_FALSE(n.is_placeholder());
  EXPECT_TRUE(n.Ready());
  EXPECT_EQ(n.state(), (NodeState{NodePhase::kReady, ""}));
  EXPECT_EQ(n.generation(), 5u);
  EXPECT_EQ(n.allocatable().milli_cpu(), 8000);
  EXPECT_EQ(n.allocatable().max_task_num(), 110);
  EXPECT_EQ(n.idle().milli_cpu(), 8000 - 1000 - 500 - 64000);
  EXPECT_EQ(n.used().milli_cpu(), 1000 + 500 + 64000);
  EXPECT_EQ(n.releasing().milli_cpu(), 500);
  EXPECT_EQ(n.pipelined().milli_cpu(), 2000);
  EXPECT_EQ(n.idle().Get("pods"), 107);
  EXPECT_EQ(n.requested().milli_cpu(), 65500);
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 65500);
  EXPECT_THAT(n.used_ports(), UnorderedElementsAre(Pair(HostPort{"", "TCP", 80}, 1)));
  EXPECT_THAT(n.pvc_ref_counts(), UnorderedElementsAre(Pair("ns/data", 1)));
  EXPECT_EQ(n.pods_with_affinity(), 1);
  EXPECT_EQ(n.negative_idle_events(), 1);  // the recompute ended negative
}

TEST(NodeInfoTest, SetNodeWithChangedAllocatableRecomputes) {
  NodeInfo n = ReadyNode();
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "2", "4Gi")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kReleasing, "1", "1Gi")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("c", TaskStatus::kPipelined, "3", "2Gi")).ok());
  const uint64_t gen = n.generation();

  k8s::Node bigger =
      MakeNode("n1", RL({{"cpu", "16"}, {"memory", "32Gi"}, {"pods", "250"}, {"nvidia.com/gpu", "2"}}));
  bigger.status.capacity = RL({{"cpu", "17"}, {"memory", "33Gi"}, {"pods", "250"}, {"nvidia.com/gpu", "2"}});
  ASSERT_TRUE(n.SetNode(NodePtrOf(bigger)).ok());
  EXPECT_EQ(n.generation(), gen + 1);
  EXPECT_EQ(n.capacity().milli_cpu(), 17000);
  EXPECT_EQ(n.capacity().memory(), 33 * kGi);
  EXPECT_EQ(n.allocatable().milli_cpu(), 16000);
  EXPECT_EQ(n.allocatable().Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(n.idle().milli_cpu(), 13000);
  EXPECT_EQ(n.idle().memory(), 27 * kGi);
  EXPECT_EQ(n.idle().Get("pods"), 248);
  EXPECT_EQ(n.idle().Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(n.used().milli_cpu(), 3000);
  EXPECT_EQ(n.releasing().milli_cpu(), 1000);
  EXPECT_EQ(n.pipelined().milli_cpu(), 3000);
  EXPECT_EQ(n.FutureIdle().milli_cpu(), 13000 + 1000 - 3000);

  // Smaller again: the same tasks, a tighter node.
  ASSERT_TRUE(
      n.SetNode(NodePtrOf(MakeNode("n1", RL({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}})))).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 1000);
  EXPECT_EQ(n.idle().memory(), 3 * kGi);
  EXPECT_EQ(n.idle().Get("nvidia.com/gpu"), 0);
  EXPECT_EQ(n.negative_idle_events(), 0);
}

TEST(NodeInfoTest, EmptyAllocatableFallsBackToCapacity) {
  k8s::Node node = MakeNode("n1", {});
  node.status.capacity = RL({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "20"}});
  Result<NodeInfo> n = NodeInfo::FromNode(NodePtrOf(node));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->allocatable().milli_cpu(), 4000);
  EXPECT_EQ(n->allocatable().memory(), 8 * kGi);
  EXPECT_EQ(n->allocatable().max_task_num(), 20);
  EXPECT_EQ(n->idle().milli_cpu(), 4000);
  EXPECT_EQ(n->capacity().milli_cpu(), 4000);
}

TEST(NodeInfoTest, ReadinessFollowsTheReadyCondition) {
  struct Row {
    std::string name;
    std::vector<k8s::NodeCondition> conditions;
    bool unschedulable;
    std::vector<k8s::Taint> taints;
    NodeState want;
  };
  const NodeState ready{NodePhase::kReady, ""};
  const NodeState not_ready{NodePhase::kNotReady, "NotReady"};
  const std::vector<Row> rows = {
      {"ready", {{"Ready", "True", "", ""}}, false, {}, ready},
      {"not ready", {{"Ready", "False", "", ""}}, false, {}, not_ready},
      {"unknown", {{"Ready", "Unknown", "", ""}}, false, {}, not_ready},
      {"no conditions", {}, false, {}, not_ready},
      {"only other conditions", {{"MemoryPressure", "True", "", ""}}, false, {}, not_ready},
      {"cordoned stays ready", {{"Ready", "True", "", ""}}, true, {}, ready},
      {"tainted stays ready", {{"Ready", "True", "", ""}}, false, {{"k", "v", "NoSchedule"}}, ready},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::Node node = MakeNode("n1", DefaultAllocatable());
    node.status.conditions = row.conditions;
    node.spec.unschedulable = row.unschedulable;
    node.spec.taints = row.taints;
    Result<NodeInfo> n = NodeInfo::FromNode(NodePtrOf(node));
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n->state(), row.want);
    EXPECT_EQ(n->Ready(), row.want.phase == NodePhase::kReady);
  }
}

TEST(NodeInfoTest, SetNodeReadsRevocableZoneAndImages) {
  k8s::Node node = MakeNode("n1", DefaultAllocatable());
  node.metadata.labels[std::string(kRevocableZoneLabel)] = "rz1";
  node.status.images.push_back(
      k8s::ContainerImage{{"nginx:1.25", "docker.io/library/nginx@sha256:abc"}, 70000000});
  node.status.images.push_back(k8s::ContainerImage{{"busybox:1.36"}, 4000000});
  Result<NodeInfo> n = NodeInfo::FromNode(NodePtrOf(node));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->revocable_zone(), "rz1");
  ASSERT_EQ(n->images().size(), 3u);
  EXPECT_EQ(n->images().at("nginx:1.25").size_bytes, 70000000);
  EXPECT_EQ(n->images().at("docker.io/library/nginx@sha256:abc").size_bytes, 70000000);
  EXPECT_EQ(n->images().at("busybox:1.36").size_bytes, 4000000);
  EXPECT_EQ(n->node()->metadata.name, "n1");

  NodeInfo plain = ReadyNode();
  EXPECT_EQ(plain.revocable_zone(), "");
  EXPECT_TRUE(plain.images().empty());
}

TEST(NodeInfoTest, SetNodeFailureLeavesNodeUnchanged) {
  NodeInfo n = ReadyNode();
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  const k8s::NodePtr old = n.node();
  const Dump before = DumpOf(n);

  k8s::Node bad = MakeNode("n1", DefaultAllocatable());
  bad.status.allocatable = RL({{"cpu", "-1"}, {"memory", "1Gi"}});
  Status st = n.SetNode(NodePtrOf(bad));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Node n1"));
  EXPECT_THAT(st.message(), HasSubstr("status.allocatable"));
  ExpectUnchanged(before, n);
  EXPECT_EQ(n.node(), old);

  bad = MakeNode("n1", DefaultAllocatable());
  bad.status.capacity = RL({{"memory", "-5Gi"}});
  st = n.SetNode(NodePtrOf(bad));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("status.capacity"));
  ExpectUnchanged(before, n);

  st = n.SetNode(NodePtrOf(MakeNode("n2", DefaultAllocatable())));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(before, n);

  st = n.SetNode(nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(before, n);

  EXPECT_FALSE(NodeInfo::FromNode(NodePtrOf(bad)).ok());
  EXPECT_FALSE(NodeInfo::FromNode(nullptr).ok());
}

TEST(NodeInfoTest, UnsetNodeTurnsBackIntoAPlaceholder) {
  NodeInfo n = ReadyNode();
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kPipelined, "1")).ok());
  const uint64_t gen = n.generation();
  n.UnsetNode();
  EXPECT_TRUE(n.is_placeholder());
  EXPECT_EQ(n.state(), (NodeState{NodePhase::kNotReady, "UnInitialized"}));
  EXPECT_EQ(n.generation(), gen + 1);
  EXPECT_EQ(n.tasks().size(), 2u);
  for (const Resource* r :
       {&n.allocatable(), &n.idle(), &n.used(), &n.releasing(), &n.pipelined(), &n.requested()}) {
    EXPECT_EQ(*r, Resource()) << r->ToString();
  }
  EXPECT_EQ(n.capacity(), Resource()) << n.capacity().ToString();
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 0);
  // Tasks can still be removed from a placeholder.
  ASSERT_TRUE(n.RemoveTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  ASSERT_TRUE(n.SetNode(NodePtrOf(MakeNode("n1", DefaultAllocatable()))).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 8000);
  EXPECT_EQ(n.pipelined().milli_cpu(), 1000);
}

// ------------------------------------------------------------------ FutureIdle

TEST(NodeInfoTest, FutureIdleIsIdlePlusReleasingMinusPipelined) {
  NodeInfo n = ReadyNode();
  ASSERT_TRUE(n.AddTask(CpuTask("run", TaskStatus::kRunning, "2", "4Gi")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("rel", TaskStatus::kReleasing, "1", "2Gi")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("pipe", TaskStatus::kPipelined, "3", "1Gi")).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 5000);
  EXPECT_EQ(n.idle().memory(), 10 * kGi);
  Resource f = n.FutureIdle();
  EXPECT_EQ(f.milli_cpu(), 5000 + 1000 - 3000);
  EXPECT_EQ(f.memory(), 10 * kGi + 2 * kGi - 1 * kGi);
  EXPECT_EQ(f.Get("pods"), 108 + 1 - 1);

  // Pipelined beyond what will be free: FutureIdle goes negative, Idle does not.
  ASSERT_TRUE(n.AddTask(CpuTask("pipe2", TaskStatus::kPipelined, "4", "1Gi")).ok());
  EXPECT_EQ(n.FutureIdle().milli_cpu(), -1000);
  EXPECT_EQ(n.idle().milli_cpu(), 5000);
  EXPECT_EQ(n.negative_idle_events(), 0);
}

// ------------------------------------------------------------------ refusals

TEST(NodeInfoTest, DuplicateAddIsRefused) {
  NodeInfo n = ReadyNode();
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  const Dump before = DumpOf(n);
  Status st = n.AddTask(CpuTask("a", TaskStatus::kPipelined, "2"));
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(st.message(), HasSubstr("ns/a"));
  EXPECT_THAT(st.message(), HasSubstr("n1"));
  ExpectUnchanged(before, n);
  EXPECT_EQ(n.FindTask("ns/a")->status, TaskStatus::kRunning);
}

TEST(NodeInfoTest, RemoveUnknownIsNotFound) {
  NodeInfo n = ReadyNode();
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  const Dump before = DumpOf(n);
  Status st = n.RemoveTask(CpuTask("zzz", TaskStatus::kRunning, "1"));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("ns/zzz"));
  ExpectUnchanged(before, n);
  st = n.UpdateTask(CpuTask("zzz", TaskStatus::kRunning, "1"));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  ExpectUnchanged(before, n);
}

TEST(NodeInfoTest, TaskOnADifferentNodeIsRefused) {
  NodeInfo n = ReadyNode();
  const Dump before = DumpOf(n);
  TaskInfo t =
      MakeTask({.name = "x", .status = TaskStatus::kRunning, .requests = RL({{"cpu", "1"}}), .node = "n2"});
  Status st = n.AddTask(t);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("ns/x"));
  EXPECT_THAT(st.message(), HasSubstr("n2"));
  ExpectUnchanged(before, n);

  // A task that names no node yet (e.g. just allocated in a session) is accepted.
  TaskInfo unplaced =
      MakeTask({.name = "y", .status = TaskStatus::kAllocated, .requests = RL({{"cpu", "1"}}), .node = ""});
  ASSERT_TRUE(n.AddTask(unplaced).ok());

  const Dump with_y = DumpOf(n);
  unplaced.node_name = "n3";
  EXPECT_EQ(n.UpdateTask(unplaced).code(), StatusCode::kFailedPrecondition);
  ExpectUnchanged(with_y, n);
}

// ------------------------------------------------------------------ UpdateTask

TEST(NodeInfoTest, UpdateTaskMovesAccountingAllOrNothing) {
  NodeInfo n = ReadyNode("n1", RL({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}));
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1500m", "1Gi")).ok());
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kPending, "500m", "1Gi")).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 0);

  // Pending → Binding with the same request fits: the old copy's share is given back first.
  uint64_t gen = n.generation();
  ASSERT_TRUE(n.UpdateTask(CpuTask("b", TaskStatus::kBinding, "500m", "1Gi")).ok());
  EXPECT_EQ(n.generation(), gen + 1);
  EXPECT_EQ(n.FindTask("ns/b")->status, TaskStatus::kBinding);
  EXPECT_EQ(n.idle().milli_cpu(), 0);

  // A bigger Binding request does not fit: nothing changes.
  const Dump before = DumpOf(n);
  Status st = n.UpdateTask(CpuTask("b", TaskStatus::kBinding, "600m", "1Gi"));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("cpu"));
  ExpectUnchanged(before, n);

  // Running → Releasing.
  ASSERT_TRUE(n.UpdateTask(CpuTask("a", TaskStatus::kReleasing, "1500m", "1Gi")).ok());
  EXPECT_EQ(n.releasing().milli_cpu(), 1500);
  EXPECT_EQ(n.used().milli_cpu(), 2000);
  EXPECT_EQ(n.idle().milli_cpu(), 0);
  EXPECT_EQ(n.FutureIdle().milli_cpu(), 1500);

  // Releasing → Pipelined gives Idle back and only counts in Pipelined.
  ASSERT_TRUE(n.UpdateTask(CpuTask("a", TaskStatus::kPipelined, "1500m", "1Gi")).ok());
  EXPECT_EQ(n.releasing().milli_cpu(), 0);
  EXPECT_EQ(n.pipelined().milli_cpu(), 1500);
  EXPECT_EQ(n.idle().milli_cpu(), 1500);
  EXPECT_EQ(n.used().milli_cpu(), 500);
  EXPECT_EQ(n.requested().milli_cpu(), 500);

  // Pipelined → Binding of a task that now fits the idle left.
  ASSERT_TRUE(n.UpdateTask(CpuTask("a", TaskStatus::kBinding, "1500m", "1Gi")).ok());
  EXPECT_EQ(n.pipelined().milli_cpu(), 0);
  EXPECT_EQ(n.idle().milli_cpu(), 0);
}

// Releasing and Pipelined live in a block of their own while either is not zero: going
// non-zero and back to zero reads the same as before, and a copy of the node keeps its own.
TEST(NodeInfoTest, ReleasingAndPipelinedComeAndGoAndCopiesKeepTheirOwn) {
  static_assert(sizeof(NodeInfo) <= 304);  // with the control block, tcmalloc's 320-byte class
  NodeInfo n =
      ReadyNode("n1", RL({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_TRUE(IsZero(n.releasing()));
  EXPECT_TRUE(IsZero(n.pipelined()));
  TaskInfo gpu = MakeTask({.name = "g",
                           .status = TaskStatus::kRunning,
                           .requests = RL({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}})});
  ASSERT_TRUE(n.AddTask(gpu).ok());
  TaskInfo releasing = gpu;
  releasing.status = TaskStatus::kReleasing;
  ASSERT_TRUE(n.UpdateTask(releasing).ok());
  EXPECT_EQ(n.releasing().Get("nvidia.com/gpu"), 1000);

  NodeInfo copy = n;  // holds Releasing of its own
  ASSERT_TRUE(n.RemoveTask(releasing).ok());
  EXPECT_TRUE(IsZero(n.releasing()));  // the scalar went to zero: no residue
  EXPECT_EQ(n.FutureIdle().milli_cpu(), 4000);
  EXPECT_EQ(copy.releasing().Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(copy.releasing().milli_cpu(), 1000);
  EXPECT_EQ(copy.FutureIdle().milli_cpu(), 4000);  // idle 3 + releasing 1

  // Pipelined on the copy, then Releasing leaves it: Pipelined stays.
  ASSERT_TRUE(copy.AddTask(CpuTask("p", TaskStatus::kPipelined, "500m")).ok());
  ASSERT_TRUE(copy.RemoveTask(releasing).ok());
  EXPECT_TRUE(IsZero(copy.releasing()));
  EXPECT_EQ(copy.pipelined().milli_cpu(), 500);
  EXPECT_EQ(copy.FutureIdle().milli_cpu(), 3500);
  EXPECT_TRUE(IsZero(n.pipelined()));
  ASSERT_TRUE(copy.RemoveTask(CpuTask("p", TaskStatus::kPipelined, "500m")).ok());
  EXPECT_TRUE(IsZero(copy.pipelined()));
  EXPECT_EQ(copy.FutureIdle().milli_cpu(), 4000);
}

// ------------------------------------------------------------------ aggregates

TEST(NodeInfoTest, KubeSchedulerAggregates) {
  NodeInfo n = ReadyNode();
  TaskInfo a = MakeTask({.name = "a",
                         .status = TaskStatus::kRunning,
                         .requests = RL({{"cpu", "1"}}),
                         .ports = {k8s::ContainerPort{8080, 80, "TCP", ""}},
                         .pvcs = {"data"}});
  TaskInfo b = MakeTask(
      {.name = "b",
       .status = TaskStatus::kBound,
       .requests = {},
       .ports = {k8s::ContainerPort{8080, 80, "TCP", ""}, k8s::ContainerPort{8443, 443, "TCP", "10.0.0.1"}},
       .pvcs = {"data", "cache"},
       .affinity = true});
  TaskInfo c = MakeTask({.name = "c",
                         .status = TaskStatus::kReleasing,
                         .requests = RL({{"memory", "1Gi"}}),
                         .anti_affinity = true});
  TaskInfo pipelined = MakeTask({.name = "p",
                                 .status = TaskStatus::kPipelined,
                                 .requests = RL({{"cpu", "2"}}),
                                 .ports = {k8s::ContainerPort{9000, 9000, "UDP", ""}},
                                 .pvcs = {"other"},
                                 .affinity = true});
  for (const TaskInfo* t : {&a, &b, &c, &pipelined}) ASSERT_TRUE(n.AddTask(*t).ok()) << t->key();

  EXPECT_EQ(n.requested().milli_cpu(), 1000);
  EXPECT_EQ(n.requested().memory(), kGi);
  EXPECT_EQ(n.requested().Get("pods"), 3);
  // a: 1000m + 200Mi default; b: 100m + 200Mi; c: 100m + 1Gi.
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 1200);
  EXPECT_EQ(n.non_zero_requested().memory, 400 * kMi + kGi);
  EXPECT_THAT(n.used_ports(), UnorderedElementsAre(Pair(HostPort{"", "TCP", 80}, 2),
                                                   Pair(HostPort{"10.0.0.1", "TCP", 443}, 1)));
  EXPECT_THAT(n.pvc_ref_counts(), UnorderedElementsAre(Pair("ns/cache", 1), Pair("ns/data", 2)));
  EXPECT_EQ(n.pods_with_affinity(), 2);  // b and c
  EXPECT_EQ(n.pods_with_required_anti_affinity(), 1);

  ASSERT_TRUE(n.RemoveTask(a).ok());
  EXPECT_EQ(n.requested().milli_cpu(), 0);
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 200);
  EXPECT_THAT(n.used_ports(), UnorderedElementsAre(Pair(HostPort{"", "TCP", 80}, 1),
                                                   Pair(HostPort{"10.0.0.1", "TCP", 443}, 1)));
  EXPECT_THAT(n.pvc_ref_counts(), UnorderedElementsAre(Pair("ns/cache", 1), Pair("ns/data", 1)));

  // A copy shares the ports until one of them changes; then each has its own.
  const NodeInfo copy = n;
  ASSERT_TRUE(n.RemoveTask(b).ok());
  ASSERT_TRUE(n.RemoveTask(c).ok());
  EXPECT_EQ(copy.used_ports().size(), 2u);
  EXPECT_TRUE(IsZero(n.requested()));
  EXPECT_EQ(n.non_zero_requested().milli_cpu, 0);
  EXPECT_EQ(n.non_zero_requested().memory, 0);
  EXPECT_TRUE(n.used_ports().empty());
  EXPECT_TRUE(n.pvc_ref_counts().empty());
  EXPECT_EQ(n.pods_with_affinity(), 0);
  EXPECT_EQ(n.pods_with_required_anti_affinity(), 0);
  EXPECT_EQ(n.tasks().size(), 1u);

  // Moving the pipelined task to Running brings its aggregates in.
  TaskInfo running = pipelined;
  running.status = TaskStatus::kRunning;
  ASSERT_TRUE(n.UpdateTask(running).ok());
  EXPECT_THAT(n.used_ports(), UnorderedElementsAre(Pair(HostPort{"", "UDP", 9000}, 1)));
  EXPECT_THAT(n.pvc_ref_counts(), UnorderedElementsAre(Pair("ns/other", 1)));
  EXPECT_EQ(n.pods_with_affinity(), 1);
  EXPECT_EQ(n.requested().milli_cpu(), 2000);
}

// ------------------------------------------------------------------ generation

TEST(NodeInfoTest, EverySuccessfulMutationBumpsGenerationOnce) {
  NodeInfo n("n1");
  EXPECT_EQ(n.generation(), 0u);
  ASSERT_TRUE(n.SetNode(NodePtrOf(MakeNode("n1", DefaultAllocatable()))).ok());
  EXPECT_EQ(n.generation(), 1u);
  ASSERT_TRUE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  EXPECT_EQ(n.generation(), 2u);
  EXPECT_FALSE(n.AddTask(CpuTask("a", TaskStatus::kRunning, "1")).ok());
  EXPECT_EQ(n.generation(), 2u);
  ASSERT_TRUE(n.UpdateTask(CpuTask("a", TaskStatus::kReleasing, "1")).ok());
  EXPECT_EQ(n.generation(), 3u);
  EXPECT_FALSE(n.AddTask(CpuTask("big", TaskStatus::kBinding, "100")).ok());
  EXPECT_EQ(n.generation(), 3u);
  ASSERT_TRUE(n.RemoveTask(CpuTask("a", TaskStatus::kReleasing, "1")).ok());
  EXPECT_EQ(n.generation(), 4u);
  EXPECT_FALSE(n.RemoveTask(CpuTask("a", TaskStatus::kReleasing, "1")).ok());
  EXPECT_EQ(n.generation(), 4u);
  n.UnsetNode();
  EXPECT_EQ(n.generation(), 5u);
  n.set_generation(100);
  ASSERT_TRUE(n.AddTask(CpuTask("b", TaskStatus::kRunning, "1")).ok());
  EXPECT_EQ(n.generation(), 101u);
}

TEST(NodeInfoTest, StoredCopyIsIndependentOfTheCallers) {
  NodeInfo n = ReadyNode();
  TaskInfo t = CpuTask("a", TaskStatus::kRunning, "1");
  ASSERT_TRUE(n.AddTask(t).ok());
  t.status = TaskStatus::kPipelined;
  t.node_name = "elsewhere";
  EXPECT_EQ(n.FindTask("ns/a")->status, TaskStatus::kRunning);
  EXPECT_NE(n.FindTask("ns/a")->node_name, "elsewhere");
  EXPECT_EQ(n.FindTask("ns/a")->resreq().milli_cpu(), 1000);
  ASSERT_TRUE(n.RemoveTask(t).ok());
  EXPECT_EQ(n.idle().milli_cpu(), 8000);
  EXPECT_EQ(n.pipelined().milli_cpu(), 0);
}

}  // namespace
}  // namespace volcache
