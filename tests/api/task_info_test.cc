#include "api/task_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/k8s/objects.h"
#include "api/quantity.h"

namespace volcache {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMi = 1024 * 1024;
constexpr int64_t kGi = 1024 * kMi;

k8s::ResourceList RL(std::initializer_list<std::pair<std::string, std::string>> items) {
  k8s::ResourceList out;
  for (const auto& [name, text] : items) {
    Result<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
    out.emplace_back(name, q.ok() ? *q : Quantity());
  }
  return out;
}

k8s::Container MakeContainer(std::string name, k8s::ResourceList requests, std::string restart_policy = "") {
  k8s::Container c;
  c.name = std::move(name);
  c.image = "busybox";
  c.requests = std::move(requests);
  c.restart_policy = std::move(restart_policy);
  return c;
}

k8s::Pod MakePod(std::string ns, std::string name) {
  k8s::Pod pod;
  pod.metadata.namespace_ = std::move(ns);
  pod.metadata.name = std::move(name);
  pod.metadata.uid = "uid-" + pod.metadata.name;
  pod.metadata.creation_timestamp = 1700000000123;
  pod.status.phase = "Pending";
  return pod;
}

Resource RequestOf(const k8s::Pod& pod) {
  Result<Resource> r = PodRequest(pod);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Resource();
}

// Two copies per task (entries of the job's and the node's TaskTable) plus every snapshot's
// private copies: each byte here is two bytes per task. The request is in TaskMeta.
static_assert(sizeof(TaskInfo) == 24);
// One per task, with its count and the request: tcmalloc's 112-byte class.
static_assert(sizeof(TaskMeta) <= 112);

TaskInfo TaskOf(k8s::Pod pod) {
  Result<TaskInfo> t = TaskInfo::FromPod(std::make_shared<const k8s::Pod>(std::move(pod)));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : TaskInfo();
}

// ------------------------------------------------------------------ PodRequest

TEST(PodRequestTest, SumsRegularContainersAndCountsOnePod) {
  k8s::Pod pod = MakePod("default", "web");
  pod.spec.containers.push_back(MakeContainer("a", RL({{"cpu", "500m"}, {"memory", "1Gi"}})));
  pod.spec.containers.push_back(
      MakeContainer("b", RL({{"cpu", "250m"}, {"memory", "512Mi"}, {"nvidia.com/gpu", "1"}})));
  Resource r = RequestOf(pod);
  EXPECT_EQ(r.milli_cpu(), 750);
  EXPECT_EQ(r.memory(), 1 * kGi + 512 * kMi);
  EXPECT_EQ(r.Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(r.Get("pods"), 1);
  EXPECT_EQ(r.max_task_num(), 0);
}

TEST(PodRequestTest, EmptyPodRequestsOnlyThePod) {
  Resource r = RequestOf(MakePod("default", "empty"));
  EXPECT_EQ(r.milli_cpu(), 0);
  EXPECT_EQ(r.memory(), 0);
  EXPECT_EQ(r.Get("pods"), 1);
}

TEST(PodRequestTest, InitContainerPeakIsMaxedPerDimension) {
  k8s::Pod pod = MakePod("default", "init");
  pod.spec.init_containers.push_back(MakeContainer("i1", RL({{"cpu", "2"}, {"memory", "1Gi"}})));
  pod.spec.init_containers.push_back(MakeContainer("i2", RL({{"cpu", "1"}, {"nvidia.com/gpu", "2"}})));
  pod.spec.containers.push_back(
      MakeContainer("c", RL({{"cpu", "500m"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "1"}})));
  Resource r = RequestOf(pod);
  EXPECT_EQ(r.milli_cpu(), 2000);            // init i1
  EXPECT_EQ(r.memory(), 2 * kGi);            // regular
  EXPECT_EQ(r.Get("nvidia.com/gpu"), 2000);  // init i2
  EXPECT_EQ(r.Get("pods"), 1);
}

TEST(PodRequestTest, SidecarsAddToLaterInitContainersAndRegularOnesPlusOverhead) {
  k8s::Pod pod = MakePod("default", "sidecars");
  // s1 (sidecar), i1, s2 (sidecar), i2; then regular c.
  pod.spec.init_containers.push_back(
      MakeContainer("s1", RL({{"cpu", "100m"}, {"memory", "64Mi"}}), "Always"));
  pod.spec.init_containers.push_back(MakeContainer("i1", RL({{"cpu", "1"}, {"memory", "128Mi"}})));
  pod.spec.init_containers.push_back(
      MakeContainer("s2", RL({{"cpu", "200m"}, {"memory", "256Mi"}}), "Always"));
  pod.spec.init_containers.push_back(MakeContainer("i2", RL({{"cpu", "500m"}, {"memory", "1Gi"}})));
  pod.spec.containers.push_back(MakeContainer("c", RL({{"cpu", "300m"}, {"memory", "100Mi"}})));

  // i1 peak: 1000+100 = 1100m, 128+64 = 192Mi. i2 peak: 500+100+200 = 800m,
  // 1024+64+256 = 1344Mi. Regular + sidecars: 600m, 420Mi. Max: 1100m, 1344Mi.
  Resource r = RequestOf(pod);
  EXPECT_EQ(r.milli_cpu(), 1100);
  EXPECT_EQ(r.memory(), 1344 * kMi);

  pod.spec.mutable_rare().overhead = RL({{"cpu", "250m"}, {"memory", "120Mi"}});
  r = RequestOf(pod);
  EXPECT_EQ(r.milli_cpu(), 1350);
  EXPECT_EQ(r.memory(), 1535115264);  // 1464 MiB
  EXPECT_EQ(r.Get("pods"), 1);
}

TEST(PodRequestTest, SidecarsDominateWhenRegularContainersAreLarge) {
  k8s::Pod pod = MakePod("default", "big");
  pod.spec.init_containers.push_back(MakeContainer("s", RL({{"cpu", "1"}, {"memory", "1Gi"}}), "Always"));
  pod.spec.init_containers.push_back(MakeContainer("i", RL({{"cpu", "1500m"}})));
  pod.spec.containers.push_back(MakeContainer("c", RL({{"cpu", "2"}, {"memory", "3Gi"}})));
  // i: 2500m/1Gi; regular+sidecar: 3000m/4Gi.
  Resource r = RequestOf(pod);
  EXPECT_EQ(r.milli_cpu(), 3000);
  EXPECT_EQ(r.memory(), 4 * kGi);
}

TEST(PodRequestTest, NonSidecarRestartPolicyIsAnOrdinaryInitContainer) {
  k8s::Pod pod = MakePod("default", "onfailure");
  pod.spec.init_containers.push_back(MakeContainer("i", RL({{"cpu", "1"}}), "OnFailure"));
  pod.spec.containers.push_back(MakeContainer("c", RL({{"cpu", "300m"}})));
  EXPECT_EQ(RequestOf(pod).milli_cpu(), 1000);
}

TEST(PodRequestTest, NegativeQuantityNamesTheField) {
  k8s::Pod pod = MakePod("default", "neg");
  pod.spec.containers.push_back(MakeContainer("a", RL({{"cpu", "1"}})));
  pod.spec.containers.push_back(MakeContainer("b", RL({{"cpu", "-1"}})));
  Result<Resource> r = PodRequest(pod);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("spec.containers[1].resources.requests"));

  Result<TaskInfo> t = TaskInfo::FromPod(std::make_shared<const k8s::Pod>(pod));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("Pod default/neg"));
  EXPECT_THAT(t.status().message(), HasSubstr("spec.containers[1].resources.requests"));

  k8s::Pod init = MakePod("default", "neg-init");
  init.spec.init_containers.push_back(MakeContainer("i", RL({{"memory", "-1Gi"}})));
  r = PodRequest(init);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("spec.initContainers[0].resources.requests"));

  k8s::Pod overhead = MakePod("default", "neg-overhead");
  overhead.spec.mutable_rare().overhead = RL({{"cpu", "-100m"}});
  r = PodRequest(overhead);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("spec.overhead"));
}

// ------------------------------------------------------------ PodNonZeroRequest

TEST(PodNonZeroRequestTest, DefaultsApplyPerContainerWhenMissing) {
  struct Row {
    std::string name;
    std::vector<k8s::ResourceList> containers;
    int64_t want_cpu;
    int64_t want_memory;
  };
  const std::vector<Row> rows = {
      {"no containers", {}, 0, 0},
      {"one empty container", {RL({})}, 100, 200 * kMi},
      {"two empty containers", {RL({}), RL({})}, 200, 400 * kMi},
      {"cpu only", {RL({{"cpu", "1"}})}, 1000, 200 * kMi},
      {"memory only", {RL({{"memory", "1Gi"}})}, 100, kGi},
      {"explicit zero is not missing", {RL({{"cpu", "0"}, {"memory", "0"}})}, 0, 0},
      {"mixed", {RL({{"cpu", "250m"}}), RL({{"memory", "64Mi"}})}, 350, 264 * kMi},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::Pod pod = MakePod("default", "nz");
    for (size_t i = 0; i < row.containers.size(); ++i) {
      pod.spec.containers.push_back(MakeContainer("c" + std::to_string(i), row.containers[i]));
    }
    NonZeroRequest nz = PodNonZeroRequest(pod);
    EXPECT_EQ(nz.milli_cpu, row.want_cpu);
    EXPECT_EQ(nz.memory, row.want_memory);
  }
}

TEST(PodNonZeroRequestTest, InitContainersSidecarsAndOverheadFollowTheRequestRule) {
  k8s::Pod pod = MakePod("default", "nz-init");
  pod.spec.containers.push_back(MakeContainer("c1", RL({})));
  pod.spec.containers.push_back(MakeContainer("c2", RL({{"cpu", "0"}})));
  pod.spec.init_containers.push_back(MakeContainer("i1", RL({{"cpu", "1"}})));
  // regular: 100+0 = 100m, 400Mi; i1: 1000m, 200Mi → 1000m, 400Mi.
  NonZeroRequest nz = PodNonZeroRequest(pod);
  EXPECT_EQ(nz.milli_cpu, 1000);
  EXPECT_EQ(nz.memory, 400 * kMi);

  // A sidecar without requests counts the defaults for itself and everything after it.
  auto& inits = pod.spec.init_containers.mut();
  inits.insert(inits.begin(), MakeContainer("s", RL({}), "Always"));
  // i1: 1000+100 = 1100m, 200+200 = 400Mi; regular + sidecar: 200m, 600Mi.
  nz = PodNonZeroRequest(pod);
  EXPECT_EQ(nz.milli_cpu, 1100);
  EXPECT_EQ(nz.memory, 600 * kMi);

  pod.spec.mutable_rare().overhead = RL({{"cpu", "50m"}, {"memory", "10Mi"}});
  nz = PodNonZeroRequest(pod);
  EXPECT_EQ(nz.milli_cpu, 1150);
  EXPECT_EQ(nz.memory, 610 * kMi);

  // The exact request is unaffected by the defaults.
  Resource r = RequestOf(pod);
  EXPECT_EQ(r.milli_cpu(), 1050);  // i1 1000 + sidecar 0, + 50 overhead
  EXPECT_EQ(r.memory(), 10 * kMi);
}

// ------------------------------------------------------------------ TaskInfo

TEST(TaskInfoTest, FromPodFillsMetaAndFields) {
  k8s::Pod pod = MakePod("team-a", "worker-0");
  pod.metadata.annotations[std::string(kGroupNameAnnotation)] = "job-1";
  pod.metadata.annotations["custom"] = "x";
  pod.metadata.labels[std::string(kTaskSpecKey)] = "worker";
  pod.spec.node_name = "n1";
  pod.status.phase = "Running";
  k8s::Container c = MakeContainer("c", RL({{"cpu", "2"}, {"memory", "4Gi"}}));
  c.ports.push_back(k8s::ContainerPort{8080, 0, "TCP", ""});          // no host port: skipped
  c.ports.push_back(k8s::ContainerPort{8080, 80, "TCP", "0.0.0.0"});  // 0.0.0.0 normalizes to ""
  c.ports.push_back(k8s::ContainerPort{53, 53, "UDP", "10.0.0.1"});
  pod.spec.containers.push_back(c);
  k8s::Container init = MakeContainer("i", RL({}));
  init.ports.push_back(k8s::ContainerPort{9000, 9000, "", ""});  // protocol defaults to TCP
  pod.spec.init_containers.push_back(init);
  pod.spec.mutable_rare().pvc_names = {"data", "logs"};
  pod.spec.has_pod_anti_affinity = true;

  auto ptr = std::make_shared<const k8s::Pod>(pod);
  Result<TaskInfo> r = TaskInfo::FromPod(ptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TaskInfo& t = *r;
  EXPECT_EQ(t.uid(), "uid-worker-0");
  EXPECT_EQ(t.name(), "worker-0");
  EXPECT_EQ(t.namespace_(), "team-a");
  EXPECT_EQ(t.key(), "team-a/worker-0");
  EXPECT_EQ(t.job(), "team-a/job-1");
  EXPECT_EQ(t.role(), "worker");
  EXPECT_EQ(t.node_name, "n1");
  EXPECT_EQ(t.status, TaskStatus::kRunning);
  EXPECT_EQ(t.resreq().milli_cpu(), 2000);
  EXPECT_EQ(t.resreq().memory(), 4 * kGi);
  EXPECT_EQ(t.resreq().Get("pods"), 1);
  EXPECT_EQ(t.meta->creation_timestamp(), 1700000000123);
  EXPECT_EQ(t.meta->non_zero().milli_cpu, 2000);
  EXPECT_EQ(t.meta->non_zero().memory, 4 * kGi);
  EXPECT_THAT(t.meta->host_ports(),
              ::testing::UnorderedElementsAre(HostPort{"", "TCP", 80}, HostPort{"10.0.0.1", "UDP", 53},
                                              HostPort{"", "TCP", 9000}));
  EXPECT_THAT(t.meta->pvcs(), ::testing::ElementsAre("team-a/data", "team-a/logs"));
  EXPECT_TRUE(t.meta->has_affinity());
  EXPECT_TRUE(t.meta->has_required_anti_affinity());
  EXPECT_EQ(t.meta->pod, ptr);
  EXPECT_EQ(&t.pod(), ptr.get());
  EXPECT_EQ(t.annotations().at("custom"), "x");
  EXPECT_FALSE(t.best_effort);
  EXPECT_FALSE(t.scheduling_gated);
  EXPECT_TRUE(t.preemptable);
  EXPECT_EQ(t.priority, 0);
}

// The non-zero request is the request's cpu and memory for a pod whose containers request
// both, and kept beside the node facts only for a pod whose default stands in for a missing
// one (PodNonZeroRequest).
TEST(TaskInfoTest, TheNonZeroRequestIsKeptOnlyWhenItDiffersFromTheRequest) {
  k8s::Pod full = MakePod("default", "full");
  full.spec.containers.push_back(MakeContainer("main", RL({{"cpu", "2"}, {"memory", "1Gi"}})));
  const TaskInfo a = TaskOf(full);
  EXPECT_EQ(a.meta->node_facts, nullptr);
  EXPECT_EQ(a.meta->non_zero().milli_cpu, 2000);
  EXPECT_EQ(a.meta->non_zero().memory, kGi);

  k8s::Pod no_memory = MakePod("default", "no-memory");
  no_memory.spec.containers.push_back(MakeContainer("main", RL({{"cpu", "2"}})));
  no_memory.spec.containers.mut().push_back(MakeContainer("side", RL({{"memory", "1Gi"}})));
  const TaskInfo b = TaskOf(no_memory);
  ASSERT_NE(b.meta->node_facts, nullptr);
  EXPECT_EQ(b.resreq().milli_cpu(), 2000);
  EXPECT_EQ(b.resreq().memory(), kGi);
  // main: 2 cpu and the default memory; side: the default cpu and 1Gi.
  EXPECT_EQ(b.meta->non_zero().milli_cpu, 2000 + kDefaultMilliCpuRequest);
  EXPECT_EQ(b.meta->non_zero().memory, kDefaultMemoryRequest + kGi);
  const NonZeroRequest want = PodNonZeroRequest(no_memory);
  EXPECT_EQ(b.meta->non_zero().milli_cpu, want.milli_cpu);
  EXPECT_EQ(b.meta->non_zero().memory, want.memory);
  EXPECT_TRUE(b.meta->host_ports().empty());
  EXPECT_FALSE(b.meta->has_affinity());
}

// A job's pods share their container lists, and FromPod reuses the request it computed for
// the same lists; any pod whose lists or overhead differ gets its own.
TEST(TaskInfoTest, PodsSharingContainerListsGetTheRequestOfTheirOwnLists) {
  k8s::Pod first = MakePod("default", "job-0");
  first.spec.containers.push_back(MakeContainer("main", RL({{"cpu", "2"}, {"memory", "1Gi"}})));
  k8s::Pod same = first;  // shares the container list's block
  same.metadata.name = "job-1";
  ASSERT_TRUE(same.spec.containers.SameBlock(first.spec.containers));
  k8s::Pod changed = first;  // writes copy the shared block first
  changed.metadata.name = "job-2";
  changed.spec.containers.mut()[0].requests = RL({{"cpu", "3"}, {"memory", "1Gi"}});
  k8s::Pod with_init = first;
  with_init.metadata.name = "job-3";
  with_init.spec.init_containers.push_back(MakeContainer("init", RL({{"cpu", "5"}})));
  k8s::Pod with_overhead = first;
  with_overhead.metadata.name = "job-4";
  with_overhead.spec.mutable_rare().overhead = RL({{"cpu", "250m"}});
  k8s::Pod bad = first;
  bad.metadata.name = "job-5";
  bad.spec.containers.mut()[0].requests = RL({{"cpu", "-1"}});

  // Each in turn, and again after the others, so that every one follows a different pod.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    EXPECT_EQ(TaskOf(first).resreq().milli_cpu(), 2000);
    EXPECT_EQ(TaskOf(same).resreq().milli_cpu(), 2000);
    EXPECT_EQ(TaskOf(same).meta->non_zero().milli_cpu, 2000);
    EXPECT_EQ(TaskOf(changed).resreq().milli_cpu(), 3000);
    EXPECT_EQ(TaskOf(changed).meta->non_zero().milli_cpu, 3000);
    EXPECT_EQ(TaskOf(with_init).resreq().milli_cpu(), 5000);  // the init container's peak
    EXPECT_EQ(TaskOf(first).resreq().memory(), kGi);
    EXPECT_EQ(TaskOf(with_overhead).resreq().milli_cpu(), 2250);
    Result<TaskInfo> refused = TaskInfo::FromPod(std::make_shared<const k8s::Pod>(bad));
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.status().message(), HasSubstr("Pod default/job-5"));
    EXPECT_EQ(TaskOf(same).resreq().milli_cpu(), 2000);  // right after a refused pod
  }
}

// The same for what FromPod reads from the annotations and labels: pods sharing the maps
// share the facts, except what is not in the maps (namespace, spec.priority).
TEST(TaskInfoTest, PodsSharingLabelMapsGetTheFactsOfTheirOwnMaps) {
  k8s::Pod first = MakePod("ns1", "a-0");
  first.metadata.annotations["scheduling.k8s.io/group-name"] = "pg";
  first.metadata.annotations["volcano.sh/task-spec"] = "worker";
  first.metadata.labels["volcano.sh/preemptable"] = "false";
  first.spec.priority = 7;
  k8s::Pod other_ns = first;  // same maps (shared blocks), other namespace and priority
  other_ns.metadata.namespace_ = "ns2";
  other_ns.spec.priority = 9;
  k8s::Pod relabelled = first;
  relabelled.metadata.labels["volcano.sh/preemptable"] = "true";
  relabelled.metadata.labels["volcano.sh/task-spec"] = "ignored";  // the annotation wins
  k8s::Pod annotated = first;
  annotated.metadata.annotations["volcano.sh/task-priority"] = "42";
  annotated.metadata.annotations["volcano.sh/task-spec"] = "ps";

  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    TaskInfo a = TaskOf(first);
    EXPECT_EQ(a.job(), "ns1/pg");
    EXPECT_EQ(a.role(), "worker");
    EXPECT_EQ(a.priority, 7);
    EXPECT_FALSE(a.preemptable);
    TaskInfo b = TaskOf(other_ns);
    EXPECT_EQ(b.job(), "ns2/pg");
    EXPECT_EQ(b.role(), "worker");
    EXPECT_EQ(b.priority, 9);
    EXPECT_FALSE(b.preemptable);
    TaskInfo c = TaskOf(relabelled);
    EXPECT_EQ(c.role(), "worker");
    EXPECT_TRUE(c.preemptable);
    EXPECT_EQ(c.priority, 7);
    TaskInfo d = TaskOf(annotated);
    EXPECT_EQ(d.role(), "ps");
    EXPECT_EQ(d.priority, 42);
    EXPECT_FALSE(d.preemptable);
    TaskInfo e = TaskOf(other_ns);  // right after `annotated`, whose labels it shares
    EXPECT_EQ(e.role(), "worker");
    EXPECT_EQ(e.priority, 9);
  }
}

TEST(TaskInfoTest, JobIdAndRole) {
  struct Row {
    std::string name;
    k8s::StringMap annotations;
    k8s::StringMap labels;
    std::string want_job;
    std::string want_role;
  };
  const std::string group(kGroupNameAnnotation);
  const std::string spec(kTaskSpecKey);
  const std::vector<Row> rows = {
      {"no annotations", {}, {}, "", ""},
      {"group annotation", {{group, "pg"}}, {}, "ns1/pg", ""},
      {"empty group annotation", {{group, ""}}, {}, "", ""},
      {"group as label is ignored", {}, {{group, "pg"}}, "", ""},
      {"role from label", {}, {{spec, "ps"}}, "", "ps"},
      {"role annotation wins", {{spec, "master"}}, {{spec, "ps"}}, "", "master"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::Pod pod = MakePod("ns1", "p");
    pod.metadata.annotations = row.annotations;
    pod.metadata.labels = row.labels;
    TaskInfo t = TaskOf(pod);
    EXPECT_EQ(t.job(), row.want_job);
    EXPECT_EQ(t.role(), row.want_role);
  }
}

TEST(TaskInfoTest, RoleViewsThePodEveryCopyKeepsAlive) {
  k8s::Pod pod = MakePod("ns1", "p");
  pod.metadata.annotations[std::string(kTaskSpecKey)] = "worker";
  std::optional<TaskInfo> original = TaskOf(std::move(pod));  // the task holds the only pod reference
  const TaskInfo copy = *original;
  original.reset();
  EXPECT_EQ(copy.role(), "worker");
  // Not a copy of the value: the pod's own string.
  EXPECT_EQ(copy.role().data(), copy.pod().metadata.annotations.at(std::string(kTaskSpecKey)).data());
}

TEST(TaskInfoTest, PriorityAnnotationOverridesPodPriority) {
  struct Row {
    std::string name;
    std::optional<int32_t> spec_priority;
    std::optional<std::string> annotation;
    int32_t want;
  };
  const std::vector<Row> rows = {
      {"unset", std::nullopt, std::nullopt, 0},
      {"pod priority", 1000, std::nullopt, 1000},
      {"negative pod priority", -5, std::nullopt, -5},
      {"annotation overrides", 1000, "5", 5},
      {"annotation without pod priority", std::nullopt, "42", 42},
      {"negative annotation", 10, "-3", -3},
      {"invalid annotation ignored", 10, "high", 10},
      {"out of int32 range ignored", 10, "4294967296", 10},
      {"empty annotation ignored", 7, "", 7},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::Pod pod = MakePod("default", "p");
    pod.spec.priority = row.spec_priority;
    if (row.annotation) pod.metadata.annotations[std::string(kTaskPriorityAnnotation)] = *row.annotation;
    EXPECT_EQ(TaskOf(pod).priority, row.want);
  }
}

TEST(TaskInfoTest, PreemptableAnnotationThenLabelDefaultTrue) {
  struct Row {
    std::string name;
    std::optional<std::string> annotation;
    std::optional<std::string> label;
    bool want;
  };
  const std::vector<Row> rows = {
      {"default", std::nullopt, std::nullopt, true},
      {"annotation false", "false", std::nullopt, false},
      {"annotation true", "true", std::nullopt, true},
      {"label false", std::nullopt, "false", false},
      {"label True", std::nullopt, "True", true},
      {"annotation wins over label", "true", "false", true},
      {"annotation false wins over label true", "false", "true", false},
      {"invalid annotation is not preemptable (Volcano)", "maybe", "true", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::Pod pod = MakePod("default", "p");
    if (row.annotation) pod.metadata.annotations[std::string(kPreemptableKey)] = *row.annotation;
    if (row.label) pod.metadata.labels[std::string(kPreemptableKey)] = *row.label;
    EXPECT_EQ(TaskOf(pod).preemptable, row.want);
  }
}

TEST(TaskInfoTest, BestEffortMeansNoCpuMemoryOrScalarsButPods) {
  struct Row {
    std::string name;
    k8s::ResourceList requests;
    k8s::ResourceList overhead;
    bool want;
  };
  const std::vector<Row> rows = {
      {"no requests", RL({}), RL({}), true},
      {"zero requests", RL({{"cpu", "0"}, {"memory", "0"}}), RL({}), true},
      {"cpu", RL({{"cpu", "10m"}}), RL({}), false},
      {"memory", RL({{"memory", "1Mi"}}), RL({}), false},
      {"gpu only", RL({{"nvidia.com/gpu", "1"}}), RL({}), false},
      {"overhead only", RL({}), RL({{"cpu", "100m"}}), false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::Pod pod = MakePod("default", "p");
    pod.spec.containers.push_back(MakeContainer("c", row.requests));
    pod.spec.mutable_rare().overhead = row.overhead;
    TaskInfo t = TaskOf(pod);
    EXPECT_EQ(t.best_effort, row.want);
    EXPECT_EQ(t.resreq().Get("pods"), 1);
  }
}

TEST(TaskInfoTest, SchedulingGatesAndStatus) {
  k8s::Pod pod = MakePod("default", "gated");
  pod.spec.mutable_rare().scheduling_gates = {"example.com/quota"};
  TaskInfo t = TaskOf(pod);
  EXPECT_TRUE(t.scheduling_gated);
  EXPECT_EQ(t.status, TaskStatus::kPending);
  EXPECT_EQ(t.node_name, "");

  pod.spec.mutable_rare().scheduling_gates.clear();
  pod.spec.node_name = "n2";
  t = TaskOf(pod);
  EXPECT_FALSE(t.scheduling_gated);
  EXPECT_EQ(t.status, TaskStatus::kBound);
  EXPECT_EQ(t.node_name, "n2");

  pod.metadata.deletion_timestamp = 1700000001000;
  EXPECT_EQ(TaskOf(pod).status, TaskStatus::kReleasing);
}

TEST(TaskInfoTest, CopiesShareMeta) {
  TaskInfo a = TaskOf(MakePod("default", "p"));
  TaskInfo b = a;
  b.status = TaskStatus::kAllocated;
  b.node_name = "n1";
  EXPECT_EQ(a.meta, b.meta);
  EXPECT_EQ(a.status, TaskStatus::kPending);
  EXPECT_EQ(a.node_name, "");
}

TEST(TaskInfoTest, NullPodIsInvalid) {
  Result<TaskInfo> t = TaskInfo::FromPod(nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(TaskInfoTest, PodKey) { EXPECT_EQ(PodKey("ns", "name"), "ns/name"); }

}  // namespace
}  // namespace volcache
