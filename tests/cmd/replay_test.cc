// ReplayEngine (cmd/replay.h, SPEC §8 "Replay / event script"): the bundled examples and a
// real watch stream replay to concrete, consistent states; refused operations print
// {"line":N,"error":...} and change nothing; malformed lines stop with exit code 2; the
// 20 ms bind tick drives FinishBinding/ForgetTask on the fake clock.

#include "cmd/replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testdata.h"

namespace volcache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

ReplayOptions Checked(std::string scheduler_name = "volcano") {
  ReplayOptions o;
  o.check_invariants = true;
  o.scheduler_name = std::move(scheduler_name);
  return o;
}

struct Replay {
  explicit Replay(ReplayOptions options = Checked()) : engine(std::move(options), out, err) {}

  // Applies the lines of `script` after those already applied; returns the exit code.
  int Lines(const std::string& script) {
    std::istringstream in(script);
    std::string line;
    while (std::getline(in, line)) {
      int rc = engine.ApplyLine(++applied, line);
      if (rc != 0) return rc;
    }
    return 0;
  }
  int Line(const std::string& line) { return engine.ApplyLine(++applied, line); }

  Json Dump() const { return Json::parse(engine.Dump()); }
  // stdout lines, parsed (every line replay prints is one JSON document).
  std::vector<Json> Out() const {
    std::vector<Json> v;
    std::istringstream in(out.str());
    std::string line;
    while (std::getline(in, line)) v.push_back(Json::parse(line));
    return v;
  }

  std::stringstream out, err;
  ReplayEngine engine;
  int64_t applied = 0;
};

// ---------------------------------------------------------------- dump helpers

const Json* Named(const Json& arr, const std::string& key, const std::string& value) {
  for (const Json& x : arr) {
    if (x.value(key, "") == value) return &x;
  }
  return nullptr;
}
const Json& Node(const Json& dump, const std::string& name) {
  const Json* n = Named(dump["nodes"], "name", name);
  EXPECT_NE(n, nullptr) << "no node " << name << " in " << dump.dump();
  static const Json kNull;
  return n ? *n : kNull;
}
const Json& Job(const Json& dump, const std::string& uid) {
  const Json* j = Named(dump["jobs"], "uid", uid);
  EXPECT_NE(j, nullptr) << "no job " << uid << " in " << dump.dump();
  static const Json kNull;
  return j ? *j : kNull;
}
const Json& Task(const Json& job, const std::string& name) {
  const Json* t = job.is_object() ? Named(job["tasks"], "name", name) : nullptr;
  EXPECT_NE(t, nullptr) << "no task " << name << " in " << job.dump();
  static const Json kNull;
  return t ? *t : kNull;
}
std::vector<std::string> Names(const Json& arr, const char* key = "name") {
  std::vector<std::string> v;
  for (const Json& x : arr) v.push_back(x.is_string() ? x.get<std::string>() : x.value(key, ""));
  return v;
}
// "Running@node-a"
std::string StatusAt(const Json& task) { return task.value("status", "?") + "@" + task.value("node", "?"); }

constexpr int64_t kGi = int64_t{1} << 30;

// ---------------------------------------------------------------- script builders

std::string NodeLine(const std::string& type, const std::string& name, const std::string& cpu = "8",
                     const std::string& ready = "True") {
  return R"({"type":")" + type + R"(","object":{"apiVersion":"v1","kind":"Node","metadata":{"name":")" +
         name + R"(","uid":"uid-)" + name + R"("},"status":{"capacity":{"cpu":")" + cpu +
         R"(","memory":"32Gi","pods":"110"},"allocatable":{"cpu":")" + cpu +
         R"(","memory":"32Gi","pods":"110"},"conditions":[{"type":"Ready","status":")" + ready + R"("}]}}})";
}

std::string PodGroupLine(const std::string& name) {
  return R"({"type":"ADDED","object":{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup","metadata":{"name":")" +
         name + R"(","namespace":"ns","uid":"uid-pg-)" + name +
         R"(","resourceVersion":"1"},"spec":{"minMember":1,"queue":"default"},"status":{"phase":"Pending"}}})";
}

std::string PodLine(const std::string& type, const std::string& name, const std::string& cpu,
                    const std::string& node = "", const std::string& phase = "Pending") {
  std::string spec =
      R"("schedulerName":"volcano","containers":[{"name":"main","resources":{"requests":{"cpu":")" + cpu +
      R"(","memory":"1Gi"}}}])";
  if (!node.empty()) spec += R"(,"nodeName":")" + node + "\"";
  return R"({"type":")" + type + R"(","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","namespace":"ns","uid":"uid-)" + name +
         R"(","annotations":{"scheduling.k8s.io/group-name":"job"}},"spec":{)" + spec +
         R"(},"status":{"phase":")" + phase + R"("}}})";
}

// A node with 8 CPUs, a PodGroup "ns/job" and a pending pod ns/p0 asking for `cpu`.
std::string Cluster(const std::string& cpu = "2") {
  return NodeLine("ADDED", "node-a") + "\n" + PodGroupLine("job") + "\n" + PodLine("ADDED", "p0", cpu) + "\n";
}

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override { spdlog::set_level(spdlog::level::off); }
  void TearDown() override { spdlog::set_level(spdlog::level::info); }
};

// ---------------------------------------------------------------- examples

std::vector<std::string> ExampleScripts() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(testing::ExamplesDir())) {
    if (e.path().extension() == ".jsonl") v.push_back(e.path().string());
  }
  std::sort(v.begin(), v.end());
  return v;
}

struct FileReplay {
  explicit FileReplay(const std::string& path, ReplayOptions options = Checked()) : r(std::move(options)) {
    std::ifstream in(path);
    EXPECT_TRUE(in) << path;
    rc = r.engine.Run(in);
  }
  Replay r;
  int rc = -1;
};

TEST_F(ReplayTest, EveryExampleReplaysWithExitZeroAndInvariantsChecked) {
  std::vector<std::string> scripts = ExampleScripts();
  ASSERT_GE(scripts.size(), 4u);
  for (const std::string& path : scripts) {
    SCOPED_TRACE(path);
    FileReplay f(path);
    EXPECT_EQ(f.rc, 0) << f.r.err.str();
    EXPECT_THAT(f.r.err.str(), Not(HasSubstr("line ")));
    const std::string text = testing::ReadFileOrDie(path);
    EXPECT_EQ(f.r.engine.stats().lines, std::count(text.begin(), text.end(), '\n'));
  }
}

// With --summary the engine checks the final cache against the script's cluster (the
// comparer): every example ends consistent.
TEST_F(ReplayTest, EveryExampleEndsConsistentWithItsCluster) {
  for (const std::string& path : ExampleScripts()) {
    SCOPED_TRACE(path);
    ReplayOptions o = Checked();
    o.summary = true;
    FileReplay f(path, o);
    EXPECT_EQ(f.rc, 0);
    EXPECT_THAT(f.r.err.str(), HasSubstr("invariants: OK\n"));
    EXPECT_THAT(f.r.err.str(), HasSubstr("compare with cluster: consistent\n"));
  }
}

TEST_F(ReplayTest, GangSchedulingExample) {
  FileReplay f(testing::ExamplesDir() + "/gang-scheduling.jsonl");
  ASSERT_EQ(f.rc, 0) << f.r.err.str();
  std::vector<Json> out = f.r.Out();
  ASSERT_EQ(out.size(), 3u) << f.r.out.str();

  // Line 10: the snapshot before any bind. Zones: zone-1 {node-a, gpu-a}, zone-2 {node-b},
  // listed round-robin.
  const Json& snap = out[0];
  EXPECT_THAT(Names(snap["nodeList"]), ElementsAre("node-a", "node-b", "gpu-a"));
  EXPECT_FALSE(snap.contains("assumed"));
  EXPECT_THAT(Names(snap["jobs"], "uid"), ElementsAre("team-a/trainer"));
  for (const char* t : {"trainer-0", "trainer-1", "trainer-2"})
    EXPECT_EQ(StatusAt(Task(Job(snap, "team-a/trainer"), t)), "Pending@");
  EXPECT_THAT(Names(snap["queues"]), ElementsAre("default", "ml", "root"));

  // Line 23: etl-1 does not fit next to etl-0 on node-a (6 + 6 CPUs > 8).
  EXPECT_EQ(out[1]["line"], 23);
  EXPECT_THAT(out[1]["error"].get<std::string>(), HasSubstr("team-a/etl-1"));
  EXPECT_THAT(out[1]["error"].get<std::string>(), HasSubstr("node-a: insufficient cpu"));

  // Line 26: the trainer gang runs on gpu-a; the etl binds finished but the watch never
  // confirmed them, so they are still Binding and assumed.
  const Json& dump = out[2];
  EXPECT_EQ(dump, f.r.Dump());
  const Json& trainer = Job(dump, "team-a/trainer");
  EXPECT_EQ(trainer["podGroupPhase"], "Running");
  EXPECT_EQ(trainer["queue"], "ml");
  for (const char* t : {"trainer-0", "trainer-1", "trainer-2"})
    EXPECT_EQ(StatusAt(Task(trainer, t)), "Running@gpu-a");
  EXPECT_EQ(trainer["allocated"],
            Json::parse(R"({"cpu":6000,"memory":12884901888,"nvidia.com/gpu":3000,"pods":3})"));
  const Json& gpu = Node(dump, "gpu-a");
  EXPECT_EQ(gpu["idle"],
            Json::parse(R"({"cpu":26000,"memory":124554051584,"nvidia.com/gpu":1000,"pods":107})"));
  const Json& etl = Job(dump, "team-a/etl");
  EXPECT_EQ(StatusAt(Task(etl, "etl-0")), "Binding@node-a");
  EXPECT_EQ(StatusAt(Task(etl, "etl-1")), "Binding@node-b");
  EXPECT_THAT(Names(dump["assumed"]), ElementsAre("team-a/etl-0", "team-a/etl-1"));
  EXPECT_EQ(Node(dump, "node-a")["idle"]["cpu"], 2000);
  EXPECT_THAT(Names(Node(dump, "node-a")["tasks"]), ElementsAre("team-a/etl-0"));
  EXPECT_EQ(Node(dump, "node-b")["idle"]["cpu"], 2000);
  EXPECT_EQ(f.r.engine.stats().binds_ok, 5);
  EXPECT_EQ(f.r.engine.stats().refused, 1);
}

// HyperNodes arrive as watch events; the dump carries the forest (SPEC §12): regex members
// search unanchored (node-1 matches node-10), a cycle is refused and marks the forest not
// ready, deleting the root re-roots its children.
TEST_F(ReplayTest, NetworkTopologyExample) {
  FileReplay f(testing::ExamplesDir() + "/network-topology.jsonl");
  ASSERT_EQ(f.rc, 0) << f.r.err.str();
  std::vector<Json> out = f.r.Out();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]["hyperNodes"], Json::parse(R"({
      "rack-0":{"tier":1,"tierName":"rack","parent":"spine","children":[],"nodes":["node-0","node-1"]},
      "rack-1":{"tier":1,"tierName":"rack","parent":"spine","children":[],"nodes":["node-1","node-10"]},
      "spine":{"tier":2,"tierName":"","parent":null,"children":["rack-0","rack-1"],
               "nodes":["node-0","node-1","node-10"]}})"));
  EXPECT_EQ(out[0]["hyperNodesReady"], true);
  EXPECT_EQ(out[1]["hyperNodes"], out[0]["hyperNodes"]);  // the cycle is refused
  EXPECT_EQ(out[1]["hyperNodesReady"], false);
  // Without spine the refused rack-0 (now claiming a HyperNode that is gone) applies.
  EXPECT_EQ(out[2]["hyperNodes"], Json::parse(R"({
      "rack-0":{"tier":1,"tierName":"rack","parent":null,"children":[],"nodes":[]},
      "rack-1":{"tier":1,"tierName":"rack","parent":null,"children":[],"nodes":["node-1","node-10"]}})"));
  EXPECT_EQ(out[2]["hyperNodesReady"], true);
}

TEST_F(ReplayTest, FailedBindExample) {
  FileReplay f(testing::ExamplesDir() + "/failed-bind.jsonl");
  ASSERT_EQ(f.rc, 0) << f.r.err.str();
  std::vector<Json> out = f.r.Out();
  ASSERT_EQ(out.size(), 3u) << f.r.out.str();

  // Line 9, before the first bind tick: both assumed on node-a.
  const Json& assumed = out[0];
  const Json& web0 = Job(assumed, "team-a/web");
  EXPECT_EQ(StatusAt(Task(web0, "web-0")), "Binding@node-a");
  EXPECT_EQ(StatusAt(Task(web0, "web-1")), "Binding@node-a");
  EXPECT_THAT(Names(assumed["assumed"]), ElementsAre("team-a/web-0", "team-a/web-1"));
  EXPECT_EQ(Node(assumed, "node-a")["used"]["cpu"], 4000);

  // Line 12: web-1's bind failed at the tick (forgotten, back to Pending, node released);
  // web-0's succeeded and the watch confirmed it.
  const Json& after = out[1];
  const Json& web1 = Job(after, "team-a/web");
  EXPECT_EQ(StatusAt(Task(web1, "web-0")), "Running@node-a");
  EXPECT_EQ(StatusAt(Task(web1, "web-1")), "Pending@");
  EXPECT_THAT(Names(after["assumed"]), IsEmpty());
  EXPECT_THAT(Names(Node(after, "node-a")["tasks"]), ElementsAre("team-a/web-0"));
  EXPECT_EQ(Node(after, "node-a")["used"]["cpu"], 2000);
  EXPECT_THAT(
      f.r.err.str(),
      HasSubstr("bind team-a/web-1 to node-a failed: pods \"web-1\" is forbidden: node node-a is cordoned"));

  // Line 16 and the end: the second bind of web-1 succeeded and was confirmed.
  const Json final_dump = f.r.Dump();
  EXPECT_EQ(out[2], final_dump);
  const Json& web = Job(final_dump, "team-a/web");
  EXPECT_EQ(StatusAt(Task(web, "web-0")), "Running@node-a");
  EXPECT_EQ(StatusAt(Task(web, "web-1")), "Running@node-a");
  EXPECT_THAT(Names(final_dump["assumed"]), IsEmpty());
  EXPECT_EQ(Node(final_dump, "node-a")["idle"],
            Json::parse(R"({"cpu":4000,"memory":25769803776,"pods":108})"));
  EXPECT_EQ(f.r.engine.stats().binds_ok, 2);
  EXPECT_EQ(f.r.engine.stats().binds_failed, 1);
}

TEST_F(ReplayTest, EvictionExample) {
  FileReplay f(testing::ExamplesDir() + "/eviction.jsonl");
  ASSERT_EQ(f.rc, 0) << f.r.err.str();
  std::vector<Json> out = f.r.Out();
  ASSERT_EQ(out.size(), 3u) << f.r.out.str();

  // Line 6: lonely's job has no PodGroup: refused, nothing changes.
  EXPECT_EQ(out[0]["line"], 6);
  EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr("team-a/lonely"));
  EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr("has no PodGroup"));

  // Line 8: batch-0 is Releasing on node-a, lonely still Running.
  const Json& d = out[1];
  EXPECT_EQ(StatusAt(Task(Job(d, "team-a/batch"), "batch-0")), "Releasing@node-a");
  EXPECT_EQ(StatusAt(Task(Job(d, "team-a/no-such-group"), "lonely")), "Running@node-a");
  EXPECT_EQ(Node(d, "node-a")["releasing"], Json::parse(R"({"cpu":2000,"memory":4294967296,"pods":1})"));
  EXPECT_EQ(Node(d, "node-a")["used"]["cpu"], 4000);
  EXPECT_EQ(Job(d, "team-a/batch")["allocated"], Json::object());

  // The end: batch-0 was deleted; its job keeps its PodGroup (and stays), node-a only
  // holds lonely.
  const Json final_dump = f.r.Dump();
  EXPECT_EQ(out[2], final_dump);
  EXPECT_THAT(Job(final_dump, "team-a/batch")["tasks"], IsEmpty());
  EXPECT_THAT(Names(Node(final_dump, "node-a")["tasks"]), ElementsAre("team-a/lonely"));
  EXPECT_EQ(Node(final_dump, "node-a")["idle"],
            Json::parse(R"({"cpu":6000,"memory":30064771072,"pods":109})"));
  EXPECT_EQ(Node(final_dump, "node-a")["releasing"], Json::object());
  EXPECT_EQ(f.r.engine.stats().evictions, 1);
}

TEST_F(ReplayTest, NodeGoneExample) {
  FileReplay f(testing::ExamplesDir() + "/node-gone.jsonl");
  ASSERT_EQ(f.rc, 0) << f.r.err.str();
  std::vector<Json> out = f.r.Out();
  ASSERT_EQ(out.size(), 4u) << f.r.out.str();

  // Line 8: zone-1 {node-a, node-b}, zone-2 {node-c}, round-robin.
  EXPECT_THAT(Names(out[0]["nodeList"]), ElementsAre("node-a", "node-c", "node-b"));
  // Line 10: node-b is NotReady, so out of the snapshot.
  EXPECT_THAT(Names(out[1]["nodes"]), ElementsAre("node-a", "node-c"));
  EXPECT_THAT(Names(out[1]["nodeList"]), ElementsAre("node-a", "node-c"));
  // Line 12: node-a was deleted while svc-0 still runs there: a placeholder remains,
  // NotReady/UnInitialized, accounting nothing, out of the node list.
  const Json& d = out[2];
  const Json& a = Node(d, "node-a");
  EXPECT_EQ(a["ready"], false);
  EXPECT_EQ(a["reason"], "UnInitialized");
  EXPECT_EQ(a["allocatable"], Json::object());
  EXPECT_THAT(Names(a["tasks"]), ElementsAre("team-a/svc-0"));
  EXPECT_EQ(Node(d, "node-b")["reason"], "NotReady");
  EXPECT_THAT(Names(d["nodeList"]), ElementsAre("node-b", "node-c"));
  // The end: svc-0 left, and node-a with it.
  const Json final_dump = f.r.Dump();
  EXPECT_EQ(out[3], final_dump);
  EXPECT_THAT(Names(final_dump["nodes"]), ElementsAre("node-b", "node-c"));
  const Json& svc = Job(final_dump, "team-a/svc");
  ASSERT_EQ(svc["tasks"].size(), 1u);
  EXPECT_EQ(StatusAt(Task(svc, "svc-1")), "Running@node-b");
}

// ---------------------------------------------------------------- a real watch stream

TEST_F(ReplayTest, RealPodWatchStreamReplaysToAConsistentCache) {
  const std::string path = testing::SharedDataDir() + "/k8s/watch/pod-watch-events-kind-2023.jsonl";
  // Ours ("default-scheduler") or foreign pods that count because they are bound.
  for (const char* scheduler : {"default-scheduler", "volcano"}) {
    SCOPED_TRACE(scheduler);
    Replay r(Checked(scheduler));
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ASSERT_EQ(r.engine.ApplyLine(++n, line), 0) << r.err.str();
      Json d = r.Dump();
      ASSERT_EQ(d["nodes"].size(), 1u);
      const Json& node = Node(d, "aeraki-control-plane");
      // The Node object never arrives: a placeholder that accounts nothing.
      EXPECT_EQ(node["reason"], "UnInitialized");
      EXPECT_EQ(node["used"], Json::object());
      if (n == 1) {
        EXPECT_THAT(Names(node["tasks"]), ElementsAre("default/network-tool1"));
      }
      if (n >= 2 && n <= 5) {
        EXPECT_THAT(Names(node["tasks"]), ElementsAre("default/network-tool", "default/network-tool1"));
      }
    }
    EXPECT_EQ(n, 6);
    const Json d = r.Dump();
    EXPECT_THAT(Names(Node(d, "aeraki-control-plane")["tasks"]), ElementsAre("default/network-tool1"));
    EXPECT_THAT(d["jobs"], IsEmpty());  // no pod has a group annotation
    EXPECT_THAT(d["nodeList"], IsEmpty());
    EXPECT_THAT(d["assumed"], IsEmpty());
    EXPECT_THAT(r.out.str(), IsEmpty());
    EXPECT_EQ(r.engine.stats().events, 6);
    EXPECT_EQ(r.engine.stats().refused, 0);
  }
  // The same stream through Run() with the summary: consistent with the watched cluster.
  ReplayOptions o = Checked("volcano");
  o.summary = true;
  FileReplay f(path, o);
  EXPECT_EQ(f.rc, 0);
  EXPECT_THAT(f.r.err.str(), HasSubstr("replayed 6 lines"));
  EXPECT_THAT(f.r.err.str(), HasSubstr("invariants: OK\n"));
  EXPECT_THAT(f.r.err.str(), HasSubstr("compare with cluster: consistent\n"));
}

// ---------------------------------------------------------------- malformed lines: exit 2

TEST_F(ReplayTest, NonJsonLineStopsWithExitTwoAndTheLineNumber) {
  Replay r;
  std::istringstream in(Cluster() + "this is not json\n" + R"({"op":"dump"})" + "\n");
  EXPECT_EQ(r.engine.Run(in), 2);
  EXPECT_EQ(r.err.str(), "line 4: not valid JSON\n");
  EXPECT_THAT(r.out.str(), IsEmpty());  // the dump after it never ran
  EXPECT_EQ(r.engine.stats().lines, 4);
}

TEST_F(ReplayTest, LinesThatAreNotOneOfTheFormsStopWithExitTwo) {
  struct Case {
    std::string line;
    std::string reason;
  };
  const Case cases[] = {
      {R"({"op":"frobnicate"})", R"(unknown op "frobnicate")"},
      {R"({"type":"UPSERTED","object":{}})", R"(unknown watch event type "UPSERTED")"},
      {R"({"kind":"Pod"})", "neither a watch event"},
      {R"([1,2,3])", "not a JSON object"},
      {R"({"op":"bind","task":"ns/p0"})", R"(missing "node")"},
      {R"({"op":"bind","task":7,"node":"node-a"})", R"("task" has the wrong type)"},
      {R"({"op":"add","object":"pod"})", R"("object" has the wrong type)"},
      {R"({"op":"tick","ms":-5})", R"("ms" must not be negative)"},
      {R"({"op":"tick","ms":"20"})", R"("ms" has the wrong type)"},
      {R"({"op":"bindResult","task":"ns/p0"})", R"(missing "ok")"},
      {R"({"op":"dump")", "not valid JSON"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    Replay r;
    ASSERT_EQ(r.Lines(Cluster()), 0);
    const std::string before = r.engine.Dump();
    EXPECT_EQ(r.Line(c.line), 2);
    EXPECT_THAT(r.err.str(), StartsWith("line 4: "));
    EXPECT_THAT(r.err.str(), HasSubstr(c.reason));
    EXPECT_THAT(r.out.str(), IsEmpty());
    EXPECT_EQ(before, r.engine.Dump());
  }
}

TEST_F(ReplayTest, BlankLinesAreSkipped) {
  Replay r;
  std::istringstream in("\n   \n" + Cluster() + "\r\n" + R"({"op":"dump"})" + "\n");
  EXPECT_EQ(r.engine.Run(in), 0) << r.err.str();
  EXPECT_EQ(r.Out().size(), 1u);
}

// ---------------------------------------------------------------- refused: an error line

TEST_F(ReplayTest, InvalidQuantityIsAnErrorLineNamingTheFieldAndChangesNothing) {
  struct Case {
    std::string line;
    std::string object;  // how the message names the object
    std::string field;
  };
  const Case cases[] = {
      {PodLine("ADDED", "p1", "1x"), "Pod ns/p1", "spec.containers[0].resources.requests.cpu"},
      {PodLine("ADDED", "p1", "-1"), "Pod ns/p1", "spec.containers[0].resources.requests.cpu"},
      {PodLine("MODIFIED", "p0", "2.5.1", "node-a", "Running"), "Pod ns/p0",
       "spec.containers[0].resources.requests.cpu"},
      {PodLine("MODIFIED", "p0", "-3", "node-a", "Running"), "Pod ns/p0",
       "spec.containers[0].resources.requests.cpu"},
      {NodeLine("ADDED", "node-b", "8q"), "Node node-b", "status.capacity.cpu"},
      {NodeLine("MODIFIED", "node-a", "lots"), "Node node-a", "status.capacity.cpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    Replay r;
    ASSERT_EQ(r.Lines(Cluster()), 0) << r.err.str();
    const std::string before = r.engine.Dump();
    EXPECT_EQ(r.Line(c.line), 0) << r.err.str();
    std::vector<Json> out = r.Out();
    ASSERT_EQ(out.size(), 1u) << r.out.str();
    EXPECT_EQ(out[0]["line"], 4);
    EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr(c.object));
    EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr(c.field));
    EXPECT_EQ(before, r.engine.Dump());
    // Nothing left behind either: time passing changes nothing.
    EXPECT_EQ(r.Line(R"({"op":"tick","ms":5000})"), 0);
    EXPECT_EQ(before, r.engine.Dump());
    EXPECT_EQ(r.engine.stats().refused, 1);
  }
}

// Regression: a Node whose quantities decode but are invalid for the cache (a negative
// allocatable) was put into the object store and only failed later, inside the node-sync
// worker: no error line, the previous Node kept in the cache, and the sync retried forever.
TEST_F(ReplayTest, NegativeNodeAllocatableIsAnErrorLineNamingTheField) {
  Replay r;
  ASSERT_EQ(r.Lines(Cluster()), 0);
  const std::string before = r.engine.Dump();
  EXPECT_EQ(r.Line(NodeLine("MODIFIED", "node-a", "-8")), 0);
  std::vector<Json> out = r.Out();
  ASSERT_EQ(out.size(), 1u) << r.out.str();
  EXPECT_EQ(out[0]["line"], 4);
  EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr("Node node-a"));
  EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr("status.capacity.cpu"));
  EXPECT_EQ(before, r.engine.Dump());
  // A new node too.
  EXPECT_EQ(r.Line(NodeLine("ADDED", "node-b", "-1")), 0);
  ASSERT_EQ(r.Out().size(), 2u) << r.out.str();
  EXPECT_EQ(r.Out()[1]["line"], 5);
  EXPECT_EQ(before, r.engine.Dump());
  // The good version still applies afterwards.
  EXPECT_EQ(r.Line(NodeLine("MODIFIED", "node-a", "16")), 0);
  EXPECT_EQ(Node(r.Dump(), "node-a")["allocatable"]["cpu"], 16000);
}

TEST_F(ReplayTest, UnmodelledKindIsAnErrorLine) {
  Replay r;
  ASSERT_EQ(r.Lines(Cluster()), 0);
  const std::string before = r.engine.Dump();
  EXPECT_EQ(
      r.Line(
          R"({"op":"add","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns"}}})"),
      0);
  ASSERT_EQ(r.Out().size(), 1u);
  EXPECT_THAT(r.Out()[0]["error"].get<std::string>(), HasSubstr("Deployment ns/d"));
  EXPECT_EQ(before, r.engine.Dump());
}

TEST_F(ReplayTest, BindThatDoesNotFitIsAnErrorLine) {
  Replay r;
  ASSERT_EQ(r.Lines(Cluster("12")), 0);  // 12 CPUs on an 8-CPU node
  const std::string before = r.engine.Dump();
  EXPECT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-a"})"), 0);
  std::vector<Json> out = r.Out();
  ASSERT_EQ(out.size(), 1u) << r.out.str();
  EXPECT_EQ(out[0]["line"], 4);
  EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr("ns/p0"));
  EXPECT_THAT(out[0]["error"].get<std::string>(), HasSubstr("insufficient cpu"));
  EXPECT_EQ(before, r.engine.Dump());
  // Binding to a node the cache does not know, or a task it does not hold, is refused too.
  EXPECT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-zzz"})"), 0);
  EXPECT_EQ(r.Line(R"({"op":"bind","task":"ns/nope","node":"node-a"})"), 0);
  out = r.Out();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(out[1]["error"].get<std::string>(), HasSubstr("node-zzz"));
  EXPECT_THAT(out[2]["error"].get<std::string>(), HasSubstr("ns/nope"));
  EXPECT_EQ(before, r.engine.Dump());
}

// ---------------------------------------------------------------- the 20 ms bind flow

TEST_F(ReplayTest, TickDrivesTheBindFlowAndTheWatchConfirms) {
  Replay r;
  ASSERT_EQ(r.Lines(Cluster()), 0);
  ASSERT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-a"})"), 0);
  // Assumed at once, not bound before the tick.
  Json d = r.Dump();
  EXPECT_EQ(StatusAt(Task(Job(d, "ns/job"), "p0")), "Binding@node-a");
  EXPECT_THAT(Names(d["assumed"]), ElementsAre("ns/p0"));
  EXPECT_EQ(Node(d, "node-a")["used"]["cpu"], 2000);
  EXPECT_EQ(r.engine.stats().binds_ok, 0);
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":19})"), 0);
  EXPECT_EQ(r.engine.stats().binds_ok, 0);
  // The tick at t=20 hands it to the binder; it stays assumed until the watch confirms.
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":1})"), 0);
  EXPECT_EQ(r.engine.stats().binds_ok, 1);
  d = r.Dump();
  EXPECT_EQ(StatusAt(Task(Job(d, "ns/job"), "p0")), "Binding@node-a");
  EXPECT_THAT(Names(d["assumed"]), ElementsAre("ns/p0"));
  // The watch delivers the pod with its nodeName: confirmed.
  ASSERT_EQ(r.Line(PodLine("MODIFIED", "p0", "2", "node-a", "Running")), 0);
  d = r.Dump();
  EXPECT_EQ(StatusAt(Task(Job(d, "ns/job"), "p0")), "Running@node-a");
  EXPECT_THAT(d["assumed"], IsEmpty());
  EXPECT_EQ(Node(d, "node-a")["used"]["cpu"], 2000);
  EXPECT_THAT(r.out.str(), IsEmpty());
  EXPECT_THAT(r.err.str(), IsEmpty());
}

TEST_F(ReplayTest, FinishedBindExpiresAfterTheTtlWithoutConfirmation) {
  ReplayOptions o = Checked();
  o.assumed_ttl_ms = 50;
  Replay r(o);
  ASSERT_EQ(r.Lines(Cluster()), 0);
  ASSERT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-a"})"), 0);
  // Not finished before the tick, so it cannot expire however long the TTL.
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":19})"), 0);
  EXPECT_THAT(Names(r.Dump()["assumed"]), ElementsAre("ns/p0"));
  // Finished at t=20: expires at t=70.
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":50})"), 0);  // t=69
  EXPECT_THAT(Names(r.Dump()["assumed"]), ElementsAre("ns/p0"));
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":1})"), 0);  // t=70
  Json d = r.Dump();
  EXPECT_THAT(d["assumed"], IsEmpty());
  EXPECT_EQ(StatusAt(Task(Job(d, "ns/job"), "p0")), "Pending@");
  EXPECT_EQ(Node(d, "node-a")["used"], Json::object());
  EXPECT_THAT(Names(Node(d, "node-a")["tasks"]), IsEmpty());
}

TEST_F(ReplayTest, ScriptedBindFailureForgetsTheTaskAtTheTick) {
  Replay r;
  ASSERT_EQ(r.Lines(Cluster()), 0);
  ASSERT_EQ(r.Line(R"({"op":"bindResult","task":"ns/p0","ok":false,"error":"conflict"})"), 0);
  ASSERT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-a"})"), 0);
  EXPECT_EQ(StatusAt(Task(Job(r.Dump(), "ns/job"), "p0")), "Binding@node-a");
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":20})"), 0);
  Json d = r.Dump();
  EXPECT_EQ(StatusAt(Task(Job(d, "ns/job"), "p0")), "Pending@");
  EXPECT_THAT(d["assumed"], IsEmpty());
  EXPECT_EQ(Node(d, "node-a")["used"], Json::object());
  EXPECT_THAT(r.err.str(), HasSubstr("bind ns/p0 to node-a failed: conflict"));
  EXPECT_EQ(r.engine.stats().binds_failed, 1);
  // The answer was used up: the next bind succeeds.
  ASSERT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-a"})"), 0);
  ASSERT_EQ(r.Line(R"({"op":"tick","ms":20})"), 0);
  EXPECT_EQ(r.engine.stats().binds_ok, 1);
  EXPECT_THAT(Names(r.Dump()["assumed"]), ElementsAre("ns/p0"));
}

// Regression: watch-event lines did not run the work they made due (node sync), so a Node
// ADDED line was invisible until some later operation line: a `bind` right after it was
// refused with "node not in the cache", and a script ending in node events left the cache
// without them.
TEST_F(ReplayTest, NodeEventIsAppliedBeforeTheNextLine) {
  Replay r;
  ASSERT_EQ(r.Line(NodeLine("ADDED", "node-a")), 0);
  EXPECT_THAT(Names(r.Dump()["nodes"]), ElementsAre("node-a"));
  ASSERT_EQ(r.Line(PodGroupLine("job")), 0);
  ASSERT_EQ(r.Line(PodLine("ADDED", "p0", "2")), 0);
  ASSERT_EQ(r.Line(R"({"op":"bind","task":"ns/p0","node":"node-a"})"), 0);
  EXPECT_THAT(r.out.str(), IsEmpty());
  EXPECT_THAT(Names(r.Dump()["assumed"]), ElementsAre("ns/p0"));
  ASSERT_EQ(r.Line(NodeLine("MODIFIED", "node-a", "8", "False")), 0);
  EXPECT_EQ(Node(r.Dump(), "node-a")["reason"], "NotReady");
  ASSERT_EQ(r.Line(NodeLine("DELETED", "node-a")), 0);
  EXPECT_EQ(Node(r.Dump(), "node-a")["reason"], "UnInitialized");  // p0 is still assumed there
}

TEST_F(ReplayTest, SnapshotLineMatchesTheCache) {
  Replay r;
  ASSERT_EQ(r.Lines(Cluster() + NodeLine("ADDED", "node-b", "4", "False") + "\n"), 0);
  ASSERT_EQ(r.Line(R"({"op":"snapshot"})"), 0);
  std::vector<Json> out = r.Out();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(Names(out[0]["nodes"]), ElementsAre("node-a"));  // node-b is NotReady
  EXPECT_THAT(Names(out[0]["jobs"], "uid"), ElementsAre("ns/job"));
  EXPECT_FALSE(out[0].contains("assumed"));
}

}  // namespace
}  // namespace volcache
