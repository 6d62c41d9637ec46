// `volcache run` end to end (app/run_driver.h): the simulator, the CacheRuntime and the reference
// Scheduler together, on a real trace slice and on a small manifest, with and without faults.
#include "app/run_driver.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "api/task_info.h"
#include "tests/testdata.h"

namespace volcache::app {
namespace {

using namespace std::chrono_literals;

RunOptions PhillySlice(size_t jobs) {
  RunOptions o;
  o.workload = "trace:philly";
  o.trace.max_jobs = jobs;
  o.trace.skip = 20000;
  o.trace.arrival_scale = 10;
  o.trace.cluster_scale = 0.1;
  o.duration = 20min;
  return o;
}

TEST(SimRunTest, PhillySliceRunsCleanAndReportsConsistently) {
  setenv("VOLCACHE_DATA_DIR", volcache::testing::SharedDataDir().c_str(), 1);
  SimRun run(PhillySlice(300));
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  EXPECT_TRUE(r.errors.empty()) << r.ToText();
  EXPECT_EQ(r.jobs, 300u);
  EXPECT_EQ(r.jobs_finished + r.jobs_running + r.jobs_pending, r.jobs);
  EXPECT_GT(r.jobs_finished, 250u);  // a 20-minute window holds all but the longest jobs
  EXPECT_GE(r.binds, r.jobs_finished);
  EXPECT_EQ(r.bind_failures, 0u);
  EXPECT_GT(r.gpu_utilization, 0.0);
  EXPECT_LE(r.gpu_utilization, 1.0);
  EXPECT_EQ(r.sessions, 1200u);  // one per simulated second
  EXPECT_NEAR(r.simulated_seconds, 1200, 0.05);
  double fractions = 0;
  for (const auto& q : r.queues) fractions += q.gpu_fraction;
  EXPECT_NEAR(fractions, 1.0, 1e-9);
  EXPECT_LE(r.wait_s.p95, r.wait_s.max);
  auto j = nlohmann::json::parse(r.ToJson());
  EXPECT_EQ(j["jobs"]["total"], 300);
  EXPECT_TRUE(j["errors"].empty());
  EXPECT_EQ(j["cluster"]["binds"].get<uint64_t>(), r.sim.binds);
}

// Issue 11 defect 10, the `run` side: the simulator's sessions run on its own thread with
// inline execution, where a full bind channel is flushed by the pushing session instead of
// waiting for a tick. A channel of 2 contexts, far below what a session places, still binds
// everything the same run binds with the default channel.
TEST(SimRunTest, TinyBindChannelNeitherBlocksNorLosesBinds) {
  setenv("VOLCACHE_DATA_DIR", volcache::testing::SharedDataDir().c_str(), 1);
  RunOptions o = PhillySlice(100);
  o.duration = 5min;
  RunOptions tiny = o;
  tiny.runtime.bind_flow.channel_capacity = 2;
  SimRun a(o), b(tiny);
  ASSERT_TRUE(a.Load().ok());
  ASSERT_TRUE(b.Load().ok());
  RunReport ra = a.Run(), rb = b.Run();
  EXPECT_TRUE(rb.errors.empty()) << rb.ToText();
  EXPECT_GT(rb.binds, 0u);
  EXPECT_EQ(rb.binds, ra.binds);
  EXPECT_EQ(rb.bind_failures, 0u);
}

// Queue fairness on the Philly workload: while a queue is contended it holds the GPUs it
// deserves, and what it deserves follows its weight (8 GPUs per unit of weight: a virtual
// cluster's node count is both its weight and, × 8 GPUs, its capability).
TEST(SimRunTest, ContendedQueuesHoldTheirWeightedShare) {
  setenv("VOLCACHE_DATA_DIR", volcache::testing::SharedDataDir().c_str(), 1);
  RunOptions o = PhillySlice(1000);
  o.duration = 10min;
  SimRun run(o);
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  ASSERT_TRUE(r.errors.empty()) << r.ToText();
  int contended = 0;
  for (const auto& q : r.queues) {
    if (q.contended_sessions < 60) continue;
    ++contended;
    EXPECT_NEAR(q.deserved_gpus, 8.0 * q.weight, 0.5) << q.name;
    EXPECT_NEAR(q.allocated_gpus, q.deserved_gpus, 0.05 * q.deserved_gpus) << q.name;
  }
  EXPECT_GE(contended, 3) << r.ToText();
}

// Issue 13: the Philly VCs on one shared pool, the session enqueuing, reclaiming, preempting
// and pipelining, every eviction plan checked (CheckEvictionPlan: gangs kept at minAvailable
// or evicted whole, no queue reclaimed below its share). Reclaim evicts through the cache and
// buys fairness: Jain's index of held/deserved and the convergence after bursts, against the
// same run without reclaim.
TEST(SimRunTest, SharedPoolReclaimMakesSharesFollowWeightsWithoutBreakingGangs) {
  setenv("VOLCACHE_DATA_DIR", volcache::testing::SharedDataDir().c_str(), 1);
  auto shared = [](bool reclaim) {
    RunOptions o = PhillySlice(1500);
    o.trace.arrival_scale = 60;
    o.trace.shared_pool = true;
    o.duration = 10min;
    o.scheduler.enqueue = o.scheduler.preempt = true;
    o.scheduler.reclaim = reclaim;
    o.scheduler.session.pipeline = true;
    o.scheduler.check_evictions = true;
    SimRun run(o);
    EXPECT_TRUE(run.Load().ok());
    return run.Run();
  };
  const RunReport on = shared(true);
  const RunReport off = shared(false);
  ASSERT_TRUE(on.errors.empty()) << on.ToText();  // no rejected plan, cache invariants hold
  ASSERT_TRUE(off.errors.empty()) << off.ToText();
  EXPECT_GT(on.fairness.evictions_reclaim, 100u);
  EXPECT_EQ(on.fairness.evictions_reclaim + on.fairness.evictions_preempt, on.evictions);  // all executed
  EXPECT_EQ(off.fairness.evictions_reclaim, 0u);
  EXPECT_GT(on.fairness.enqueued, 1000u);
  EXPECT_GE(on.fairness.jain_index, 0.95) << on.ToText();
  EXPECT_LT(off.fairness.jain_index, on.fairness.jain_index) << off.ToText();
  EXPECT_LE(on.fairness.convergence_periods.p50, 3.0) << on.ToText();
  EXPECT_GT(off.fairness.convergence_periods.p50, on.fairness.convergence_periods.p50) << off.ToText();
  EXPECT_THAT(on.ToText(), ::testing::HasSubstr("fairness (enqueue on, reclaim on, preempt on)"));
  // The target's measure (contended cluster, queue demand above its share) is a subset of
  // the sessions with demand waiting; over these 10 minutes the queues it covers hold their
  // share within 10 %, except the queue of whole-node jobs (vc-ee9e8c), which stays below by the
  // fragmentation docs/BENCHMARKS.md describes (−9 % to −14 % here depending on when status
  // writes land; −21 % over the hour) — within 25 %.
  int over_share = 0, within_10 = 0;
  for (const auto& q : on.queues) {
    EXPECT_LE(q.over_share_sessions, q.contended_sessions) << q.name;
    EXPECT_LE(q.over_share_sessions, on.fairness.contended_sessions) << q.name;
    if (q.over_share_sessions < 60) continue;
    ++over_share;
    within_10 +=
        std::abs(q.over_share_held_gpus - q.over_share_deserved_gpus) <= 0.1 * q.over_share_deserved_gpus;
    EXPECT_NEAR(q.over_share_held_gpus, q.over_share_deserved_gpus, 0.25 * q.over_share_deserved_gpus)
        << q.name << "\n"
        << on.ToText();
  }
  EXPECT_GE(over_share, 4) << on.ToText();
  EXPECT_GE(within_10, over_share - 1) << on.ToText();
  // Deserved against held over time: a point a minute (10 minutes of 1 s sessions).
  for (const auto& q : on.queues) {
    if (q.contended_sessions == 0) continue;
    ASSERT_FALSE(q.share_series.empty()) << q.name;
    EXPECT_LE(q.share_series.size(), 10u) << q.name;
    EXPECT_EQ(q.share_series.front().session % kShareSeriesPeriod, 0u);
  }
}

TEST(SimRunTest, SameSeedSameRun) {
  setenv("VOLCACHE_DATA_DIR", volcache::testing::SharedDataDir().c_str(), 1);
  auto once = [] {
    RunOptions o = PhillySlice(150);
    o.sim.bind_error_rate = 0.2;
    o.sim.seed = 7;
    SimRun run(o);
    EXPECT_TRUE(run.Load().ok());
    auto j = nlohmann::json::parse(run.Run().ToJson());
    j.erase("wall_seconds");
    j.erase("snapshot_ms");
    j.erase("session_ms");
    j.erase("session_phase_ms_mean");
    return j.dump();
  };
  EXPECT_EQ(once(), once());
}

// Faults everywhere: binds failing and conflicting, watch events lost until the relist. The
// cache must converge: every job finishes, the invariants hold, and once the faults stop and
// a relist has run, the cache agrees with the cluster (the report's errors say otherwise).
TEST(SimRunTest, FaultsConverge) {
  setenv("VOLCACHE_DATA_DIR", volcache::testing::SharedDataDir().c_str(), 1);
  RunOptions o = PhillySlice(200);
  o.duration = Duration::zero();  // until every job finished
  o.trace.max_jobs = 200;
  o.sim.bind_error_rate = 0.1;
  o.sim.bind_conflict_rate = 0.05;
  o.sim.watch_drop_rate = 0.05;
  o.sim.relist_period = 10s;
  o.sim.seed = 3;
  SimRun run(o);
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  EXPECT_TRUE(r.all_finished) << r.ToText();
  EXPECT_TRUE(r.errors.empty()) << r.ToText();
  EXPECT_GT(r.sim.bind_faults + r.sim.bind_conflicts, 0u);
  EXPECT_GT(r.sim.events_dropped, 0u);
  EXPECT_GT(r.bind_failures, 0u);
  EXPECT_EQ(r.jobs_finished, 200u);
}

TEST(SimRunTest, BadWorkloadIsAnErrorNamingIt) {
  RunOptions o;
  o.workload = "/nonexistent/cluster.yaml";
  SimRun run(o);
  Status s = run.Load();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("/nonexistent/cluster.yaml"));
}

// Issue 14, the simulator: `--topology racks:2,spines:2` over four 4-CPU nodes makes rack-0
// {n0, n1} and rack-1 {n2, n3} under spine-0. Fillers hold n1 for 30 s and n3 for 10 s; gang g1
// (2 × 4 CPUs) arrives at 2 s, when only n0 and n2 are free (one per rack); gang g2 arrives at
// 40 s on an empty cluster. Without a constraint g1 spans both racks at once; hard mode with
// highestTierAllowed 1 makes it wait for rack-1; soft mode takes the racks apart (no one rack
// fits at 2 s) but keeps g2 in one rack.
std::string TopologyManifest() {
  std::string m;
  for (int i = 0; i < 4; ++i) {
    m += fmt::format(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: n{0}, labels: {{kubernetes.io/hostname: n{0}}}}}\n"
        "status:\n  allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n"
        "  conditions: [{{type: Ready, status: \"True\"}}]\n---\n",
        i);
  }
  auto job = [&](const std::string& name, int pods, const std::string& submit, const std::string& run,
                 const std::string& node) {
    m += fmt::format(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: {}\n  namespace: ml\n"
        "  annotations: {{volcache.io/sim-submit: {}, volcache.io/sim-duration: {}}}\nspec: {{minMember: "
        "{}}}\n---\n",
        name, submit, run, pods);
    for (int i = 0; i < pods; ++i) {
      m += fmt::format(
          "apiVersion: v1\nkind: Pod\nmetadata: {{name: {0}-{1}, namespace: ml, annotations: "
          "{{scheduling.k8s.io/group-name: {0}}}}}\nspec: {{schedulerName: volcano, {2}containers: [{{name: "
          "m, "
          "resources: {{requests: {{cpu: \"4\"}}}}}}]}}\n---\n",
          name, i, node.empty() ? "" : "nodeSelector: {kubernetes.io/hostname: " + node + "}, ");
    }
  };
  job("f1", 1, "0s", "30s", "n1");
  job("f3", 1, "0s", "10s", "n3");
  job("g1", 2, "2s", "10s", "");
  job("g2", 2, "40s", "10s", "");
  return m;
}

TopologyReport RunWithTopology(const std::string& path, const std::string& mode, int32_t tier) {
  RunOptions o;
  o.workload = path;
  auto t = sim::ParseTopology("racks:2,spines:2");
  EXPECT_TRUE(t.ok());
  o.topology = *t;
  o.topology.mode = mode;
  o.topology.highest_tier = tier;
  SimRun run(o);
  EXPECT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  EXPECT_TRUE(r.errors.empty()) << r.ToText();
  EXPECT_TRUE(r.all_finished) << r.ToText();
  return r.topology;
}

std::vector<std::pair<std::string, int32_t>> Spans(const TopologyReport& t) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (const auto& j : t.jobs) out.emplace_back(j.name, j.tier);
  return out;
}

TEST(SimRunTest, TopologyModesDecideWhetherGangsStayInOneRack) {
  const std::string path = ::testing::TempDir() + "/topology_run.yaml";
  { std::ofstream(path) << TopologyManifest(); }
  using P = std::pair<std::string, int32_t>;
  TopologyReport none = RunWithTopology(path, "none", 2);
  ASSERT_TRUE(none.enabled);
  EXPECT_THAT(Spans(none),
              ::testing::ElementsAre(P{"ml/f1", 1}, P{"ml/f3", 1}, P{"ml/g1", 2}, P{"ml/g2", 1}));
  EXPECT_EQ(none.gangs, 2u);
  EXPECT_EQ(none.gangs_in_one_rack, 1u);
  EXPECT_DOUBLE_EQ(none.gang_rack_share, 0.5);
  EXPECT_EQ(none.span_histogram, (std::map<int32_t, size_t>{{1, 3}, {2, 1}}));

  TopologyReport hard = RunWithTopology(path, "hard", 1);
  EXPECT_THAT(Spans(hard),
              ::testing::ElementsAre(P{"ml/f1", 1}, P{"ml/f3", 1}, P{"ml/g1", 1}, P{"ml/g2", 1}));
  EXPECT_EQ(hard.gangs_in_one_rack, 2u);
  EXPECT_DOUBLE_EQ(hard.gang_rack_share, 1.0);
  EXPECT_EQ(hard.span_histogram, (std::map<int32_t, size_t>{{1, 4}}));

  TopologyReport soft = RunWithTopology(path, "soft", 2);
  EXPECT_THAT(Spans(soft),
              ::testing::ElementsAre(P{"ml/f1", 1}, P{"ml/f3", 1}, P{"ml/g1", 2}, P{"ml/g2", 1}));
  EXPECT_DOUBLE_EQ(soft.gang_rack_share, 0.5);

  RunOptions plain;
  plain.workload = path;
  SimRun run(plain);
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  EXPECT_FALSE(r.topology.enabled);
  EXPECT_THAT(r.ToText(), ::testing::Not(::testing::HasSubstr("topology:")));
  EXPECT_FALSE(nlohmann::json::parse(r.ToJson()).contains("topology"));
  std::remove(path.c_str());
}

TEST(SimRunTest, TopologyReportInJsonAndText) {
  const std::string path = ::testing::TempDir() + "/topology_json.yaml";
  { std::ofstream(path) << TopologyManifest(); }
  RunOptions o;
  o.workload = path;
  o.topology = *sim::ParseTopology("racks:2,spines:2");
  o.topology.mode = "hard";
  o.topology.highest_tier = 1;
  SimRun run(o);
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  auto j = nlohmann::json::parse(r.ToJson());
  EXPECT_EQ(j["topology"]["gangs"], 2);
  EXPECT_EQ(j["topology"]["gangs_in_one_rack"], 2);
  EXPECT_EQ(j["topology"]["gang_rack_share"], 1.0);
  EXPECT_EQ(j["topology"]["span_histogram"], nlohmann::json::parse(R"({"1": 4})"));
  EXPECT_EQ(j["topology"]["jobs"][2],
            nlohmann::json::parse(R"({"name": "ml/g1", "min_member": 2, "nodes": 2, "tier": 1})"));
  EXPECT_THAT(r.ToText(),
              ::testing::HasSubstr(
                  "topology: 2 of 2 gang jobs placed within one rack (100.0%); jobs by span: tier 1: 4"));
  std::remove(path.c_str());
}

TEST(SimRunTest, TopologyOverAManifestWithHyperNodesIsRefused) {
  const std::string path = ::testing::TempDir() + "/topology_hn.yaml";
  {
    std::ofstream(path) << TopologyManifest()
                        << "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: r0}\n"
                           "spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: n0}}}, "
                           "{type: Node, selector: {exactMatch: {name: n1}}}]}\n";
  }
  RunOptions o;
  o.workload = path;
  {
    SimRun run(o);  // the manifest's own HyperNode: the report counts against it
    ASSERT_TRUE(run.Load().ok());
    RunReport r = run.Run();
    EXPECT_TRUE(r.errors.empty()) << r.ToText();
    ASSERT_TRUE(r.topology.enabled);
    // f1 ran on n1 (in r0); f3 on n3, in no HyperNode; the gangs ask for nothing.
    EXPECT_EQ(r.topology.jobs[0].tier, 1);
    EXPECT_EQ(r.topology.jobs[1].tier, 0);
  }
  o.topology = *sim::ParseTopology("racks:2");
  SimRun run(o);
  Status s = run.Load();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("already has 1 HyperNodes"));
  std::remove(path.c_str());
}

// The simulated kubelet's refusals are errors of the run. A pod whose nodeSelector no node
// matches waits (the scheduler leaves it alone); bound to n1 behind the scheduler's back (the
// scheduler's bug, in this test's hands), the kubelet refuses it, the job still finishes and
// the report says so in text and JSON.
TEST(SimRunTest, KubeletRefusalsAreReportedAsErrors) {
  const std::string path = ::testing::TempDir() + "/kubelet_refusal.yaml";
  {
    std::ofstream(path) << R"(apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: fine, namespace: ml}
spec: {schedulerName: volcano, containers: [{name: m, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: stray, namespace: ml}
spec: {schedulerName: volcano, nodeSelector: {zone: b}, containers: [{name: m, resources: {requests: {cpu: "1"}}}]}
)";
  }
  RunOptions o;
  o.workload = path;
  o.max_duration = 10min;
  SimRun* self = nullptr;
  bool bound = false;
  o.on_cycle = [&](const CycleStats&) {
    if (bound) return;
    auto pod = self->cluster().GetPod("ml", "stray");
    if (!pod.ok()) return;
    bound = true;
    if (!(*pod)->spec.node_name.empty()) return;  // a scheduler that ignores nodeSelector bound it
    auto task = TaskInfo::FromPod(*pod);
    ASSERT_TRUE(task.ok());
    BindContext ctx;
    ctx.task = *task;
    ctx.node_name = "n1";
    ASSERT_TRUE(self->cluster().Bind({&ctx}).front().ok());
  };
  SimRun run(o);
  self = &run;
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  EXPECT_TRUE(r.all_finished) << r.ToText();
  ASSERT_EQ(r.errors.size(), 1u) << r.ToText();
  EXPECT_EQ(r.errors[0],
            "kubelet refused 1 pod: 1 NodeAffinity (first: ml/stray on n1: NodeAffinity: Pod Predicate "
            "NodeAffinity failed)");
  EXPECT_THAT(r.ToText(), ::testing::HasSubstr("errors: 1\n  kubelet refused 1 pod: 1 NodeAffinity"));
  auto j = nlohmann::json::parse(r.ToJson());
  EXPECT_EQ(j["cluster"]["admission_refusals"], 1);
  EXPECT_EQ(j["cluster"]["admission_refusal_reasons"], nlohmann::json::parse(R"({"NodeAffinity": 1})"));
  EXPECT_EQ(j["errors"].size(), 1u);
  std::remove(path.c_str());
}

// examples/constraints.yaml: every job finishes where its constraints allow, and the kubelet
// refuses nothing. The volume jobs would run on n1 without their claims.
TEST(SimRunTest, TheConstraintsExampleRunsWhereItsConstraintsSay) {
  RunOptions o;
  o.workload = volcache::testing::ExamplesDir() + "/constraints.yaml";
  SimRun run(o);
  ASSERT_TRUE(run.Load().ok());
  RunReport r = run.Run();
  EXPECT_TRUE(r.errors.empty()) << r.ToText();
  EXPECT_TRUE(r.all_finished) << r.ToText();
  EXPECT_EQ(r.jobs_finished, 11u);
  EXPECT_EQ(r.sim.admission_refusals, 0u);
  std::map<std::string, std::set<std::string>> nodes;
  for (const sim::JobRecord& j : run.cluster().jobs()) nodes[j.name] = j.nodes;
  auto zone = [](const std::string& node) -> std::string { return node <= "n3" ? "zone-a" : "zone-b"; };
  EXPECT_THAT(nodes["demo/ssd"], ::testing::IsSubsetOf({"n1", "n2", "n4"}));
  EXPECT_THAT(nodes["demo/zone-b"], ::testing::IsSubsetOf({"n4", "n5"}));
  EXPECT_EQ(nodes["demo/web"].size(), 2u);        // one host port 8080 per node
  EXPECT_EQ(nodes["demo/allreduce"].size(), 3u);  // anti-affinity per hostname
  ASSERT_EQ(nodes["demo/cache"].size(), 1u);
  ASSERT_EQ(nodes["demo/client"].size(), 1u);
  EXPECT_EQ(zone(*nodes["demo/client"].begin()), zone(*nodes["demo/cache"].begin()));
  std::set<std::string> spread_zones;
  for (const auto& n : nodes["demo/spread"]) spread_zones.insert(zone(n));
  EXPECT_EQ(spread_zones.size(), 2u);
  EXPECT_EQ(nodes["demo/infra-agent"], (std::set<std::string>{"n6"}));
  EXPECT_EQ(nodes["demo/local-disk"], (std::set<std::string>{"n3"}));  // the local PV's node affinity
  ASSERT_EQ(nodes["demo/zonal-disk"].size(), 1u);
  EXPECT_EQ(zone(*nodes["demo/zonal-disk"].begin()), "zone-b");  // the PV's zone label (VolumeZone)
  for (const auto& [job, on] : nodes) {
    if (job == "demo/infra-agent") continue;
    EXPECT_FALSE(on.count("n6")) << job << " ran on the tainted node";
  }
}

}  // namespace
}  // namespace volcache::app
