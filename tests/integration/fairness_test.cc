// Issue 13 on a real kube-apiserver: `volcache serve --actions enqueue,allocate,reclaim`
// reclaims from the queue above its deserved share for a starving gang of another queue. The
// evictor marks the victims (DisruptionTarget condition, an Evict event) and DELETEs them;
// there is no kubelet, so they stay Terminating until the test force-deletes them as a
// kubelet would, and then the gang, pipelined onto the releasing resources, is bound.
#include <algorithm>
#include <set>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

class FairnessTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }
};

const std::string kNs = "fair";
const std::string kVolcano = "/apis/scheduling.volcano.sh/v1beta1";

std::string Post(KubeClient& c, const std::string& path, const Json& body) {
  auto a = c.Post(path, body);
  return a.status == 201 ? "" : "POST " + path + ": " + std::to_string(a.status) + " " + a.error + a.body;
}

// A gang of `count` pods of `cpu` each, in priority class `pc`, in queue `queue`.
std::string Gang(KubeClient& c, const std::string& name, int count, const std::string& cpu,
                 const std::string& queue, const std::string& pc) {
  Json pg = PodGroupJson(kNs, name, count, queue);
  if (!pc.empty()) pg["spec"]["priorityClassName"] = pc;
  if (std::string e = Post(c, kVolcano + "/namespaces/" + kNs + "/podgroups", pg); !e.empty()) return e;
  for (int i = 0; i < count; ++i) {
    Json pod = PodJson(kNs, name + "-" + std::to_string(i), name, cpu, "1Gi", {{"suite", "fair"}}, "volcano",
                       "", pc);
    if (std::string e = Post(c, "/api/v1/namespaces/" + kNs + "/pods", pod); !e.empty()) return e;
  }
  return "";
}

Json GetPod(KubeClient& c, const std::string& name) {
  return c.Get("/api/v1/namespaces/" + kNs + "/pods/" + name).json();
}

bool Terminating(const Json& pod) {
  return pod.is_object() && pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp");
}

TEST_F(FairnessTest, ReclaimEvictsTheLowPriorityGangOfTheQueueAboveItsShareThenBindsTheStarvingGang) {
  KubeClient c = Admin();
  CreateNamespace(c, kNs);
  ASSERT_EQ(CreateReadyNode(c, "fair-n1", {{"suite", "fair"}}, "4", "8Gi"), "");
  ASSERT_EQ(CreateReadyNode(c, "fair-n2", {{"suite", "fair"}}, "4", "8Gi"), "");
  ASSERT_EQ(Post(c, "/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClassJson("fair-high", 1000)), "");
  ASSERT_EQ(Post(c, "/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClassJson("fair-low", 10)), "");
  ASSERT_EQ(Post(c, kVolcano + "/queues", QueueJson("fair-a", 1)), "");  // reclaimable
  Json qb = QueueJson("fair-b", 1);
  qb["spec"]["reclaimable"] = false;
  ASSERT_EQ(Post(c, kVolcano + "/queues", qb), "");
  // Queue fair-a fills both nodes (8 cpu) with two gangs of four 1-cpu pods.
  ASSERT_EQ(Gang(c, "a-high", 4, "1", "fair-a", "fair-high"), "");
  ASSERT_EQ(Gang(c, "a-low", 4, "1", "fair-a", "fair-low"), "");

  auto serve = StartServe("fair", {"--schedule-period", "300ms", "--actions", "enqueue,allocate,reclaim"});
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_TRUE(Eventually([&] { return CountBound(c, kNs) == 8; }, Seconds(30)))
      << "queue fair-a's 8 pods not bound within 30 s; log tail:\n"
      << Tail(serve->Log());
  std::map<std::string, std::string> before = PodNodes(c, kNs);
  std::set<std::string> low_nodes;
  for (int i = 0; i < 4; ++i) low_nodes.insert(before["a-low-" + std::to_string(i)]);

  // Queue fair-b's gang: 2 pods of 2 cpu. Deserved (8 cpu, equal weights, requests 8 and 4):
  // 4 each, so fair-a gives 4 cpu: its lowest-priority job, whole (minMember 4), nothing else.
  ASSERT_EQ(Gang(c, "b", 2, "2", "fair-b", ""), "");
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 4; ++i)
          if (!Terminating(GetPod(c, "a-low-" + std::to_string(i)))) return false;
        return true;
      },
      Seconds(30)))
      << "a-low's pods not evicted within 30 s; PodGroup b: "
      << c.Get(kVolcano + "/namespaces/" + kNs + "/podgroups/b").body
      << "\npod b-0: " << GetPod(c, "b-0").dump()
      << "\nserve's cache: " << serve->AdminGet("/debug/cache").body << "\nlog tail:\n"
      << Tail(serve->Log());
  // A few more sessions: nothing else is evicted, and b is not bound while a-low terminates
  // (its pods are pipelined onto the releasing cpu, not bound).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (int i = 0; i < 4; ++i) {
    const std::string name = "a-high-" + std::to_string(i);
    EXPECT_FALSE(Terminating(GetPod(c, name))) << name << " was evicted";
  }
  EXPECT_EQ(PodNodes(c, kNs)["b-0"], "");
  EXPECT_EQ(PodNodes(c, kNs)["b-1"], "");

  // The evictor's marks: the DisruptionTarget condition on each victim, and an Evict event.
  for (int i = 0; i < 4; ++i) {
    const std::string name = "a-low-" + std::to_string(i);
    const Json pod = GetPod(c, name);
    std::string got;
    if (pod.contains("status") && pod["status"].contains("conditions")) {
      for (const auto& cond : pod["status"]["conditions"]) {
        if (cond.value("type", "") == "DisruptionTarget")
          got = cond.value("status", "") + "/" + cond.value("reason", "") + "/" + cond.value("message", "");
      }
    }
    EXPECT_EQ(got.rfind("True/PreemptionByScheduler/reclaimed by job fair/b of queue fair-b", 0), 0u)
        << name << ": DisruptionTarget " << got;
  }
  // The Evict event goes on the victim's PodGroup (identical events are one object whose
  // count grows): four for a-low, none for a-high.
  std::map<std::string, int> evict_events;  // kind/name -> count
  std::string message;
  EXPECT_TRUE(Eventually(
      [&] {
        evict_events.clear();
        const Json events = c.Get("/api/v1/namespaces/" + kNs + "/events").json();
        if (!events.is_object() || !events.contains("items")) return false;
        for (const auto& e : events["items"]) {
          if (e.value("reason", "") != "Evict") continue;
          const auto& io = e["involvedObject"];
          evict_events[io.value("kind", "") + "/" + io.value("name", "")] += e.value("count", 1);
          message = e.value("message", "");
        }
        return evict_events["PodGroup/a-low"] >= 4;
      },
      Seconds(15)));
  EXPECT_EQ(evict_events, (std::map<std::string, int>{{"PodGroup/a-low", 4}}));
  EXPECT_EQ(message.rfind("reclaimed by job fair/b of queue fair-b", 0), 0u) << message;
  const std::string metrics = serve->AdminGet("/metrics").body;
  EXPECT_NE(metrics.find("volcache_session_evictions_total{action=\"reclaim\"} 4"), std::string::npos)
      << "no reclaim eviction count of 4 in /metrics";

  // As a kubelet would once the containers stopped: the victims go for good.
  for (int i = 0; i < 4; ++i) {
    const std::string path = "/api/v1/namespaces/" + kNs + "/pods/a-low-" + std::to_string(i);
    auto a = c.Delete(path + "?gracePeriodSeconds=0");  // (the harness's DELETE sends no body)
    ASSERT_TRUE(a.status == 200 || a.status == 404) << path << ": " << a.status << " " << a.body;
  }
  std::map<std::string, std::string> after;
  ASSERT_TRUE(Eventually(
      [&] {
        after = PodNodes(c, kNs);
        return !after["b-0"].empty() && !after["b-1"].empty();
      },
      Seconds(30)))
      << "b's gang not bound within 30 s of the victims' deletion; serve's cache: "
      << serve->AdminGet("/debug/cache").body
      << "\nPodGroup b: " << c.Get(kVolcano + "/namespaces/" + kNs + "/podgroups/b").body << "\nlog tail:\n"
      << Tail(serve->Log());
  // Where a-low ran (two 2-cpu pods need the 4 cpu it freed), and a-high untouched.
  EXPECT_TRUE(low_nodes.count(after["b-0"]) && low_nodes.count(after["b-1"]))
      << "b-0 on " << after["b-0"] << ", b-1 on " << after["b-1"];
  for (int i = 0; i < 4; ++i) {
    const std::string name = "a-high-" + std::to_string(i);
    EXPECT_EQ(after[name], before[name]) << name;
    EXPECT_FALSE(Terminating(GetPod(c, name))) << name;
  }
  EXPECT_EQ(after.size(), 6u);  // a-low's pods are gone
  EXPECT_TRUE(BindingsExactlyOnce(kNs));
  EXPECT_TRUE(serve->Running());
}

}  // namespace
}  // namespace volcache::integration
