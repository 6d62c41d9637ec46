// Fault injection: the API server answers 5xx, 409, 429 + Retry-After, applies binds but
// loses the answers, drops / truncates / corrupts watch streams and compacts its history
// (relist). A test session keeps deciding placements for whatever the cache shows Pending;
// the cache must converge to the server's state with every pod bound exactly once.
#include <gtest/gtest.h>

#include "api/fmt.h"
#include "kube/connector.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using testing::Eventually;
using testing::FakeApiServer;
using testing::NodeJson;
using testing::PodGroupJson;
using testing::PodJson;

TEST(FaultsTest, ConvergesWithZeroLostOrDuplicatedBinds) {
  FakeApiServer server;
  constexpr int kNodes = 8, kJobs = 10, kPerJob = 4;
  for (int n = 0; n < kNodes; ++n) server.Upsert(NodeJson("n" + std::to_string(n), "8", "32Gi"));
  std::vector<std::string> keys;
  for (int j = 0; j < kJobs; ++j) {
    const std::string group = "job" + std::to_string(j);
    server.Upsert(PodGroupJson("ns", group, kPerJob));
    for (int i = 0; i < kPerJob; ++i) {
      const std::string name = group + "-" + std::to_string(i);
      server.Upsert(PodJson("ns", name, "1", "1Gi", group));
      keys.push_back("ns/" + name);
    }
  }

  ConnectorOptions copts;
  copts.reflector.initial_backoff = std::chrono::milliseconds(5);
  copts.reflector.max_backoff = std::chrono::milliseconds(100);
  copts.reflector.watch_timeout_seconds = 3;
  copts.queue_retry = std::chrono::milliseconds(20);
  RuntimeOptions ropts;
  ropts.node_worker_threads = 2;
  ropts.dispatch_threads = 4;
  ropts.bind_flow.batch_size = 2;
  RestClientOptions rest;
  rest.max_retry_after = std::chrono::milliseconds(50);
  Connector conn(std::move(RestClient::Create(server.Config(), rest).value()), copts);
  CacheRuntime rt(ropts, RealClock::Instance(), conn.source(), conn.binder(), conn.evictor(),
                  conn.status_updater(), conn.event_recorder());

  testing::RandomFaults faults;
  faults.error_rate = 0.1;
  faults.lost_response_rate = 0.1;
  faults.throttle_rate = 0.05;
  faults.conflict_rate = 0.05;
  faults.watch_drop_rate = 0.02;
  faults.watch_truncate_rate = 0.02;
  faults.watch_malformed_rate = 0.02;
  faults.seed = 42;
  server.SetRandomFaults(faults);

  rt.Run();
  conn.Start(&rt);
  ASSERT_TRUE(rt.WaitForCacheSync(std::chrono::seconds(120)).ok());

  // The test session: place every Pending task on the next node with room.
  size_t next_node = 0;
  int rounds = 0;
  auto all_bound = [&] {
    for (const auto& key : keys) {
      auto t = rt.cache().GetTask(key);
      const std::string name = key.substr(3);
      auto pod = server.Get("pods", "ns", name);
      if (!t.ok() || !pod) return false;
      const std::string node = (*pod)["spec"].value("nodeName", "");
      if (node.empty() || t->status != TaskStatus::kBound || t->node_name != node ||
          rt.cache().IsAssumed(key)) {
        return false;
      }
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (!all_bound() && std::chrono::steady_clock::now() < deadline) {
    ++rounds;
    if (rounds == 2) {
      // Once, in the middle: every watch drops and stays down while the cluster changes and
      // its history is compacted → the reflectors get 410 and relist.
      server.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), 30});
      server.DropWatches();
      server.Upsert(NodeJson("n0", "8", "32Gi"));
      server.Compact();
    }
    for (const auto& key : keys) {
      auto t = rt.cache().GetTask(key);
      if (!t.ok() || t->status != TaskStatus::kPending || rt.cache().IsAssumed(key)) continue;
      for (int tries = 0; tries < kNodes; ++tries) {
        const std::string node = "n" + std::to_string(next_node++ % kNodes);
        if (rt.Bind(key, node).ok()) break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server.ClearFaults();
  ASSERT_TRUE(all_bound()) << "not converged after " << rounds << " rounds";

  auto c = server.counters();
  EXPECT_GT(c.faults, 0u);
  EXPECT_TRUE(Eventually([&] { return conn.reflector(ResourceKind::kPods).stats().relists >= 1; }));
  EXPECT_EQ(c.binds, keys.size());  // every pod bound once on the server ...
  for (const auto& key : keys) EXPECT_EQ(c.binds_per_pod[key], 1) << key;  // ... and never twice
  EXPECT_EQ(rt.cache().CheckInvariants(), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return rt.cache().Compare().empty(); })) << rt.cache().Compare();
  const RuntimeCounters rc = rt.counters();
  std::cerr << "faults injected " << c.faults << ", bind conflicts " << c.bind_conflicts << ", binds ok "
            << rc.binds_succeeded << " failed " << rc.binds_failed << ", relists "
            << conn.reflector(ResourceKind::kPods).stats().relists << ", stream errors "
            << conn.reflector(ResourceKind::kPods).stats().stream_errors << ", rounds " << rounds << "\n";
  rt.Stop();
  conn.Stop();
}

}  // namespace
}  // namespace volcache::kube
