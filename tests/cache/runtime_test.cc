// CacheRuntime: the decision pipelines end to end — bind flow with outcomes, eviction,
// status writes, lifecycle — deterministically (inline execution, FakeClock) and under
// fault injection with real threads.
#include "cache/runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>

#include "tests/fakes/cluster_builders.h"
#include "tests/fakes/fake_pipelines.h"
#include "workers/work_queue.h"

namespace volcache {
namespace {

using testing::BindFault;
using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;

struct Rig {
  explicit Rig(bool inline_exec = true, uint64_t seed = 1) : binder(&source, seed) {
    RuntimeOptions o;
    o.inline_execution = inline_exec;
    o.node_worker_threads = 2;
    o.dispatch_threads = 2;
    if (!inline_exec) {
      // The threaded fault run checks correctness, not the status writes' own rate limit.
      o.status_qps = 1e6;
      o.status_burst = 100000;
    }
    rt =
        std::make_unique<CacheRuntime>(o, inline_exec ? std::shared_ptr<Clock>(clock) : RealClock::Instance(),
                                       &source, &binder, &evictor, &status, &recorder);
  }
  void AddNode(const std::string& name, const char* cpu = "8", const char* memory = "32Gi",
               const char* pods = "110") {
    auto n = NodeBuilder(name).Allocatable(cpu, memory, pods).Ptr();
    source.PutNode(n);
    rt->cache().AddNode(*n);
  }
  void AddPod(const PodBuilder& b) {
    auto p = b.Ptr();
    source.PutPod(p);
    ASSERT_TRUE(rt->cache().AddPod(p).ok());
  }
  // What the watch delivers after the cluster changed a pod.
  void DeliverFromSource(const std::string& ns, const std::string& name) {
    auto p = source.GetPod(ns, name);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(rt->cache().UpdatePod(nullptr, *p).ok());
  }
  nlohmann::json Task(const std::string& job, const std::string& name) {
    auto d = nlohmann::json::parse(rt->cache().Dump());
    for (auto& j : d["jobs"])
      if (j["uid"] == job)
        for (auto& t : j["tasks"])
          if (t["name"] == name) return t;
    return nullptr;
  }

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  testing::FakeBinder binder;
  testing::FakeEvictor evictor;
  testing::FakeStatusUpdater status;
  testing::FakeEventRecorder recorder;
  std::unique_ptr<CacheRuntime> rt;
};

void GangOf(Rig& r, const std::string& group, int n, const char* cpu = "1") {
  ASSERT_TRUE(r.rt->cache().AddPodGroup(PodGroupBuilder("ns", group).MinMember(n).Ptr()).ok());
  for (int i = 0; i < n; ++i)
    r.AddPod(PodBuilder("ns", group + "-" + std::to_string(i)).Group(group).Request(cpu, "1Gi"));
}

// WaitForCacheSync waits on conditions: the lists-applied signal wakes it (the timeout,
// generous, is reached only on failure), and without that signal it gives up at the timeout.
TEST(CacheRuntimeTest, WaitForCacheSyncWakesWhenTheInitialListsAreApplied) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  EXPECT_FALSE(r.rt->synced());
  std::thread feeder([&] { r.rt->MarkInitialListsApplied(); });
  EXPECT_TRUE(r.rt->WaitForCacheSync(std::chrono::seconds(60)).ok());
  feeder.join();
  EXPECT_TRUE(r.rt->synced());
  EXPECT_EQ(r.rt->cache().num_nodes(), 1u);
}

TEST(CacheRuntimeTest, WaitForCacheSyncTimesOutWithoutTheInitialLists) {
  Rig r;
  r.rt->Run();
  Status s = r.rt->WaitForCacheSync(std::chrono::milliseconds(1));
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
}

TEST(CacheRuntimeTest, WaitForCacheSyncWaitsForTheNodeWorkers) {
  Rig r(/*inline_exec=*/false);
  r.rt->Run();
  for (int n = 0; n < 50; ++n) r.AddNode("n" + std::to_string(n));
  r.rt->MarkInitialListsApplied();
  ASSERT_TRUE(r.rt->WaitForCacheSync(std::chrono::seconds(60)).ok());
  EXPECT_EQ(r.rt->cache().num_nodes(), 50u);
}

// HyperNode events go through their own queue and worker thread, concurrently with node syncs.
TEST(CacheRuntimeTest, HyperNodeWorkerAppliesHyperNodesAlongsideNodeSyncs) {
  Rig r(/*inline_exec=*/false);
  r.rt->Run();
  for (int i = 0; i < 20; ++i) {
    k8s::HyperNode hn;
    hn.metadata.name = "rack-" + std::to_string(i);
    hn.spec.tier = 1;
    k8s::HyperNodeMember m;
    m.name_or_pattern = "n" + std::to_string(i);
    hn.spec.members.push_back(m);
    r.rt->cache().AddHyperNode(std::make_shared<const k8s::HyperNode>(hn));
    r.AddNode("n" + std::to_string(i));
  }
  r.rt->MarkInitialListsApplied();
  ASSERT_TRUE(r.rt->WaitForCacheSync(std::chrono::seconds(60)).ok());
  // The HyperNode worker is not part of the cache sync: wait for its queue to drain.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  nlohmann::json hns;
  for (;;) {
    hns = nlohmann::json::parse(r.rt->cache().Dump())["hyperNodes"];
    const WorkQueueStats st = r.rt->cache().hypernode_queue().Stats();
    if ((hns.size() == 20 && st.depth == 0 && st.processing == 0) ||
        std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::yield();
  }
  ASSERT_EQ(hns.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(hns["rack-" + std::to_string(i)]["nodes"], nlohmann::json::array({"n" + std::to_string(i)}));
  }
  EXPECT_TRUE(r.rt->cache().HyperNodesReady());
}

TEST(CacheRuntimeTest, BindIsDispatchedAtTheTwentyMillisecondTickAndFinishes) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  r.rt->MarkInitialListsApplied();
  ASSERT_TRUE(r.rt->WaitForCacheSync(std::chrono::seconds(5)).ok());
  GangOf(r, "job", 2);
  ASSERT_TRUE(r.rt->Bind("ns/job-0", "n1").ok());
  ASSERT_TRUE(r.rt->Bind("ns/job-1", "n1").ok());
  r.clock->Advance(std::chrono::milliseconds(19));
  EXPECT_EQ(r.binder.calls(), 0);
  EXPECT_EQ(r.Task("ns/job", "job-0")["status"], "Binding");
  r.clock->Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(r.binder.calls(), 2);  // default BATCH_BIND_NUM 1: one Bind call per task
  EXPECT_EQ(r.rt->counters().binds_succeeded, 2u);
  // Still assumed until the watch confirms it.
  EXPECT_TRUE(r.rt->cache().IsAssumed("ns/job-0"));
  r.DeliverFromSource("ns", "job-0");
  EXPECT_FALSE(r.rt->cache().IsAssumed("ns/job-0"));
  EXPECT_EQ(r.Task("ns/job", "job-0")["status"], "Bound");
  EXPECT_EQ(r.Task("ns/job", "job-0")["node"], "n1");
  bool scheduled_event = false;
  for (const auto& e : r.recorder.events())
    scheduled_event |= e.reason == "Scheduled" && e.object.name == "job-0";
  EXPECT_TRUE(scheduled_event);
  EXPECT_TRUE(r.rt->cache().CheckInvariants().ok());
}

TEST(CacheRuntimeTest, FailedBindForgetsWritesSchedulerErrorAndResyncs) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  r.rt->RunDueWorkInline();
  GangOf(r, "job", 1, "2");
  r.binder.Script("ns/job-0", BindFault::kError);
  ASSERT_TRUE(r.rt->Bind("ns/job-0", "n1").ok());
  r.clock->Advance(std::chrono::milliseconds(20));
  r.rt->RunDueWorkInline();
  EXPECT_EQ(r.rt->counters().binds_failed, 1u);
  EXPECT_FALSE(r.rt->cache().IsAssumed("ns/job-0"));
  EXPECT_EQ(r.Task("ns/job", "job-0")["status"], "Pending");
  auto dump = nlohmann::json::parse(r.rt->cache().Dump());
  EXPECT_EQ(dump["nodes"][0]["used"], nlohmann::json::object());  // released
  auto conds = r.status.pod_conditions();
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].first, "ns/job-0");
  EXPECT_EQ(conds[0].second.type, "PodScheduled");
  EXPECT_EQ(conds[0].second.status, "False");
  EXPECT_EQ(conds[0].second.reason, "SchedulerError");
  EXPECT_THAT(conds[0].second.message, HasSubstr("injected"));
  EXPECT_TRUE(r.rt->cache().CheckInvariants().ok());
}

TEST(CacheRuntimeTest, AlreadyBoundAnswerIsRepairedByTheResync) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  r.rt->RunDueWorkInline();
  GangOf(r, "job", 1);
  r.binder.Script("ns/job-0", BindFault::kAlreadyBound);  // the bind did happen
  ASSERT_TRUE(r.rt->Bind("ns/job-0", "n1").ok());
  r.clock->Advance(std::chrono::milliseconds(20));
  r.rt->RunDueWorkInline();
  // Forgotten, then the resync read the pod from the cluster: it is bound to n1.
  EXPECT_EQ(r.Task("ns/job", "job-0")["status"], "Bound");
  EXPECT_EQ(r.Task("ns/job", "job-0")["node"], "n1");
  EXPECT_EQ(r.binder.effective_binds()["ns/job-0"], 1);
  EXPECT_TRUE(r.rt->cache().CheckInvariants().ok());
}

class RefusingHandler final : public BindContextHandler {
 public:
  std::string_view Name() const override { return "refuser"; }
  Status SetupBindContextExtension(const void*, BindContext&) override {
    return Status::FailedPrecondition("no device");
  }
};

TEST(CacheRuntimeTest, RefusedBindLeavesTheCacheUnchanged) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1", "1");
  r.rt->RunDueWorkInline();
  GangOf(r, "job", 1, "2");
  const std::string before = r.rt->cache().Dump();
  Status s = r.rt->Bind("ns/job-0", "n1");  // does not fit
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("cpu"));
  EXPECT_EQ(r.rt->cache().Dump(), before);
  r.rt->RegisterBindContextHandler(std::make_shared<RefusingHandler>());
  s = r.rt->Bind("ns/job-0", "n1");
  EXPECT_THAT(s.message(), HasSubstr("refuser"));
  EXPECT_EQ(r.rt->cache().Dump(), before);
  EXPECT_EQ(r.binder.calls(), 0);
}

TEST(CacheRuntimeTest, EvictionRunsTheEvictorAndResyncsOnFailure) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  r.rt->RunDueWorkInline();
  ASSERT_TRUE(r.rt->cache().AddPodGroup(PodGroupBuilder("ns", "job").MinMember(1).Ptr()).ok());
  r.AddPod(PodBuilder("ns", "a").Group("job").Request("1", "1Gi").NodeName("n1").Phase("Running"));
  r.AddPod(PodBuilder("ns", "b").Group("job").Request("1", "1Gi").NodeName("n1").Phase("Running"));
  ASSERT_TRUE(r.rt->Evict("ns/a", "reclaim").ok());
  EXPECT_EQ(r.evictor.evicted(), std::vector<std::string>{"ns/a"});
  EXPECT_EQ(r.Task("ns/job", "a")["status"], "Releasing");
  bool evict_event = false;
  for (const auto& e : r.recorder.events()) evict_event |= e.reason == "Evict" && e.object.kind == "PodGroup";
  EXPECT_TRUE(evict_event);
  // A failing evictor: the resync restores the task from the cluster (still Running there).
  r.evictor.FailNext(1);
  ASSERT_TRUE(r.rt->Evict("ns/b", "reclaim").ok());
  r.rt->RunDueWorkInline();
  EXPECT_EQ(r.rt->counters().evictions_failed, 1u);
  EXPECT_EQ(r.Task("ns/job", "b")["status"], "Running");
  EXPECT_TRUE(r.rt->cache().CheckInvariants().ok());
}

TEST(CacheRuntimeTest, StatusWritesAreRetriedAndSkippedWhenUnchanged) {
  Rig r;
  r.rt->Run();
  GangOf(r, "job", 3);
  auto snap = r.rt->cache().Snapshot();
  ASSERT_NE(snap->FindJob("ns/job"), nullptr);
  r.status.FailNext(1);
  r.rt->UpdateJobStatus(*snap->FindJob("ns/job"), "Pending");
  r.rt->RunDueWorkInline();
  EXPECT_TRUE(r.status.pod_groups().empty());  // failed once, retried after its backoff
  r.clock->Advance(std::chrono::milliseconds(10));
  r.rt->RunDueWorkInline();
  const auto pod_groups = r.status.pod_groups();  // a copy taken under the fake's lock
  ASSERT_EQ(pod_groups.size(), 1u);
  const auto& pg = pod_groups[0];
  EXPECT_EQ(pg.status.phase, "Pending");
  ASSERT_FALSE(pg.status.conditions.empty());
  EXPECT_EQ(pg.status.conditions.back().type, "Unschedulable");
  EXPECT_THAT(
      pg.status.conditions.back().message,
      HasSubstr("3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"));
  // Queue status: written once, not again while unchanged.
  QueueInfo q;
  q.name = "default";
  q.queue = std::make_shared<k8s::Queue>(testing::QueueBuilder("default").Build());
  q.allocated = Resource(2000, 0);
  r.rt->UpdateQueueStatus(q);
  r.rt->UpdateQueueStatus(q);
  r.rt->RunDueWorkInline();
  ASSERT_EQ(r.status.queues().size(), 1u);
  ASSERT_EQ(r.status.queues()[0].status.allocated.size(), 1u);
  EXPECT_EQ(r.status.queues()[0].status.allocated[0].second.MilliValue(), 2000);
}

QueueInfo QueueWithAllocated(const std::string& name, int64_t milli_cpu) {
  QueueInfo q;
  q.name = name;
  q.queue = std::make_shared<k8s::Queue>(testing::QueueBuilder(name).Build());
  q.allocated = Resource(milli_cpu, 0);
  return q;
}

// An inline runtime on a FakeClock whose status writes get 1 token per second (`burst` at
// most), writing to a FakeStatusUpdater.
struct StatusBucketRig {
  explicit StatusBucketRig(int burst)
      : binder(&source), rt(Options(burst), clock, &source, &binder, nullptr, &status, nullptr) {
    rt.Run();
  }
  static RuntimeOptions Options(int burst) {
    RuntimeOptions o;
    o.inline_execution = true;
    o.status_qps = 1;
    o.status_burst = burst;
    return o;
  }
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  testing::FakeBinder binder;
  testing::FakeStatusUpdater status;
  CacheRuntime rt;
};

// Defect: first status writes bypassed the status bucket (only retries were limited), so a
// session's burst of PodGroup/Queue writes went out at once, sharing the client with binds.
TEST(CacheRuntimeTest, FirstStatusWritesTakeTokensFromTheStatusBucket) {
  StatusBucketRig r(/*burst=*/2);
  auto& clock = r.clock;
  auto& status = r.status;
  auto& rt = r.rt;
  for (int i = 0; i < 4; ++i) rt.UpdateQueueStatus(QueueWithAllocated("q" + std::to_string(i), 1000));
  rt.RunDueWorkInline();
  EXPECT_EQ(status.queues().size(), 2u);  // the burst
  clock->Advance(std::chrono::seconds(1));
  rt.RunDueWorkInline();
  EXPECT_EQ(status.queues().size(), 3u);
  clock->Advance(std::chrono::seconds(1));
  rt.RunDueWorkInline();
  EXPECT_EQ(status.queues().size(), 4u);
  rt.Stop();
}

// Per object only the newest status is sent: a newer one replaces a queued older one (one
// token, one write), and a newer one arriving while the older is on the wire is sent after it.
TEST(CacheRuntimeTest, StatusWritesAreCoalescedPerObjectAndTheNewestWins) {
  StatusBucketRig r(/*burst=*/1);
  auto& clock = r.clock;
  auto& status = r.status;
  auto& rt = r.rt;
  rt.UpdateQueueStatus(QueueWithAllocated("a", 1000));
  rt.UpdateQueueStatus(QueueWithAllocated("b", 1000));  // waits a second for its token
  rt.UpdateQueueStatus(QueueWithAllocated("b", 2000));  // replaces the queued one
  rt.UpdateQueueStatus(QueueWithAllocated("b", 3000));
  rt.RunDueWorkInline();
  clock->Advance(std::chrono::seconds(1));
  rt.RunDueWorkInline();
  clock->Advance(std::chrono::seconds(5));
  rt.RunDueWorkInline();
  auto written = status.queues();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].metadata.name, "a");
  EXPECT_EQ(written[1].metadata.name, "b");
  EXPECT_EQ(written[1].status.allocated[0].second.MilliValue(), 3000);
  rt.Stop();
}

// Records writes and runs a hook inside UpdateQueueStatus, as if the next session produced
// a newer status while this one is on the wire.
class HookedStatusUpdater final : public StatusUpdater {
 public:
  Status UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& c) override {
    return inner.UpdatePodCondition(pod, c);
  }
  Status UpdatePodGroup(const k8s::PodGroup& pg) override {
    if (pod_group_hook) std::exchange(pod_group_hook, nullptr)();
    return inner.UpdatePodGroup(pg);
  }
  Status UpdateQueueStatus(const k8s::Queue& q) override {
    if (hook) std::exchange(hook, nullptr)();
    return inner.UpdateQueueStatus(q);
  }
  testing::FakeStatusUpdater inner;
  std::function<void()> hook;
  std::function<void()> pod_group_hook;
};

// An inline runtime on a FakeClock writing through a HookedStatusUpdater, running.
struct HookedRuntime {
  HookedRuntime() { rt.Run(); }
  static RuntimeOptions Inline() {
    RuntimeOptions o;
    o.inline_execution = true;
    return o;
  }
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  testing::FakeBinder binder{&source};
  HookedStatusUpdater status;
  CacheRuntime rt{Inline(), clock, &source, &binder, nullptr, &status, nullptr};
};

// A deep backlog asks for the same PodGroup status every session while the first write of it
// is still on its way (the watch has not brought it back into the cache): that is one write,
// not a copy queued per session; a different status during the write is written after it.
TEST(CacheRuntimeTest, SameJobStatusWhileItsWriteIsPendingIsOneWrite) {
  HookedRuntime h;
  CacheRuntime& rt = h.rt;
  HookedStatusUpdater& status = h.status;
  const auto& clock = h.clock;
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.SetPodGroup(PodGroupBuilder("ns", "pg").MinMember(2).Phase("Pending").Ptr()).ok());
  status.pod_group_hook = [&] {
    rt.UpdateJobStatus(job, "Inqueue");  // what the write on the wire says already
    rt.UpdateJobStatus(job, "Inqueue");
  };
  rt.UpdateJobStatus(job, "Inqueue");
  rt.UpdateJobStatus(job, "Inqueue");  // the cache still says Pending: the pending write has it
  for (int i = 0; i < 5; ++i) {
    rt.RunDueWorkInline();
    clock->Advance(std::chrono::seconds(1));
  }
  ASSERT_EQ(status.inner.pod_groups().size(), 1u);
  EXPECT_EQ(status.inner.pod_groups()[0].status.phase, "Inqueue");

  status.pod_group_hook = [&] { rt.UpdateJobStatus(job, "Running"); };
  rt.UpdateJobStatus(job, "Unknown");
  for (int i = 0; i < 5; ++i) {
    rt.RunDueWorkInline();
    clock->Advance(std::chrono::seconds(1));
  }
  const auto written = status.inner.pod_groups();
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[1].status.phase, "Unknown");
  EXPECT_EQ(written[2].status.phase, "Running");
  EXPECT_EQ(rt.counters().status_writes, 3u);
  rt.Stop();
}

// Defect: a newer status arriving while the older one was being written was dropped when the
// two agreed on resourceVersion and phase/state (`allocated` was never compared).
TEST(CacheRuntimeTest, NewerStatusArrivingDuringAWriteIsWrittenAfterIt) {
  HookedRuntime h;
  CacheRuntime& rt = h.rt;
  HookedStatusUpdater& status = h.status;
  const auto& clock = h.clock;
  status.hook = [&] { rt.UpdateQueueStatus(QueueWithAllocated("c", 9000)); };
  rt.UpdateQueueStatus(QueueWithAllocated("c", 1000));
  rt.RunDueWorkInline();
  clock->Advance(std::chrono::seconds(1));
  rt.RunDueWorkInline();
  auto written = status.inner.queues();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[1].status.allocated[0].second.MilliValue(), 9000);
  EXPECT_EQ(rt.counters().status_writes, 2u);
  rt.Stop();
}

TEST(CacheRuntimeTest, StopDispatchesQueuedBindsAndRefusesNewOnes) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  r.rt->RunDueWorkInline();
  GangOf(r, "job", 3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.rt->Bind("ns/job-" + std::to_string(i), "n1").ok());
  r.rt->Stop();  // before any tick: the queued binds are still dispatched
  EXPECT_EQ(r.binder.calls(), 3);
  EXPECT_EQ(r.rt->counters().binds_succeeded, 3u);
  GangOf(r, "late", 1);
  const std::string before = r.rt->cache().Dump();
  EXPECT_EQ(r.rt->Bind("ns/late-0", "n1").code(), StatusCode::kCancelled);
  EXPECT_EQ(r.rt->cache().Dump(), before);
}

// StopNow (serve's SIGTERM): the binds queued and not yet dispatched are not attempted; their
// tasks are forgotten quietly — no SchedulerError condition, no FailedScheduling event per
// task (before, a SIGTERM during a burst queued thousands of status writes that kept the
// process from exiting) — and the node's resources are released.
TEST(CacheRuntimeTest, StopNowForgetsQueuedBindsWithoutConditionsOrEvents) {
  Rig r;
  r.rt->Run();
  r.AddNode("n1");
  r.rt->RunDueWorkInline();
  const std::string empty = r.rt->cache().Dump();
  GangOf(r, "job", 3);
  const std::string pending = r.rt->cache().Dump();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.rt->Bind("ns/job-" + std::to_string(i), "n1").ok());
  r.rt->StopNow();  // before any tick
  EXPECT_EQ(r.binder.calls(), 0);
  EXPECT_EQ(r.rt->counters().binds_cancelled, 3u);
  EXPECT_EQ(r.rt->counters().binds_failed, 0u);
  EXPECT_TRUE(r.status.pod_conditions().empty());
  EXPECT_TRUE(r.recorder.events().empty());
  EXPECT_EQ(r.rt->cache().Dump(), pending);  // the tasks are Pending again, n1 is free
  EXPECT_NE(pending, empty);
  EXPECT_EQ(r.rt->Bind("ns/job-0", "n1").code(), StatusCode::kCancelled);
}

TEST(CacheRuntimeTest, InlineBindIntoAFullChannelFlushesInsteadOfBlocking) {
  Rig r;
  r.rt.reset();  // rebuilt with a tiny channel
  RuntimeOptions o;
  o.inline_execution = true;
  o.bind_flow.channel_capacity = 2;
  r.rt = std::make_unique<CacheRuntime>(o, r.clock, &r.source, &r.binder, &r.evictor, &r.status, &r.recorder);
  r.rt->Run();
  r.AddNode("n1");
  r.rt->RunDueWorkInline();
  GangOf(r, "job", 5);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(r.rt->Bind("ns/job-" + std::to_string(i), "n1").ok());
  // Two flushes made room on the way; the last binds wait for the tick.
  EXPECT_EQ(r.binder.calls(), 4);
  EXPECT_EQ(r.rt->bind_flow_stats().queued, 1u);
  r.clock->Advance(std::chrono::milliseconds(20));
  EXPECT_EQ(r.rt->counters().binds_succeeded, 5u);
}

// Polls `done` (real time) until it holds or `limit` passes.
template <typename Pred>
bool WaitUntil(Pred done, std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

bool Quiet(WorkQueue& q) {
  WorkQueueStats s = q.Stats();
  return s.depth == 0 && s.delayed == 0 && s.processing == 0;
}

// Fault injection with real threads: ≥ 10,000 binds, 30 % of them answered with an error,
// a timeout, a conflict or "already bound"; then evictions with 30 % evictor failures and a
// status write per job with 30 % write failures. After the system quiesces and the watch has
// delivered the cluster's view, every task is either bound exactly once (and the cache
// agrees), evicted and gone, or back in Pending with nothing accounted; every job's status
// reached the cluster; the invariant checker never fires.
TEST(CacheRuntimeTest, FaultInjectionLosesAndDuplicatesNothing) {
  Rig r(/*inline_exec=*/false, /*seed=*/20261121);
  r.binder.SetRandomFaults(0.3);
  r.evictor.SetRandomFaults(0.3);
  r.status.SetRandomFaults(0.3);
  r.rt->Run();
  constexpr int kNodes = 20, kJobs = 1000, kPerJob = 10;
  for (int n = 0; n < kNodes; ++n) r.AddNode("n" + std::to_string(n), "1000", "1Ti", "1000");
  r.rt->MarkInitialListsApplied();
  ASSERT_TRUE(r.rt->WaitForCacheSync(std::chrono::seconds(60)).ok());
  for (int j = 0; j < kJobs; ++j) GangOf(r, "j" + std::to_string(j), kPerJob, "100m");

  // 1. Binds from two session threads at once.
  std::atomic<int> accepted{0};
  auto bind_half = [&](int half) {
    for (int j = half; j < kJobs; j += 2) {
      for (int t = 0; t < kPerJob; ++t) {
        std::string key = "ns/j" + std::to_string(j) + "-" + std::to_string(t);
        if (r.rt->Bind(key, "n" + std::to_string((j * kPerJob + t) % kNodes)).ok()) ++accepted;
      }
    }
  };
  std::thread a(bind_half, 0), b(bind_half, 1);
  a.join();
  b.join();
  EXPECT_EQ(accepted.load(), kJobs * kPerJob);
  ASSERT_TRUE(WaitUntil([&] {
    auto c = r.rt->counters();
    return c.binds_succeeded + c.binds_failed == static_cast<uint64_t>(kJobs * kPerJob);
  }));
  EXPECT_GT(r.rt->counters().binds_failed, 0u);
  ASSERT_TRUE(WaitUntil([&] { return Quiet(r.rt->cache().err_tasks()); }));

  // The watch delivers the cluster's view of every pod that got bound.
  auto effective = r.binder.effective_binds();
  std::vector<std::string> bound_keys;
  for (const auto& [key, n] : effective) {
    EXPECT_EQ(n, 1) << key << " bound " << n << " times";
    auto slash = key.find('/');
    r.DeliverFromSource(key.substr(0, slash), key.substr(slash + 1));
    bound_keys.push_back(key);
  }
  ASSERT_TRUE(WaitUntil([&] { return Quiet(r.rt->cache().err_tasks()); }));
  ASSERT_TRUE(r.rt->cache().CheckInvariants().ok()) << r.rt->cache().CheckInvariants().message();

  // 2. Evictions of every fourth bound task, and a status write per job, concurrently.
  std::vector<std::string> to_evict;
  for (size_t i = 0; i < bound_keys.size(); i += 4) to_evict.push_back(bound_keys[i]);
  auto snap = r.rt->cache().Snapshot();
  std::thread evicter([&] {
    for (const auto& key : to_evict) EXPECT_TRUE(r.rt->Evict(key, "reclaim").ok()) << key;
  });
  std::thread writer([&] {
    for (const auto& [id, job] : snap->jobs()) r.rt->UpdateJobStatus(*job, "Running");
  });
  evicter.join();
  writer.join();
  ASSERT_TRUE(WaitUntil([&] {
    auto c = r.rt->counters();
    return c.evictions_ok + c.evictions_failed == to_evict.size();
  }));
  ASSERT_TRUE(WaitUntil([&] {
    WorkQueueStats s = r.rt->status_queue_stats();
    return s.depth == 0 && s.delayed == 0 && s.processing == 0;
  }));
  ASSERT_TRUE(WaitUntil([&] { return Quiet(r.rt->cache().err_tasks()); }));
  r.rt->Stop();
  auto c = r.rt->counters();
  EXPECT_GT(c.evictions_failed, 0u);
  EXPECT_GT(c.status_write_failures, 0u);
  std::set<std::string> written;
  for (const auto& pg : r.status.pod_groups()) written.insert(pg.metadata.name);
  EXPECT_EQ(written.size(), static_cast<size_t>(kJobs));  // every job's status got through

  // The cluster deletes what the evictor evicted; the watch delivers the deletions.
  std::set<std::string> evicted;
  for (const auto& key : r.evictor.evicted()) {
    EXPECT_TRUE(evicted.insert(key).second) << key << " evicted twice";
    auto slash = key.find('/');
    auto pod = r.source.GetPod(key.substr(0, slash), key.substr(slash + 1));
    ASSERT_TRUE(pod.ok());
    r.source.DeletePod(key.substr(0, slash), key.substr(slash + 1));
    ASSERT_TRUE(r.rt->cache().DeletePod(**pod).ok()) << key;
  }
  EXPECT_EQ(evicted.size(), c.evictions_ok);

  ASSERT_TRUE(r.rt->cache().CheckInvariants().ok()) << r.rt->cache().CheckInvariants().message();
  auto dump = nlohmann::json::parse(r.rt->cache().Dump());
  EXPECT_TRUE(dump["assumed"].empty());
  int64_t bound = 0, pending = 0;
  for (auto& job : dump["jobs"]) {
    for (auto& t : job["tasks"]) {
      const std::string key = "ns/" + t["name"].get<std::string>();
      EXPECT_EQ(evicted.count(key), 0u) << key << " was evicted and deleted but is still cached";
      auto src = r.source.GetPod("ns", t["name"].get<std::string>());
      ASSERT_TRUE(src.ok());
      if (effective.count(key)) {
        ++bound;  // bound, or its eviction failed and the resync restored it
        EXPECT_EQ(t["status"], "Bound") << key;
        EXPECT_EQ(t["node"], (*src)->spec.node_name.str()) << key;
      } else {
        ++pending;
        EXPECT_EQ(t["status"], "Pending") << key;
        EXPECT_EQ(t["node"], "") << key;
      }
    }
  }
  EXPECT_EQ(bound + pending + static_cast<int64_t>(evicted.size()), kJobs * kPerJob);
  int64_t used_milli = 0;
  for (auto& n : dump["nodes"]) used_milli += n["used"].value("cpu", 0);
  EXPECT_EQ(used_milli, bound * 100);  // no node double-counts a task
}

}  // namespace
}  // namespace volcache
