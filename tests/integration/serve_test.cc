// `volcache serve` on a real kube-apiserver: initial sync, objects created later, unschedulable
// gangs (status, conditions, events), node readiness, releases, SIGTERM during binds.
// Every test runs its own serve process and its own namespace / node labels (suite=<test>).
#include <signal.h>

#include <algorithm>
#include <regex>

#include "tests/integration/fixture.h"
#include "tests/server/prometheus_client.h"

namespace volcache::integration {
namespace {

class ServeTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }
};

const std::string kPG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/";

TEST_F(ServeTest, InitialSyncCountsForeignBoundPodIgnoresOtherSchedulersAndIsConsistent) {
  KubeClient c = Admin();
  const std::string ns = "sync";
  CreateNamespace(c, ns);
  ASSERT_EQ(c.Post("/apis/scheduling.volcano.sh/v1beta1/queues", QueueJson("q-sync", 3)).status, 201);
  ASSERT_EQ(c.Post("/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClassJson("pc-sync", 1000)).status,
            201);
  ASSERT_EQ(CreateReadyNode(c, "sync-n1", {{"suite", "sync"}}, "4", "8Gi"), "");
  ASSERT_EQ(CreateReadyNode(c, "sync-n2", {{"suite", "sync"}}, "4", "8Gi"), "");
  // A pod of another scheduler already bound to sync-n1 takes 3 of its 4 cpus.
  ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/pods",
                   PodJson(ns, "foreign", "", "3", "1Gi", {}, "default-scheduler", "sync-n1"))
                .status,
            201);
  // An unbound pod of another scheduler: never ours to bind.
  ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/pods",
                   PodJson(ns, "other-unbound", "", "100m", "64Mi", {{"suite", "sync"}}, "default-scheduler"))
                .status,
            201);
  // A gang of 2 x 2 cpu in q-sync with a PriorityClass: fits only on sync-n2.
  Json pg = PodGroupJson(ns, "g", 2, "q-sync");
  pg["spec"]["priorityClassName"] = "pc-sync";
  ASSERT_EQ(c.Post(kPG + ns + "/podgroups", pg).status, 201);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(
        c.Post("/api/v1/namespaces/" + ns + "/pods", PodJson(ns, "g-" + std::to_string(i), "g", "2", "1Gi",
                                                             {{"suite", "sync"}}, "volcano", "", "pc-sync"))
            .status,
        201);
  }

  auto serve = StartServe("sync");
  // /readyz: 503 until synced, then 200; never anything else once the admin server answers.
  std::vector<int> seen;
  ASSERT_TRUE(Eventually(
      [&] {
        int s = serve->AdminGet("/readyz").status;
        if (s != 0 && (seen.empty() || seen.back() != s)) seen.push_back(s);
        return s == 200 || !serve->Running();
      },
      Seconds(60)))
      << Tail(serve->Log());
  ASSERT_EQ(seen.back(), 200);
  for (size_t i = 0; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i], 503) << "/readyz answered " << seen[i];

  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 3; }, Seconds(15))) << Tail(serve->Log());
  auto nodes = PodNodes(c, ns);
  EXPECT_EQ(nodes["foreign"], "sync-n1") << "the foreign pod was moved";
  EXPECT_EQ(nodes["g-0"], "sync-n2") << "sync-n1 has 1 cpu left once the foreign pod is counted";
  EXPECT_EQ(nodes["g-1"], "sync-n2");
  EXPECT_EQ(nodes["other-unbound"], "") << "a pod of another scheduler was bound";

  // The cache: the queue with its weight, the priority, the foreign pod's usage on sync-n1.
  auto cache = serve->AdminGet("/debug/cache").json();
  ASSERT_TRUE(cache.is_object()) << "/debug/cache is not JSON";
  bool queue_seen = false;
  for (auto& q : cache["queues"]) {
    if (q["name"] == "q-sync") {
      queue_seen = true;
      EXPECT_EQ(q["weight"], 3);
    }
  }
  EXPECT_TRUE(queue_seen) << "queue q-sync not in /debug/cache";
  bool node_seen = false;
  for (auto& n : cache["nodes"]) {
    if (n["name"] == "sync-n1") {
      node_seen = true;
      EXPECT_EQ(n["used"].value("cpu", 0), 3000) << n.dump();
      EXPECT_EQ(n["tasks"].size(), 1u) << n.dump();
    }
  }
  EXPECT_TRUE(node_seen) << "node sync-n1 not in /debug/cache";
  bool job_seen = false;
  for (auto& j : cache["jobs"]) {
    if (j["namespace"] == ns && j["name"] == "g") {
      job_seen = true;
      EXPECT_EQ(j["queue"], "q-sync");
      EXPECT_EQ(j["priority"], 1000) << "the PriorityClass value";
    }
  }
  EXPECT_TRUE(job_seen) << "job sync/g not in /debug/cache";

  auto cmp = serve->AdminGet("/debug/compare").json();
  ASSERT_TRUE(cmp.is_object());
  EXPECT_EQ(cmp["consistent"], true) << cmp.dump();
  EXPECT_EQ(cmp["invariants"], "ok") << cmp.dump();
  EXPECT_TRUE(BindingsExactlyOnce(ns, {"foreign"}));
}

TEST_F(ServeTest, GangAndNodeCreatedAfterStartAreScheduledWithin5s) {
  KubeClient c = Admin();
  const std::string ns = "late";
  CreateNamespace(c, ns);
  auto serve = StartServe("late");
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_EQ(CreateReadyNode(c, "late-n1", {{"suite", "late"}}, "4", "8Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "g", 3, "1", "1Gi", {{"suite", "late"}}), "");
  auto created = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 3; }, Seconds(30)))
      << "bound " << CountBound(c, ns) << "/3; log:\n"
      << Tail(serve->Log());
  double took = Seconds(std::chrono::steady_clock::now() - created).count();
  EXPECT_LE(took, 5.0) << "the new gang on the new node was bound " << took << " s after creation";
  for (auto& [pod, node] : PodNodes(c, ns)) EXPECT_EQ(node, "late-n1") << pod;
  EXPECT_TRUE(BindingsExactlyOnce(ns));
}

// Defects 1 (PodGroup status never written, re-sent every session) and 5 (event spam, no pod
// condition).
TEST_F(ServeTest, UnschedulableGangBindsNothingOneAggregatedEventConditionsAndPodGroupPhase) {
  KubeClient c = Admin();
  const std::string ns = "unsched";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "unsched-n1", {{"suite", "unsched"}}, "4", "8Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "big", 2, "3", "1Gi", {{"suite", "unsched"}}), "");  // 6 cpu on a 4-cpu node
  auto serve = StartServe("unsched", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));

  // Defect 1: the PodGroup's phase is written and can be read back.
  std::string phase;
  EXPECT_TRUE(Eventually(
      [&] {
        auto pg = c.Get(kPG + ns + "/podgroups/big").json();
        phase = pg.is_object() && pg.contains("status") ? pg["status"].value("phase", "") : "";
        return !phase.empty();
      },
      Seconds(10)))
      << "PodGroup unsched/big has no .status.phase 10 s after serve got ready";
  if (!phase.empty()) {
    EXPECT_TRUE(phase == "Pending" || phase == "Inqueue") << "phase " << phase;
  }

  // Defect 5: each pod gets PodScheduled=False, reason Unschedulable.
  for (std::string pod : {"big-0", "big-1"}) {
    std::string got;
    EXPECT_TRUE(Eventually(
        [&] {
          auto p = c.Get("/api/v1/namespaces/" + ns + "/pods/" + pod).json();
          got.clear();
          if (p.is_object() && p.contains("status") && p["status"].contains("conditions")) {
            for (auto& cond : p["status"]["conditions"]) {
              if (cond["type"] == "PodScheduled")
                got = cond.value("status", "") + "/" + cond.value("reason", "");
            }
          }
          return got == "False/Unschedulable";
        },
        Seconds(10)))
        << pod << ": PodScheduled condition is '" << got << "', want False/Unschedulable";
  }

  // A few more sessions (500 ms each) on an idle server.
  const auto before = ReadAudit(server().audit_log());
  auto pg_writes = [&](const std::vector<AuditEvent>& ev) {
    int n = 0;
    for (auto& e : ev) n += e.resource == "podgroups" && e.ns == ns && e.name == "big" && e.verb != "create";
    return n;
  };
  const int writes_before = pg_writes(before);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // 10 sessions: the window being measured
  const int writes_idle = pg_writes(ReadAudit(server().audit_log())) - writes_before;
  EXPECT_LE(writes_idle, 1) << "PodGroup unsched/big was written " << writes_idle
                            << " times in 5 s (10 sessions) of an idle server (defect 1)";

  EXPECT_EQ(CountBound(c, ns), 0);
  auto events = c.Get("/api/v1/namespaces/" + ns + "/events").json();
  ASSERT_TRUE(events.is_object());
  // Per involved object (the PodGroup, each pod): identical events are one Event object.
  std::map<std::string, std::vector<int>> counts;  // kind/name -> count of each Event object
  for (auto& e : events["items"]) {
    const auto& io = e["involvedObject"];
    const std::string name = io.value("name", "");
    if (name == "big" || name.rfind("big-", 0) == 0) {
      counts[io.value("kind", "") + "/" + name].push_back(e.value("count", 0));
    }
  }
  std::ostringstream summary;
  for (auto& [obj, cs] : counts) summary << obj << ": " << cs.size() << " Event object(s); ";
  ASSERT_EQ(counts.count("PodGroup/big"), 1u) << "no Event for PodGroup big; " << summary.str();
  const auto& pg_events = counts["PodGroup/big"];
  EXPECT_EQ(pg_events.size(), 1u) << "Event objects after ~12 sessions: " << summary.str() << "(defect 5)";
  EXPECT_GT(*std::max_element(pg_events.begin(), pg_events.end()), 1)
      << "identical events are one object whose count grows: " << summary.str() << "(defect 5)";
  for (auto& [obj, cs] : counts)
    EXPECT_LE(cs.size(), 1u) << obj << " has " << cs.size() << " Event objects (defect 5)";
  EXPECT_TRUE(serve->Running());
}

// Defect 8: serve's sessions record the snapshot histogram (only `run` did).
TEST_F(ServeTest, SessionsRecordSnapshotDurationMetric) {
  auto serve = StartServe("metrics", {"--schedule-period", "200ms"});
  ASSERT_TRUE(WaitReady(*serve));
  double count = -1;
  EXPECT_TRUE(Eventually(
      [&] {
        std::istringstream in(serve->AdminGet("/metrics").body);
        std::string line;
        while (std::getline(in, line)) {
          if (line.rfind("volcache_snapshot_duration_seconds_count ", 0) == 0)
            count = std::stod(line.substr(41));
        }
        return count >= 3;
      },
      Seconds(10)))
      << "volcache_snapshot_duration_seconds_count is " << count
      << " after 10 s of 200 ms sessions (defect 8)";
  // The whole text parses with python3-prometheus-client, the kube-side families (built at
  // scrape time by cmd/kube_metrics.cc) included.
  const std::string body = serve->AdminGet("/metrics").body;
  const auto parsed = volcache::testing::ParseWithPrometheusClient(
      body, {"volcache_rest_client_requests_total:counter",
             "volcache_rest_client_request_duration_seconds:histogram",
             "volcache_rest_client_rate_limiter_wait_seconds_total:counter",
             "volcache_rest_client_rate_limited_requests_total:counter",
             "volcache_rest_client_stale_retries_total:counter",
             "volcache_rest_client_stale_connections_total:counter", "volcache_reflector_lists_total:counter",
             "volcache_reflector_list_failures_total:counter", "volcache_reflector_relists_total:counter",
             "volcache_reflector_watches_total:counter", "volcache_reflector_watch_errors_total:counter",
             "volcache_reflector_events_total:counter", "volcache_reflector_decode_errors_total:counter",
             "volcache_reflector_last_event_age_seconds:gauge", "volcache_reflector_backing_off:gauge",
             "volcache_snapshot_duration_seconds:histogram", "volcache_pods_bound_total:counter"});
  ASSERT_EQ(parsed.status, 0) << body;
  EXPECT_GE(volcache::testing::ParsedValue(parsed.families, "volcache_reflector_lists_total",
                                           "volcache_reflector_lists_total", {{"resource", "pods"}}),
            1)
      << body;
  EXPECT_GE(volcache::testing::ParsedValue(parsed.families, "volcache_rest_client_request_duration_seconds",
                                           "volcache_rest_client_request_duration_seconds_count",
                                           {{"verb", "GET"}}),
            1)
      << body;
}

TEST_F(ServeTest, NodeNotReadyLeavesSnapshotAndReadyAgainIsUsed) {
  KubeClient c = Admin();
  const std::string ns = "notready";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "nr-n1", {{"suite", "nr"}}, "4", "8Gi"), "");
  auto serve = StartServe("notready", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  auto in_snapshot = [&] {
    auto s = serve->AdminGet("/debug/snapshot").json();
    if (!s.is_object()) return -1;
    for (auto& n : s["snapshot"]["nodes"]) {
      if (n["name"] == "nr-n1") return 1;
    }
    return 0;
  };
  ASSERT_TRUE(Eventually([&] { return in_snapshot() == 1; }, Seconds(10)))
      << "nr-n1 never in /debug/snapshot";
  ASSERT_EQ(c.MergePatch("/api/v1/nodes/nr-n1/status", NodeStatusJson("4", "8Gi", false)).status, 200);
  ASSERT_TRUE(Eventually([&] { return in_snapshot() == 0; }, Seconds(10)))
      << "NotReady node nr-n1 still in /debug/snapshot after 10 s";
  ASSERT_EQ(CreateGang(c, ns, "g", 2, "1", "1Gi", {{"suite", "nr"}}), "");
  // Six sessions with the only matching node NotReady: nothing may be bound.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(CountBound(c, ns), 0) << "bound to a NotReady node";
  ASSERT_EQ(c.MergePatch("/api/v1/nodes/nr-n1/status", NodeStatusJson("4", "8Gi", true)).status, 200);
  EXPECT_TRUE(Eventually([&] { return in_snapshot() == 1; }, Seconds(10)))
      << "Ready nr-n1 not back in the snapshot";
  EXPECT_TRUE(Eventually([&] { return CountBound(c, ns) == 2; }, Seconds(15)))
      << "bound " << CountBound(c, ns) << "/2 after nr-n1 is Ready again";
  EXPECT_TRUE(BindingsExactlyOnce(ns));
}

TEST_F(ServeTest, ForceDeletedPodsAndDeletedPodGroupReleaseTheirResources) {
  KubeClient c = Admin();
  const std::string ns = "release";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "rel-n1", {{"suite", "rel"}}, "4", "8Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "a", 2, "2", "1Gi", {{"suite", "rel"}}), "");
  auto serve = StartServe("release", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 2; }, Seconds(15))) << Tail(serve->Log());
  ASSERT_EQ(CreateGang(c, ns, "b", 2, "2", "1Gi", {{"suite", "rel"}}), "");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // four sessions: b must not fit
  ASSERT_EQ(CountBound(c, ns), 2) << "gang b bound while gang a holds the node";
  for (std::string p : {"a-0", "a-1"}) {
    auto d = c.Delete("/api/v1/namespaces/" + ns + "/pods/" + p + "?gracePeriodSeconds=0");
    ASSERT_EQ(d.status, 200) << d.body;
  }
  ASSERT_EQ(c.Delete(kPG + ns + "/podgroups/a").status, 200);
  EXPECT_TRUE(Eventually(
      [&] {
        auto n = PodNodes(c, ns);
        return n.size() == 2 && n["b-0"] == "rel-n1" && n["b-1"] == "rel-n1";
      },
      Seconds(15)))
      << "gang b not bound after gang a's pods were force-deleted; log:\n"
      << Tail(serve->Log());
  auto cmp = serve->AdminGet("/debug/compare").json();
  EXPECT_EQ(cmp.value("consistent", false), true) << cmp.dump();
  EXPECT_TRUE(BindingsExactlyOnce(ns));
}

TEST_F(ServeTest, SigtermDuringBindBurstExitsZeroAndEveryLoggedBindIsOnTheServer) {
  KubeClient c = Admin();
  const std::string ns = "burst";
  CreateNamespace(c, ns);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(CreateReadyNode(c, "burst-n" + std::to_string(i), {{"suite", "burst"}}, "64", "256Gi"), "");
  }
  for (int g = 0; g < 60; ++g) {
    ASSERT_EQ(CreateGang(c, ns, "g" + std::to_string(g), 4, "100m", "64Mi", {{"suite", "burst"}}), "");
  }
  auto serve = StartServe("burst", {"--kube-bind-concurrency", "2"});
  ASSERT_TRUE(
      Eventually([&] { return !BindingsPerPod(ReadAudit(server().audit_log()), ns).empty(); }, Seconds(60)))
      << Tail(serve->Log());
  serve->Signal(SIGTERM);
  auto code = serve->WaitExit(Seconds(10));
  ASSERT_TRUE(code.has_value()) << "serve still running 10 s after SIGTERM";
  EXPECT_EQ(*code, 0) << Tail(serve->Log());
  std::smatch m;
  const std::string log = serve->Log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(binds ok (\d+) failed (\d+))")))
      << "no 'binds ok N failed M' line; log:\n"
      << Tail(log);
  const int ok = std::stoi(m[1]);
  const int failed = std::stoi(m[2]);
  const int bound = CountBound(c, ns);
  EXPECT_EQ(ok, bound) << "the log counts " << ok << " binds, the server has " << bound << " bound pods";
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(static_cast<int>(BindingsPerPod(ReadAudit(server().audit_log()), ns).size()), bound);
  EXPECT_TRUE(BindingsExactlyOnce(ns));
  std::cout << "integration: SIGTERM after the first binding: " << ok << " of 240 pods bound before exit\n";
}

const std::string kHN = "/apis/topology.volcano.sh/v1alpha1/hypernodes";

// A HyperNode whose members are all of `type`, each selected by exactMatch name, or by
// regexMatch pattern when it starts with '^'.
Json HyperNodeJson(const std::string& name, int tier, const std::string& type,
                   const std::vector<std::string>& members) {
  Json j = {{"apiVersion", "topology.volcano.sh/v1alpha1"},
            {"kind", "HyperNode"},
            {"metadata", {{"name", name}}},
            {"spec", {{"tier", tier}, {"members", Json::array()}}}};
  for (const auto& m : members) {
    Json selector =
        m[0] == '^' ? Json{{"regexMatch", {{"pattern", m}}}} : Json{{"exactMatch", {{"name", m}}}};
    j["spec"]["members"].push_back({{"type", type}, {"selector", selector}});
  }
  return j;
}

Json HyperNodeView(int tier, const Json& parent, const std::vector<std::string>& children,
                   const std::vector<std::string>& nodes) {
  return {{"tier", tier}, {"tierName", ""}, {"parent", parent}, {"children", children}, {"nodes", nodes}};
}

// /debug/cache's HyperNodes named topo-* (the others belong to no test here), once the forest
// is ready; null otherwise.
Json TopoForest(const ServeProcess& serve) {
  Json d = serve.AdminGet("/debug/cache").json();
  if (!d.is_object() || !d.value("hyperNodesReady", false) || !d.contains("hyperNodes")) return nullptr;
  Json out = Json::object();
  for (auto it = d["hyperNodes"].begin(); it != d["hyperNodes"].end(); ++it) {
    if (it.key().rfind("topo-", 0) == 0) out[it.key()] = it.value();
  }
  return out;
}

// serve LISTs and WATCHes topology.volcano.sh/v1alpha1 hypernodes (the tool installs the CRD):
// the forest on /debug/cache follows what was there at start, a HyperNode created later, an
// update that moves a member, and deletes (the children of a deleted HyperNode are roots).
TEST_F(ServeTest, HyperNodeForestFollowsCreatesUpdatesAndDeletes) {
  KubeClient c = Admin();
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(CreateReadyNode(c, "topo-n" + std::to_string(i), {{"suite", "topo"}}, "4", "8Gi"), "");
  }
  ASSERT_EQ(c.Post(kHN, HyperNodeJson("topo-s0", 1, "Node", {"topo-n0", "topo-n1"})).status, 201);
  ASSERT_EQ(c.Post(kHN, HyperNodeJson("topo-s1", 1, "Node", {"^topo-n[23]$"})).status, 201);
  ASSERT_EQ(c.Post(kHN, HyperNodeJson("topo-s2", 2, "HyperNode", {"topo-s0", "topo-s1"})).status, 201);
  auto serve = StartServe("topo");
  ASSERT_TRUE(WaitReady(*serve));
  const std::vector<std::string> all = {"topo-n0", "topo-n1", "topo-n2", "topo-n3"};
  const Json listed = {{"topo-s0", HyperNodeView(1, "topo-s2", {}, {"topo-n0", "topo-n1"})},
                       {"topo-s1", HyperNodeView(1, "topo-s2", {}, {"topo-n2", "topo-n3"})},
                       {"topo-s2", HyperNodeView(2, nullptr, {"topo-s0", "topo-s1"}, all)}};
  EXPECT_TRUE(Eventually([&] { return TopoForest(*serve) == listed; }, Seconds(15)))
      << TopoForest(*serve).dump() << "\n"
      << Tail(serve->Log());

  // Created after the start: a tier-3 root over topo-s2.
  ASSERT_EQ(c.Post(kHN, HyperNodeJson("topo-s3", 3, "HyperNode", {"topo-s2"})).status, 201);
  const Json created = {{"topo-s0", HyperNodeView(1, "topo-s2", {}, {"topo-n0", "topo-n1"})},
                        {"topo-s1", HyperNodeView(1, "topo-s2", {}, {"topo-n2", "topo-n3"})},
                        {"topo-s2", HyperNodeView(2, "topo-s3", {"topo-s0", "topo-s1"}, all)},
                        {"topo-s3", HyperNodeView(3, nullptr, {"topo-s2"}, all)}};
  EXPECT_TRUE(Eventually([&] { return TopoForest(*serve) == created; }, Seconds(15)))
      << TopoForest(*serve).dump();

  // Updated: topo-s1 leaves topo-s2 (a merge patch replaces the member list) and takes topo-n0
  // from topo-s0, which keeps topo-n1 only.
  ASSERT_EQ(
      c.MergePatch(
           kHN + "/topo-s2",
           {{"spec", {{"members", HyperNodeJson("x", 2, "HyperNode", {"topo-s0"})["spec"]["members"]}}}})
          .status,
      200);
  ASSERT_EQ(
      c.MergePatch(kHN + "/topo-s0",
                   {{"spec", {{"members", HyperNodeJson("x", 1, "Node", {"topo-n1"})["spec"]["members"]}}}})
          .status,
      200);
  ASSERT_EQ(
      c.MergePatch(
           kHN + "/topo-s1",
           {{"spec",
             {{"members", HyperNodeJson("x", 1, "Node", {"topo-n0", "^topo-n[23]$"})["spec"]["members"]}}}})
          .status,
      200);
  const Json updated = {{"topo-s0", HyperNodeView(1, "topo-s2", {}, {"topo-n1"})},
                        {"topo-s1", HyperNodeView(1, nullptr, {}, {"topo-n0", "topo-n2", "topo-n3"})},
                        {"topo-s2", HyperNodeView(2, "topo-s3", {"topo-s0"}, {"topo-n1"})},
                        {"topo-s3", HyperNodeView(3, nullptr, {"topo-s2"}, {"topo-n1"})}};
  EXPECT_TRUE(Eventually([&] { return TopoForest(*serve) == updated; }, Seconds(15)))
      << TopoForest(*serve).dump();

  // Deleted: topo-s2 goes, topo-s0 is a root again and topo-s3 has nothing below it.
  ASSERT_EQ(c.Delete(kHN + "/topo-s2").status, 200);
  const Json deleted = {{"topo-s0", HyperNodeView(1, nullptr, {}, {"topo-n1"})},
                        {"topo-s1", HyperNodeView(1, nullptr, {}, {"topo-n0", "topo-n2", "topo-n3"})},
                        {"topo-s3", HyperNodeView(3, nullptr, {}, {})}};
  EXPECT_TRUE(Eventually([&] { return TopoForest(*serve) == deleted; }, Seconds(15)))
      << TopoForest(*serve).dump();

  // Nothing of this was refused or left inconsistent; the other tests' serves see no topo-*.
  const std::string log = serve->Log();
  EXPECT_EQ(log.find("cache refused"), std::string::npos) << Tail(log);
  EXPECT_EQ(log.find("hypernodes: the server does not serve"), std::string::npos) << Tail(log);
  for (const char* n : {"topo-s0", "topo-s1", "topo-s3"}) EXPECT_EQ(c.Delete(kHN + "/" + n).status, 200);
  EXPECT_TRUE(Eventually([&] { return TopoForest(*serve) == Json::object(); }, Seconds(15)))
      << TopoForest(*serve).dump();
  serve->Signal(SIGTERM);
  EXPECT_EQ(serve->WaitExit(Seconds(10)), 0);
}

}  // namespace
}  // namespace volcache::integration
