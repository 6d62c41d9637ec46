// Placement constraints on a real kube-apiserver (issue 40's reproduction): three Ready nodes
// (node-a: disk=ssd, zone=a; node-b: zone=b; node-c: zone=b with dedicated=gpu:NoSchedule),
// and pods whose own constraints allow one node or none. Each filter with a pod that fits one
// node only and a pod that fits none (left unbound with kube-scheduler's fit error in its
// PodScheduled condition and FailedScheduling event), host ports, a gang that must stay
// unplaced because of its own anti-affinity, and a gang spread over zones.
#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

class ConstraintsTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }

  // The three nodes of the issue.
  static std::string CreateNodes(KubeClient& c) {
    if (auto e = CreateReadyNode(
            c, "node-a", {{"disk", "ssd"}, {"zone", "a"}, {"kubernetes.io/hostname", "node-a"}}, "8", "16Gi");
        !e.empty())
      return e;
    if (auto e =
            CreateReadyNode(c, "node-b", {{"zone", "b"}, {"kubernetes.io/hostname", "node-b"}}, "8", "16Gi");
        !e.empty())
      return e;
    if (auto e =
            CreateReadyNode(c, "node-c", {{"zone", "b"}, {"kubernetes.io/hostname", "node-c"}}, "8", "16Gi");
        !e.empty())
      return e;
    Json taint = {
        {"spec",
         {{"taints", Json::array({{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}})}}}};
    auto a = c.MergePatch("/api/v1/nodes/node-c", taint);
    return a.status == 200 ? "" : "PATCH node-c taints: " + std::to_string(a.status) + " " + a.body;
  }

  // A gang `group` of `count` pods (1 cpu) in `ns`, each pod's spec merged with `extra`.
  static std::string Gang(KubeClient& c, const std::string& ns, const std::string& group, int count,
                          const Json& extra, const std::map<std::string, std::string>& labels = {}) {
    auto a = c.Post("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + ns + "/podgroups",
                    PodGroupJson(ns, group, count, "default"));
    if (a.status != 201) return "POST podgroup " + group + ": " + std::to_string(a.status) + " " + a.body;
    for (int i = 0; i < count; ++i) {
      const std::string name = group + "-" + std::to_string(i);
      Json pod = PodJson(ns, name, group, "1", "1Gi", {});
      pod["metadata"]["labels"] = {{"app", group}};
      for (auto& [k, v] : labels) pod["metadata"]["labels"][k] = v;
      pod["spec"].merge_patch(extra);
      a = c.Post("/api/v1/namespaces/" + ns + "/pods", pod);
      if (a.status != 201) return "POST pod " + name + ": " + std::to_string(a.status) + " " + a.body;
    }
    return "";
  }

  // The pod's PodScheduled=False message once written ("" until then).
  static std::string Unschedulable(KubeClient& c, const std::string& ns, const std::string& pod) {
    auto p = c.Get("/api/v1/namespaces/" + ns + "/pods/" + pod).json();
    if (!p.is_object() || !p.contains("status") || !p["status"].contains("conditions")) return "";
    for (auto& cond : p["status"]["conditions"]) {
      if (cond["type"] == "PodScheduled" && cond.value("status", "") == "False" &&
          cond.value("reason", "") == "Unschedulable")
        return cond.value("message", "");
    }
    return "";
  }

  // The messages of FailedScheduling events on the pod.
  static std::vector<std::string> FailedScheduling(KubeClient& c, const std::string& ns,
                                                   const std::string& pod) {
    std::vector<std::string> out;
    auto events = c.Get("/api/v1/namespaces/" + ns + "/events").json();
    if (!events.is_object()) return out;
    for (auto& e : events["items"]) {
      if (e["involvedObject"].value("name", "") == pod && e.value("reason", "") == "FailedScheduling")
        out.push_back(e.value("message", ""));
    }
    return out;
  }

  static Json NodeAffinityIn(const std::string& key, const std::vector<std::string>& values) {
    return {{"affinity",
             {{"nodeAffinity",
               {{"requiredDuringSchedulingIgnoredDuringExecution",
                 {{"nodeSelectorTerms",
                   Json::array(
                       {{{"matchExpressions",
                          Json::array({{{"key", key}, {"operator", "In"}, {"values", values}}})}}})}}}}}}}};
  }

  static Json PodAffinity(const char* kind, const std::string& app, const std::string& topology) {
    return {{"affinity",
             {{kind,
               {{"requiredDuringSchedulingIgnoredDuringExecution",
                 Json::array({{{"labelSelector", {{"matchLabels", {{"app", app}}}}},
                               {"topologyKey", topology}}})}}}}}};
  }
};

TEST_F(ConstraintsTest, EachFilterPlacesOnTheOnlyNodeThatFitsOrLeavesThePodUnboundWithItsReason) {
  KubeClient c = Admin();
  const std::string ns = "constraints";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateNodes(c), "");
  // A db pod of another scheduler already bound to node-b (zone b).
  Json db = PodJson(ns, "db", "", "1", "1Gi", {}, "default-scheduler", "node-b");
  db["metadata"]["labels"] = {{"app", "db"}};
  ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/pods", db).status, 201);

  ASSERT_EQ(Gang(c, ns, "ssd", 1, NodeAffinityIn("disk", {"ssd"})), "");
  ASSERT_EQ(Gang(c, ns, "zone-x", 1, NodeAffinityIn("zone", {"x"})), "");
  ASSERT_EQ(Gang(c, ns, "near-db", 1, PodAffinity("podAffinity", "db", "zone")), "");
  ASSERT_EQ(Gang(c, ns, "near-none", 1, PodAffinity("podAffinity", "nothing", "zone")), "");
  // Away from db's zone: zone a only.
  ASSERT_EQ(Gang(c, ns, "far-db", 1, PodAffinity("podAntiAffinity", "db", "zone")), "");
  // Four pods asking for hostPort 9000: node-a and node-b take one each (node-c is tainted).
  Json port = {
      {"containers", Json::array({{{"name", "main"},
                                   {"image", "registry.k8s.io/pause:3.7"},
                                   {"ports", Json::array({{{"containerPort", 9000}, {"hostPort", 9000}}})},
                                   {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Gang(c, ns, "port" + std::to_string(i), 1, port), "");
  // A gang of 3 with hostname anti-affinity among its members: two eligible nodes, so none binds.
  ASSERT_EQ(Gang(c, ns, "anti", 3, PodAffinity("podAntiAffinity", "anti", "kubernetes.io/hostname")), "");
  // A gang of 4 spread over zones with maxSkew 1: two on node-a, two on node-b.
  Json spread = {{"topologySpreadConstraints",
                  Json::array({{{"maxSkew", 1},
                                {"topologyKey", "zone"},
                                {"whenUnsatisfiable", "DoNotSchedule"},
                                {"labelSelector", {{"matchLabels", {{"app", "spread"}}}}}}})}};
  ASSERT_EQ(Gang(c, ns, "spread", 4, spread), "");
  // A toleration opens node-c to a pod that requires zone b and is not wanted on node-b.
  Json tolerant = NodeAffinityIn("kubernetes.io/hostname", {"node-c"});
  tolerant["tolerations"] = Json::array(
      {{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "gpu"}, {"effect", "NoSchedule"}}});
  ASSERT_EQ(Gang(c, ns, "tolerant", 1, tolerant), "");

  auto serve = StartServe("constraints", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  // db + ssd + near-db + far-db + 2 ports + 4 spread + tolerant.
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 11; }, Seconds(20)))
      << "bound " << CountBound(c, ns) << "/11; log:\n"
      << Tail(serve->Log());
  auto nodes = PodNodes(c, ns);
  EXPECT_EQ(nodes["ssd-0"], "node-a");
  EXPECT_EQ(nodes["near-db-0"], "node-b");
  EXPECT_EQ(nodes["far-db-0"], "node-a");
  EXPECT_EQ(nodes["tolerant-0"], "node-c");
  std::map<std::string, int> port_nodes, spread_nodes;
  for (int i = 0; i < 4; ++i) {
    ++port_nodes[nodes["port" + std::to_string(i) + "-0"]];
    ++spread_nodes[nodes["spread-" + std::to_string(i)]];
  }
  EXPECT_EQ(port_nodes["node-a"], 1);
  EXPECT_EQ(port_nodes["node-b"], 1);
  EXPECT_EQ(port_nodes[""], 2);
  EXPECT_EQ(spread_nodes["node-a"], 2);
  EXPECT_EQ(spread_nodes["node-b"], 2);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(nodes["anti-" + std::to_string(i)], "") << "the anti gang bound in part";
  EXPECT_EQ(nodes["zone-x-0"], "");
  EXPECT_EQ(nodes["near-none-0"], "");

  // The unbound pods carry kube-scheduler's fit error, in the condition and in the event.
  const std::map<std::string, std::string> want = {
      {"zone-x-0",
       "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match "
       "Pod's "
       "node affinity/selector."},
      {"near-none-0",
       "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match "
       "pod "
       "affinity rules."},
  };
  for (const auto& [pod, message] : want) {
    std::string got;
    EXPECT_TRUE(Eventually([&] { return !(got = Unschedulable(c, ns, pod)).empty(); }, Seconds(10))) << pod;
    EXPECT_EQ(got, message) << pod;
    const auto events = FailedScheduling(c, ns, pod);
    std::string seen;
    for (const auto& e : events) seen += "\n  " + e;
    EXPECT_TRUE(std::find(events.begin(), events.end(), message) != events.end())
        << pod << ": no FailedScheduling event with " << message << "; events:" << seen;
  }
  std::string ports;
  for (int i = 0; i < 4; ++i) {
    const std::string pod = "port" + std::to_string(i) + "-0";
    if (nodes[pod].empty()) {
      EXPECT_TRUE(Eventually([&] { return !(ports = Unschedulable(c, ns, pod)).empty(); }, Seconds(10)))
          << pod;
      EXPECT_EQ(
          ports,
          "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't have "
          "free ports for the requested pod ports.");
    }
  }
  std::string anti;
  EXPECT_TRUE(Eventually([&] { return !(anti = Unschedulable(c, ns, "anti-0")).empty(); }, Seconds(10)));
  EXPECT_NE(anti.find("node(s) didn't match pod anti-affinity rules"), std::string::npos) << anti;

  auto cmp = serve->AdminGet("/debug/compare").json();
  ASSERT_TRUE(cmp.is_object());
  EXPECT_EQ(cmp["consistent"], true) << cmp.dump();
  EXPECT_TRUE(BindingsExactlyOnce(ns, {"db"}));
}

// VolumeBinding on the real server: the connector watches PVCs, PVs and StorageClasses. A local
// PersistentVolume pinned to node-a takes its pod there; a missing claim, and an unbound claim
// of a WaitForFirstConsumer class, leave their pods unbound with the reason; the missing claim
// created later, bound to a volume on node-b, takes its pod to node-b.
TEST_F(ConstraintsTest, VolumeClaimsTakePodsToTheirVolumesNodesOrLeaveThemUnboundWithTheReason) {
  KubeClient c = Admin();
  const std::string ns = "volumes";
  CreateNamespace(c, ns);
  if (c.Get("/api/v1/nodes/node-a").status == 404) {
    ASSERT_EQ(CreateNodes(c), "");
  }
  auto local_pv = [](const std::string& name, const std::string& node) {
    return Json{{"apiVersion", "v1"},
                {"kind", "PersistentVolume"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"capacity", {{"storage", "1Gi"}}},
                  {"accessModes", Json::array({"ReadWriteOnce"})},
                  {"storageClassName", "local"},
                  {"local", {{"path", "/mnt/" + name}}},
                  {"nodeAffinity",
                   {{"required",
                     {{"nodeSelectorTerms",
                       Json::array({{{"matchExpressions",
                                      Json::array({{{"key", "kubernetes.io/hostname"},
                                                    {"operator", "In"},
                                                    {"values", Json::array({node})}}})}}})}}}}}}}};
  };
  auto claim = [&](const std::string& name, const std::string& volume) {
    Json spec = {{"accessModes", Json::array({"ReadWriteOnce"})},
                 {"storageClassName", "local"},
                 {"resources", {{"requests", {{"storage", "1Gi"}}}}}};
    if (!volume.empty()) spec["volumeName"] = volume;
    return Json{{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec", spec}};
  };
  auto uses = [](const std::string& claim_name) {
    return Json{{"volumes",
                 Json::array({{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", claim_name}}}}})}};
  };
  Json sc = {{"apiVersion", "storage.k8s.io/v1"},
             {"kind", "StorageClass"},
             {"metadata", {{"name", "local"}}},
             {"provisioner", "kubernetes.io/no-provisioner"},
             {"volumeBindingMode", "WaitForFirstConsumer"}};
  ASSERT_EQ(c.Post("/apis/storage.k8s.io/v1/storageclasses", sc).status, 201);
  ASSERT_EQ(c.Post("/api/v1/persistentvolumes", local_pv("pv-a", "node-a")).status, 201);
  ASSERT_EQ(c.Post("/api/v1/persistentvolumes", local_pv("pv-b", "node-b")).status, 201);
  ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/persistentvolumeclaims", claim("data-a", "pv-a")).status,
            201);
  ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/persistentvolumeclaims", claim("wait", "")).status, 201);
  ASSERT_EQ(Gang(c, ns, "on-a", 1, uses("data-a")), "");
  ASSERT_EQ(Gang(c, ns, "missing", 1, uses("later")), "");
  ASSERT_EQ(Gang(c, ns, "unbound", 1, uses("wait")), "");

  auto serve = StartServe("volumes", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 1; }, Seconds(20))) << Tail(serve->Log());
  EXPECT_EQ(PodNodes(c, ns)["on-a-0"], "node-a");
  const std::map<std::string, std::string> want = {
      {"missing-0", "0/3 nodes are available: 3 persistentvolumeclaim \"later\" not found."},
      {"unbound-0",
       "0/3 nodes are available: 3 pod has unbound PersistentVolumeClaim \"wait\" of WaitForFirstConsumer "
       "class \"local\" (volcache does not bind volumes)."},
  };
  for (const auto& [pod, message] : want) {
    EXPECT_TRUE(Eventually([&] { return Unschedulable(c, ns, pod) == message; }, Seconds(10)))
        << pod << ": " << Unschedulable(c, ns, pod);
    // The event is written after the condition (its own writer): wait for it too.
    EXPECT_TRUE(Eventually(
        [&] {
          const auto events = FailedScheduling(c, ns, pod);
          return std::find(events.begin(), events.end(), message) != events.end();
        },
        Seconds(10)))
        << pod << ": no FailedScheduling event with " << message;
  }
  // The missing claim appears, bound to the volume on node-b: the pod follows it there.
  ASSERT_EQ(c.Post("/api/v1/namespaces/" + ns + "/persistentvolumeclaims", claim("later", "pv-b")).status,
            201);
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 2; }, Seconds(20))) << Tail(serve->Log());
  EXPECT_EQ(PodNodes(c, ns)["missing-0"], "node-b");
  EXPECT_EQ(PodNodes(c, ns)["unbound-0"], "");
  auto cmp = serve->AdminGet("/debug/compare").json();
  ASSERT_TRUE(cmp.is_object());
  EXPECT_EQ(cmp["consistent"], true) << cmp.dump();
}

}  // namespace
}  // namespace volcache::integration
