// `volcache run|serve --config FILE` as a user meets it (cmd/yaml_config.h): the file sets any
// flag, the command line wins over it, and every bad file, key or value is exit 2 with one line
// naming the path or the key. Spawns the built binary, as tests/cmd/cli_test.cc does.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace volcache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome RunVolcache(const std::string& args, const std::string& env = "") {
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "cmd" / "volcache";
  Outcome o;
  FILE* p = popen((env + " " + bin.string() + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.output.append(buf.data(), n);
  int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

size_t Lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("volcache-config-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  // A kubeconfig whose server refuses connections: serve gets past its flag checks and then
  // fails its sync after --sync-timeout-seconds.
  std::string DeadKubeconfig() {
    return Write("kubeconfig", R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  }

  fs::path dir_;
};

// A small, fast run: two trace jobs for one simulated minute.
constexpr char kSmallRun[] =
    "run --workload trace:alibaba --skip 0 --duration 1m --no-admin -q --report json";

TEST_F(ConfigTest, RunTakesEveryFlagFromTheFile) {
  const std::string cfg = Write("run.yaml", R"(
workload: trace:alibaba
skip: 0
jobs: 2
duration: 1m
no-admin: true
quiet: true
report: json
schedule-period: 500ms
score: least-allocated
v: 2
)");
  Outcome o = RunVolcache("run --config " + cfg);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr(R"("jobs":{"total":2)"));
  EXPECT_THAT(o.output, HasSubstr("score least-allocated, schedule period 500ms"));
}

TEST_F(ConfigTest, CommandLineWinsOverTheFile) {
  const std::string cfg = Write("run.yaml", "jobs: 2\nscore: least-allocated\nv: 2\n");
  Outcome o = RunVolcache(std::string(kSmallRun) + " --jobs 3 --score binpack --config " + cfg);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr(R"("jobs":{"total":3)"));
  EXPECT_THAT(o.output, HasSubstr("score binpack"));
  // A switch given as false in the file, true on the command line.
  const std::string sw = Write("switch.yaml", "no-admin: false\nquiet: false\n");
  Outcome s = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + sw);
  EXPECT_EQ(s.exit_code, 0) << s.output;
  EXPECT_THAT(s.output, Not(HasSubstr("admin: http")));
}

TEST_F(ConfigTest, FileWinsOverTheEnvironment) {
  const std::string token = Write("token", "secret\n");
  const std::string cfg = Write("run.yaml", "admin-token-file: " + token + "\n");
  // The variable names a file that does not exist: read, it would be an error.
  Outcome o = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + cfg,
                          "VOLCACHE_ADMIN_TOKEN_FILE=" + (dir_ / "absent").string());
  EXPECT_EQ(o.exit_code, 0) << o.output;
  // Without the key the environment still applies (and its error names the variable).
  Outcome e = RunVolcache(std::string(kSmallRun) + " --jobs 1",
                          "VOLCACHE_ADMIN_TOKEN_FILE=" + (dir_ / "absent").string());
  EXPECT_EQ(e.exit_code, 2) << e.output;
  EXPECT_THAT(e.output, HasSubstr("VOLCACHE_ADMIN_TOKEN_FILE"));
}

TEST_F(ConfigTest, ServeTakesItsFlagsFromTheFile) {
  const std::string kubeconfig = DeadKubeconfig();
  // Read from the file: the lease rule is checked (exit 2 naming the flag) ...
  const std::string bad_lease = Write("serve.yaml", "kubeconfig: " + kubeconfig +
                                                        "\nleader-elect-lease-duration: 5s\n"
                                                        "leader-elect-renew-deadline: 10s\n");
  Outcome o = RunVolcache("serve --config " + bad_lease);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_EQ(Lines(o.output), 1u) << o.output;
  EXPECT_THAT(o.output, HasSubstr("lease"));
  // ... and `leader-elect: false` (a switch set to false) skips it: serve starts, cannot
  // reach the server and gives up after the file's sync timeout.
  const std::string no_le =
      Write("serve-no-le.yaml", "kubeconfig: " + kubeconfig +
                                    "\nleader-elect: false\n"
                                    "leader-elect-lease-duration: 5s\n"
                                    "leader-elect-renew-deadline: 10s\n"
                                    "sync-timeout-seconds: 1\nno-admin: true\n"
                                    "kube-api-qps: 100\nschedule-period: 500ms\nv: 2\n");
  Outcome s = RunVolcache("serve --config " + no_le);
  EXPECT_EQ(s.exit_code, 1) << s.output;
  EXPECT_THAT(s.output, HasSubstr("127.0.0.1:1"));
  EXPECT_THAT(s.output, Not(HasSubstr("leader election")));
  // The command line wins: --leader-elect=true brings the lease rule back.
  Outcome c = RunVolcache("serve --leader-elect=true --config " + no_le);
  EXPECT_EQ(c.exit_code, 2) << c.output;
}

TEST_F(ConfigTest, BadFilesAreExitTwoWithOneLineNamingThePath) {
  const std::string missing = (dir_ / "missing.yaml").string();
  const std::string malformed = Write("malformed.yaml", "jobs: [1,\n  x: : :\n");
  const std::string list = Write("list.yaml", "- jobs\n- 2\n");
  const std::string two_docs = Write("two.yaml", "jobs: 1\n---\njobs: 2\n");
  const std::string unreadable = Write("unreadable.yaml", "jobs: 1\n");
  fs::permissions(unreadable, fs::perms::none);
  const bool root = geteuid() == 0;  // root reads it anyway
  for (const auto& [sub, path, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"run", missing, "no such file"},
           {"serve", missing, "no such file"},
           {"run", dir_.string(), "is a directory"},
           {"run", malformed, "malformed YAML"},
           {"serve", malformed, "line 3"},
           {"run", list, "mapping"},
           {"run", two_docs, "2 YAML documents"},
           {"run", unreadable, root ? "" : "cannot read"}}) {
    if (says.empty()) continue;
    Outcome o = RunVolcache(sub + " --no-admin --config " + path);
    EXPECT_EQ(o.exit_code, 2) << sub << " " << path << ": " << o.output;
    EXPECT_EQ(Lines(o.output), 1u) << path << ": " << o.output;
    EXPECT_THAT(o.output, StartsWith("volcache: --config " + path + ": ")) << o.output;
    EXPECT_THAT(o.output, HasSubstr(says)) << o.output;
  }
  // An empty file sets nothing.
  Outcome e = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + Write("empty.yaml", ""));
  EXPECT_EQ(e.exit_code, 0) << e.output;
}

TEST_F(ConfigTest, BadKeysAndValuesAreExitTwoWithOneLineNamingTheKey) {
  struct Case {
    std::string sub, yaml, key, says;
  };
  for (const Case& c : std::vector<Case>{
           {"run", "jobz: 5\n", "\"jobz\"", "unknown"},
           {"serve", "kubeconfig: x\nlisten-address: 1\n", "\"listen-address\"", "unknown"},
           {"serve", "workload: trace:philly\n", "\"workload\"", "unknown"},  // a flag of run only
           {"run", "jobs: abc\n", "\"jobs\"", "--jobs"},
           {"run", "jobs: [1, 2]\n", "\"jobs\"", "not a list"},
           {"run", "jobs: {a: 1}\n", "\"jobs\"", "not a mapping"},
           {"run", "jobs:\n", "\"jobs\"", "no value"},
           {"run", "no-admin: 5\n", "\"no-admin\"", "true or false"},
           {"serve", "leader-elect: maybe\n", "\"leader-elect\"", "true or false"},
           {"serve", "kube-api-qps: -1\n", "\"kube-api-qps\"", "--kube-api-qps"},
           {"serve", "kube-api-qps: fast\n", "\"kube-api-qps\"", "--kube-api-qps"},
           {"run", "score: fastest\n", "\"score\"", "--score"},
           {"run", "jobs: 1\njobs: 2\n", "\"jobs\"", "given twice"},
           {"run", "config: other.yaml\n", "\"config\"", "cannot be set"},
           {"serve", "help: true\n", "\"help\"", "cannot be set"},
       }) {
    const std::string path = Write("bad.yaml", c.yaml);
    Outcome o = RunVolcache(c.sub + " --no-admin --config " + path);
    EXPECT_EQ(o.exit_code, 2) << c.yaml << ": " << o.output;
    EXPECT_EQ(Lines(o.output), 1u) << c.yaml << ": " << o.output;
    EXPECT_THAT(o.output, StartsWith("volcache: --config " + path + ": ")) << o.output;
    EXPECT_THAT(o.output, HasSubstr(c.key)) << c.yaml;
    EXPECT_THAT(o.output, HasSubstr(c.says)) << c.yaml;
  }
}

// The whole line, exactly: `volcache: --config PATH: line N: key "K": what` (issue 43: the
// action's message used to come out as `key "actions: action "backfill" is ...`, its quotes
// broken), and the malformed-YAML line with its line and column in our words.
TEST_F(ConfigTest, ErrorsAreOneWellFormedLineNamingTheFileLineAndKey) {
  struct Case {
    std::string sub, yaml, line;  // `line`: what follows "volcache: --config PATH: "
  };
  for (const Case& c : std::vector<Case>{
           // An action the session lacks (run and serve alike), on the line it is on.
           {"run", "v: 2\nactions: \"enqueue, allocate, backfill\"\n",
            "line 2: key \"actions\": action \"backfill\" is not implemented by the reference session "
            "(best-effort pods are not placed by a separate pass)"},
           {"serve", "actions: \"allocate, shuffle\"\n",
            "line 1: key \"actions\": action \"shuffle\" is not implemented by the reference session"},
           {"run", "actions: \"allocate, dance\"\n",
            "line 1: key \"actions\": unknown action \"dance\" (supported: enqueue, allocate, reclaim, "
            "preempt)"},
           // An unknown key.
           {"run", "jobs: 2\njobz: 5\n", "line 2: key \"jobz\": unknown (volcache run has no flag --jobz)"},
           {"serve", "workload: trace:philly\n",
            "line 1: key \"workload\": unknown (volcache serve has no flag --workload)"},
           // Malformed YAML: line and column (counted from 1), yaml-cpp's reason.
           {"run", "jobs: [1,\n  x: : :\n",
            "line 3, column 1: malformed YAML: end of sequence flow not found"},
           {"serve", "a: b\n  c: d\n", "line 2, column 4: malformed YAML: illegal map value"},
           // A value of the wrong type or one the flag refuses.
           {"run", "duration: 1m\n\nno-admin: 0.5\n", "line 3: key \"no-admin\": want true or false"},
           {"run", "jobs: [1, 2]\n", "line 1: key \"jobs\": want one value, not a list"},
           {"run", "jobs: {a: 1}\n", "line 1: key \"jobs\": want a value, not a mapping"},
           {"run", "jobs: abc\n", "line 1: key \"jobs\": Could not convert: --jobs = abc"},
           {"run", "actions: [allocate]\n",
            "line 1: key \"actions\": want a string, e.g. \"enqueue, allocate\""},
           {"run", "duration: soon\n",
            "line 1: key \"duration\": --duration: duration \"soon\": want a non-negative number with ms, s, "
            "m or h"},
           {"run", "schedule-period: 5ms\n",
            "line 1: key \"schedule-period\": --schedule-period: at least 20ms"},
           {"run", "batch-bind-num: 0\n",
            "line 1: key \"batch-bind-num\": --batch-bind-num: 0 is not a positive number"},
           {"serve", "kube-api-qps: -1\n",
            "line 1: key \"kube-api-qps\": --kube-api-qps: -1 is not a positive number"},
           // A plugin the session lacks: the key is the path to it.
           {"run",
            "tiers:\n- plugins: [{name: priority}, {name: gang}]\n"
            "- plugins: [{name: predicates}, {name: proportion}, {name: binpack}, {name: drf}]\n",
            "line 3: key \"tiers[1].plugins[3]\": plugin \"drf\" is refused: DRF between jobs is not "
            "implemented "
            "(queues share through proportion) (supported: priority, gang, predicates, proportion, binpack | "
            "nodeorder, overcommit)"},
           // A key holding a quote stays well-formed.
           {"run", "'jo\"bs': 1\n", "line 1: key \"jo\\\"bs\": unknown (volcache run has no flag --jo\"bs)"},
       }) {
    const std::string path = Write("volcano-scheduler.conf", c.yaml);
    Outcome o = RunVolcache(c.sub + " --no-admin --config " + path);
    EXPECT_EQ(o.exit_code, 2) << c.yaml;
    EXPECT_EQ(o.output, "volcache: --config " + path + ": " + c.line + "\n") << c.yaml;
  }
}

// Volcano's scheduler configuration: what the reference session does is accepted (and a
// scoring plugin chooses --score); what it does not do is refused by name.
TEST_F(ConfigTest, VolcanoSchedulerShapeAcceptedWhereTheSessionMatches) {
  const std::string nodeorder = Write("nodeorder.yaml", R"(
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
v: 2
)");
  Outcome o = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + nodeorder);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("score least-allocated"));
  const std::string binpack = Write("binpack.yaml",
                                    "actions: allocate\ntiers: [{plugins: [{name: priority}, {name: gang}, "
                                    "{name: predicates}, {name: proportion}, {name: binpack}]}]\n"
                                    "score: binpack\nv: 2\n");
  Outcome b = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + binpack);
  EXPECT_EQ(b.exit_code, 0) << b.output;
  EXPECT_THAT(b.output, HasSubstr("score binpack"));
  // The command line still wins over the plugin.
  Outcome c = RunVolcache(std::string(kSmallRun) + " --jobs 1 --score least-allocated --config " + binpack);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_THAT(c.output, HasSubstr("score least-allocated"));
}

// Volcano's fairness actions turn the session's enqueue, reclaim and preempt on; the order
// of the list does not matter (the cycle's order is fixed), and the command line wins.
TEST_F(ConfigTest, VolcanoActionsTurnOnEnqueueReclaimAndPreempt) {
  const std::string all = Write("actions.yaml",
                                "actions: \"enqueue, allocate, preempt, reclaim\"\n"
                                "tiers: [{plugins: [{name: priority}, {name: gang}, {name: predicates}, "
                                "{name: proportion}, {name: binpack}, {name: overcommit}]}]\nv: 2\n");
  Outcome o = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + all);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("actions enqueue, allocate, reclaim, preempt\n"));
  Outcome c = RunVolcache(std::string(kSmallRun) + " --jobs 1 --actions allocate --config " + all);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_THAT(c.output, HasSubstr("actions allocate\n"));
  Outcome d = RunVolcache(std::string(kSmallRun) + " --jobs 1 --config " + Write("v.yaml", "v: 2\n"));
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_THAT(d.output, HasSubstr("actions allocate\n"));
  for (const std::string sub : {"run", "serve"}) {
    Outcome bad = RunVolcache(sub + " --no-admin --actions allocate,backfill");
    EXPECT_EQ(bad.exit_code, 2) << sub << ": " << bad.output;
    EXPECT_THAT(bad.output, HasSubstr("action \"backfill\" is not implemented")) << sub;
  }
}

TEST_F(ConfigTest, VolcanoSchedulerShapeRefusedWhereTheSessionDiffers) {
  const std::string all = "{name: priority}, {name: gang}, {name: predicates}, {name: proportion}";
  struct Case {
    std::string yaml, says;
  };
  for (const Case& c : std::vector<Case>{
           {"actions: \"enqueue, allocate, backfill\"\n", "action \"backfill\" is not implemented"},
           {"actions: \"allocate, shuffle\"\n", "action \"shuffle\" is not implemented"},
           {"actions: \"enqueue, allocate, enqueue\"\n", "action \"enqueue\" given twice"},
           {"actions: \"enqueue, reclaim\"\n", "must list \"allocate\""},
           {"actions: \"allocate, dance\"\n", "unknown action \"dance\""},
           {"actions: \"\"\n", "must list \"allocate\""},
           {"tiers: [{plugins: [" + all + ", {name: binpack}, {name: drf}]}]\n", "plugin \"drf\" is refused"},
           {"tiers: [{plugins: [" + all + ", {name: binpack}, {name: conformance}]}]\n",
            "plugin \"conformance\" is refused"},
           {"tiers: [{plugins: [{name: priority}, {name: predicates}, {name: proportion}, {name: "
            "binpack}]}]\n",
            "plugin \"gang\" is missing"},
           {"tiers: [{plugins: [" + all + "]}]\n", "\"binpack\" or \"nodeorder\""},
           {"tiers: [{plugins: [" + all + ", {name: binpack}, {name: nodeorder}]}]\n", "together"},
           {"tiers: [{plugins: [" + all + ", {name: binpack, arguments: {binpack.cpu: 2}}]}]\n",
            "plugin \"binpack\": option \"arguments\""},
           {"tiers: [{plugins: [" + all + ", {name: gang}, {name: binpack}]}]\n",
            "plugin \"gang\" listed twice"},
           {"tiers: [{plugins: [" + all + ", {name: binpack}]}]\nscore: least-allocated\n", "contradicts"},
           {"configurations: [{name: allocate}]\n", "\"configurations\""},
       }) {
    for (const std::string sub : {"run", "serve"}) {
      const std::string path = Write("volcano.yaml", c.yaml);
      Outcome o = RunVolcache(sub + " --no-admin --config " + path);
      EXPECT_EQ(o.exit_code, 2) << sub << " " << c.yaml << ": " << o.output;
      EXPECT_EQ(Lines(o.output), 1u) << c.yaml << ": " << o.output;
      EXPECT_THAT(o.output, StartsWith("volcache: --config " + path + ": ")) << o.output;
      EXPECT_THAT(o.output, HasSubstr(c.says)) << c.yaml << ": " << o.output;
    }
  }
}

}  // namespace
}  // namespace volcache
