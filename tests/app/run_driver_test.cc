// `volcache run` end to end (app/run_driver.h): the simulator, the CacheRuntime and the reference
// Scheduler together, on a real trace slice and on a small manifest, with and without faults.
#include "app/run_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace volcache::app
