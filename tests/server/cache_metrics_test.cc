// CacheMetrics against a CacheRuntime driven inline with a FakeClock: binds, failures,
// queue and job series lifecycle, nodes/tasks by state, snapshot and queue-wait histograms —
// and the whole /metrics output passes an exposition-format check (tests/server/exposition.h;
// the served text is also parsed by python3-prometheus-client in admin_server_test).
#include "server/cache_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "cache/runtime.h"
#include "server/metrics.h"
#include "tests/fakes/cluster_builders.h"
#include "tests/fakes/fake_pipelines.h"
#include "tests/server/exposition.h"

namespace volcache {
namespace {

using testing::BindFault;
using testing::CheckExposition;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeBuilder;
using ::testing::Not;
using testing::PodBuilder;
using testing::PodGroupBuilder;
using testing::QueueBuilder;
using testing::Sample;

TEST(ExpositionCheckerTest, CatchesMistakes) {
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a gauge\na 1\n"), IsEmpty());
  EXPECT_THAT(CheckExposition("a 1\n"), Not(IsEmpty()));
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a gauge\na{b=\"\"\"} 1\n"), Not(IsEmpty()));
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a gauge\na 1\na 2\n"), Not(IsEmpty()));
  EXPECT_THAT(
      CheckExposition("# HELP a x\n# TYPE a histogram\na_bucket{le=\"1\"} 2\na_bucket{le=\"+Inf\"} 1\n"
                      "a_sum 1\na_count 1\n"),
      Not(IsEmpty()));
  // prometheus-cpp writes _count and _sum before the buckets: valid.
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a histogram\na_count 2\na_sum 3\na_bucket{le=\"1\"} 1\n"
                              "a_bucket{le=\"+Inf\"} 2\n"),
              IsEmpty());
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a histogram\na_count 3\na_sum 3\na_bucket{le=\"1\"} 1\n"
                              "a_bucket{le=\"+Inf\"} 2\n"),
              Not(IsEmpty()));  // _count is not the +Inf bucket
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a counter\na{b=\"x\\q\"} 1\n"),
              Not(IsEmpty()));  // bad escape
  EXPECT_THAT(CheckExposition("# HELP a x\n# TYPE a counter\na -1\n"), Not(IsEmpty()));
}

TEST(ExpositionCheckerTest, SampleIgnoresLabelOrder) {
  const std::string text = "# HELP a x\n# TYPE a gauge\na{z=\"1\",b=\"q\\\"\"} 7\n";
  EXPECT_EQ(Sample(text, "a{b=\"q\\\"\",z=\"1\"}"), 7);
  EXPECT_EQ(Sample(text, "a{b=\"q\\\"\"}"), std::nullopt);
}

struct Rig {
  explicit Rig(CacheMetricsOptions options = {}) : binder(&source) {
    RuntimeOptions o;
    o.inline_execution = true;
    rt = std::make_unique<CacheRuntime>(o, clock, &source, &binder, &evictor, &status, &recorder);
    rt->cache().EnsureDefaultQueues();
    cm = std::make_unique<CacheMetrics>(&registry, rt.get(), options);
    rt->Run();
  }
  ~Rig() {
    cm.reset();
    rt.reset();
  }
  void AddNode(const std::string& name, bool ready = true) {
    auto n = NodeBuilder(name).Allocatable("8", "32Gi", "110").Ready(ready).Ptr();
    source.PutNode(n);
    rt->cache().AddNode(*n);
    rt->RunDueWorkInline();
  }
  void Gang(const std::string& group, int n, const std::string& queue = "default") {
    ASSERT_TRUE(rt->cache().AddPodGroup(PodGroupBuilder("ns", group).MinMember(n).Queue(queue).Ptr()).ok());
    for (int i = 0; i < n; ++i) {
      auto p = PodBuilder("ns", group + "-" + std::to_string(i)).Group(group).Request("1", "1Gi").Ptr();
      source.PutPod(p);
      ASSERT_TRUE(rt->cache().AddPod(p).ok());
    }
  }
  std::string Scrape() const { return registry.Serialize(); }

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  testing::FakeBinder binder;
  testing::FakeEvictor evictor;
  testing::FakeStatusUpdater status;
  testing::FakeEventRecorder recorder;
  std::unique_ptr<CacheRuntime> rt;
  metrics::Registry registry;
  std::unique_ptr<CacheMetrics> cm;
};

TEST(CacheMetricsTest, EmptyCacheExportsValidText) {
  Rig r;
  const std::string text = r.Scrape();
  EXPECT_THAT(CheckExposition(text), IsEmpty()) << text;
  EXPECT_EQ(Sample(text, "volcache_pods_bound_total"), 0);
  EXPECT_EQ(Sample(text, "volcache_nodes{state=\"ready\"}"), 0);
  EXPECT_EQ(Sample(text, "volcache_tasks{status=\"Pending\"}"), 0);
  EXPECT_EQ(Sample(text, "volcache_jobs{phase=\"Running\"}"), 0);
  EXPECT_EQ(Sample(text, "volcache_queue_weight{queue=\"default\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_snapshot_duration_seconds_count"), 0);
  for (const char* q : {"node", "errTasks", "deletedJobs", "status"}) {
    EXPECT_EQ(Sample(text, std::string("volcache_workqueue_depth{queue=\"") + q + "\"}"), 0) << q;
  }
}

TEST(CacheMetricsTest, BindsShowInCountersHistogramsAndStates) {
  Rig r;
  r.AddNode("n1");
  r.AddNode("n2", /*ready=*/false);
  r.Gang("job", 3);
  ASSERT_TRUE(r.rt->Bind("ns/job-0", "n1").ok());
  ASSERT_TRUE(r.rt->Bind("ns/job-1", "n1").ok());
  std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_bind_flow_queued"), 2);
  EXPECT_EQ(Sample(text, "volcache_pods_bound_total"), 0);
  r.clock->Advance(std::chrono::milliseconds(20));
  r.rt->RunDueWorkInline();
  text = r.Scrape();
  EXPECT_THAT(CheckExposition(text), IsEmpty()) << text;
  EXPECT_EQ(Sample(text, "volcache_pods_bound_total"), 2);
  EXPECT_EQ(Sample(text, "volcache_binds_failed_total"), 0);
  EXPECT_EQ(Sample(text, "volcache_bind_batches_total"), 2);  // BATCH_BIND_NUM 1
  EXPECT_EQ(Sample(text, "volcache_bind_batch_size_count"), 2);
  EXPECT_EQ(Sample(text, "volcache_bind_batch_size_bucket{le=\"1\"}"), 2);
  EXPECT_EQ(Sample(text, "volcache_bind_latency_seconds_count"), 2);
  EXPECT_EQ(Sample(text, "volcache_bind_flow_queued"), 0);
  EXPECT_EQ(Sample(text, "volcache_nodes{state=\"ready\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_nodes{state=\"not_ready\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_cache_objects{kind=\"tasks\"}"), 3);
  // Bound by the binder, not yet confirmed by the watch: still Binding in the cache.
  EXPECT_EQ(Sample(text, "volcache_tasks{status=\"Binding\"}"), 2);
  EXPECT_EQ(Sample(text, "volcache_tasks{status=\"Pending\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_queue_allocated{queue=\"default\",resource=\"cpu\"}"), 2);
  EXPECT_EQ(Sample(text, "volcache_queue_allocated{queue=\"default\",resource=\"memory\"}"), 2.0 * (1 << 30));
  EXPECT_EQ(Sample(text, "volcache_queue_share{queue=\"default\"}"), 0.25);  // 2 of 8 cores on the ready node
  EXPECT_EQ(Sample(text, "volcache_queue_jobs{queue=\"default\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_queue_pending_tasks{queue=\"default\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_job_allocated_tasks{namespace=\"ns\",job=\"job\",queue=\"default\"}"), 2);
  EXPECT_EQ(Sample(text, "volcache_job_pending_tasks{namespace=\"ns\",job=\"job\",queue=\"default\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_job_share{namespace=\"ns\",job=\"job\",queue=\"default\"}"), 0.25);
  EXPECT_EQ(Sample(text, "volcache_status_writes_total{result=\"failed\"}"), 0);
}

TEST(CacheMetricsTest, FailedBindCountsAndTheResyncQueueMoves) {
  Rig r;
  r.AddNode("n1");
  r.Gang("job", 1);
  r.binder.Script("ns/job-0", BindFault::kError);
  ASSERT_TRUE(r.rt->Bind("ns/job-0", "n1").ok());
  r.clock->Advance(std::chrono::milliseconds(20));
  r.rt->RunDueWorkInline();
  const std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_binds_failed_total"), 1);
  EXPECT_EQ(Sample(text, "volcache_pods_bound_total"), 0);
  EXPECT_GE(Sample(text, "volcache_workqueue_adds_total{queue=\"errTasks\"}").value_or(0), 1);
  EXPECT_GE(Sample(text, "volcache_status_writes_total{result=\"ok\"}").value_or(0),
            1);  // SchedulerError condition
  EXPECT_EQ(Sample(text, "volcache_tasks{status=\"Pending\"}"), 1);
}

TEST(CacheMetricsTest, QueueSeriesLeaveWithTheQueue) {
  Rig r;
  auto q = QueueBuilder("research").Weight(3).Ptr();
  ASSERT_TRUE(r.rt->cache().AddQueue(q).ok());
  std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_queue_weight{queue=\"research\"}"), 3);
  EXPECT_EQ(Sample(text, "volcache_queue_allocated{queue=\"research\",resource=\"cpu\"}"), 0);
  ASSERT_TRUE(r.rt->cache().DeleteQueue(*q).ok());
  text = r.Scrape();
  EXPECT_THAT(text, Not(HasSubstr("queue=\"research\"")));
  EXPECT_EQ(Sample(text, "volcache_queue_weight{queue=\"default\"}"), 1);
  EXPECT_THAT(CheckExposition(text), IsEmpty()) << text;
}

TEST(CacheMetricsTest, ScalarResourceSeriesLeaveWhenTheAllocationEnds) {
  Rig r;
  auto n = NodeBuilder("gpu1")
               .Allocatable(testing::Resources(
                   {{"cpu", "8"}, {"memory", "8Gi"}, {"nvidia.com/gpu", "4"}, {"pods", "110"}}))
               .Ptr();
  r.source.PutNode(n);
  r.rt->cache().AddNode(*n);
  r.rt->RunDueWorkInline();
  ASSERT_TRUE(r.rt->cache().AddPodGroup(PodGroupBuilder("ns", "train").MinMember(1).Ptr()).ok());
  auto pod =
      PodBuilder("ns", "train-0").Group("train").Container(testing::Resources({{"nvidia.com/gpu", "2"}}));
  r.source.PutPod(pod.Ptr());
  ASSERT_TRUE(r.rt->cache().AddPod(pod.Ptr()).ok());
  Status bound = r.rt->Bind("ns/train-0", "gpu1");
  ASSERT_TRUE(bound.ok()) << bound.ToString();
  std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_queue_allocated{queue=\"default\",resource=\"nvidia.com/gpu\"}"), 2);
  EXPECT_EQ(Sample(text, "volcache_queue_share{queue=\"default\"}"), 0.5);
  ASSERT_TRUE(r.rt->cache().DeletePod(pod.Build()).ok());
  text = r.Scrape();
  EXPECT_THAT(text, Not(HasSubstr("nvidia.com/gpu")));
  EXPECT_EQ(Sample(text, "volcache_queue_share{queue=\"default\"}"), 0);
}

TEST(CacheMetricsTest, JobSeriesLeaveWithTheJob) {
  Rig r;
  r.AddNode("n1");
  r.Gang("a", 1);
  r.Gang("b", 1);
  std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_job_pending_tasks{namespace=\"ns\",job=\"a\",queue=\"default\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_job_pending_tasks{namespace=\"ns\",job=\"b\",queue=\"default\"}"), 1);
  ASSERT_TRUE(r.rt->cache().DeletePodGroup(PodGroupBuilder("ns", "a").Build()).ok());
  text = r.Scrape();
  EXPECT_THAT(text, Not(HasSubstr("job=\"a\"")));
  EXPECT_EQ(Sample(text, "volcache_job_pending_tasks{namespace=\"ns\",job=\"b\",queue=\"default\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_queue_jobs{queue=\"default\"}"), 1);
}

TEST(CacheMetricsTest, PerJobSeriesCanBeTurnedOff) {
  CacheMetricsOptions o;
  o.per_job_series = false;
  Rig r(o);
  r.Gang("a", 1);
  const std::string text = r.Scrape();
  EXPECT_THAT(text, Not(HasSubstr("volcache_job_")));
  EXPECT_EQ(Sample(text, "volcache_queue_pending_tasks{queue=\"default\"}"), 1);
}

TEST(CacheMetricsTest, SessionSamplesFeedTheSessionMetricsAndTheSnapshotDuration) {
  Rig r;
  r.cm->ObserveSession(SessionSample{0.25, 0.004, 16, 8, 2});
  r.cm->ObserveSession(SessionSample{0.5, 0.002, 0, 0, 1});
  const std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_sessions_total"), 2);
  EXPECT_EQ(Sample(text, "volcache_session_duration_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(Sample(text, "volcache_session_duration_seconds_sum").value_or(0), 0.75);
  EXPECT_DOUBLE_EQ(Sample(text, "volcache_snapshot_duration_seconds_sum").value_or(0), 0.006);
  EXPECT_EQ(Sample(text, "volcache_session_tasks_placed_sum"), 16);
  EXPECT_EQ(Sample(text, "volcache_session_binds_requested_sum"), 8);
  EXPECT_EQ(Sample(text, "volcache_session_jobs_unschedulable"), 1);  // the last session's
  EXPECT_EQ(Sample(text, "volcache_session_evictions_total{action=\"reclaim\"}"), 0);
}

TEST(CacheMetricsTest, SessionFairnessCountersAddUpAcrossSessions) {
  Rig r;
  r.cm->ObserveSession(SessionSample{0.1, 0.001, 2, 0, 1, 3, 2, 4, 1});
  r.cm->ObserveSession(SessionSample{0.1, 0.001, 2, 2, 0, 1, 0, 2, 0});
  const std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_session_jobs_enqueued_total"), 4);
  EXPECT_EQ(Sample(text, "volcache_session_tasks_pipelined_total"), 2);
  EXPECT_EQ(Sample(text, "volcache_session_evictions_total{action=\"reclaim\"}"), 6);
  EXPECT_EQ(Sample(text, "volcache_session_evictions_total{action=\"preempt\"}"), 1);
}

TEST(CacheMetricsTest, SnapshotAndQueueWaitHistograms) {
  Rig r;
  r.cm->ObserveSnapshot(std::chrono::milliseconds(3));
  r.cm->ObserveSnapshot(std::chrono::milliseconds(30));
  r.AddNode("n1");  // one item through the node queue
  const std::string text = r.Scrape();
  EXPECT_EQ(Sample(text, "volcache_snapshot_duration_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(Sample(text, "volcache_snapshot_duration_seconds_sum").value_or(0), 0.033);
  EXPECT_EQ(Sample(text, "volcache_snapshot_duration_seconds_bucket{le=\"0.0064\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_workqueue_wait_seconds_count{queue=\"node\"}"), 1);
  EXPECT_EQ(Sample(text, "volcache_workqueue_adds_total{queue=\"node\"}"), 1);
}

TEST(CacheMetricsTest, DestroyingDetachesEverything) {
  Rig r;
  r.AddNode("n1");
  r.Gang("job", 1);
  r.cm.reset();
  EXPECT_EQ(r.Scrape().find("volcache_nodes{"), std::string::npos);  // collector gone (no refresh)
  ASSERT_TRUE(r.rt->Bind("ns/job-0", "n1").ok());
  r.clock->Advance(std::chrono::milliseconds(20));
  r.rt->RunDueWorkInline();  // observers removed: nothing dangles
  EXPECT_EQ(r.rt->counters().binds_succeeded, 1u);
}

TEST(CacheMetricsTest, ScrapesRaceWithThreadedBinds) {
  ObjectStoreSource source;
  testing::FakeBinder binder(&source);
  testing::FakeEvictor evictor;
  testing::FakeStatusUpdater status;
  testing::FakeEventRecorder recorder;
  RuntimeOptions o;
  o.node_worker_threads = 2;
  o.dispatch_threads = 2;
  CacheRuntime rt(o, RealClock::Instance(), &source, &binder, &evictor, &status, &recorder);
  rt.cache().EnsureDefaultQueues();
  metrics::Registry registry;
  CacheMetrics cm(&registry, &rt);
  rt.Run();
  auto n = NodeBuilder("n1").Allocatable("64", "256Gi", "110").Ptr();
  source.PutNode(n);
  rt.cache().AddNode(*n);
  rt.MarkInitialListsApplied();
  ASSERT_TRUE(rt.WaitForCacheSync(std::chrono::seconds(10)).ok());
  constexpr int kPods = 40;
  ASSERT_TRUE(rt.cache().AddPodGroup(PodGroupBuilder("ns", "job").MinMember(1).Ptr()).ok());
  for (int i = 0; i < kPods; ++i) {
    auto p = PodBuilder("ns", "p" + std::to_string(i)).Group("job").Request("1", "1Gi").Ptr();
    source.PutPod(p);
    ASSERT_TRUE(rt.cache().AddPod(p).ok());
  }
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) {
      const std::string text = registry.Serialize();
      EXPECT_THAT(text, HasSubstr("volcache_pods_bound_total"));
    }
  });
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(rt.Bind("ns/p" + std::to_string(i), "n1").ok());
    cm.ObserveSnapshot(std::chrono::microseconds(i));
  }
  rt.Stop();  // drains every bind
  done = true;
  scraper.join();
  const std::string text = registry.Serialize();
  EXPECT_EQ(Sample(text, "volcache_pods_bound_total"), kPods);
  EXPECT_EQ(Sample(text, "volcache_bind_batch_size_sum"), kPods);
  // The node went through a node-sync worker (threaded runtime: observed, on the real clock).
  EXPECT_EQ(Sample(text, "volcache_node_sync_duration_seconds_count{result=\"ok\"}"), 1);
  EXPECT_THAT(CheckExposition(text), IsEmpty()) << text;
}

}  // namespace
}  // namespace volcache
