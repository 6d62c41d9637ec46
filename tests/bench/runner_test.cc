// `volcache bench` end to end on shape S: every measurement runs, prints the JSON lines
// BENCHMARKS.md specifies, and the figures are consistent with the workload. (Timing values
// are only checked for being measured and ordered; speed is the benchmarks' business.)
#include "bench/runner.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "api/k8s/objects.h"
#include "bench/workload.h"

namespace volcache::bench {
namespace {

using nlohmann::json;

// The byte counts come from glibc's heap statistics, which a sanitizer's allocator does not
// keep (it reports zero).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kHeapStatistics = false;
#else
constexpr bool kHeapStatistics = true;
#endif

struct Output {
  int rc = 0;
  std::vector<json> lines;
  std::string err;
};

Output RunBenchLines(BenchOptions o) {
  std::ostringstream out, err;
  Output r;
  r.rc = RunBench(o, out, err);
  r.err = err.str();
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) r.lines.push_back(json::parse(line));
  }
  return r;
}

BenchOptions Opts(std::string what, int runs = 1) {
  BenchOptions o;
  o.what = std::move(what);
  o.shape = "S";
  o.runs = runs;
  o.threads = 2;
  return o;
}

const json* Find(const std::vector<json>& lines, const std::string& bench, const std::string& mode,
                 double churn = -1, int threads = -1) {
  for (const json& j : lines) {
    if (j.value("bench", "") != bench || j.value("mode", "") != mode) continue;
    if (churn >= 0 && j.value("churn", -1.0) != churn) continue;
    if (threads >= 0 && j.value("threads", -1) != threads) continue;
    return &j;
  }
  return nullptr;
}

void ExpectStats(const json& j, const char* field) {
  SCOPED_TRACE(j.dump());
  ASSERT_TRUE(j.contains(field));
  const json& s = j[field];
  EXPECT_GT(s["min"].get<double>(), 0);
  EXPECT_LE(s["min"].get<double>(), s["median"].get<double>());
  EXPECT_LE(s["median"].get<double>(), s["max"].get<double>());
}

size_t PendingPods(const Workload& w) {
  size_t n = 0;
  for (const auto& p : w.pods) n += p->spec.node_name.empty() ? 1 : 0;
  return n;
}

TEST(BenchRunner, SnapshotPrintsFullDeepAndIncrementalLines) {
  Output r = RunBenchLines(Opts("snapshot", 3));
  ASSERT_EQ(r.rc, 0) << r.err;
  const json* full = Find(r.lines, "snapshot", "full");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ((*full)["shape"], "S");
  EXPECT_EQ((*full)["nodes"], 100);  // every node of S is Ready
  EXPECT_EQ((*full)["jobs"], 50);
  EXPECT_EQ((*full)["runs"], 3);
  ExpectStats(*full, "ms");
  if (kHeapStatistics) {
    EXPECT_GT((*full)["bytes"].get<int64_t>(), 0);
    EXPECT_GT((*full)["x_memcpy"].get<double>(), 0);
  }
  for (int threads : {1, 2}) {
    const json* deep = Find(r.lines, "snapshot", "deep", -1, threads);
    ASSERT_NE(deep, nullptr) << threads;
    ExpectStats(*deep, "ms");
    // A deep copy holds every job's and node's task entries: more than the pointer snapshot.
    if (kHeapStatistics) {
      EXPECT_GT((*deep)["bytes"].get<int64_t>(), (*full)["bytes"].get<int64_t>());
    }
  }
  ASSERT_NE(Find(r.lines, "snapshot", "incremental", 0.01), nullptr);
  ExpectStats(*Find(r.lines, "snapshot", "incremental", 0.01), "ms");
  ASSERT_NE(Find(r.lines, "snapshot", "incremental", 0.0), nullptr);
}

TEST(BenchRunner, MemoryCountsTheShapesTasksAndNodes) {
  Output r = RunBenchLines(Opts("memory"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const json* m = Find(r.lines, "memory", "cache");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["tasks"], 500);
  EXPECT_EQ((*m)["nodes"], 100);
  if (!kHeapStatistics) GTEST_SKIP() << "the sanitizer's allocator keeps no glibc heap statistics";
  // A task holds at least its pod object; the whole cache is far below 100 KB per task.
  EXPECT_GT((*m)["bytes_per_task"].get<double>(), 500);
  EXPECT_LT((*m)["bytes_per_task"].get<double>(), 100000);
  EXPECT_GT((*m)["rss_bytes"].get<int64_t>(), (*m)["heap_bytes"].get<int64_t>() / 2);
  // The pod objects alone: at least the struct, and a part of the all-in figure.
  EXPECT_GT((*m)["pod_bytes_per_task"].get<double>(), static_cast<double>(sizeof(k8s::Pod)));
  EXPECT_LT((*m)["pod_bytes_per_task"].get<double>(), (*m)["bytes_per_task"].get<double>());
  // The parts add up to the whole: the nodes' share per node, the rest per task.
  const double per_node = (*m)["bytes_per_node"].get<double>();
  const double per_task = (*m)["job_and_task_bytes_per_task"].get<double>();
  EXPECT_GT(per_node, static_cast<double>(sizeof(k8s::Node)));
  EXPECT_GT(per_task, (*m)["pod_bytes_per_task"].get<double>());
  EXPECT_NEAR(per_node * 100 + per_task * 500, (*m)["heap_bytes"].get<double>(),
              0.05 * (*m)["heap_bytes"].get<double>());
}

TEST(BenchRunner, IngestAppliesEveryPodInProcessAndFromJson) {
  Output r = RunBenchLines(Opts("ingest", 3));
  ASSERT_EQ(r.rc, 0) << r.err;
  const json* in = Find(r.lines, "ingest", "in_process");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ((*in)["events"], 500);
  ExpectStats(*in, "per_s");
  const json* js = Find(r.lines, "ingest", "watch_json");
  ASSERT_NE(js, nullptr);
  EXPECT_EQ((*js)["events"], 500);
  EXPECT_GT((*js)["bytes_per_event"].get<double>(), 1000);  // real-size pod objects
  ExpectStats(*js, "per_s");
}

TEST(BenchRunner, BindMeasuresEveryModeAndAccountsForEveryBind) {
  // The bench itself fails (rc 1) when a bind is lost, duplicated or not Bound in the cache.
  std::vector<std::string> modes = {"add_bind_task", "pipeline_instant"};
#if defined(VOLCACHE_TEST_KUBE) && !defined(__SANITIZE_THREAD__)
  // Not under TSan: it reports a race between two worker threads of cpp-httplib 0.11's
  // server, inside the (uninstrumented) library, in about half the runs; no volcache code is
  // on either stack. The REST binder and client are covered under TSan by the kube tests.
  modes.push_back("rest_loopback");
#endif
  for (const std::string& mode : modes) {
    BenchOptions o = Opts("bind", 2);
    o.mode = mode;
    Output r = RunBenchLines(o);
    ASSERT_EQ(r.rc, 0) << mode << ": " << r.err;
    ASSERT_EQ(r.lines.size(), 1u) << mode;  // --mode selects one measurement
    const json* j = Find(r.lines, "bind", mode);
    ASSERT_NE(j, nullptr) << mode;
    ExpectStats(*j, "per_s");
    EXPECT_GT((*j)["binds"].get<int64_t>(), 0) << mode;
  }
}

TEST(BenchRunner, EndToEndBindsEveryPendingPodOfTheShape) {
  Output r = RunBenchLines(Opts("e2e"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const json* j = Find(r.lines, "e2e", "session_instant_binder");
  ASSERT_NE(j, nullptr);
  Workload w = BuildWorkload(*ShapeByName("S"));
  EXPECT_EQ((*j)["binds"].get<size_t>(), PendingPods(w));
  ExpectStats(*j, "per_s");
  ExpectStats((*j)["first_session_ms"], "open");
}

TEST(BenchRunner, UnknownShapeOrBenchmarkIsAnErrorNamingIt) {
  BenchOptions o = Opts("snapshot");
  o.shape = "XXXL";
  Output r = RunBenchLines(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("XXXL"), std::string::npos) << r.err;
  EXPECT_TRUE(r.lines.empty());

  Output u = RunBenchLines(Opts("warp"));
  EXPECT_EQ(u.rc, 2);
  EXPECT_NE(u.err.find("warp"), std::string::npos) << u.err;
}

}  // namespace
}  // namespace volcache::bench
