// deploy/ against a real kube-apiserver: every manifest is accepted as written (dry run);
// `volcache serve` with the ConfigMap's config file and a token of exactly that ServiceAccount,
// bound by exactly that ClusterRole, syncs, leads (a Lease) and binds a gang; and taking out
// any one verb of the ClusterRole makes serve name the 403 it causes, once.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

namespace fs = std::filesystem;

constexpr char kNs[] = "volcache-system";
constexpr char kSa[] = "volcache";

class DeployTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }

  void SetUp() override {
    RealServerTest::SetUp();
    if (IsSkipped()) return;
    std::string err;
    manifests_ = DeployManifests(&err);
    ASSERT_TRUE(err.empty()) << err;
    ASSERT_FALSE(manifests_.empty()) << "no manifests in deploy/";
    for (auto& m : manifests_) {
      file_[m["kind"].get<std::string>()] = m["_file"].get<std::string>();
      m.erase("_file");
      by_kind_[m["kind"].get<std::string>()] = m;
    }
  }

  const Json& Manifest(const std::string& kind) { return by_kind_[kind]; }

  // POSTs the manifest for real; 409 (already there from another test) is fine.
  ::testing::AssertionResult Create(KubeClient& c, const Json& m) {
    auto a = c.Post(CollectionPath(m), m);
    if (a.status == 201 || a.status == 409) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "POST " << m["kind"] << ": " << a.status << " " << a.error << a.body;
  }

  // The ServiceAccount (named `sa`), its token, and a ClusterRole with `rules` bound to it.
  std::string TokenFor(KubeClient& c, const std::string& sa, const Json& rules, std::string* err) {
    EXPECT_TRUE(Create(c, Manifest("Namespace")));
    Json account = Manifest("ServiceAccount");
    account["metadata"]["name"] = sa;
    EXPECT_TRUE(Create(c, account));
    Json role = Manifest("ClusterRole");
    role["metadata"]["name"] = sa;
    role["rules"] = rules;
    EXPECT_TRUE(Create(c, role));
    Json binding = Manifest("ClusterRoleBinding");
    binding["metadata"]["name"] = sa;
    binding["roleRef"]["name"] = sa;
    binding["subjects"][0]["name"] = sa;
    EXPECT_TRUE(Create(c, binding));
    return RequestToken(c, kNs, sa, err);
  }

  // The ConfigMap's config file, and the admin token file it names, as local files.
  std::string WriteConfig(const std::string& name) {
    const std::string dir = server().base() + "/deploy-" + name;
    fs::create_directories(dir);
    std::ofstream(dir + "/config.yaml") << Manifest("ConfigMap")["data"]["config.yaml"].get<std::string>();
    std::ofstream(dir + "/token") << "deploy-test-admin-token\n";
    return dir;
  }

  // `volcache serve --config <the ConfigMap's file>`; the command line overrides only what
  // differs outside a pod: the kubeconfig, the token file's path, --listen (harness).
  std::unique_ptr<ServeProcess> StartDeployedServe(const std::string& name, const std::string& kubeconfig,
                                                   std::vector<std::string> extra) {
    const std::string dir = WriteConfig(name);
    std::vector<std::string> args = {"--config", dir + "/config.yaml", "--admin-token-file", dir + "/token"};
    args.insert(args.end(), extra.begin(), extra.end());
    return StartServe(name, args, kubeconfig);
  }

  std::vector<Json> manifests_;
  std::map<std::string, Json> by_kind_;
  std::map<std::string, std::string> file_;
};

// The log search the RBAC checks use: stop 20's CI run failed because "403" matched the port in
// "admin server listening on 127.0.0.1:44039".
TEST(LogSearchTest, AStatusCodeMatchesOnlyAsAWholeNumber) {
  const std::string log =
      "[2026-11-24 20:24:52.403] [volcache] [info] admin server listening on 127.0.0.1:44039\n"
      "[2026-11-24 20:24:53.001] [volcache] [warning] LIST pods: HTTP 403: Forbidden\n"
      "[2026-11-24 20:24:53.002] [volcache] [info] 4030 pods synced\n"
      "[2026-11-24 20:24:53.003] [volcache] [warning] watch nodes: 403\n";
  const auto lines = LinesWith(log, {"403"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("HTTP 403"), std::string::npos);
  EXPECT_NE(lines[1].find("watch nodes"), std::string::npos);
  EXPECT_EQ(LinesWith(log, {"FORBIDDEN"}).size(), 1u);
  EXPECT_EQ(LinesWith(log, {"403"}, 2).size(), 1u);
  EXPECT_TRUE(MentionsWord("pods: 403", "403"));
  EXPECT_FALSE(MentionsWord("port 14031", "403"));
}

TEST_F(DeployTest, EveryManifestIsAcceptedAsWrittenByADryRun) {
  KubeClient c = Admin();
  for (const char* kind : {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                           "Deployment", "Service", "PodDisruptionBudget"}) {
    EXPECT_TRUE(by_kind_.count(kind)) << "deploy/ has no " << kind;
  }
  // The Namespace first (a dry run creates nothing, and namespaced objects need it to exist).
  auto ns = c.Post(CollectionPath(Manifest("Namespace")) + "?dryRun=All", Manifest("Namespace"));
  EXPECT_TRUE(ns.status == 201 || ns.status == 200) << file_["Namespace"] << ": " << ns.status << ns.body;
  ASSERT_TRUE(Create(c, Manifest("Namespace")));
  for (const Json& m : manifests_) {
    if (m["kind"] == "Namespace") continue;
    auto a = c.Post(CollectionPath(m) + "?dryRun=All", m);
    EXPECT_TRUE(a.status == 201 || a.status == 200)
        << file_[m["kind"]] << " (" << m["kind"] << "): " << a.status << " " << a.error << a.body;
  }
  // What the Deployment promises.
  const Json& d = Manifest("Deployment");
  EXPECT_EQ(d["spec"]["replicas"], 2);
  const Json& pod = d["spec"]["template"]["spec"];
  const Json& ctr = pod["containers"][0];
  EXPECT_EQ(pod["serviceAccountName"], kSa);
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(ctr["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(ctr["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(ctr["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_TRUE(ctr["resources"].contains("requests") && ctr["resources"].contains("limits"));
  const std::string config = Manifest("ConfigMap")["data"]["config.yaml"];
  EXPECT_NE(config.find("listen: 0.0.0.0:8080"), std::string::npos);
  EXPECT_NE(config.find("admin-token-file:"), std::string::npos);
  EXPECT_NE(config.find("leader-elect: true"), std::string::npos);
}

TEST_F(DeployTest, ServeWithTheDeployedConfigAndRbacSyncsLeadsAndBinds) {
  KubeClient c = Admin();
  std::string err;
  const std::string token = TokenFor(c, kSa, Manifest("ClusterRole")["rules"], &err);
  ASSERT_FALSE(token.empty()) << err;
  const std::string ns = "deployed";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "deployed-n1", {{"suite", "deployed"}}, "8", "16Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "g", 2, "1", "1Gi", {{"suite", "deployed"}}), "");
  // An unschedulable gang too: pod conditions, PodGroup status and Events get written.
  ASSERT_EQ(CreateGang(c, ns, "big", 2, "6", "1Gi", {{"suite", "deployed"}}), "");
  auto serve =
      StartDeployedServe("deployed", server().WriteKubeconfig(kSa, token), {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  EXPECT_TRUE(Eventually(
      [&] {
        auto n = PodNodes(c, ns);
        return n["g-0"] == "deployed-n1" && n["g-1"] == "deployed-n1";
      },
      Seconds(20)))
      << Tail(serve->Log());
  // The Lease, in the namespace the config names.
  auto lease =
      c.Get(std::string("/apis/coordination.k8s.io/v1/namespaces/") + kNs + "/leases/volcache-deployed")
          .json();
  EXPECT_FALSE(lease["spec"].value("holderIdentity", "").empty()) << lease.dump();
  EXPECT_EQ(serve->AdminGet("/metrics").status, 401) << "the config's admin token is not required";
  std::this_thread::sleep_for(std::chrono::seconds(3));  // six more sessions of writes
  const auto forbidden = LinesWith(serve->Log(), {"403", "forbidden"});
  EXPECT_TRUE(forbidden.empty()) << forbidden.size() << " log lines with 403/forbidden; first: "
                                 << (forbidden.empty() ? "" : forbidden[0]);
  int denied = 0;
  std::string what;
  for (auto& e : ReadAudit(server().audit_log())) {
    if (e.user == std::string("system:serviceaccount:") + kNs + ":" + kSa && e.code == 403) {
      ++denied;
      what = e.verb + " " + e.resource + (e.subresource.empty() ? "" : "/" + e.subresource);
    }
  }
  EXPECT_EQ(denied, 0) << "deploy/'s ClusterRole lacks a permission serve uses: " << what;
  EXPECT_TRUE(BindingsExactlyOnce(ns));
  serve->Signal(SIGTERM);
  EXPECT_EQ(serve->WaitExit(Seconds(10)), 0);
}

// One verb taken out of one rule.
struct Removal {
  size_t rule;
  std::string verb;
  std::vector<std::string> resources;
};

TEST_F(DeployTest, TakingOutAnyVerbOfTheClusterRoleMakesServeNameIts403Once) {
  KubeClient c = Admin();
  const Json rules = Manifest("ClusterRole")["rules"];
  std::vector<Removal> removals;
  for (size_t i = 0; i < rules.size(); ++i) {
    for (const auto& verb : rules[i]["verbs"]) {
      std::vector<std::string> resources;
      for (const auto& r : rules[i]["resources"]) resources.push_back(r);
      // The reads of the rare paths (a 409 on a Binding or a PodGroup status patch, a 404 on a
      // status write) are left out: a short run cannot make the API server answer them.
      if (verb == "get" && resources != std::vector<std::string>{"leases"}) continue;
      removals.push_back({i, verb, resources});
    }
  }
  ASSERT_GE(removals.size(), 20u);
  const std::string ns = "minus";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "minus-n1", {{"suite", "minus"}}, "64", "128Gi", 500), "");

  // Each serve schedules only its own pods (its own scheduler name), so one's binds do not
  // take another's work; each has its own Lease.
  struct Run {
    Removal removal;
    std::string needle;  // verb "X" on resource "Y"
    std::unique_ptr<ServeProcess> serve;
  };
  constexpr size_t kParallel = 6;
  std::vector<std::string> failures;
  for (size_t start = 0; start < removals.size(); start += kParallel) {
    std::vector<Run> runs;
    for (size_t k = start; k < std::min(removals.size(), start + kParallel); ++k) {
      const Removal& rm = removals[k];
      const std::string name = "minus-" + std::to_string(k);
      Json reduced = rules;
      Json verbs = Json::array();
      for (const auto& v : rules[rm.rule]["verbs"])
        if (v != rm.verb) verbs.push_back(v);
      if (verbs.empty()) {
        reduced.erase(rm.rule);
      } else {
        reduced[rm.rule]["verbs"] = verbs;
      }
      std::string err;
      const std::string token = TokenFor(c, name, reduced, &err);
      ASSERT_FALSE(token.empty()) << err;
      const std::string scheduler = "volcano-" + name;
      for (const auto& [group, count, cpu] : {std::tuple{"ok-" + std::to_string(k), 2, "100m"},
                                              std::tuple{"big-" + std::to_string(k), 1, "1000"}}) {
        ASSERT_EQ(c.Post("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + ns + "/podgroups",
                         PodGroupJson(ns, group, count, "default"))
                      .status,
                  201);
        for (int i = 0; i < count; ++i) {
          const std::string pod = group + "-" + std::to_string(i);
          ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/pods",
                           PodJson(ns, pod, group, cpu, "64Mi", {{"suite", "minus"}}, scheduler))
                        .status,
                    201);
        }
      }
      Run run{rm, "", nullptr};
      for (const auto& r : rm.resources) {
        // A rule with several resources is not taken apart here (none has a verb the test
        // removes); the first resource is the one serve names.
        run.needle = "verb \"" + rm.verb + "\" on resource \"" + r + "\"";
        break;
      }
      run.serve =
          StartDeployedServe(name, server().WriteKubeconfig(name, token),
                             {"--scheduler-name", scheduler, "--schedule-period", "500ms",
                              "--leader-elect-resource-name", name, "--leader-elect-lease-duration", "4s",
                              "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "1s"});
      runs.push_back(std::move(run));
    }
    auto named = [](const std::string& log, const std::string& needle) {
      int n = 0;
      std::istringstream in(log);
      for (std::string line; std::getline(in, line);)
        n += line.find("forbidden") != std::string::npos && line.find(needle) != std::string::npos;
      return n;
    };
    Eventually(
        [&] {
          return std::all_of(runs.begin(), runs.end(),
                             [&](const Run& r) { return named(r.serve->Log(), r.needle) > 0; });
        },
        Seconds(40));
    std::this_thread::sleep_for(std::chrono::seconds(3));  // later refusals must not be logged again
    for (Run& r : runs) {
      const std::string log = r.serve->Log();
      const int n = named(log, r.needle);
      if (n != 1) {
        failures.push_back("without " + r.needle + ": logged " + std::to_string(n) + " times; log tail:\n" +
                           Tail(log, 1500));
      }
      // Nothing else is refused: every permission a refusal names (serve's "verb \"X\" on
      // resource \"Y\"", the API server's "cannot X resource \"Y\"") is the one taken out.
      static const std::regex ours(R"re(verb "(\w+)" on resource "([\w/]+)")re");
      static const std::regex theirs(R"re(cannot (\w+) resource \\?"([\w/]+)\\?")re");
      std::istringstream in(log);
      for (std::string line; std::getline(in, line);) {
        for (const std::regex* re : {&ours, &theirs}) {
          for (auto it = std::sregex_iterator(line.begin(), line.end(), *re); it != std::sregex_iterator();
               ++it) {
            const std::string perm = "verb \"" + (*it)[1].str() + "\" on resource \"" + (*it)[2].str() + "\"";
            if (perm != r.needle)
              failures.push_back("without " + r.needle + " another permission is refused: " + line);
          }
        }
      }
      r.serve->Signal(SIGTERM);
    }
    for (Run& r : runs) r.serve->WaitExit(Seconds(10));
  }
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " problems; first: " << (failures.empty() ? "" : failures[0]);
  for (size_t i = 1; i < failures.size(); ++i) ADD_FAILURE() << failures[i];
}

}  // namespace
}  // namespace volcache::integration
