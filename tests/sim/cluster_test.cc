// The embedded simulated cluster: workload loaders over the real traces, and the cluster's
// behaviour (arrival, bind, start, finish, cleanup, eviction, faults, lost watch events)
// driving a real CacheRuntime on a fake clock.
#include "sim/cluster.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "api/resource_list.h"
#include "cache/runtime.h"
#include "sim/workload.h"
#include "tests/testdata.h"

namespace volcache::sim {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string Traces() { return volcache::testing::SharedDataDir() + "/traces"; }

int64_t GpuMilli(const k8s::ResourceList& list) {
  for (const auto& [name, q] : list)
    if (name == "nvidia.com/gpu") return q.MilliValue();
  return 0;
}

TEST(WorkloadTest, PhillyGangSizesMatchTheTraceStatistics) {
  TraceOptions o;
  o.max_jobs = SIZE_MAX;
  auto w = LoadPhillyTrace(Traces(), o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->jobs.size(), 82247u);
  EXPECT_EQ(w->nodes.size(), 352u);
  EXPECT_EQ(w->queues.size(), 11u);
  // README: nodes needed at 8 GPUs per node — 1 for 81,958 jobs, 2 for 206, 3 for 7, 4 for 67,
  // 8 for 6, 16 for 3.
  std::map<size_t, int> by_tasks;
  for (const auto& j : w->jobs) {
    ++by_tasks[j.pods.size()];
    EXPECT_EQ(j.pod_group->spec.min_member, static_cast<int32_t>(j.pods.size()));
  }
  EXPECT_EQ(by_tasks, (std::map<size_t, int>{{1, 81958}, {2, 206}, {3, 7}, {4, 67}, {8, 6}, {16, 3}}));
  // Arrival order, starting at 0; a 12-GPU job is two tasks of 6 GPUs.
  EXPECT_EQ(w->jobs.front().submit, Duration::zero());
  for (size_t i = 1; i < w->jobs.size(); ++i) ASSERT_LE(w->jobs[i - 1].submit, w->jobs[i].submit);
  bool saw_twelve = false;
  for (const auto& j : w->jobs) {
    if (j.gpus_milli != 12000) continue;
    saw_twelve = true;
    ASSERT_EQ(j.pods.size(), 2u);
    EXPECT_EQ(GpuMilli(j.pods[0]->spec.containers[0].requests), 6000);
  }
  EXPECT_TRUE(saw_twelve);
  // Queue capability = nodes × 8 GPUs; weight = nodes.
  for (const auto& q : w->queues) {
    EXPECT_EQ(GpuMilli(q->spec.capability), int64_t{q->spec.weight} * 8000) << q->metadata.name;
  }
}

TEST(WorkloadTest, PhillySliceIsTimeScaled) {
  TraceOptions o;
  o.max_jobs = 100;
  o.skip = 1000;
  o.time_scale = 60;
  auto scaled = LoadPhillyTrace(Traces(), o);
  o.time_scale = 1;
  auto raw = LoadPhillyTrace(Traces(), o);
  ASSERT_TRUE(scaled.ok() && raw.ok());
  ASSERT_EQ(scaled->jobs.size(), 100u);
  EXPECT_EQ(scaled->jobs.front().submit, Duration::zero());
  const double ratio = std::chrono::duration<double>(raw->jobs.back().submit).count() /
                       std::chrono::duration<double>(scaled->jobs.back().submit).count();
  EXPECT_NEAR(ratio, 60.0, 0.01);
}

TEST(WorkloadTest, AlibabaNodesAndPodsMatchTheTraceStatistics) {
  TraceOptions o;
  o.max_jobs = SIZE_MAX;
  auto w = LoadAlibabaTrace(Traces(), o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->nodes.size(), 1523u);
  int64_t gpus = 0;
  for (const auto& n : w->nodes) gpus += GpuMilli(n->status.allocatable);
  EXPECT_EQ(gpus, 6212 * 1000);  // README: 6212 GPUs
  EXPECT_EQ(w->jobs.size(), 8152u);
  int fractional = 0;
  for (const auto& j : w->jobs) {
    ASSERT_EQ(j.pods.size(), 1u);
    int64_t g = GpuMilli(j.pods[0]->spec.containers[0].requests);
    if (g > 0 && g < 1000) ++fractional;
  }
  EXPECT_EQ(fractional, 3078);  // README: 3078 one-GPU pods share a GPU
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/volcache-sim-XXXXXX.yaml";
    int fd = mkstemps(name, 5);
    path_ = name;
    std::FILE* f = fdopen(fd, "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr const char* kManifest = R"(apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team}
spec: {weight: 2}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train
  namespace: ml
  annotations: {volcache.io/sim-submit: 2s, volcache.io/sim-duration: 10s}
spec: {minMember: 2, queue: team}
---
apiVersion: v1
kind: Pod
metadata: {name: train-0, namespace: ml, annotations: {scheduling.k8s.io/group-name: train}}
spec: {schedulerName: volcano, containers: [{name: m, resources: {requests: {cpu: "2", memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: train-1, namespace: ml, annotations: {scheduling.k8s.io/group-name: train}}
spec: {schedulerName: volcano, containers: [{name: m, resources: {requests: {cpu: "2", memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: lone, namespace: ml}
spec: {schedulerName: volcano, containers: [{name: m, resources: {requests: {cpu: "1"}}}]}
)";

TEST(WorkloadTest, ManifestsGroupPodsAndReadTheSimulationAnnotations) {
  TempFile f(kManifest);
  auto w = LoadWorkload(f.path(), TraceOptions{});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->nodes.size(), 1u);
  EXPECT_EQ(w->queues.size(), 1u);
  ASSERT_EQ(w->jobs.size(), 2u);
  // The bare pod is its own gang of one, arriving first.
  EXPECT_EQ(w->jobs[0].pod_group->metadata.name, "lone");
  EXPECT_EQ(w->jobs[0].pods.size(), 1u);
  EXPECT_EQ(w->jobs[1].pod_group->metadata.name, "train");
  EXPECT_EQ(w->jobs[1].pods.size(), 2u);
  EXPECT_EQ(w->jobs[1].submit, 2s);
  EXPECT_EQ(w->jobs[1].run_time, 10s);
}

TEST(WorkloadTest, BadInputNamesTheObjectAndField) {
  std::string bad_duration = kManifest;
  bad_duration.replace(bad_duration.find("sim-duration: 10s"), 17, "sim-duration: soon");
  TempFile a(bad_duration);
  auto w = LoadWorkload(a.path(), TraceOptions{});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("PodGroup ml/train"));
  EXPECT_THAT(w.status().message(), HasSubstr("volcache.io/sim-duration"));

  std::string orphan = kManifest;
  orphan.replace(
      orphan.find(
          "group-name: train}}\nspec: {schedulerName: volcano, containers: [{name: m, resources: {requests: "
          "{cpu: \"2\", memory: 1Gi}}}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: lone"),
      16, "group-name: nope");
  TempFile b(orphan);
  w = LoadWorkload(b.path(), TraceOptions{});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("Pod ml/train-1"));
  EXPECT_THAT(w.status().message(), HasSubstr("no PodGroup ml/nope"));

  EXPECT_FALSE(LoadWorkload("trace:nope", TraceOptions{}).ok());
  EXPECT_FALSE(LoadWorkload("/nonexistent/workload.yaml", TraceOptions{}).ok());
}

TEST(WorkloadTest, NegativeQuantitiesAreRefusedNamingTheObjectAndField) {
  struct Case {
    std::string from, to, want;
  };
  const std::vector<Case> cases = {
      {"requests: {cpu: \"1\"}", "requests: {cpu: \"-1\"}",
       "Pod ml/lone: spec.containers[0].resources.requests[cpu]: negative quantity -1"},
      {"memory: 32Gi", "memory: -32Gi", "Node n1: status.allocatable[memory]: negative quantity"},
      {"spec: {weight: 2}", "spec: {weight: 2, capability: {cpu: \"-4\"}}",
       "Queue team: spec.capability[cpu]"},
  };
  for (const auto& c : cases) {
    std::string text = kManifest;
    ASSERT_NE(text.find(c.from), std::string::npos) << c.from;
    text.replace(text.find(c.from), c.from.size(), c.to);
    TempFile f(text);
    auto w = LoadWorkload(f.path(), TraceOptions{});
    ASSERT_FALSE(w.ok()) << c.to;
    EXPECT_THAT(w.status().message(), HasSubstr(c.want));
  }
}

TEST(WorkloadTest, PodWithoutSchedulerNameGetsTheApiServersDefaultAndIsRefused) {
  std::string text = kManifest;
  const std::string ours =
      "spec: {schedulerName: volcano, containers: [{name: m, resources: {requests: {cpu: \"1\"}}}]}";
  ASSERT_NE(text.find(ours), std::string::npos);
  text.replace(text.find(ours), ours.size(),
               "spec: {containers: [{name: m, resources: {requests: {cpu: \"1\"}}}]}");
  TempFile f(text);
  auto w = LoadWorkload(f.path(), TraceOptions{});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("Pod ml/lone: spec.schedulerName is \"default-scheduler\""));
  EXPECT_THAT(w.status().message(), HasSubstr("set spec.schedulerName: volcano"));
  // Bound to a node, the same pod is a foreign pod the cluster simply runs.
  text.replace(text.find("spec: {containers"), 7, "spec: {nodeName: n1, ");
  TempFile g(text);
  EXPECT_TRUE(LoadWorkload(g.path(), TraceOptions{}).ok());
}

TEST(WorkloadTest, ASliceWithNoJobsIsRefused) {
  TraceOptions o;
  o.skip = 1000000;
  auto w = LoadWorkload("trace:philly", o);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("--skip 1000000 --jobs 1000 selects no jobs: the trace has"));
  TempFile empty("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n");
  w = LoadWorkload(empty.path(), TraceOptions{});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("no PodGroups or Pods to run"));
}

TEST(WorkloadTest, ParseTopologyNamesWhatIsWrong) {
  auto t = ParseTopology("racks:8,spines:4");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rack_nodes, 8);
  EXPECT_EQ(t->spine_racks, 4);
  EXPECT_EQ(ParseTopology("racks:3")->spine_racks, 0);
  for (const auto& [spec, want] : std::vector<std::pair<std::string, std::string>>{
           {"", "racks:N is required"},
           {"spines:4", "racks:N is required"},
           {"racks:0", "racks: \"0\" is not a whole number >= 1"},
           {"racks:x", "racks: \"x\" is not a whole number >= 1"},
           {"racks:8,spines:", "spines: \"\" is not a whole number >= 1"},
           {"racks:8,racks:2", "\"racks:2\" is not racks:N or spines:M"},
           {"racks:8,pods:2", "\"pods:2\" is not racks:N or spines:M"}}) {
    auto r = ParseTopology(spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_THAT(r.status().message(), HasSubstr(want)) << spec;
    EXPECT_THAT(r.status().message(), HasSubstr("topology \"" + spec + "\"")) << spec;
  }
}

TEST(WorkloadTest, AddTopologyBuildsRacksAndSpinesInNodeNameOrderAndConstrainsGangs) {
  TempFile f(kManifest);
  auto w = LoadWorkload(f.path(), TraceOptions{});
  ASSERT_TRUE(w.ok());
  for (const char* name : {"n4", "n0", "n3", "n2"}) {
    auto n = std::make_shared<k8s::Node>(*w->nodes[0]);
    n->metadata.name = name;
    w->nodes.push_back(n);
  }
  TopologyOptions t{.rack_nodes = 2, .spine_racks = 2, .mode = "hard", .highest_tier = 1};
  ASSERT_TRUE(AddTopology(t, &*w).ok());
  std::vector<std::string> got;
  for (const auto& hn : w->hypernodes) {
    std::string members;
    for (const auto& m : hn->spec.members) members += " " + m.name_or_pattern;
    got.push_back(
        fmt::format("{} tier {} {}:{}", hn->metadata.name, hn->spec.tier, hn->spec.tier_name, members));
  }
  EXPECT_THAT(got, ::testing::ElementsAre("rack-0 tier 1 rack: n0 n1", "rack-1 tier 1 rack: n2 n3",
                                          "rack-2 tier 1 rack: n4", "spine-0 tier 2 spine: rack-0 rack-1",
                                          "spine-1 tier 2 spine: rack-2"));
  for (const SimJob& job : w->jobs) {
    const auto& nt = job.pod_group->spec.network_topology();
    if (job.pod_group->spec.min_member > 1) {
      ASSERT_TRUE(nt.has_value()) << job.pod_group->metadata.name;
      EXPECT_EQ(nt->mode, "hard");
      EXPECT_EQ(nt->highest_tier_allowed, 1);
    } else {
      EXPECT_FALSE(nt.has_value()) << job.pod_group->metadata.name;  // the lone pod
    }
  }
  EXPECT_THAT(AddTopology(t, &*w).message(), HasSubstr("already has 5 HyperNodes"));
  SimWorkload empty;
  EXPECT_THAT(AddTopology({.rack_nodes = 1, .mode = "strict"}, &empty).message(),
              HasSubstr("topology mode \"strict\""));
}

// A CacheRuntime (inline, fake clock) fed by the simulator's watch.
struct Rig {
  explicit Rig(SimOptions so = {}) : sim(so, clock) {
    RuntimeOptions o;
    o.inline_execution = true;
    rt = std::make_unique<CacheRuntime>(o, clock, &sim, &sim, &sim, &sim, &sim);
    sim.SetDeliver([this](EventType t, const k8s::Object& obj) {
      Status s = rt->cache().Apply(t, obj);
      if (!s.ok()) refused.push_back(s.ToString());
    });
    rt->Run();
  }
  ~Rig() {
    rt->Stop();
    sim.Shutdown();
  }
  void Load(const std::string& manifest) {
    TempFile f(manifest);
    auto w = LoadWorkload(f.path(), TraceOptions{});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    sim.Load(*w);
  }
  // Advances in 20 ms steps, running due work after each.
  void Run(Duration d) {
    for (Duration t{}; t < d; t += 20ms) {
      clock->Advance(20ms);
      rt->RunDueWorkInline();
    }
  }
  std::string TaskStatus(const std::string& job, const std::string& name) {
    auto d = nlohmann::json::parse(rt->cache().Dump());
    for (auto& j : d["jobs"])
      if (j["uid"] == job)
        for (auto& t : j["tasks"])
          if (t["name"] == name) return t["status"];
    return "";
  }

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  SimCluster sim;
  std::unique_ptr<CacheRuntime> rt;
  std::vector<std::string> refused;
};

constexpr const char* kStorage = R"(
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
  labels: {topology.kubernetes.io/zone: zone-a}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disks/ssd1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ml}
spec: {storageClassName: local, volumeName: pv-1, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch}
spec: {storageClassName: local}
status: {phase: Pending}
)";

// A manifest's StorageClasses, PersistentVolumes and PersistentVolumeClaims reach the cache
// before any job arrives (the session's volume filters read them from the snapshot).
TEST(SimClusterTest, ManifestStorageObjectsReachTheCache) {
  const std::string manifest = std::string(kManifest) + kStorage;
  TempFile f(manifest);
  auto w = LoadWorkload(f.path(), TraceOptions{});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->storage_classes.size(), 1u);
  ASSERT_EQ(w->persistent_volumes.size(), 1u);
  ASSERT_EQ(w->persistent_volume_claims.size(), 2u);
  EXPECT_EQ(w->persistent_volumes[0]->metadata.uid, "sim-pv-pv-1");
  EXPECT_EQ(w->persistent_volume_claims[1]->metadata.namespace_, "default");  // as for pods
  EXPECT_EQ(w->persistent_volume_claims[1]->metadata.resource_version, "1");

  Rig r;
  r.Load(manifest);
  r.Run(100ms);
  EXPECT_TRUE(r.refused.empty()) << r.refused[0];
  auto snap = r.rt->cache().Snapshot();
  const VolumeInfo& v = *snap->volumes;
  ASSERT_EQ(v.classes.count("local"), 1u);
  EXPECT_EQ(v.classes.at("local")->volume_binding_mode, "WaitForFirstConsumer");
  ASSERT_EQ(v.volumes.count("pv-1"), 1u);
  EXPECT_EQ(v.volumes.at("pv-1")->metadata.labels.at("topology.kubernetes.io/zone"), "zone-a");
  ASSERT_EQ(v.claims.count("ml/data"), 1u);
  EXPECT_EQ(v.claims.at("ml/data")->volume_name, "pv-1");
  ASSERT_EQ(v.claims.count("default/scratch"), 1u);
  EXPECT_EQ(v.claims.at("default/scratch")->phase, "Pending");
}

TEST(SimClusterTest, JobLifecycleArrivalBindStartFinishCleanup) {
  Rig r;
  r.Load(kManifest);
  r.Run(100ms);
  EXPECT_EQ(r.rt->cache().num_nodes(), 1u);
  EXPECT_EQ(r.TaskStatus("ml/lone", "lone"), "Pending");
  EXPECT_EQ(r.TaskStatus("ml/train", "train-0"), "");  // arrives at 2 s
  r.Run(2s);
  EXPECT_EQ(r.TaskStatus("ml/train", "train-0"), "Pending");
  ASSERT_TRUE(r.rt->Bind("ml/train-0", "n1").ok());
  ASSERT_TRUE(r.rt->Bind("ml/train-1", "n1").ok());
  r.Run(40ms);  // the bind tick, then the watch delivers nodeName
  EXPECT_EQ(r.TaskStatus("ml/train", "train-0"), "Bound");
  EXPECT_FALSE(r.rt->cache().IsAssumed("ml/train-0"));
  r.Run(1s);  // the kubelet starts it
  EXPECT_EQ(r.TaskStatus("ml/train", "train-1"), "Running");
  auto st = r.sim.stats();
  EXPECT_EQ(st.binds, 2u);
  EXPECT_EQ(st.pod_starts, 2u);
  EXPECT_EQ(st.recorded_events["Scheduled"], 2u);
  r.Run(10s);  // run time
  EXPECT_EQ(r.sim.stats().jobs_finished, 1u);
  r.Run(1100ms);  // cleanup
  EXPECT_EQ(r.TaskStatus("ml/train", "train-0"), "");
  auto jobs = r.sim.jobs();
  auto train =
      std::find_if(jobs.begin(), jobs.end(), [](const JobRecord& j) { return j.name == "ml/train"; });
  ASSERT_NE(train, jobs.end());
  ASSERT_TRUE(train->all_started && train->finished);
  EXPECT_EQ(*train->finished - *train->all_started, 10s);
  EXPECT_TRUE(r.rt->cache().CheckInvariants().ok());
  EXPECT_EQ(r.rt->cache().Compare(), "");
  EXPECT_TRUE(r.refused.empty()) << r.refused.front();
  EXPECT_EQ(r.sim.running_requests().milli_cpu(), 0);
}

TEST(SimClusterTest, InjectedBindFaultsLeaveTheTaskPending) {
  SimOptions so;
  so.bind_error_rate = 1.0;
  Rig r(so);
  r.Load(kManifest);
  r.Run(100ms);
  ASSERT_TRUE(r.rt->Bind("ml/lone", "n1").ok());
  r.Run(100ms);
  EXPECT_EQ(r.sim.stats().bind_faults, 1u);
  EXPECT_EQ(r.TaskStatus("ml/lone", "lone"), "Pending");
  EXPECT_EQ(r.rt->counters().binds_failed, 1u);
  auto pod = r.sim.GetPod("ml", "lone");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)->spec.node_name, "");
  ASSERT_FALSE((*pod)->status.conditions.empty());  // the SchedulerError condition was written
  EXPECT_EQ((*pod)->status.conditions.back().reason, "SchedulerError");
  EXPECT_EQ(r.rt->cache().Compare(), "");
}

TEST(SimClusterTest, LostWatchEventsArriveWithTheNextRelist) {
  SimOptions so;
  so.watch_drop_rate = 1.0;
  so.relist_period = 5s;
  Rig r(so);
  r.Load(kManifest);
  r.Run(1s);
  EXPECT_EQ(r.rt->cache().num_nodes(), 0u);
  EXPECT_GT(r.sim.stats().events_dropped, 0u);
  r.Run(4100ms);
  EXPECT_EQ(r.rt->cache().num_nodes(), 1u);
  EXPECT_EQ(r.TaskStatus("ml/train", "train-0"), "Pending");
  EXPECT_EQ(r.sim.stats().relists, 1u);
}

TEST(SimClusterTest, EvictedPodIsDeletedAndRecreatedPending) {
  Rig r;
  r.Load(kManifest);
  r.Run(100ms);
  ASSERT_TRUE(r.rt->Bind("ml/lone", "n1").ok());
  r.Run(1100ms);
  ASSERT_EQ(r.TaskStatus("ml/lone", "lone"), "Running");
  auto before = r.sim.GetPod("ml", "lone");
  ASSERT_TRUE(r.rt->Evict("ml/lone", "preempted").ok());
  r.Run(40ms);
  EXPECT_EQ(r.TaskStatus("ml/lone", "lone"), "Releasing");
  r.Run(1100ms);
  EXPECT_EQ(r.TaskStatus("ml/lone", "lone"), "Pending");
  auto after = r.sim.GetPod("ml", "lone");
  ASSERT_TRUE(after.ok());
  EXPECT_NE((*after)->metadata.uid, (*before)->metadata.uid);
  EXPECT_EQ(r.sim.stats().evictions, 1u);
  EXPECT_EQ(r.sim.running_requests().milli_cpu(), 0);
  EXPECT_TRUE(r.rt->cache().CheckInvariants().ok());
  EXPECT_EQ(r.rt->cache().Compare(), "");
}

}  // namespace
}  // namespace volcache::sim
