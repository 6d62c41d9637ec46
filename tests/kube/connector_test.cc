// The full loop against the loopback API server over real HTTP: the reflectors feed the
// cache, a test "session" decides placements through CacheRuntime::Bind, the REST binder
// POSTs the bindings, the watch confirms them; evictions, status writes, events and the
// default queues reach the server.
#include "kube/connector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "api/fmt.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using testing::Eventually;
using testing::FakeApiServer;
using testing::HyperNodeJson;
using testing::NodeJson;
using testing::PodGroupJson;
using testing::PodJson;

ConnectorOptions FastConnector() {
  ConnectorOptions o;
  o.reflector.initial_backoff = std::chrono::milliseconds(10);
  o.reflector.max_backoff = std::chrono::milliseconds(200);
  o.reflector.watch_timeout_seconds = 5;
  o.queue_retry = std::chrono::milliseconds(20);
  return o;
}

RuntimeOptions SmallRuntime() {
  RuntimeOptions o;
  o.node_worker_threads = 2;
  o.dispatch_threads = 4;
  o.status_worker_threads = 1;
  return o;
}

// Connector + runtime wired as `volcache serve` does.
struct Harness {
  explicit Harness(FakeApiServer& server, ConnectorOptions copts = FastConnector(),
                   RuntimeOptions ropts = SmallRuntime())
      : conn(std::move(RestClient::Create(server.Config()).value()), copts),
        rt(ropts, RealClock::Instance(), conn.source(), conn.binder(), conn.evictor(), conn.status_updater(),
           conn.event_recorder()) {
    rt.Run();
    conn.Start(&rt);
  }
  ~Harness() {
    rt.Stop();
    conn.Stop();
  }
  Connector conn;
  CacheRuntime rt;
};

std::string NodeOf(FakeApiServer& s, const std::string& ns, const std::string& name) {
  auto pod = s.Get("pods", ns, name);
  return pod ? (*pod)["spec"].value("nodeName", "") : "";
}

TEST(ConnectorTest, SyncsSeededClusterAndCreatesDefaultQueues) {
  FakeApiServer server;
  server.SeedFromSharedData();
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Eventually([&] { return h.conn.stats().queues_created; }));
  EXPECT_TRUE(server.Get("queues", "", "root"));
  EXPECT_TRUE(server.Get("queues", "", "default"));
  EXPECT_EQ((*server.Get("queues", "", "root"))["spec"]["reclaimable"], false);
  // The real nodes (minikube) and the real bound pods are in the cache.
  EXPECT_GE(h.rt.cache().num_nodes(), 1u);
  EXPECT_GE(h.rt.cache().num_tasks(), 3u);
  EXPECT_EQ(h.conn.stats().decode_errors, 0u);
  EXPECT_EQ(h.rt.cache().CheckInvariants(), Status::Ok());
  EXPECT_EQ(h.rt.cache().Compare(), "");
}

// Defect: queue creation retried every 10 ms (~170 warnings/s against an unreachable server).
// While the initial lists take 500 ms (a slow LIST), the POSTs of `root` fail: each retry
// waits a 150 ms backoff step, so there are at most elapsed / 150 ms + 1 of them (the 10 ms
// loop made ~50). Once the server recovers, both queues are created.
TEST(ConnectorTest, QueueCreationRetriesArePacedByBackoff) {
  FakeApiServer server;
  server.AddFault(testing::FaultRule{"POST", "/queues", 503, "ServiceUnavailable", -1, {}, -1});
  server.AddFault(
      testing::FaultRule{"GET", "/priorityclasses", 0, "", -1, std::chrono::milliseconds(500), 1});
  ConnectorOptions o = FastConnector();
  o.queue_retry = std::chrono::milliseconds(150);
  o.queue_retry_jitter = 0;
  const auto start = std::chrono::steady_clock::now();
  Harness h(server, o);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  const uint64_t failed = server.counters().faults - 1;  // minus the slow LIST
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(failed, 1u);
  EXPECT_LE(failed, static_cast<uint64_t>(elapsed / std::chrono::milliseconds(150)) + 1)
      << "in " << (elapsed / std::chrono::milliseconds(1)) << " ms";
  server.ClearFaults();
  ASSERT_TRUE(Eventually([&] { return h.conn.stats().queues_created; }, std::chrono::seconds(30)));
  EXPECT_TRUE(server.Get("queues", "", "root"));
  EXPECT_TRUE(server.Get("queues", "", "default"));
}

// The root/default queue creation is paced on the injected clock: with a FakeClock nothing
// is retried until the clock moves, and each step of the backoff is one more attempt.
TEST(ConnectorTest, QueueCreationIsPacedOnTheInjectedClock) {
  FakeApiServer server;
  server.AddFault(testing::FaultRule{"POST", "/queues", 503, "ServiceUnavailable", -1, {}, -1});
  auto clock = std::make_shared<FakeClock>();
  ConnectorOptions o = FastConnector();
  o.clock = clock;
  o.reflector.clock = RealClock::Instance();  // the starter's timer is then the only one pending
  o.queue_retry = std::chrono::seconds(1);
  o.queue_retry_jitter = 0;
  Connector conn(std::move(RestClient::Create(server.Config()).value()), o);
  CacheRuntime rt(SmallRuntime(), RealClock::Instance(), conn.source(), conn.binder(), conn.evictor(),
                  conn.status_updater(), conn.event_recorder());
  rt.Run();
  conn.Start(&rt);
  ASSERT_TRUE(rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  for (uint64_t want = 2; want <= 4; ++want) {
    // The attempt failed and the starter waits for its timer.
    ASSERT_TRUE(Eventually([&] {
      return conn.stats().queue_create_attempts == want - 1 && clock->PendingTimers() == 1;
    })) << want - 1;
    // Short of the step: no attempt; the step: exactly one more.
    clock->Advance(std::chrono::milliseconds(999));
    EXPECT_EQ(conn.stats().queue_create_attempts, want - 1);
    clock->Advance(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(
      Eventually([&] { return conn.stats().queue_create_attempts == 4 && clock->PendingTimers() == 1; }));
  server.ClearFaults();
  clock->Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Eventually([&] { return conn.stats().queues_created; }));
  rt.Stop();
  conn.Stop();
}

TEST(ConnectorTest, PodFilterFollowsTheSchedulerName) {
  FakeApiServer server;
  server.Upsert(NodeJson("n1", "8", "16Gi"));
  server.Upsert(PodJson("ns", "ours", "1", "1Gi", "", "volcano"));
  server.Upsert(PodJson("ns", "foreign-pending", "1", "1Gi", "", "default-scheduler"));
  server.Upsert(PodJson("ns", "foreign-bound", "1", "1Gi", "", "default-scheduler", "n1"));
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  EXPECT_TRUE(h.rt.cache().HasTask("ns/ours"));
  EXPECT_FALSE(h.rt.cache().HasTask("ns/foreign-pending"));
  EXPECT_TRUE(h.rt.cache().HasTask("ns/foreign-bound"));
  // The default scheduler binds its pod: it enters the filter (counted on the node).
  server.Upsert(PodJson("ns", "foreign-pending", "1", "1Gi", "", "default-scheduler", "n1"));
  ASSERT_TRUE(Eventually([&] { return h.rt.cache().HasTask("ns/foreign-pending"); }));
}

nlohmann::json OwnedBy(nlohmann::json obj, const std::string& owner) {
  obj["metadata"]["ownerReferences"] = nlohmann::json::array({{{"apiVersion", "batch.volcano.sh/v1alpha1"},
                                                               {"kind", "Job"},
                                                               {"name", owner},
                                                               {"uid", owner + "-uid"}}});
  return obj;
}

// Volcano's multi-scheduler filters, as instance volcano-scheduler-1 of 3. Owners on the ring
// (kube/shard_test.cc's Python model): node-7 and node-9 -> member 1, node-0..6 and node-8 ->
// members 0 or 2; job-b and job-d -> 1, job-a -> 0, job-c -> 2; "pg-a" -> 1, "pg-b" -> 2.
TEST(ConnectorTest, ShardFilterKeepsOnlyThisInstancesNodesJobsAndTheirPods) {
  FakeApiServer server;
  for (int n = 0; n < 10; ++n) server.Upsert(NodeJson("node-" + std::to_string(n), "8", "16Gi"));
  // A job of ours (the PodGroup and its pods share the owner job-b), one of member 0's.
  server.Upsert(OwnedBy(PodGroupJson("ns", "pg-b", 2), "job-b"));
  server.Upsert(OwnedBy(PodJson("ns", "b-0", "1", "1Gi", "pg-b"), "job-b"));
  server.Upsert(OwnedBy(PodJson("ns", "b-1", "1", "1Gi", "pg-b"), "job-b"));
  server.Upsert(OwnedBy(PodGroupJson("ns", "grp-a", 1), "job-a"));
  server.Upsert(OwnedBy(PodJson("ns", "a-0", "1", "1Gi", "grp-a"), "job-a"));
  // Without an owner a PodGroup is keyed by its name: pg-a is ours (pg-b would not be).
  server.Upsert(PodGroupJson("ns", "pg-a", 1));
  // Bound pods: member 0's job on our node-7 counts on it; a foreign pod on node-9 too;
  // foreign pods on other members' nodes do not.
  server.Upsert(OwnedBy(PodJson("ns", "a-bound", "1", "1Gi", "", "volcano", "node-7"), "job-a"));
  server.Upsert(PodJson("ns", "foreign-ours", "1", "1Gi", "", "default-scheduler", "node-9"));
  server.Upsert(PodJson("ns", "foreign-theirs", "1", "1Gi", "", "default-scheduler", "node-0"));
  server.Upsert(PodJson("ns", "pending-foreign", "1", "1Gi", "", "default-scheduler"));

  ConnectorOptions copts = FastConnector();
  copts.shard = std::make_shared<Shard>(ShardConfig{"volcano-scheduler-1", "volcano-scheduler", 3});
  Harness h(server, copts);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());

  EXPECT_TRUE(h.rt.cache().HasTask("ns/b-0"));
  EXPECT_TRUE(h.rt.cache().HasTask("ns/b-1"));
  EXPECT_FALSE(h.rt.cache().HasTask("ns/a-0"));
  EXPECT_TRUE(h.rt.cache().HasTask("ns/a-bound"));
  EXPECT_TRUE(h.rt.cache().HasTask("ns/foreign-ours"));
  EXPECT_FALSE(h.rt.cache().HasTask("ns/foreign-theirs"));
  EXPECT_FALSE(h.rt.cache().HasTask("ns/pending-foreign"));
  EXPECT_EQ(h.rt.cache().num_nodes(), 2u);
  auto snap = h.rt.cache().Snapshot();
  EXPECT_EQ(snap->nodes().size(), 2u);
  EXPECT_TRUE(snap->nodes().count("node-7"));
  EXPECT_TRUE(snap->nodes().count("node-9"));
  std::set<std::string> jobs;
  for (const auto& [_, job] : snap->jobs()) jobs.insert(std::string(job->name()));
  EXPECT_EQ(jobs, (std::set<std::string>{"pg-a", "pg-b"}));
  // The cache agrees with the shard's view of the cluster, and accounting is exact.
  EXPECT_EQ(h.rt.cache().Compare(), "");
  EXPECT_EQ(h.rt.cache().CheckInvariants(), Status::Ok());
  EXPECT_FALSE(h.conn.source()->GetNode("node-0").ok());
  EXPECT_TRUE(h.conn.source()->GetNode("node-7").ok());

  auto shard = nlohmann::json::parse(h.conn.ShardJson());
  EXPECT_EQ(shard["enabled"], true);
  EXPECT_EQ(shard["identity"], "volcano-scheduler-1");
  EXPECT_EQ(shard["members"],
            nlohmann::json::array({"volcano-scheduler-0", "volcano-scheduler-1", "volcano-scheduler-2"}));
  EXPECT_EQ(shard["nodes"]["count"], 2);
  EXPECT_EQ(shard["nodes"]["names"], nlohmann::json::array({"node-7", "node-9"}));
  EXPECT_EQ(shard["jobs"]["names"], nlohmann::json::array({"ns/pg-a", "ns/pg-b"}));
  EXPECT_EQ(h.conn.stats().filtered_nodes, 8u);
  EXPECT_EQ(h.conn.stats().filtered_podgroups, 1u);

  // A new job keyed to us arrives after the sync; one keyed elsewhere stays out.
  server.Upsert(OwnedBy(PodGroupJson("ns", "pg-d", 1), "job-d"));
  server.Upsert(OwnedBy(PodJson("ns", "d-0", "1", "1Gi", "pg-d"), "job-d"));
  server.Upsert(OwnedBy(PodGroupJson("ns", "pg-c", 1), "job-c"));
  server.Upsert(OwnedBy(PodJson("ns", "c-0", "1", "1Gi", "pg-c"), "job-c"));
  ASSERT_TRUE(Eventually([&] { return h.rt.cache().HasTask("ns/d-0"); }));
  ASSERT_TRUE(Eventually([&] { return h.conn.stats().filtered_podgroups == 2u; }));
  EXPECT_FALSE(h.rt.cache().HasTask("ns/c-0"));
  // Member 0's pending pod gets bound onto our node-9 (by its own instance): it enters.
  server.Upsert(OwnedBy(PodJson("ns", "a-0", "1", "1Gi", "grp-a", "volcano", "node-9"), "job-a"));
  ASSERT_TRUE(Eventually([&] { return h.rt.cache().HasTask("ns/a-0"); }));
  EXPECT_EQ(h.rt.cache().CheckInvariants(), Status::Ok());
}

TEST(ConnectorTest, WithoutShardTheDebugViewListsEverything) {
  FakeApiServer server;
  server.Upsert(NodeJson("n1", "8", "16Gi"));
  server.Upsert(NodeJson("n2", "8", "16Gi"));
  server.Upsert(PodGroupJson("ns", "g", 1));
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  auto shard = nlohmann::json::parse(h.conn.ShardJson());
  EXPECT_EQ(shard["enabled"], false);
  EXPECT_EQ(shard["nodes"]["names"], nlohmann::json::array({"n1", "n2"}));
  EXPECT_EQ(shard["jobs"]["names"], nlohmann::json::array({"ns/g"}));
}

TEST(ConnectorTest, GangIsBoundThroughTheRestBinderAndConfirmedByTheWatch) {
  FakeApiServer server;
  for (int n = 0; n < 3; ++n) server.Upsert(NodeJson("n" + std::to_string(n), "4", "8Gi"));
  server.Upsert(PodGroupJson("ns", "gang", 3));
  for (int i = 0; i < 3; ++i) {
    auto pod = PodJson("ns", "w" + std::to_string(i), "1", "1Gi", "gang");
    pod["metadata"]["annotations"]["example.com/device"] = "gpu-" + std::to_string(i);
    server.Upsert(pod);
  }
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(h.rt.Bind("ns/w" + std::to_string(i), "n" + std::to_string(i)), Status::Ok());
  }
  for (int i = 0; i < 3; ++i) {
    const std::string name = "w" + std::to_string(i), node = "n" + std::to_string(i);
    ASSERT_TRUE(Eventually([&] { return NodeOf(server, "ns", name) == node; })) << name;
    ASSERT_TRUE(Eventually([&] {
      auto t = h.rt.cache().GetTask("ns/" + name);
      return t.ok() && t->status == TaskStatus::kBound && t->node_name == node &&
             !h.rt.cache().IsAssumed("ns/" + name);
    })) << name;
    // The binding carried the pod's annotations.
    EXPECT_EQ((*server.Get("pods", "ns", name))["metadata"]["annotations"]["example.com/device"],
              "gpu-" + std::to_string(i));
  }
  auto c = server.counters();
  EXPECT_EQ(c.binds, 3u);
  for (const auto& [pod, n] : c.binds_per_pod) EXPECT_EQ(n, 1) << pod;
  EXPECT_TRUE(Eventually([&] { return h.rt.counters().binds_succeeded == 3; }));
  // "Scheduled" events were posted (asynchronously).
  ASSERT_TRUE(Eventually([&] { return server.counters().events >= 3; }));
  EXPECT_EQ(h.rt.cache().CheckInvariants(), Status::Ok());
  EXPECT_EQ(h.rt.cache().Compare(), "");
}

TEST(ConnectorTest, RefusedBindIsForgottenAndTheResyncRestoresThePod) {
  FakeApiServer server;
  server.Upsert(NodeJson("n1", "4", "8Gi"));
  server.Upsert(NodeJson("n2", "4", "8Gi"));
  server.Upsert(PodGroupJson("ns", "g", 1));
  server.Upsert(PodJson("ns", "p", "1", "1Gi", "g"));
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  // Someone else binds the pod first, and our watch has not seen it yet: 409.
  server.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), -1});
  server.DropWatches();
  {
    auto pod = *server.Get("pods", "ns", "p");
    pod["spec"]["nodeName"] = "n2";
    server.Upsert(pod);
  }
  ASSERT_EQ(h.rt.Bind("ns/p", "n1"), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return h.rt.counters().binds_failed == 1; }));
  EXPECT_EQ(server.counters().bind_conflicts, 1u);
  server.ClearFaults();
  // The watch delivers the truth: bound on n2.
  ASSERT_TRUE(Eventually([&] {
    auto t = h.rt.cache().GetTask("ns/p");
    return t.ok() && t->status == TaskStatus::kBound && t->node_name == "n2";
  }));
  // The failure was written on the pod (PodScheduled=False, SchedulerError).
  ASSERT_TRUE(Eventually([&] {
    auto pod = server.Get("pods", "ns", "p");
    if (!pod || !(*pod)["status"].contains("conditions")) return false;
    for (const auto& c : (*pod)["status"]["conditions"]) {
      if (c["type"] == "PodScheduled" && c["reason"] == "SchedulerError") return true;
    }
    return false;
  }));
  EXPECT_EQ(h.rt.cache().CheckInvariants(), Status::Ok());
}

TEST(ConnectorTest, EvictionStatusAndQueueWritesReachTheServer) {
  for (bool eviction_api : {false, true}) {
    SCOPED_TRACE(eviction_api ? "eviction API" : "delete");
    FakeApiServer server;
    server.Upsert(NodeJson("n1", "4", "8Gi"));
    server.Upsert(PodGroupJson("ns", "g", 1));
    server.Upsert(PodJson("ns", "victim", "1", "1Gi", "g", "volcano", "n1"));
    auto copts = FastConnector();
    copts.use_eviction_api = eviction_api;
    Harness h(server, copts);
    ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
    ASSERT_TRUE(Eventually([&] { return h.conn.stats().queues_created; }));
    ASSERT_EQ(h.rt.Evict("ns/victim", "preempted by ns/vip"), Status::Ok());
    ASSERT_TRUE(Eventually([&] { return !server.Get("pods", "ns", "victim"); }));
    ASSERT_TRUE(Eventually([&] { return !h.rt.cache().HasTask("ns/victim"); }));
    auto c = server.counters();
    EXPECT_EQ(eviction_api ? c.evictions : c.deletes, 1u);
    EXPECT_GE(c.status_patches, 1u);  // the eviction conditions

    // PodGroup status from the session's view, and queue status.
    auto snap = h.rt.cache().Snapshot();
    ASSERT_EQ(snap->jobs().size(), 1u);
    const JobInfo& job = *snap->jobs().begin()->second;
    h.rt.UpdateJobStatus(job, "Running");
    ASSERT_TRUE(Eventually([&] {
      auto pg = server.Get("podgroups", "ns", "g");
      return pg && (*pg)["status"].value("phase", "") == "Running";
    }));
    // Queue status (allocated) on the status subresource, once the server's queue is known.
    ASSERT_TRUE(Eventually([&] {
      auto s = h.rt.cache().Snapshot();
      auto it = s->queues.find("default");
      return it != s->queues.end() && it->second.queue != nullptr;
    }));
    auto snap2 = h.rt.cache().Snapshot();
    QueueInfo q = snap2->queues.at("default");
    q.allocated = Resource();
    q.allocated.set_milli_cpu(1500);
    h.rt.UpdateQueueStatus(q);
    ASSERT_TRUE(Eventually([&] {
      auto queue = server.Get("queues", "", "default");
      return queue && (*queue)["status"].contains("allocated") &&
             (*queue)["status"]["allocated"]["cpu"] == "1.5";
    }));
  }
}

// Many binds through the real HTTP path: all confirmed, none duplicated. Prints the rate
// (a figure for the record, never asserted).
TEST(ConnectorTest, ThousandBindsAreAllConfirmedOnce) {
  for (size_t batch : {size_t{1}, size_t{16}}) {
    FakeApiServer server;
    constexpr int kPods = 1000, kNodes = 20;
    for (int n = 0; n < kNodes; ++n) server.Upsert(NodeJson("n" + std::to_string(n), "64", "256Gi"));
    server.Upsert(PodGroupJson("ns", "big", 1));
    for (int i = 0; i < kPods; ++i) server.Upsert(PodJson("ns", "p" + std::to_string(i), "1", "1Gi", "big"));
    auto ropts = SmallRuntime();
    ropts.bind_flow.batch_size = batch;
    Harness h(server, FastConnector(), ropts);
    ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(120)).ok());
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPods; ++i) {
      ASSERT_EQ(h.rt.Bind("ns/p" + std::to_string(i), "n" + std::to_string(i % kNodes)), Status::Ok());
    }
    ASSERT_TRUE(
        Eventually([&] { return h.rt.counters().binds_succeeded == kPods; }, std::chrono::seconds(300)));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(Eventually([&] { return h.rt.cache().Compare().empty(); }, std::chrono::seconds(120)));
    auto c = server.counters();
    EXPECT_EQ(c.binds, static_cast<uint64_t>(kPods));
    for (const auto& [pod, n] : c.binds_per_pod) EXPECT_EQ(n, 1) << pod;
    std::cerr << "batch " << batch << ": " << kPods << " binds over loopback HTTP in " << secs << " s ("
              << kPods / secs << " binds/s)\n";
  }
}

// The dump's "hyperNodes" (SPEC §12) once the forest is ready.
nlohmann::json HyperNodesOf(const CacheRuntime& rt) {
  nlohmann::json d = nlohmann::json::parse(rt.cache().Dump());
  return d.value("hyperNodesReady", false) ? d["hyperNodes"] : nlohmann::json();
}

nlohmann::json HyperNodeView(int tier, const nlohmann::json& parent, const std::vector<std::string>& children,
                             const std::vector<std::string>& nodes) {
  return {{"tier", tier}, {"tierName", ""}, {"parent", parent}, {"children", children}, {"nodes", nodes}};
}

// The connector lists and watches topology.volcano.sh/v1alpha1 hypernodes and feeds them to
// the cache as it feeds Nodes: the forest follows creates, an update (a member moves) and a
// delete (the children become roots).
TEST(ConnectorTest, HyperNodesAreListedAndWatchedIntoTheForest) {
  FakeApiServer server;
  for (int i = 0; i < 4; ++i) server.Create(NodeJson("node-" + std::to_string(i), "8", "16Gi"));
  server.Create(HyperNodeJson("s0", 1, "Node", {"node-0", "node-1"}));
  server.Create(HyperNodeJson("s1", 1, "Node", {"node-2", "node-3"}));
  server.Create(HyperNodeJson("s4", 2, "HyperNode", {"s0"}));
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  const nlohmann::json listed = {{"s0", HyperNodeView(1, "s4", {}, {"node-0", "node-1"})},
                                 {"s1", HyperNodeView(1, nullptr, {}, {"node-2", "node-3"})},
                                 {"s4", HyperNodeView(2, nullptr, {"s0"}, {"node-0", "node-1"})}};
  ASSERT_TRUE(Eventually([&] { return HyperNodesOf(h.rt) == listed; })) << HyperNodesOf(h.rt).dump();

  // Watched: a new member of s4.
  server.Upsert(HyperNodeJson("s4", 2, "HyperNode", {"s0", "s1"}));
  const nlohmann::json updated = {
      {"s0", HyperNodeView(1, "s4", {}, {"node-0", "node-1"})},
      {"s1", HyperNodeView(1, "s4", {}, {"node-2", "node-3"})},
      {"s4", HyperNodeView(2, nullptr, {"s0", "s1"}, {"node-0", "node-1", "node-2", "node-3"})}};
  ASSERT_TRUE(Eventually([&] { return HyperNodesOf(h.rt) == updated; })) << HyperNodesOf(h.rt).dump();

  // Watched: s4 deleted, s0 and s1 are roots again.
  ASSERT_TRUE(server.Delete("hypernodes", "", "s4"));
  const nlohmann::json deleted = {{"s0", HyperNodeView(1, nullptr, {}, {"node-0", "node-1"})},
                                  {"s1", HyperNodeView(1, nullptr, {}, {"node-2", "node-3"})}};
  ASSERT_TRUE(Eventually([&] { return HyperNodesOf(h.rt) == deleted; })) << HyperNodesOf(h.rt).dump();
  const ReflectorStats st = h.conn.reflector(ResourceKind::kHyperNodes).stats();
  EXPECT_EQ(st.lists, 1u);
  EXPECT_EQ(st.added, 0u);
  EXPECT_EQ(st.modified, 1u);
  EXPECT_EQ(st.deleted, 1u);
  EXPECT_FALSE(st.not_served);
  EXPECT_EQ(h.conn.stats().cache_errors, 0u);
  EXPECT_EQ(h.conn.stats().decode_errors, 0u);
}

// A cluster without the HyperNode CRD answers 404 to the LIST (Volcano's scheduler runs
// there too): the initial sync completes with an empty forest, nothing counts as a failure,
// and the resource is listed again with backoff, so that a CRD installed later is watched.
TEST(ConnectorTest, HyperNodesNotServedSyncEmptyAndArePickedUpOnceServed) {
  FakeApiServer server;
  server.Create(NodeJson("node-0", "8", "16Gi"));
  server.Create(HyperNodeJson("s0", 1, "Node", {"node-0"}));
  server.SetServed("hypernodes", false);
  Harness h(server);
  ASSERT_TRUE(h.rt.WaitForCacheSync(std::chrono::seconds(60)).ok());
  const Reflector& r = h.conn.reflector(ResourceKind::kHyperNodes);
  EXPECT_TRUE(r.HasSynced());
  EXPECT_EQ(HyperNodesOf(h.rt), nlohmann::json::object());
  EXPECT_EQ(h.rt.cache().num_nodes(), 1u);
  // Checked again (the backoff is 10..200 ms here), never watched, never a failure.
  ASSERT_TRUE(Eventually([&] { return server.counters().not_served >= 3; }));
  ReflectorStats st = r.stats();
  EXPECT_TRUE(st.not_served);
  EXPECT_EQ(st.list_failures, 0u);
  EXPECT_EQ(st.relists, 0u);
  EXPECT_EQ(st.watches, 0u);
  EXPECT_EQ(st.consecutive_failures, 0u);
  EXPECT_EQ(r.size(), 0u);

  // The CRD is installed: the next check lists s0 and the watch follows.
  server.SetServed("hypernodes", true);
  const nlohmann::json served = {{"s0", HyperNodeView(1, nullptr, {}, {"node-0"})}};
  ASSERT_TRUE(Eventually([&] { return HyperNodesOf(h.rt) == served; })) << HyperNodesOf(h.rt).dump();
  ASSERT_TRUE(Eventually([&] { return r.stats().watches >= 1; }));
  st = r.stats();
  EXPECT_FALSE(st.not_served);
  EXPECT_EQ(st.list_failures, 0u);
  server.Upsert(HyperNodeJson("s0", 1, "Node", {}));
  const nlohmann::json emptied = {{"s0", HyperNodeView(1, nullptr, {}, {})}};
  ASSERT_TRUE(Eventually([&] { return HyperNodesOf(h.rt) == emptied; })) << HyperNodesOf(h.rt).dump();

  // Uninstalled again: the watch ends in 404, the relist finds nothing served, the forest empties.
  server.SetServed("hypernodes", false);
  server.DropWatches();
  ASSERT_TRUE(Eventually([&] { return HyperNodesOf(h.rt) == nlohmann::json::object(); }))
      << HyperNodesOf(h.rt).dump();
  EXPECT_TRUE(r.stats().not_served);
  EXPECT_EQ(r.size(), 0u);
}

// Records what a connector delivers (the cache's side of the feeders), accepting everything.
class RecordingSink final : public volcache::EventSink {
 public:
  Status Apply(EventType type, const k8s::Object& obj) override {
    Record(type == EventType::kDelete ? "delete" : "apply", std::make_shared<const k8s::Object>(obj));
    return Status::Ok();
  }
  Status Add(std::shared_ptr<const k8s::Object> obj) override {
    Record("add", std::move(obj));
    return Status::Ok();
  }
  Status Update(std::shared_ptr<const k8s::Object> old_obj,
                std::shared_ptr<const k8s::Object> new_obj) override {
    Record("update", std::move(new_obj));
    return Status::Ok();
  }
  // The last version delivered of the object DescribeObject calls `who`, and how ("add",
  // "update", "delete"); null when none was.
  std::pair<std::string, ObjectPtr> Last(const std::string& who) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_.find(who);
    return it == last_.end() ? std::pair<std::string, ObjectPtr>{} : it->second;
  }

 private:
  void Record(std::string op, ObjectPtr obj) {
    const std::string who = k8s::DescribeObject(*obj);
    std::lock_guard<std::mutex> lock(mu_);
    last_[who] = {std::move(op), std::move(obj)};
  }
  mutable std::mutex mu_;
  std::map<std::string, std::pair<std::string, ObjectPtr>> last_;
};

nlohmann::json ClaimJson(const std::string& ns, const std::string& name, const std::string& storage_class,
                         const std::string& volume, const std::string& phase) {
  nlohmann::json j = {{"apiVersion", "v1"},
                      {"kind", "PersistentVolumeClaim"},
                      {"metadata", {{"name", name}, {"namespace", ns}}},
                      {"spec",
                       {{"accessModes", {"ReadWriteOnce"}},
                        {"resources", {{"requests", {{"storage", "1Gi"}}}}},
                        {"storageClassName", storage_class}}},
                      {"status", {{"phase", phase}}}};
  if (!volume.empty()) j["spec"]["volumeName"] = volume;
  return j;
}

nlohmann::json VolumeJson(const std::string& name, const std::string& storage_class, const std::string& node,
                          const std::string& zone) {
  nlohmann::json hostname = {{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {node}}};
  nlohmann::json term = {{"matchExpressions", nlohmann::json::array({hostname})}};
  nlohmann::json j = {{"apiVersion", "v1"},
                      {"kind", "PersistentVolume"},
                      {"metadata", {{"name", name}, {"labels", {{"topology.kubernetes.io/zone", zone}}}}},
                      {"spec",
                       {{"capacity", {{"storage", "1Gi"}}},
                        {"accessModes", {"ReadWriteOnce"}},
                        {"storageClassName", storage_class},
                        {"local", {{"path", "/mnt/disks/" + name}}}}},
                      {"status", {{"phase", "Available"}}}};
  j["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] = nlohmann::json::array({term});
  return j;
}

nlohmann::json StorageClassJson(const std::string& name, const std::string& mode) {
  return {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "StorageClass"},
          {"metadata", {{"name", name}}},
          {"provisioner", "kubernetes.io/no-provisioner"},
          {"volumeBindingMode", mode}};
}

// PersistentVolumeClaims, PersistentVolumes and StorageClasses are listed and watched (read
// only) and reach the sink typed: listed ones as adds, then a watched create, an update (the
// claim binds) and a delete.
TEST(ConnectorTest, StorageObjectsAreListedAndWatchedIntoTheSink) {
  FakeApiServer server;
  server.Create(StorageClassJson("local", "WaitForFirstConsumer"));
  server.Create(VolumeJson("pv-0", "local", "node-0", "zone-a"));
  server.Create(ClaimJson("team-a", "data-0", "local", "", "Pending"));
  RecordingSink sink;
  std::atomic<bool> listed{false};
  Connector conn(std::move(RestClient::Create(server.Config()).value()), FastConnector());
  conn.Start(&sink, [&] { listed = true; });
  ASSERT_TRUE(Eventually([&] { return listed.load(); }));
  for (ResourceKind kind : {ResourceKind::kPersistentVolumeClaims, ResourceKind::kPersistentVolumes,
                            ResourceKind::kStorageClasses}) {
    EXPECT_TRUE(conn.reflector(kind).HasSynced()) << Info(kind).name;
    EXPECT_EQ(conn.reflector(kind).stats().lists, 1u) << Info(kind).name;
  }

  auto [op, obj] = sink.Last("StorageClass local");
  EXPECT_EQ(op, "add");
  ASSERT_TRUE(obj);
  EXPECT_EQ(std::get<k8s::StorageClass>(*obj).volume_binding_mode, "WaitForFirstConsumer");
  std::tie(op, obj) = sink.Last("PersistentVolume pv-0");
  EXPECT_EQ(op, "add");
  ASSERT_TRUE(obj);
  const auto& pv = std::get<k8s::PersistentVolume>(*obj);
  EXPECT_EQ(pv.storage_class_name, "local");
  EXPECT_EQ(pv.metadata.labels.at("topology.kubernetes.io/zone"), "zone-a");
  ASSERT_TRUE(pv.node_affinity.has_value());
  EXPECT_EQ((*pv.node_affinity)[0].match_expressions[0].values, std::vector<std::string>{"node-0"});
  std::tie(op, obj) = sink.Last("PersistentVolumeClaim team-a/data-0");
  EXPECT_EQ(op, "add");
  ASSERT_TRUE(obj);
  EXPECT_EQ(std::get<k8s::PersistentVolumeClaim>(*obj).phase, "Pending");

  // Watched: a new class, the claim bound to the volume, the volume deleted.
  server.Create(StorageClassJson("fast", "Immediate"));
  server.Upsert(ClaimJson("team-a", "data-0", "local", "pv-0", "Bound"));
  ASSERT_TRUE(server.Delete("persistentvolumes", "", "pv-0"));
  ASSERT_TRUE(Eventually([&] { return sink.Last("StorageClass fast").first == "add"; }));
  ASSERT_TRUE(Eventually([&] { return sink.Last("PersistentVolumeClaim team-a/data-0").first == "update"; }));
  std::tie(op, obj) = sink.Last("PersistentVolumeClaim team-a/data-0");
  const auto& bound = std::get<k8s::PersistentVolumeClaim>(*obj);
  EXPECT_EQ(bound.volume_name, "pv-0");
  EXPECT_EQ(bound.phase, "Bound");
  EXPECT_EQ(bound.storage_class_name, std::optional<std::string>("local"));
  ASSERT_TRUE(Eventually([&] { return sink.Last("PersistentVolume pv-0").first == "delete"; }));
  EXPECT_EQ(conn.reflector(ResourceKind::kPersistentVolumes).size(), 0u);
  EXPECT_EQ(conn.reflector(ResourceKind::kStorageClasses).size(), 2u);
  EXPECT_EQ(conn.stats().decode_errors, 0u);
  EXPECT_EQ(conn.stats().cache_errors, 0u);
  conn.Stop();
}

}  // namespace
}  // namespace volcache::kube
