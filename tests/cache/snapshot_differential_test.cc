// Differential tests for incremental snapshots (SPEC §3 "Snapshot"): one ClusterInfo kept
// across random event sequences and refreshed with UpdateSnapshot() must be observably
// identical to a fresh Snapshot() after every step — even when the "session" mutated its
// snapshot in between, materialized it, or the removal log overflowed — and a snapshot
// never changes because of later cache events (copy-on-write).
//
// Reproduce a failure with VOLCACHE_RANDOM_SEED=<seed> (and VOLCACHE_RANDOM_STEPS=<n>).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/cluster_info.h"
#include "api/quantity.h"
#include "api/resource_list.h"
#include "api/task_status.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "tests/fakes/random_cluster.h"

namespace volcache {
namespace {

using testing::RandomCluster;
using testing::RandomClusterOptions;
using testing::RandomStep;

// 4 seeds x 2,000 steps per run (each step compares two snapshots); fewer in Debug and
// sanitizer builds, where every comparison (a few full dumps) costs milliseconds.
constexpr uint64_t kSeeds[] = {0xd1ff0001, 0xd1ff0002, 0xd1ff0003, 0xd1ff0004};
constexpr bool kSlow = testing::kInstrumentedBuild;
constexpr int kStepsPerSeed = kSlow ? 750 : 2000;

std::vector<uint64_t> Seeds() {
  if (const char* env = std::getenv("VOLCACHE_RANDOM_SEED"); env && *env) {
    return {std::strtoull(env, nullptr, 0)};
  }
  return std::vector<uint64_t>(std::begin(kSeeds), std::end(kSeeds));
}

int Steps(int default_steps) {
  if (const char* env = std::getenv("VOLCACHE_RANDOM_STEPS"); env && *env) return std::atoi(env);
  return default_steps;
}

std::string DescribeTasks(const TaskTable& tasks) {
  std::vector<std::string> out;
  for (const auto& [k, t] : tasks) {
    out.push_back(std::string(k) + ":" + std::string(t.key()) + ":" + std::string(TaskStatusName(t.status)) +
                  ":" + t.node_name + ":" + t.resreq().ToString() + ":" + std::to_string(t.priority) + ":" +
                  (t.preemptable ? "p" : "-") + (t.best_effort ? "b" : "-") + ":" +
                  t.pod().metadata.resource_version);
  }
  std::sort(out.begin(), out.end());
  std::string s;
  for (const auto& x : out) s += x + ";";
  return s;
}

// What a session can observe of a node beyond the dump.
std::string DescribeNode(const NodeInfo& n) {
  std::string s =
      n.name() + " state=" + std::to_string(static_cast<int>(n.state().phase)) + "/" + n.state().reason +
      " rz=" + n.revocable_zone() + " cap={" + n.capacity().ToString() + "} future={" +
      n.FutureIdle().ToString() + "} ports=" + std::to_string(n.used_ports().size()) +
      " pvcs=" + std::to_string(n.pvc_ref_counts().size()) +
      " aff=" + std::to_string(n.pods_with_affinity()) + " images=" + std::to_string(n.images().size()) +
      " object=" + (n.node() ? n.node()->metadata.resource_version : "-") +
      " tasks=" + DescribeTasks(n.tasks());
  return s;
}

std::string DescribeJob(const JobInfo& j) {
  std::string s =
      j.uid() + " pg=" +
      (j.pod_group() ? j.pod_group()->metadata.uid + "@" + j.pod_group()->metadata.resource_version.str()
                     : "-") +
      " minres={" + j.min_resources().ToString() + "} created=" + std::to_string(j.creation_timestamp()) +
      " ready=" + std::to_string(j.ReadyTaskNum()) + " valid=" + std::to_string(j.ValidTaskNum()) +
      " fit=" + j.FitError() + " counts=";
  for (int i = 0; i < kTaskStatusCount; ++i)
    s += std::to_string(j.CountWithStatus(TaskStatusFromIndex(i))) + ",";
  for (const auto& [role, n] : j.task_min_available()) s += role + "=" + std::to_string(n) + ",";
  return s + " tasks=" + DescribeTasks(j.tasks());
}

// Everything a session can observe in a snapshot, compared field by field. Returns "" when
// equal, else the first difference.
std::string Diff(const ClusterInfo& got, const ClusterInfo& want) {
  std::string a = DumpClusterInfo(got);
  std::string b = DumpClusterInfo(want);
  if (a != b) return "dumps differ:\n  incremental: " + a + "\n  fresh:       " + b;
  if (got.revocable_nodes() != want.revocable_nodes()) return "revocable node sets differ";
  if (!(got.total_allocatable() == want.total_allocatable())) {
    return "total_allocatable differs: {" + got.total_allocatable().ToString() + "} vs {" +
           want.total_allocatable().ToString() + "}";
  }
  if (got.priority_classes != want.priority_classes) return "priority_classes differ";
  if (got.default_priority != want.default_priority) {
    return "default_priority " + std::to_string(got.default_priority) + " vs " +
           std::to_string(want.default_priority);
  }
  if (got.namespace_quotas != want.namespace_quotas) return "namespace_quotas differ";
  if (got.nodes().size() != want.nodes().size() || got.jobs().size() != want.jobs().size()) {
    return "object counts differ";
  }
  for (const auto& [name, n] : want.nodes()) {
    const NodeInfo* g = got.FindNode(name);
    if (!g) return "node " + name + " missing";
    std::string x = DescribeNode(*g), y = DescribeNode(*n);
    if (x != y) return "node differs:\n  incremental: " + x + "\n  fresh:       " + y;
  }
  for (const auto& [id, j] : want.jobs()) {
    const JobInfo* g = got.FindJob(id);
    if (!g) return "job " + id + " missing";
    std::string x = DescribeJob(*g), y = DescribeJob(*j);
    if (x != y) return "job differs:\n  incremental: " + x + "\n  fresh:       " + y;
  }
  for (const auto& [name, q] : want.queues) {
    auto it = got.queues.find(name);
    if (it == got.queues.end()) return "queue " + name + " missing";
    if (it->second.parent != q.parent || it->second.deserved != q.deserved ||
        it->second.guarantee != q.guarantee || it->second.queue != q.queue) {
      return "queue " + name + " differs";
    }
  }
  return "";
}

// What SPEC §3 says a snapshot holds, checked on the snapshot alone.
std::string CheckSnapshotRules(const ClusterInfo& snap) {
  Resource total;
  std::unordered_set<std::string> revocable;
  for (const auto& [name, n] : snap.nodes()) {
    if (!n->Ready()) return "node " + name + " is not Ready";
    if (n->name() != name) return "node " + name + " holds " + n->name();
    total.Add(n->allocatable());
    if (!n->revocable_zone().empty()) revocable.insert(name);
  }
  if (!(total == snap.total_allocatable()))
    return "total_allocatable is not the sum of the nodes' allocatable";
  if (revocable != snap.revocable_nodes())
    return "revocable nodes are not the Ready nodes with a revocable zone";
  std::vector<std::string> listed = snap.node_list();
  std::sort(listed.begin(), listed.end());
  std::vector<std::string> names;
  for (const auto& [name, _] : snap.nodes()) names.push_back(name);
  std::sort(names.begin(), names.end());
  if (listed != names) return "node_list is not a permutation of the nodes";
  for (const auto& [id, j] : snap.jobs()) {
    if (!j->pod_group()) return "job " + id + " has no PodGroup";
    if (!snap.queues.count(j->queue())) return "job " + id + " is in unknown queue " + j->queue();
    const std::string& pc = j->pod_group()->spec.priority_class_name;
    auto it = snap.priority_classes.find(pc);
    int32_t want = !pc.empty() && it != snap.priority_classes.end() ? it->second : snap.default_priority;
    if (j->priority() != want) {
      return "job " + id + " priority " + std::to_string(j->priority()) + ", its class '" + pc +
             "' implies " + std::to_string(want);
    }
  }
  return "";
}

// A fresh snapshot is the cache's own view filtered: every node and job it holds is
// identical, in the dump, to the cache's; it leaves out exactly the NotReady nodes and the
// jobs without a known queue (jobs without a PodGroup are checked by CheckSnapshotRules).
std::string CheckAgainstCacheDump(const ClusterInfo& snap, const SchedulerCache& cache) {
  nlohmann::json c = nlohmann::json::parse(cache.Dump());
  nlohmann::json d = nlohmann::json::parse(DumpClusterInfo(snap));
  std::set<std::string> queues;
  for (const auto& q : c["queues"]) queues.insert(q["name"].get<std::string>());
  if (c["queues"] != d["queues"]) return "queues differ from the cache's";
  std::map<std::string, nlohmann::json> snap_nodes, snap_jobs;
  for (const auto& n : d["nodes"]) snap_nodes[n["name"].get<std::string>()] = n;
  for (const auto& j : d["jobs"]) snap_jobs[j["uid"].get<std::string>()] = j;
  for (const auto& n : c["nodes"]) {
    const std::string name = n["name"].get<std::string>();
    auto it = snap_nodes.find(name);
    if (n["ready"].get<bool>() != (it != snap_nodes.end()))
      return "node " + name + " Ready/membership mismatch";
    if (it != snap_nodes.end() && it->second != n) return "node " + name + " differs from the cache's";
  }
  for (const auto& j : c["jobs"]) {
    const std::string id = j["uid"].get<std::string>();
    auto it = snap_jobs.find(id);
    if (it == snap_jobs.end()) continue;
    if (it->second != j) return "job " + id + " differs from the cache's";
    snap_jobs.erase(it);
  }
  if (!snap_jobs.empty()) return "snapshot holds job " + snap_jobs.begin()->first + " the cache does not";
  for (const auto& j : c["jobs"]) {
    if (!queues.count(j["queue"].get<std::string>()) && snap.FindJob(j["uid"].get<std::string>())) {
      return "job in an unknown queue in the snapshot";
    }
  }
  // The cache's node list minus the NotReady nodes, in the same order.
  std::vector<std::string> want;
  for (const auto& name : c["nodeList"]) {
    if (snap_nodes.count(name.get<std::string>())) want.push_back(name.get<std::string>());
  }
  if (want != snap.node_list()) return "node_list is not the cache's order restricted to Ready nodes";
  return "";
}

template <typename Map>
typename Map::const_iterator PickFrom(RandomCluster& rc, const Map& m) {
  auto it = m.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(rc.Uniform(m.size())));
  return it;
}

// The session plays with its snapshot the way a scheduling session does: tentative
// allocations on nodes, status changes in jobs, jobs dropped from consideration, and even
// its copies of the static tables. None of it may leak into the cache or survive a refresh.
std::string MutateSession(RandomCluster& rc, ClusterInfo& snap) {
  switch (rc.Uniform(6)) {
    case 0: {  // allocate a pending task on a node
      if (snap.jobs().empty() || snap.nodes().empty()) return "";
      const JobId id = PickFrom(rc, snap.jobs())->first;
      const std::string node = PickFrom(rc, snap.nodes())->first;
      const JobInfo* job = snap.FindJob(id);
      for (const auto& [uid, t] : job->tasks()) {
        if (t.status != TaskStatus::kPending) continue;
        TaskInfo alloc = t;
        alloc.node_name = node;
        alloc.status = rc.Chance(0.8) ? TaskStatus::kAllocated : TaskStatus::kPipelined;
        if (snap.MutableNode(node)->AddTask(alloc).ok()) {
          EXPECT_TRUE(snap.MutableJob(id)->UpdateTaskStatus(t.uid(), alloc.status).ok());
        }
        return "session allocates " + std::string(t.key()) + " on " + node;
      }
      return "";
    }
    case 1: {  // release a task from a node
      for (const auto& [name, n] : snap.nodes()) {
        if (n->tasks().empty() || rc.Chance(0.5)) continue;
        const TaskInfo t = n->tasks().begin()->second;
        EXPECT_TRUE(snap.MutableNode(name)->RemoveTask(t).ok());
        return "session removes " + std::string(t.key()) + " from " + name;
      }
      return "";
    }
    case 2: {  // change a task's status in its job
      if (snap.jobs().empty()) return "";
      const JobId id = PickFrom(rc, snap.jobs())->first;
      const JobInfo* job = snap.FindJob(id);
      if (job->tasks().empty()) return "";
      const std::string uid(PickFrom(rc, job->tasks())->first);
      static constexpr TaskStatus kStatuses[] = {TaskStatus::kPending, TaskStatus::kAllocated,
                                                 TaskStatus::kPipelined, TaskStatus::kReleasing,
                                                 TaskStatus::kBinding};
      TaskStatus st = kStatuses[rc.Uniform(std::size(kStatuses))];
      EXPECT_TRUE(snap.MutableJob(id)->UpdateTaskStatus(uid, st).ok());
      if (rc.Chance(0.3)) snap.MutableJob(id)->SetTaskFitError(uid, "session says no");
      return "session sets " + uid + " of " + id + " to " + std::string(TaskStatusName(st));
    }
    case 3: {  // drop a job
      if (snap.jobs().empty()) return "";
      const JobId id = PickFrom(rc, snap.jobs())->first;
      snap.EraseJob(id);
      return "session erases job " + id;
    }
    case 4: {  // touch a node without changing it (takes a private copy)
      if (snap.nodes().empty()) return "";
      const std::string name = PickFrom(rc, snap.nodes())->first;
      (void)snap.MutableNode(name);
      return "session copies node " + name;
    }
    default: {  // the static tables are plain fields: sessions may scribble on them
      snap.queues.erase("q1");
      snap.priority_classes["session-pc"] = 7;
      snap.default_priority = 12345;
      snap.namespace_quotas.clear();
      return "session edits static tables";
    }
  }
}

class SnapshotDifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override { spdlog::set_level(spdlog::level::off); }
  void TearDown() override { spdlog::set_level(spdlog::level::info); }
};

// Runs a random sequence keeping two snapshots: `kept` refreshed after every step (with
// session mutations and materializations in between) and `lagging` refreshed only now and
// then (many changes at once). Both must equal a fresh snapshot whenever refreshed, and a
// snapshot must not change while the cache changes. `kept` is compared every
// `compare_every` steps: a fresh snapshot makes every slot remember its own map entries
// (Slot::snap_entry), so only between comparisons does `kept`'s refresh find its entries
// through the slots rather than by name.
void RunDifferential(RandomCluster& rc, int steps, int compare_every = 1) {
  SchedulerCache& cache = rc.cache();
  std::unique_ptr<ClusterInfo> kept = cache.Snapshot();
  std::unique_ptr<ClusterInfo> lagging = cache.Snapshot();
  std::unique_ptr<ClusterInfo> old = cache.Snapshot();
  std::string old_dump = DumpClusterInfo(*old);
  std::string session_log;
  for (int i = 0; i < steps; ++i) {
    const std::string kept_before = DumpClusterInfo(*kept);
    RandomStep step = rc.Step();
    SCOPED_TRACE("step " + std::to_string(i) + ": " + step.what +
                 (session_log.empty() ? "" : " after " + session_log));
    session_log.clear();
    Status inv = cache.CheckInvariants();
    ASSERT_TRUE(inv.ok()) << inv.message();
    // Copy-on-write: the cache changed, the session's snapshot did not.
    ASSERT_EQ(kept_before, DumpClusterInfo(*kept)) << "a cache event changed a published snapshot";

    cache.UpdateSnapshot(kept.get());
    if (i % compare_every != 0) {
      for (int m = rc.Chance(0.4) ? static_cast<int>(1 + rc.Uniform(4)) : 0; m > 0; --m) {
        std::string what = MutateSession(rc, *kept);
        if (!what.empty()) session_log += " [" + what + "]";
      }
      continue;
    }
    std::unique_ptr<ClusterInfo> fresh = cache.Snapshot();
    std::string diff = Diff(*kept, *fresh);
    ASSERT_EQ(diff, "") << "incremental refresh differs from a fresh snapshot";
    ASSERT_EQ(CheckSnapshotRules(*fresh), "");
    if (i % (kSlow ? 25 : 10) == 0) {
      ASSERT_EQ(CheckAgainstCacheDump(*fresh, cache), "");
    }

    if (rc.Chance(0.1)) {
      SchedulerCache::MaterializeSnapshot(kept.get(), 2);
      diff = Diff(*kept, *fresh);
      ASSERT_EQ(diff, "") << "materialized snapshot differs from a fresh snapshot";
      session_log += " [materialized]";
    }
    for (int m = rc.Chance(0.4) ? static_cast<int>(1 + rc.Uniform(4)) : 0; m > 0; --m) {
      std::string what = MutateSession(rc, *kept);
      if (!what.empty()) session_log += " [" + what + "]";
    }
    if (rc.Chance(0.05)) {
      // Moved into a new ClusterInfo, and the old one freed: the cache's slots remember map
      // entries (Slot::snap_entry), which a move hands over; a refresh that lost track of
      // them would read freed entries (ASan) or leave the snapshot stale (the diff).
      kept = std::make_unique<ClusterInfo>(std::move(*kept));
      session_log += " [moved]";
    }
    if (rc.Chance(0.05)) {
      // The fresh snapshot is a session of its own: mutate it and check the cache did not
      // see it (the next fresh snapshot still equals the refreshed one).
      MutateSession(rc, *fresh);
    }

    if (rc.Chance(0.08)) {
      cache.UpdateSnapshot(lagging.get());
      std::unique_ptr<ClusterInfo> again = cache.Snapshot();
      diff = Diff(*lagging, *again);
      ASSERT_EQ(diff, "") << "lagging snapshot refreshed after many changes differs";
      for (int m = rc.Chance(0.5) ? 2 : 0; m > 0; --m) MutateSession(rc, *lagging);
    }

    if (i % 25 == 24) {
      ASSERT_EQ(old_dump, DumpClusterInfo(*old)) << "an old snapshot changed under later events";
      if (i % 200 == 199) {
        old = cache.Snapshot();
        old_dump = DumpClusterInfo(*old);
      }
    }
  }
}

// RunDifferential once per seed (Seeds()); most refreshes must really be incremental (queue
// changes force full ones).
void RunEverySeed(int compare_every) {
  for (uint64_t seed : Seeds()) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (rerun with VOLCACHE_RANDOM_SEED=" + std::to_string(seed) + ")");
    RandomClusterOptions opts;
    opts.seed = seed;
    RandomCluster rc(opts);
    RunDifferential(rc, Steps(kStepsPerSeed), compare_every);
    if (::testing::Test::HasFailure()) return;
    CacheCounters c = rc.cache().counters();
    EXPECT_GT(c.incremental_snapshots, c.full_snapshots / 4);
  }
}

TEST_F(SnapshotDifferentialTest, IncrementalRefreshEqualsFreshSnapshotAfterEveryStep) { RunEverySeed(1); }

// Refreshes between comparisons find their entries through the slots (see RunDifferential).
TEST_F(SnapshotDifferentialTest, RefreshesThroughTheSlotsEqualFreshSnapshots) { RunEverySeed(5); }

// A removal log of two entries: most refreshes find their window exceeded and must fall
// back to a full rebuild — with the same result.
TEST_F(SnapshotDifferentialTest, TinyRemovalLogStillRefreshesCorrectly) {
  RandomClusterOptions opts;
  opts.seed = 0x10c;
  opts.removal_log_capacity = 2;
  RandomCluster rc(opts);
  RunDifferential(rc, Steps(kSlow ? 400 : 800));
}

TEST_F(SnapshotDifferentialTest, RemovalLogOverflowFallsBackToFullRebuild) {
  for (size_t capacity : {size_t{2}, size_t{1} << 16}) {
    SCOPED_TRACE("removal_log_capacity " + std::to_string(capacity));
    RandomClusterOptions opts;
    opts.seed = 7;
    opts.removal_log_capacity = capacity;
    RandomCluster rc(opts);
    rc.Populate();
    SchedulerCache& cache = rc.cache();
    std::unique_ptr<ClusterInfo> snap = cache.Snapshot();
    ASSERT_EQ(snap->nodes().size(), 6u);
    // Five node removals and a job removal: more than two log entries.
    for (int i = 0; i < 5; ++i) {
      std::string name = "node-" + std::to_string(i);
      auto node = rc.source().GetNode(name);
      ASSERT_TRUE(node.ok());
      rc.source().DeleteNode(name);
      cache.DeleteNode(**node);
    }
    cache.DrainQueuesOnce();
    k8s::PodGroup pg;
    pg.metadata.namespace_ = "ns-a";
    pg.metadata.name = "j0";
    ASSERT_TRUE(cache.DeletePodGroup(pg).ok());
    cache.DrainQueuesOnce();
    ASSERT_EQ(cache.num_nodes(), 1u);

    const CacheCounters before = cache.counters();
    cache.UpdateSnapshot(snap.get());
    const CacheCounters after = cache.counters();
    if (capacity == 2) {
      EXPECT_EQ(after.full_snapshots, before.full_snapshots + 1);
      EXPECT_EQ(after.incremental_snapshots, before.incremental_snapshots);
    } else {
      EXPECT_EQ(after.full_snapshots, before.full_snapshots);
      EXPECT_EQ(after.incremental_snapshots, before.incremental_snapshots + 1);
    }
    EXPECT_EQ(Diff(*snap, *cache.Snapshot()), "");
    EXPECT_EQ(snap->nodes().size(), 1u);
    EXPECT_EQ(snap->FindJob("ns-a/j0"), nullptr);
    EXPECT_NE(snap->FindJob("ns-a/j1"), nullptr);
  }
}

k8s::NodePtr GpuNode(const std::string& name, bool gpu) {
  auto node = std::make_shared<k8s::Node>();
  node->metadata.name = name;
  node->metadata.uid = "uid-" + name;
  node->status.allocatable.emplace_back("cpu", *Quantity::Parse("8"));
  node->status.allocatable.emplace_back("memory", *Quantity::Parse("16Gi"));
  if (gpu) node->status.allocatable.emplace_back("nvidia.com/gpu", *Quantity::Parse("4"));
  node->status.capacity = node->status.allocatable;
  node->status.conditions.push_back(k8s::NodeCondition{"Ready", "True", "KubeletReady", ""});
  return node;
}

// Regression: the incremental refresh subtracted a departing node's allocatable from the
// total and kept an explicit "nvidia.com/gpu 0" that a fresh sum does not have; Resource
// equality and kInfinity comparisons (a missing dimension is unlimited) tell them apart.
TEST_F(SnapshotDifferentialTest, TotalAllocatableHasNoZeroScalarsLeftByDepartedNodes) {
  auto clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  SchedulerCache cache(SchedulerCacheOptions{}, clock, &source);
  auto put = [&](k8s::NodePtr node) {
    source.PutNode(node);
    cache.AddNode(*node);
    cache.DrainQueuesOnce();
  };
  put(GpuNode("cpu-node", false));
  put(GpuNode("gpu-node", true));
  std::unique_ptr<ClusterInfo> snap = cache.Snapshot();
  ASSERT_EQ(snap->total_allocatable().ToString(),
            "cpu 16000.00, memory 34359738368.00, nvidia.com/gpu 4000.00");

  // The GPUs go away by an allocatable update...
  put(GpuNode("gpu-node", false));
  cache.UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->total_allocatable().ToString(), "cpu 16000.00, memory 34359738368.00");
  EXPECT_TRUE(snap->total_allocatable() == cache.Snapshot()->total_allocatable());

  // ... and by the node leaving.
  put(GpuNode("gpu-node", true));
  cache.UpdateSnapshot(snap.get());
  EXPECT_EQ(snap->total_allocatable().ToString(),
            "cpu 16000.00, memory 34359738368.00, nvidia.com/gpu 4000.00");
  source.DeleteNode("gpu-node");
  cache.DeleteNode(*GpuNode("gpu-node", true));
  cache.DrainQueuesOnce();
  cache.UpdateSnapshot(snap.get());
  std::unique_ptr<ClusterInfo> fresh = cache.Snapshot();
  EXPECT_EQ(snap->total_allocatable().ToString(), "cpu 8000.00, memory 17179869184.00");
  EXPECT_TRUE(snap->total_allocatable() == fresh->total_allocatable());
  Resource one_gpu = *ResourceFromList({{"nvidia.com/gpu", *Quantity::Parse("1")}}, "test");
  EXPECT_EQ(one_gpu.LessEqual(snap->total_allocatable(), DimensionDefault::kInfinity),
            one_gpu.LessEqual(fresh->total_allocatable(), DimensionDefault::kInfinity));
  EXPECT_EQ(Diff(*snap, *fresh), "");
  EXPECT_EQ(cache.counters().incremental_snapshots, 3u);  // the refreshes took the incremental path
}

// Thousands of writes to a few nodes: the cache's change logs hold an entry per write and
// drop the cleared ones once they outnumber the live ones by ChangeLog::kSlack (64,
// cache/cache_state.h), so 4,000 writes to 3 nodes compact the log many times, with snapshots
// taken before, between and after. Every refresh, however far it lags, equals a fresh one
// and takes the incremental path.
TEST_F(SnapshotDifferentialTest, ManyWritesToFewObjectsRefreshAcrossLogCompactions) {
  auto clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  SchedulerCache cache(SchedulerCacheOptions{}, clock, &source);
  auto put = [&](const std::string& name, int round) {
    k8s::NodePtr node = GpuNode(name, round % 2 == 0);
    std::const_pointer_cast<k8s::Node>(node)->metadata.labels["round"] = std::to_string(round);
    source.PutNode(node);
    cache.UpdateNode(*node, *node);
    cache.DrainQueuesOnce();
  };
  for (int n = 0; n < 3; ++n) put("node-" + std::to_string(n), 0);
  std::unique_ptr<ClusterInfo> kept = cache.Snapshot();
  std::unique_ptr<ClusterInfo> lagging = cache.Snapshot();
  const uint64_t incremental_before = cache.counters().incremental_snapshots;
  uint64_t refreshes = 0;
  for (int round = 1; round <= 2000; ++round) {
    for (int n = 0; n < 3; ++n) {
      if ((round + n) % 3 != 0) put("node-" + std::to_string(n), round);
    }
    if (round % 7 == 0) {
      cache.UpdateSnapshot(kept.get());
      ++refreshes;
      ASSERT_EQ(Diff(*kept, *cache.Snapshot()), "") << "round " << round;
    }
    if (round % 611 == 0) {
      cache.UpdateSnapshot(lagging.get());
      ++refreshes;
      ASSERT_EQ(Diff(*lagging, *cache.Snapshot()), "") << "round " << round;
    }
  }
  cache.UpdateSnapshot(lagging.get());
  ++refreshes;
  EXPECT_EQ(Diff(*lagging, *cache.Snapshot()), "");
  EXPECT_EQ(lagging->FindNode("node-0")->node()->metadata.labels.at("round"), "2000");  // (2000 + 0) % 3 != 0
  EXPECT_EQ(cache.counters().incremental_snapshots - incremental_before, refreshes);
}

// An old snapshot is never changed by later cache events, however many.
TEST_F(SnapshotDifferentialTest, OldSnapshotIsNeverChangedByLaterEvents) {
  RandomClusterOptions opts;
  opts.seed = 0x01d;
  RandomCluster rc(opts);
  rc.Populate();
  for (int i = 0; i < 300; ++i) rc.Step();
  std::unique_ptr<ClusterInfo> old = rc.cache().Snapshot();
  const std::string dump = DumpClusterInfo(*old);
  std::vector<std::string> nodes;
  for (const auto& [name, n] : old->nodes()) nodes.push_back(DescribeNode(*n));
  std::sort(nodes.begin(), nodes.end());
  for (int i = 0; i < 1000; ++i) {
    RandomStep step = rc.Step();
    if (i % 100 == 0) {
      std::unique_ptr<ClusterInfo> other = rc.cache().Snapshot();  // publishes again
      rc.cache().UpdateSnapshot(other.get());
    }
  }
  EXPECT_EQ(dump, DumpClusterInfo(*old));
  std::vector<std::string> again;
  for (const auto& [name, n] : old->nodes()) again.push_back(DescribeNode(*n));
  std::sort(again.begin(), again.end());
  EXPECT_EQ(nodes, again);
}

// With enough objects MaterializeSnapshot copies on two threads (the small clusters above
// stay on one): the parallel copy must equal the fresh snapshot too.
TEST_F(SnapshotDifferentialTest, ParallelMaterializeOfALargerCluster) {
  RandomClusterOptions opts;
  opts.seed = 0xb16;
  opts.nodes = 72;  // 72 nodes + 6 jobs: above the 64-objects-per-thread split
  RandomCluster rc(opts);
  rc.Populate();
  SchedulerCache& cache = rc.cache();
  std::unique_ptr<ClusterInfo> kept = cache.Snapshot();
  ASSERT_GE(kept->nodes().size() + kept->jobs().size(), 64u);
  for (int i = 0; i < (kSlow ? 60 : 150); ++i) {
    RandomStep step = rc.Step();
    SCOPED_TRACE("step " + std::to_string(i) + ": " + step.what);
    cache.UpdateSnapshot(kept.get());
    SchedulerCache::MaterializeSnapshot(kept.get(), 2);
    ASSERT_EQ(Diff(*kept, *cache.Snapshot()), "");
    MutateSession(rc, *kept);
  }
}

// The cache is safe for concurrent use: a session thread refreshing, materializing and
// reading its snapshot while the event thread changes the cache. Under TSan this checks the
// copy-on-write publication; everywhere it checks that a snapshot is stable while read.
TEST_F(SnapshotDifferentialTest, SnapshotsAreStableWhileEventsApplyConcurrently) {
  RandomClusterOptions opts;
  opts.seed = 0xc0c0;
  RandomCluster rc(opts);
  rc.Populate();
  SchedulerCache& cache = rc.cache();
  std::atomic<bool> done{false};
  std::atomic<int> refreshes{0};
  std::thread session([&] {
    std::unique_ptr<ClusterInfo> snap = cache.Snapshot();
    int i = 0;
    while (!done.load()) {
      cache.UpdateSnapshot(snap.get());
      if (++i % 3 == 0) SchedulerCache::MaterializeSnapshot(snap.get(), 2);
      std::string a = DumpClusterInfo(*snap);
      for (const auto& [name, n] : snap->nodes()) (void)n->idle().ToString();
      std::string b = DumpClusterInfo(*snap);
      EXPECT_EQ(a, b);
      if (a != b) break;
      (void)cache.Dump();
      refreshes.fetch_add(1);
    }
    refreshes.store(1 << 30);  // also releases the event thread if we stopped early
  });
  for (int i = 0; i < (kSlow ? 600 : 1500); ++i) {
    rc.Step();
    if (i % 100 == 0 && !cache.CheckInvariants().ok()) {
      ADD_FAILURE() << cache.CheckInvariants().message();
      break;  // not ASSERT: the session thread must be joined first
    }
  }
  while (refreshes.load() < 20) std::this_thread::yield();
  done.store(true);
  session.join();
  EXPECT_TRUE(cache.CheckInvariants().ok());
}

}  // namespace
}  // namespace volcache
