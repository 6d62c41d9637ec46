// The simulated kubelet's admission (sim/cluster.h): a bound pod starts only when its node
// admits it — node affinity and nodeSelector, host ports, resources (pods, cpu, extended
// resources) and taints — against the pods admitted on that node and not finished; a refused
// pod fails with the kubelet's reason, counts in SimStats and finishes its job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "api/task_info.h"
#include "cache/runtime.h"
#include "sim/cluster.h"
#include "tests/fakes/cluster_builders.h"

namespace volcache::sim {
namespace {

using namespace std::chrono_literals;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;
using testing::Resources;

k8s::Pod Pod(const std::string& job, const std::string& name, std::string_view cpu = "1",
             std::string_view memory = "1Gi") {
  return PodBuilder("ml", name).Group(job).Request(cpu, memory).Build();
}

k8s::Pod WithHostPort(k8s::Pod p, int32_t port, std::string protocol = "TCP") {
  auto& containers = p.spec.containers.mut();
  if (containers.empty()) containers.emplace_back();
  k8s::ContainerPort cp;
  cp.container_port = port;
  cp.host_port = port;
  cp.protocol = std::move(protocol);
  containers[0].ports.push_back(cp);
  return p;
}

k8s::NodeSelectorTerm Term(std::vector<k8s::NodeSelectorRequirement> expressions) {
  k8s::NodeSelectorTerm t;
  t.match_expressions = std::move(expressions);
  return t;
}

k8s::Toleration Tolerate(std::string key, std::string op, std::string value, std::string effect) {
  k8s::Toleration t;
  t.key = std::move(key);
  t.operator_ = std::move(op);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

// A SimCluster alone on a fake clock: the tests bind pods themselves (the kubelet checks what
// any binder does), so no scheduler or cache takes part.
struct Kubelet {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  SimCluster sim{SimOptions{}, clock};
  SimWorkload workload;

  void AddNode(const NodeBuilder& node) { workload.nodes.push_back(node.Ptr()); }
  // A job of `pods` arriving at `submit`, each pod running `run` once started.
  void AddJob(const std::string& name, std::vector<k8s::Pod> pods, Duration run = 10s,
              Duration submit = Duration::zero()) {
    SimJob job;
    job.pod_group = PodGroupBuilder("ml", name).MinMember(static_cast<int32_t>(pods.size())).Ptr();
    for (auto& p : pods) job.pods.push_back(std::make_shared<const k8s::Pod>(std::move(p)));
    job.run_time = run;
    job.submit = submit;
    workload.jobs.push_back(std::move(job));
  }
  void Load() {
    sim.Load(workload);
    clock->Advance(Duration::zero());  // the arrivals at 0
  }
  Status Bind(const std::string& name, const std::string& node) {
    auto pod = sim.GetPod("ml", name);
    if (!pod.ok()) return pod.status();
    auto task = TaskInfo::FromPod(*pod);
    if (!task.ok()) return task.status();
    BindContext ctx;
    ctx.task = *task;
    ctx.node_name = node;
    return sim.Bind({&ctx}).front();
  }
  // Binds and lets the kubelet act (start_delay is 1 s); returns the pod's phase.
  std::string BindAndStart(const std::string& name, const std::string& node) {
    if (Status s = Bind(name, node); !s.ok()) return "bind failed: " + s.ToString();
    clock->Advance(1s);
    return Phase(name);
  }
  std::string Phase(const std::string& name) const {
    auto pod = sim.GetPod("ml", name);
    return pod.ok() ? std::string((*pod)->status.phase) : "gone";
  }
  std::optional<k8s::PodCondition> Refusal(const std::string& name) const {
    auto pod = sim.GetPod("ml", name);
    if (!pod.ok()) return std::nullopt;
    for (const auto& c : (*pod)->status.conditions)
      if (c.type == kAdmissionConditionType) return c;
    return std::nullopt;
  }
};

TEST(KubeletAdmissionTest, NodeSelectorAndRequiredNodeAffinityAreChecked) {
  Kubelet k;
  k.AddNode(NodeBuilder("n1").Allocatable("8", "32Gi").Label("zone", "a").Label("disk", "ssd"));
  k8s::Pod selector = Pod("selector", "selector");
  selector.spec.node_selector["zone"] = "b";
  k8s::Pod affinity = Pod("affinity", "affinity");
  affinity.spec.mutable_rare().node_affinity.required =
      std::vector<k8s::NodeSelectorTerm>{Term({{"zone", "In", {"b", "c"}}})};
  k8s::Pod fits = Pod("fits", "fits");
  fits.spec.node_selector["disk"] = "ssd";
  fits.spec.mutable_rare().node_affinity.required =
      std::vector<k8s::NodeSelectorTerm>{Term({{"zone", "In", {"b"}}}),  // terms are ORed
                                         Term({{"zone", "In", {"a"}}, {"gpu", "DoesNotExist", {}}})};
  k.AddJob("selector", {selector});
  k.AddJob("affinity", {affinity});
  k.AddJob("fits", {fits});
  k.Load();

  EXPECT_EQ(k.BindAndStart("selector", "n1"), "Failed");
  auto c = k.Refusal("selector");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "NodeAffinity");
  EXPECT_EQ(c->message, "Pod Predicate NodeAffinity failed");
  EXPECT_EQ(k.BindAndStart("affinity", "n1"), "Failed");
  EXPECT_EQ(k.Refusal("affinity")->reason, "NodeAffinity");
  EXPECT_EQ(k.BindAndStart("fits", "n1"), "Running");
  EXPECT_FALSE(k.Refusal("fits").has_value());

  SimStats st = k.sim.stats();
  EXPECT_EQ(st.admission_refusals, 2u);
  EXPECT_EQ(st.admission_refusal_reasons, (std::map<std::string, uint64_t>{{"NodeAffinity", 2}}));
  ASSERT_EQ(st.admission_refusal_examples.size(), 2u);
  EXPECT_EQ(st.admission_refusal_examples[0],
            "ml/selector on n1: NodeAffinity: Pod Predicate NodeAffinity failed");
  EXPECT_EQ(st.pod_starts, 1u);
  // A refused pod counts as finished: its job is done and cleaned up, the run can end.
  EXPECT_EQ(st.jobs_finished, 2u);
  EXPECT_EQ(k.sim.node_requests("n1").milli_cpu(), 1000);
  k.clock->Advance(2s);
  EXPECT_EQ(k.Phase("selector"), "gone");
  k.clock->Advance(10s);
  EXPECT_TRUE(k.sim.AllJobsFinished());
  EXPECT_EQ(k.sim.node_requests("n1"), Resource());
  EXPECT_EQ(k.sim.running_requests().milli_cpu(), 0);
}

TEST(KubeletAdmissionTest, AHostPortInUseOnTheNodeIsRefusedUntilItsPodFinishes) {
  Kubelet k;
  k.AddNode(NodeBuilder("n1").Allocatable("8", "32Gi"));
  k.AddNode(NodeBuilder("n2").Allocatable("8", "32Gi"));
  for (const char* name : {"web-0", "web-1", "web-2", "other-node"})
    k.AddJob(name, {WithHostPort(Pod(name, name), 8080)});
  k.AddJob("udp", {WithHostPort(Pod("udp", "udp"), 8080, "UDP")});
  k.AddJob("other-port", {WithHostPort(Pod("other-port", "other-port"), 9090)});
  k.Load();

  EXPECT_EQ(k.BindAndStart("web-0", "n1"), "Running");
  EXPECT_EQ(k.BindAndStart("web-1", "n1"), "Failed");
  EXPECT_EQ(k.Refusal("web-1")->reason, "NodePorts");
  EXPECT_EQ(k.Refusal("web-1")->message, "Pod Predicate NodePorts failed");
  EXPECT_EQ(k.BindAndStart("other-node", "n2"), "Running");  // ports are per node
  EXPECT_EQ(k.BindAndStart("udp", "n1"), "Running");         // another protocol
  EXPECT_EQ(k.BindAndStart("other-port", "n1"), "Running");
  k.clock->Advance(8s);  // web-0 has run its 10 s
  ASSERT_EQ(k.Phase("web-0"), "Succeeded");
  EXPECT_EQ(k.BindAndStart("web-2", "n1"), "Running");
  SimStats st = k.sim.stats();
  EXPECT_EQ(st.admission_refusals, 1u);
  EXPECT_EQ(st.admission_refusal_reasons["NodePorts"], 1u);
}

TEST(KubeletAdmissionTest, AnEvictedPodHoldsItsNodeUntilItIsDeleted) {
  Kubelet k;
  k.AddNode(NodeBuilder("n1").Allocatable("4", "32Gi"));
  k.AddJob("a", {WithHostPort(Pod("a", "a", "3"), 8080)});
  k.AddJob("b", {WithHostPort(Pod("b", "b", "3"), 8080)});
  k.AddJob("c", {WithHostPort(Pod("c", "c", "3"), 8080)});
  k.Load();
  ASSERT_EQ(k.BindAndStart("a", "n1"), "Running");
  ASSERT_TRUE(k.Bind("b", "n1").ok());
  k.clock->Advance(500ms);
  auto a = k.sim.GetPod("ml", "a");
  ASSERT_TRUE(k.sim.Evict(**a, "preempted").ok());  // deleted after the 1 s grace
  k.clock->Advance(500ms);                          // b starts while a is terminating
  EXPECT_EQ(k.Phase("b"), "Failed");
  EXPECT_EQ(k.Refusal("b")->reason, "OutOfcpu");
  EXPECT_EQ(k.sim.node_requests("n1").milli_cpu(), 3000);
  k.clock->Advance(500ms);
  EXPECT_EQ(k.Phase("a"), "Pending");  // recreated by its job controller, holding nothing
  EXPECT_EQ(k.sim.node_requests("n1"), Resource());
  EXPECT_EQ(k.BindAndStart("c", "n1"), "Running");
  EXPECT_EQ(k.sim.node_requests("n1").milli_cpu(), 3000);
}

TEST(KubeletAdmissionTest, RequestsBeyondTheAllocatableAreRefusedPerResource) {
  Kubelet k;
  k.AddNode(NodeBuilder("n1").Allocatable("8", "32Gi"));
  k.AddNode(NodeBuilder("small").Allocatable("8", "32Gi", "2"));
  k.AddNode(NodeBuilder("gpu").Allocatable(
      Resources({{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "2"}})));
  k.AddJob("a", {Pod("a", "a", "4")});
  k.AddJob("b", {Pod("b", "b", "3500m")});
  k.AddJob("c", {Pod("c", "c", "1")});
  k.AddJob("d", {Pod("d", "d", "500m")});
  k.AddJob("mem", {Pod("mem", "mem", "", "40Gi")});
  for (const char* name : {"p1", "p2", "p3"}) k.AddJob(name, {Pod(name, name, "100m")});
  k.AddJob(
      "gpu-3",
      {PodBuilder("ml", "gpu-3").Group("gpu-3").Container(Resources({{"nvidia.com/gpu", "3"}})).Build()});
  k.AddJob(
      "gpu-2",
      {PodBuilder("ml", "gpu-2").Group("gpu-2").Container(Resources({{"nvidia.com/gpu", "2"}})).Build()});
  k.AddJob("gpu-elsewhere", {PodBuilder("ml", "gpu-elsewhere")
                                 .Group("gpu-elsewhere")
                                 .Container(Resources({{"nvidia.com/gpu", "1"}}))
                                 .Build()});
  k.Load();

  EXPECT_EQ(k.BindAndStart("a", "n1"), "Running");
  EXPECT_EQ(k.BindAndStart("b", "n1"), "Running");
  EXPECT_EQ(k.BindAndStart("c", "n1"), "Failed");
  auto c = k.Refusal("c");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->reason, "OutOfcpu");
  EXPECT_EQ(c->message,
            "Pod Node didn't have enough resource: cpu, requested: 1000, used: 7500, capacity: 8000");
  EXPECT_EQ(k.BindAndStart("d", "n1"), "Running");  // exactly full
  EXPECT_EQ(k.sim.node_requests("n1").milli_cpu(), 8000);
  EXPECT_EQ(k.BindAndStart("mem", "small"), "Failed");
  EXPECT_EQ(k.Refusal("mem")->reason, "OutOfmemory");

  EXPECT_EQ(k.BindAndStart("p1", "small"), "Running");
  EXPECT_EQ(k.BindAndStart("p2", "small"), "Running");
  EXPECT_EQ(k.BindAndStart("p3", "small"), "Failed");
  EXPECT_EQ(k.Refusal("p3")->reason, "OutOfpods");
  EXPECT_EQ(k.Refusal("p3")->message,
            "Pod Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2");

  EXPECT_EQ(k.BindAndStart("gpu-3", "gpu"), "Failed");
  EXPECT_EQ(k.Refusal("gpu-3")->reason, "OutOfnvidia.com/gpu");
  EXPECT_EQ(k.Refusal("gpu-3")->message,
            "Pod Node didn't have enough resource: nvidia.com/gpu, requested: 3, used: 0, capacity: 2");
  EXPECT_EQ(k.BindAndStart("gpu-2", "gpu"), "Running");
  // A node that lists no GPUs has none to give (the kubelet would leave it to an extender).
  EXPECT_EQ(k.BindAndStart("gpu-elsewhere", "n1"), "Failed");
  EXPECT_EQ(k.Refusal("gpu-elsewhere")->reason, "OutOfnvidia.com/gpu");

  SimStats st = k.sim.stats();
  EXPECT_EQ(st.admission_refusals, 5u);
  EXPECT_EQ(st.admission_refusal_reasons,
            (std::map<std::string, uint64_t>{
                {"OutOfcpu", 1}, {"OutOfmemory", 1}, {"OutOfnvidia.com/gpu", 2}, {"OutOfpods", 1}}));
  EXPECT_EQ(st.admission_refusal_examples.size(), kAdmissionRefusalExamples);
  // Every admitted pod finishes: every node gives back what they held.
  k.clock->Advance(20s);
  EXPECT_TRUE(k.sim.AllJobsFinished());
  for (const char* node : {"n1", "small", "gpu"}) EXPECT_EQ(k.sim.node_requests(node), Resource()) << node;
}

TEST(KubeletAdmissionTest, UntoleratedNoScheduleAndNoExecuteTaintsAreRefused) {
  Kubelet k;
  k.AddNode(NodeBuilder("tainted").Allocatable("8", "32Gi").Taint("dedicated", "gpu", "NoSchedule"));
  k.AddNode(NodeBuilder("draining").Allocatable("8", "32Gi").Taint("maintenance", "", "NoExecute"));
  k.AddNode(NodeBuilder("soft").Allocatable("8", "32Gi").Taint("spot", "true", "PreferNoSchedule"));
  k.AddJob("plain", {Pod("plain", "plain")});
  k.AddJob("evicted", {Pod("evicted", "evicted")});
  k.AddJob("prefer", {Pod("prefer", "prefer")});
  k.Load();

  EXPECT_EQ(k.BindAndStart("plain", "tainted"), "Failed");
  EXPECT_EQ(k.Refusal("plain")->reason, "TaintToleration");
  EXPECT_EQ(k.Refusal("plain")->message, "Pod Predicate TaintToleration failed");
  EXPECT_EQ(k.BindAndStart("evicted", "draining"), "Failed");
  EXPECT_EQ(k.Refusal("evicted")->reason, "TaintToleration");
  EXPECT_EQ(k.BindAndStart("prefer", "soft"), "Running");  // PreferNoSchedule is only a score
}

TEST(KubeletAdmissionTest, TolerationsLetPodsOntoTaintedNodes) {
  Kubelet k;
  k.AddNode(NodeBuilder("tainted").Allocatable("8", "32Gi").Taint("dedicated", "gpu", "NoSchedule"));
  k.AddNode(NodeBuilder("draining").Allocatable("8", "32Gi").Taint("maintenance", "", "NoExecute"));
  auto tolerating = [](const std::string& name, k8s::Toleration t) {
    k8s::Pod p = Pod(name, name);
    p.spec.tolerations.mut().push_back(std::move(t));
    return p;
  };
  k.AddJob("equal", {tolerating("equal", Tolerate("dedicated", "Equal", "gpu", "NoSchedule"))});
  k.AddJob("wrong-value", {tolerating("wrong-value", Tolerate("dedicated", "Equal", "cpu", "NoSchedule"))});
  k.AddJob("exists", {tolerating("exists", Tolerate("maintenance", "Exists", "", ""))});
  k.AddJob("wrong-effect", {tolerating("wrong-effect", Tolerate("maintenance", "Exists", "", "NoSchedule"))});
  k.Load();

  EXPECT_EQ(k.BindAndStart("equal", "tainted"), "Running");
  EXPECT_EQ(k.BindAndStart("wrong-value", "tainted"), "Failed");
  EXPECT_EQ(k.Refusal("wrong-value")->reason, "TaintToleration");
  EXPECT_EQ(k.BindAndStart("exists", "draining"), "Running");  // every effect
  EXPECT_EQ(k.BindAndStart("wrong-effect", "draining"), "Failed");
  EXPECT_EQ(k.sim.stats().admission_refusal_reasons,
            (std::map<std::string, uint64_t>{{"TaintToleration", 2}}));
}

// Through the cache: a pod the kubelet refuses is Failed in the cache too, its node's
// resources are free again, its job finishes, and the cache agrees with the cluster.
TEST(KubeletAdmissionTest, TheCacheFollowsARefusal) {
  auto clock = std::make_shared<FakeClock>();
  SimCluster sim(SimOptions{}, clock);
  RuntimeOptions o;
  o.inline_execution = true;
  CacheRuntime rt(o, clock, &sim, &sim, &sim, &sim, &sim);
  std::vector<std::string> refused;
  sim.SetDeliver([&](EventType t, const k8s::Object& obj) {
    if (Status s = rt.cache().Apply(t, obj); !s.ok()) refused.push_back(s.ToString());
  });
  rt.Run();
  SimWorkload w;
  w.nodes.push_back(NodeBuilder("n1").Allocatable("8", "32Gi").Label("zone", "a").Ptr());
  k8s::Pod p = Pod("train", "train-0", "2");
  p.spec.node_selector["zone"] = "b";
  SimJob job;
  job.pod_group = PodGroupBuilder("ml", "train").MinMember(1).Ptr();
  job.pods.push_back(std::make_shared<const k8s::Pod>(p));
  job.run_time = 10s;
  w.jobs.push_back(job);
  sim.Load(w);
  auto run = [&](Duration d) {
    for (Duration t{}; t < d; t += 20ms) {
      clock->Advance(20ms);
      rt.RunDueWorkInline();
    }
  };
  run(100ms);
  ASSERT_TRUE(rt.Bind("ml/train-0", "n1").ok());
  run(1100ms);
  EXPECT_EQ((*sim.GetPod("ml", "train-0"))->status.phase, "Failed");
  auto dump = nlohmann::json::parse(rt.cache().Dump());
  std::string status;
  for (auto& j : dump["jobs"])
    for (auto& t : j["tasks"])
      if (t["name"] == "train-0") status = t["status"];
  EXPECT_EQ(status, "Failed");
  EXPECT_EQ(sim.stats().jobs_finished, 1u);
  EXPECT_TRUE(rt.cache().CheckInvariants().ok());
  EXPECT_EQ(rt.cache().Compare(), "");
  run(1100ms);  // cleanup
  EXPECT_TRUE(sim.AllJobsFinished());
  EXPECT_FALSE(sim.GetPod("ml", "train-0").ok());
  EXPECT_EQ(rt.cache().Compare(), "");
  EXPECT_TRUE(refused.empty()) << refused.front();
  rt.Stop();
  sim.Shutdown();
}

}  // namespace
}  // namespace volcache::sim
