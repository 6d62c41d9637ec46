// Differential tests of the decoder's streaming fast path (api/k8s/decode_fast.h) against the
// reference DOM decoder: for every input the public functions (fast path, else reference)
// must give exactly the reference's answer — the same objects field by field (compared
// through CanonicalDump) or the same error message. The inputs: every JSON file and watch
// line of the shared data set, hand-written pods that use every field the decoder reads and
// the JSON corners it must treat like nlohmann (escapes, UTF-8, nulls, duplicates, number
// forms), and random byte-level mutations of all of these.

#include "api/k8s/decode_fast.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "api/k8s/decode.h"
#include "api/k8s/dump.h"
#include "tests/testdata.h"

namespace volcache::k8s {
namespace {

std::string K8sData(const std::string& rel) { return testing::SharedDataDir() + "/k8s/" + rel; }

// Every JSON entry point on `text`: public result == reference result. Returns how many of
// the three the fast path handled by itself.
int ExpectSameAsReference(const std::string& text) {
  SCOPED_TRACE(text.size() <= 400 ? text : text.substr(0, 400) + "...");
  EXPECT_EQ(CanonicalDump(DecodeObject(text)), CanonicalDump(DecodeObjectReference(text)));
  EXPECT_EQ(CanonicalDump(DecodeList(text)), CanonicalDump(DecodeListReference(text)));
  EXPECT_EQ(CanonicalDump(DecodeWatchEvent(text)), CanonicalDump(DecodeWatchEventReference(text)));

  // When the fast path answers, its answer is the reference's success.
  int handled = 0;
  Object obj;
  if (FastDecodeObject(text, &obj)) {
    ++handled;
    auto ref = DecodeObjectReference(text);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    if (ref.ok()) {
      EXPECT_EQ(CanonicalDump(obj), CanonicalDump(*ref));
    }
  }
  ObjectList list;
  if (FastDecodeList(text, &list)) {
    ++handled;
    auto ref = DecodeListReference(text);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    if (ref.ok()) {
      EXPECT_EQ(CanonicalDump(list), CanonicalDump(*ref));
    }
  }
  WatchEvent ev;
  if (FastDecodeWatchEvent(text, &ev)) {
    ++handled;
    auto ref = DecodeWatchEventReference(text);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    if (ref.ok()) {
      EXPECT_EQ(CanonicalDump(ev), CanonicalDump(*ref));
    }
  }
  return handled;
}

std::string Watch(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

// A pod with every field the decoder reads, in API-server layout.
const char kFullPod[] = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"prod",
  "uid":"0f3a5c1e-2b7d-4e11-9a0c-5d6e7f8091a2","resourceVersion":"12345","generation":3,
  "creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-02T04:00:00.250+01:00",
  "deletionGracePeriodSeconds":30,"labels":{"app":"web","tier":"front","empty":null},
  "annotations":{"scheduling.k8s.io/group-name":"pg-web","note":"a \"quoted\" \\ value\n\u00e9\u4e2d\ud83d\ude00"},
  "ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"u-1","controller":true,
  "blockOwnerDeletion":true}],"managedFields":[{"manager":"kubectl","operation":"Update","fieldsV1":
  {"f:metadata":{"f:labels":{".":{},"f:app":{}}}},"time":"2024-01-02T03:04:05Z"}]},
  "spec":{"nodeName":"node-7","schedulerName":"volcano","priority":1000,"priorityClassName":"high",
  "initContainers":[{"name":"init","image":"busybox","restartPolicy":"Always","resources":{"requests":{"cpu":"100m"}}}],
  "containers":[{"name":"main","image":"nginx:1.25","resources":{"requests":{"memory":"2Gi","cpu":"1500m",
  "nvidia.com/gpu":1},"limits":{"cpu":2,"memory":"4Gi"}},"ports":[{"containerPort":80,"protocol":"UDP"},
  {"containerPort":443,"hostPort":8443,"hostIP":"10.0.0.1","protocol":null}],"restartPolicy":"Never",
  "volumeMounts":[{"name":"data","mountPath":"/data"}]},{"name":"side","image":"envoy","resources":{}}],
  "overhead":{"cpu":"250m","memory":null},"nodeSelector":{"zone":"a","disk":"ssd"},
  "tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"},{"key":"t","value":"v",
  "tolerationSeconds":-5},{}],"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{}},
  "podAffinity":null,"podAntiAffinity":{}},"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-web-0"}},
  {"name":"empty","persistentVolumeClaim":{"claimName":""}},{"name":"cfg","configMap":{"name":"c","items":[1,2.5,-0,
  true,false,null,"x",[],{}]}},{"name":"nopvc","persistentVolumeClaim":null}],
  "schedulingGates":[{"name":"gate-a"},{}],"hostNetwork":true,"securityContext":{},"dnsPolicy":"ClusterFirst"},
  "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","reason":"r","message":"m",
  "lastTransitionTime":"2024-01-02T03:05:00Z","lastProbeTime":null}],"nominatedNodeName":"node-9",
  "qosClass":"Burstable","startTime":"2024-01-02T03:04:06Z","containerStatuses":[{"name":"main","ready":true,
  "restartCount":0,"state":{"running":{"startedAt":"2024-01-02T03:04:07Z"}}}]}})";

// A node with every field the decoder reads, in API-server layout.
const char kFullNode[] = R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"node-7","uid":"u-7",
  "resourceVersion":"4711","creationTimestamp":"2024-01-02T03:04:05Z","labels":{"kubernetes.io/hostname":"node-7",
  "topology.kubernetes.io/zone":"a"},"annotations":{"node.alpha.kubernetes.io/ttl":"0"},"managedFields":[{"manager":
  "kubelet","fieldsV1":{"f:status":{}}}]},"spec":{"podCIDR":"10.0.0.0/24","unschedulable":true,"taints":[{"key":
  "dedicated","value":"gpu","effect":"NoSchedule","timeAdded":null},{"key":"k2","effect":"NoExecute"},{}]},
  "status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":2,"ephemeral-storage":"100Gi"},
  "allocatable":{"memory":"30Gi","cpu":"7800m","pods":110,"cpu":"7900m"},"conditions":[{"type":"Ready",
  "status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":
  "2024-01-02T03:04:05Z"},{"type":"MemoryPressure","status":"False"}],"addresses":[{"type":"InternalIP","address":
  "10.0.0.7"}],"images":[{"names":["nginx@sha256:abc","nginx:1.25"],"sizeBytes":142000000},{"names":null},{}],
  "nodeInfo":{"kubeletVersion":"v1.24.0"}}})";

// A pod with every placement constraint the decoder reads (spec.affinity's terms and
// spec.topologySpreadConstraints), in API-server layout.
const char kPlacementPod[] = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"prod",
  "uid":"u-2","resourceVersion":"77","labels":{"app":"web","pod-template-hash":"5d8f"}},"spec":{"containers":[
  {"name":"main","image":"nginx","resources":{"requests":{"cpu":"1"}}}],"affinity":{"nodeAffinity":{
  "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
  {"key":"zone","operator":"In","values":["a","b"]},{"key":"gpu","operator":"Exists"},
  {"key":"spot","operator":"DoesNotExist","values":[]},{"key":"cores","operator":"Gt","values":["+8"]},
  {"key":"mem","operator":"Lt","values":["-3"]},{"key":"arch","operator":"NotIn","values":["arm64"]}],
  "matchFields":[{"key":"metadata.name","operator":"NotIn","values":["node-9"]}]},
  {"matchFields":[{"key":"metadata.name","operator":"In","values":["node-1"]}],"extra":[1]},{}]},
  "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"preference":{"matchExpressions":[
  {"key":"disk","operator":"In","values":["ssd"]}]}},{"weight":1,"preference":null}]},
  "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":
  {"app":"cache","app":"cache2"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["test"]}]},
  "topologyKey":"topology.kubernetes.io/zone"},{"labelSelector":null,"namespaces":["prod","staging"],
  "namespaceSelector":{},"topologyKey":"kubernetes.io/hostname","matchLabelKeys":["x"]}],
  "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"podAffinityTerm":{"labelSelector":
  {"matchLabels":{"app":"db"}},"namespaceSelector":{"matchLabels":{"team":"a"}},"topologyKey":"zone"}}]},
  "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchExpressions":[
  {"key":"app","operator":"Exists"}]},"topologyKey":"kubernetes.io/hostname"}],
  "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"podAffinityTerm":{"topologyKey":"rack"}}]}},
  "topologySpreadConstraints":[{"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone",
  "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}},"minDomains":3,
  "nodeAffinityPolicy":"Honor","nodeTaintsPolicy":"Ignore","matchLabelKeys":["pod-template-hash"]},
  {"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway","nodeAffinityPolicy":"Ignore",
  "nodeTaintsPolicy":"Honor","minDomains":null},{"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":""}],
  "schedulerName":"volcano"},"status":{"phase":"Pending"}})";

// Inputs that exercise one rule each; most are handled by the fast path, some must fall back.
std::vector<std::string> Corners() {
  const std::string meta = R"("metadata":{"name":"p","namespace":"n"})";
  auto pod = [&](const std::string& rest) {
    return R"({"kind":"Pod","apiVersion":"v1",)" + meta + rest + "}";
  };
  return {
      kFullPod,
      pod(""),
      pod(R"(,"spec":null,"status":null)"),
      pod(R"(,"spec":{"schedulerName":""}})"),
      // Order: kind after metadata (fine), kind/apiVersion after spec (falls back).
      R"({"metadata":{"name":"p"},"kind":"Pod","apiVersion":"v1","spec":{}})",
      R"({"metadata":{"name":"p"},"spec":{},"kind":"Pod","apiVersion":"v1"})",
      R"({"kind":"Pod","spec":{"nodeName":"x"},"metadata":{"name":"p"}})",
      R"({"kind":"Pod","apiVersion":"","metadata":{"name":"p"}})",
      // Kind known before metadata: the object is read in place; a later apiVersion must keep it.
      R"({"kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"apiVersion":"v1","spec":{"nodeName":"x"}})",
      R"({"kind":"Pod","metadata":{"name":"p"},"apiVersion":"apps/v1","spec":{"nodeName":"x"}})",
      R"({"kind":"Node","metadata":{"name":"n"},"apiVersion":null})",
      R"({"kind":"Node","metadata":{"name":""},"apiVersion":"v1"})",
      R"({"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"q"},"kind":"Node"}]})",
      R"({"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"q"},"kind":"Pod","apiVersion":"v1"}]})",
      R"({"kind":"Pod","apiVersion":null,"metadata":{"name":"p"}})",
      R"({"kind":null,"apiVersion":"v1","metadata":{"name":"p"}})",
      R"({"kind":"Pod","apiVersion":"v2","metadata":{"name":"p"}})",
      R"({"kind":"Pod","apiVersion":"apps/v1","metadata":{"name":"p"}})",
      R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n"}})",
      R"({"kind":"PodList","apiVersion":"v1","items":[]})",
      // Nodes.
      kFullNode,
      R"({"kind":"Node","metadata":{"name":"n"},"spec":null,"status":null})",
      R"({"metadata":{"name":"n"},"spec":{},"kind":"Node"})",
      R"({"kind":"Node","apiVersion":"v2","metadata":{"name":"n"}})",
      R"({"kind":"Node","apiVersion":"v1","metadata":{}})",
      R"({"kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":"yes"}})",
      R"({"kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":null,"taints":null}})",
      R"({"kind":"Node","metadata":{"name":"n"},"spec":{"taints":[null]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"spec":{"taints":[{"key":1}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"spec":{"taints":[{"key":"a","key":"b"}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"1x"}}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"999Ei"}}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":1e9}}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":[]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"conditions":[{"type":"Ready","status":true}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"images":[{"names":["a",null]}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"images":[{"names":["a",1]}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"images":[{"names":"a"}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"images":[{"sizeBytes":-1},{"sizeBytes":1.5}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"images":[{"sizeBytes":9223372036854775808}]}})",
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"phase":"x"},"status":{"capacity":{}}})",
      Watch("ADDED", kFullNode),
      Watch("DELETED",
            R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n"},"status":{"capacity":{"cpu":"x"}}})"),
      Watch("BOOKMARK", R"({"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"9"}})"),
      R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[)" +
          std::string(kFullNode) + R"(,{"metadata":{"name":"m"}}]})",
      R"({"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"m"},"spec":{"taints":{}}}]})",
      R"({"kind":"NodeList","apiVersion":"v1","items":[{"kind":"Pod","metadata":{"name":"p"}}]})",
      // Duplicates: the last one wins in the reference.
      pod(R"(,"spec":{"nodeName":"a","nodeName":"b"})"),
      pod(R"(,"spec":{"nodeName":1,"nodeName":"b"})"),
      R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1","x":"2","a":null}}})",
      pod(R"(,"spec":{"containers":[{"resources":{"requests":{"memory":"1Gi","cpu":"2","cpu":"3","a":null}}}]})"),
      pod(R"(,"spec":{"overhead":{"b":"1","a":"2","c":"3","a":"4"}})"),
      // Numbers.
      pod(R"(,"spec":{"priority":-2147483648})"),
      pod(R"(,"spec":{"priority":2147483648})"),
      pod(R"(,"spec":{"priority":3.0})"),
      pod(R"(,"spec":{"priority":1e2})"),
      pod(R"(,"spec":{"priority":-0})"),
      pod(R"(,"spec":{"priority":01})"),
      pod(R"(,"spec":{"overhead":{"cpu":-3,"memory":18446744073709551615,"x":18446744073709551616}})"),
      pod(R"(,"spec":{"overhead":{"cpu":0.5}})"),
      pod(R"(,"x":1e400)"),
      pod(R"(,"x":-1.25)"),
      pod(R"(,"x":123456789012345678901234567890)"),
      pod(R"(,"x":-)"),
      pod(R"(,"x":1.)"),
      // Strings and escapes.
      pod(R"(,"spec":{"nodeName":"\u0041\/\b\f\n\r\t"})"),
      pod(R"(,"spec":{"nodeName":"\ud800"})"),
      pod(R"(,"spec":{"nodeName":"\udc00x"})"),
      pod(R"(,"spec":{"nodeName":"\ud800\u0041"})"),
      pod(R"(,"spec":{"nodeName":"\x"})"),
      pod(R"(,"spec":{"nodeName":"\u00"})"),
      pod(",\"spec\":{\"nodeName\":\"tab\there\"}"),
      pod(",\"spec\":{\"nodeName\":\"del\x7f\"}"),
      pod(",\"spec\":{\"nodeName\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"),
      pod(",\"spec\":{\"nodeName\":\"\xc0\xaf\"}"),
      pod(",\"spec\":{\"nodeName\":\"\xed\xa0\x80\"}"),
      pod(",\"spec\":{\"nodeName\":\"\xf4\x90\x80\x80\"}"),
      pod(",\"spec\":{\"nodeName\":\"\xe2\x82\"}"),
      pod(R"(,"sp\u0065c":{"nodeName":"escaped key"})"),
      "\xef\xbb\xbf" + pod(""),
      " \t\r\n" + pod("") + " \n",
      pod("") + "x",
      pod("") + "{}",
      // Types and structure.
      pod(R"(,"spec":{"containers":{}})"),
      pod(R"(,"spec":{"containers":[null]})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":[]}})"),
      pod(R"(,"spec":{"volumes":[{"persistentVolumeClaim":"x"}]})"),
      pod(R"(,"spec":{"hostNetwork":null,"tolerations":null,"containers":null})"),
      pod(R"(,"status":{"startTime":null,"conditions":[{"lastTransitionTime":"bad"}]})"),
      pod(R"(,"x":[1,2,)"),
      pod(R"(,"x":{"a":1,})"),
      pod(R"(,"x":tru)"),
      pod(R"(,"x":nul)"),
      pod(R"(,"x":)" + std::string(200, '[') + std::string(200, ']')),
      R"({"kind":"Pod","apiVersion":"v1","metadata":{"namespace":"n"}})",
      R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":""}})",
      R"({"kind":"Pod","apiVersion":"v1","metadata":null})",
      R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"metadata":{"name":"q"}})",
      // Placement constraints: valid forms the fast path takes, invalid ones it leaves to the reference.
      kPlacementPod,
      Watch("ADDED", kPlacementPod),
      R"({"kind":"PodList","apiVersion":"v1","items":[)" + std::string(kPlacementPod) + "]}",
      pod(R"(,"spec":{"affinity":{"nodeAffinity":null,"podAffinity":null,"podAntiAffinity":null}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":null}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":null}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":null,"matchFields":null}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Lt","values":["-9223372036854775808"]},
          {"key":"k","operator":"Gt","values":["9223372036854775807"]},{"key":"k","operator":"Gt","values":["007"]},
          {"key":"k","operator":"Exists","values":null}]}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Gt","values":["-9223372036854775809"]}]}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Gt","values":[" 1"]}]}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Gt","values":["+"]}]}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Gt","values":["1e3"]}]}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["a"]}],
          "matchExpressions":[]}]}}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{},
          "requiredDuringSchedulingIgnoredDuringExecution":null}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
          {"weight":100.0,"preference":{}}]}}})"),
      pod(R"(,"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
          {"weight":null,"preference":{}}]}}})"),
      pod(R"(,"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"topologyKey":"z","labelSelector":{"matchLabels":null,"matchExpressions":null}}]}}})"),
      pod(R"(,"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"topologyKey":"z","labelSelector":{"matchLabels":{"a":null,"a":"b"}}}]}}})"),
      pod(R"(,"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[null]}}})"),
      pod(R"(,"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"topologyKey":null}]}}})"),
      pod(R"(,"spec":{"affinity":{"podAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
          {"weight":1}]}}})"),
      pod(R"(,"spec":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
          {"weight":1,"podAffinityTerm":{"topologyKey":"z"},"podAffinityTerm":{"topologyKey":"y"}}]}}})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[{"topologyKey":"z","maxSkew":null,"whenUnsatisfiable":null,
          "labelSelector":null,"minDomains":null,"nodeAffinityPolicy":null,"nodeTaintsPolicy":"",
          "matchLabelKeys":null}]})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[{"topologyKey":"z","minDomains":1.0}]})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[{"topologyKey":"z","maxSkew":2147483648}]})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[{"topologyKey":"z"},{"topologyKey":"z","whenUnsatisfiable":""}]})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[{"topologyKey":"z"},{"topologyKey":"y"}]})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[null]})"),
      pod(R"(,"spec":{"topologySpreadConstraints":[],"topologySpreadConstraints":[{"topologyKey":"z"}]})"),
      // Watch events.
      Watch("ADDED", pod("")),
      Watch("MODIFIED", kFullPod),
      Watch("DELETED", pod("")),
      Watch("BOOKMARK", R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9"}})"),
      Watch("ERROR", R"({"kind":"Status","code":410,"reason":"Expired"})"),
      Watch("UPSERT", pod("")),
      R"({"object":{"kind":"Pod","metadata":{"name":"p"}},"type":"ADDED"})",
      R"({"type":"ADDED","type":"DELETED","object":{"kind":"Pod","metadata":{"name":"p"}}})",
      R"({"type":"ADDED","object":null})",
      R"({"type":"ADDED"})",
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p"}},"extra":[1,{"a":"b"}]})",
      // Lists.
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c"},"items":[)" +
          pod("") + "," + R"({"metadata":{"name":"q","namespace":"n"}})" + "]}",
      R"({"kind":"List","apiVersion":"v1","items":[)" + pod("") + "]}",
      R"({"kind":"List","apiVersion":"v1","items":[{"metadata":{"name":"q"}}]})",
      R"({"kind":"PodList","items":[{"metadata":{"name":"q"}}]})",
      R"({"kind":"PodList","items":[{"metadata":{"name":"q"}}],"apiVersion":"v1"})",
      R"({"items":[{"metadata":{"name":"q"}}],"kind":"PodList"})",
      R"({"kind":"PodList","items":null,"metadata":null})",
      R"({"kind":"PodList","items":[null]})",
      R"({"kind":"NodeList","items":[{"metadata":{"name":"n"}}]})",
      R"({"kind":"PodList","apiVersion":"v1","items":[{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"}}]})",
      "",
      "null",
      "[]",
      "{}",
  };
}

TEST(DecodeFastDifferential, SharedDataFilesAndWatchStream) {
  int files = 0;
  int handled = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(K8sData(""))) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".json" && ext != ".jsonl")) continue;
    SCOPED_TRACE(entry.path().string());
    ++files;
    const std::string text = testing::ReadFileOrDie(entry.path().string());
    if (ext == ".json") {
      handled += ExpectSameAsReference(text);
      continue;
    }
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) handled += ExpectSameAsReference(line);
    }
  }
  EXPECT_GE(files, 6);
  // The pods, the two nodes, the pod list and the six watch events take the fast path.
  EXPECT_GE(handled, 2 + 2 + 1 + 6);
}

// The real nodes (minikube, two vintages) are decoded by the fast path alone, alone and in a
// list and a watch event; so is a node with every field the decoder reads.
TEST(DecodeFastDifferential, NodesTakeTheFastPath) {
  for (const char* file : {"core/node-minikube-2019-08.json", "core/node-minikube-2020-01.json"}) {
    SCOPED_TRACE(file);
    const std::string text = testing::ReadFileOrDie(K8sData(file));
    EXPECT_EQ(ExpectSameAsReference(text), 1);
    EXPECT_EQ(ExpectSameAsReference(Watch("MODIFIED", text)), 1);
    EXPECT_EQ(ExpectSameAsReference(R"({"kind":"NodeList","apiVersion":"v1","items":[)" + text + "]}"), 1);
  }
  EXPECT_EQ(ExpectSameAsReference(kFullNode), 1);
  Object obj;
  ASSERT_TRUE(FastDecodeObject(kFullNode, &obj));
  const Node& n = std::get<Node>(obj);
  EXPECT_TRUE(n.spec.unschedulable);
  ASSERT_EQ(n.spec.taints.size(), 3u);
  EXPECT_EQ(n.spec.taints[0].value, "gpu");
  ASSERT_EQ(n.status.allocatable.size(), 3u);  // sorted, the last duplicate winning
  EXPECT_EQ(n.status.allocatable[0].first, "cpu");
  EXPECT_EQ(n.status.allocatable[0].second.MilliValue(), 7900);
  ASSERT_EQ(n.status.images.size(), 3u);
  EXPECT_EQ(n.status.images[0].names.size(), 2u);
  EXPECT_EQ(n.status.images[0].size_bytes, 142000000);
  // Invalid nodes are left to the reference, which names the field.
  EXPECT_FALSE(FastDecodeObject(
      R"({"kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"1x"}}})", &obj));
  auto bad = DecodeObject(R"({"kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"1x"}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("Node n: status.capacity.cpu"));
}

TEST(DecodeFastDifferential, FullPodTakesTheFastPath) {
  EXPECT_EQ(ExpectSameAsReference(kFullPod), 1);
  EXPECT_EQ(ExpectSameAsReference(Watch("ADDED", kFullPod)), 1);
  Object obj;
  ASSERT_TRUE(FastDecodeObject(kFullPod, &obj));
  const Pod& p = std::get<Pod>(obj);
  EXPECT_EQ(p.spec.pvc_names(), std::vector<std::string>{"data-web-0"});
  EXPECT_EQ(p.metadata.annotations.at("note"), "a \"quoted\" \\ value\n\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  EXPECT_EQ(p.spec.containers[0].requests[0].first, "cpu");  // sorted by name
  EXPECT_TRUE(p.spec.has_node_affinity);
  EXPECT_FALSE(p.spec.has_pod_affinity);
}

// The placement constraints are decoded by the fast path alone (alone, in a watch event and in
// a list), to the reference's values; a pod without them keeps its rare block null.
TEST(DecodeFastDifferential, PlacementPodTakesTheFastPath) {
  EXPECT_EQ(ExpectSameAsReference(kPlacementPod), 1);
  EXPECT_EQ(ExpectSameAsReference(Watch("MODIFIED", kPlacementPod)), 1);
  EXPECT_EQ(ExpectSameAsReference(R"({"kind":"PodList","apiVersion":"v1","items":[)" +
                                  std::string(kPlacementPod) + "," + kPlacementPod + "]}"),
            1);
  Object obj;
  ASSERT_TRUE(FastDecodeObject(kPlacementPod, &obj));
  const PodSpec& s = std::get<Pod>(obj).spec;
  EXPECT_TRUE(s.has_node_affinity);
  EXPECT_TRUE(s.has_pod_affinity);
  EXPECT_TRUE(s.has_pod_anti_affinity);
  ASSERT_TRUE(s.node_affinity().required.has_value());
  ASSERT_EQ(s.node_affinity().required->size(), 3u);
  EXPECT_EQ((*s.node_affinity().required)[0].match_expressions.size(), 6u);
  EXPECT_EQ((*s.node_affinity().required)[0].match_expressions[3].values, std::vector<std::string>{"+8"});
  EXPECT_EQ((*s.node_affinity().required)[1].match_fields[0].values, std::vector<std::string>{"node-1"});
  ASSERT_EQ(s.node_affinity().preferred.size(), 2u);
  EXPECT_EQ(s.node_affinity().preferred[0].weight, 100);
  ASSERT_EQ(s.pod_affinity().required.size(), 2u);
  EXPECT_EQ(s.pod_affinity().required[0].label_selector->match_labels.at("app"), "cache2");  // the last wins
  EXPECT_FALSE(s.pod_affinity().required[1].label_selector.has_value());
  EXPECT_TRUE(s.pod_affinity().required[1].namespace_selector.has_value());
  EXPECT_EQ(s.pod_affinity().preferred.at(0).term.namespace_selector->match_labels.at("team"), "a");
  EXPECT_EQ(s.pod_anti_affinity().preferred.at(0).term.topology_key, "rack");
  ASSERT_EQ(s.topology_spread_constraints().size(), 3u);
  EXPECT_EQ(s.topology_spread_constraints()[0].min_domains, 3);
  EXPECT_EQ(s.topology_spread_constraints()[1].when_unsatisfiable, "ScheduleAnyway");
  EXPECT_EQ(s.topology_spread_constraints()[2].when_unsatisfiable, "DoNotSchedule");
  EXPECT_EQ(s.topology_spread_constraints()[2].max_skew, 1);

  ASSERT_TRUE(FastDecodeObject(R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"spec":{"affinity":
      {"nodeAffinity":{},"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[]}},
      "topologySpreadConstraints":[]}})",
                               &obj));
  EXPECT_EQ(std::get<Pod>(obj).spec.rare, nullptr);
  EXPECT_TRUE(std::get<Pod>(obj).spec.has_node_affinity);
  EXPECT_TRUE(std::get<Pod>(obj).spec.has_pod_affinity);
}

// Edits of the placement pod that matter to the rules rather than to JSON: every operator,
// weight, count, policy, selector and duplicate member replaced at each place it occurs. The
// valid variants must take the fast path to the reference's answer, the invalid ones fall
// back to the reference's error.
TEST(DecodeFastDifferential, MutatedPlacementConstraints) {
  const std::string seed = kPlacementPod;
  struct Edit {
    const char* from;
    std::vector<const char*> to;
  };
  const std::vector<Edit> edits = {
      {R"("In")",
       {R"("Gt")", R"("Lt")", R"("Exists")", R"("NotIn")", R"("in")", R"("Foo")", "null", "1", R"("")"}},
      {R"("NotIn")", {R"("In")", R"("Lt")", R"("Exists")", R"("DoesNotExist")"}},
      {R"("Exists")", {R"("In")", R"("DoesNotExist")", R"("Gt")"}},
      {R"("DoesNotExist")", {R"("Exists")", R"("NotIn")"}},
      {R"("Gt")", {R"("Lt")", R"("In")", R"("Exists")"}},
      {R"("Lt")", {R"("Gt")", R"("NotIn")"}},
      {R"("+8")",
       {R"("8")", R"("08")", R"("8.0")", R"("x")", R"("")", R"("+")", R"("-")", R"(" 8")", R"("+-8")",
        R"("9223372036854775807")", R"("9223372036854775808")", R"("-9223372036854775808")",
        R"("-9223372036854775809")"}},
      {R"("-3")", {R"("-")", R"("--3")", R"("3x")", R"("0x10")"}},
      {R"("metadata.name")", {R"("metadata.uid")", R"("")", R"("metadata.name ")"}},
      {R"("values":[)", {R"("values":[null,)", R"("values":[1,)", R"("values":["extra",)"}},
      {R"("values":[])", {R"("values":null)", R"("values":{})", R"("values":[""])"}},
      {R"("key":")", {R"("key":"","key2":")", R"("key":"dup","key":")"}},
      {R"("weight":)", {R"("weight":null,"w":)", R"("weight":1,"weight":)", R"("x":)"}},
      {"100", {"101", "0", "-1", "100.0", R"("100")", "99"}},
      {R"("weight":1,)", {R"("weight":0,)", R"("weight":2147483648,)"}},
      {R"("weight":50)", {R"("weight":-50)", R"("weight":5e1)"}},
      {R"("preference":null)",
       {R"("preference":{"matchFields":[]})", R"("preference":[])", R"("preference":1)"}},
      {R"("podAffinityTerm":{)", {R"("podAffinityTerm":null,"t":{)", R"("t":{)"}},
      {R"("topologyKey":")",
       {R"("topologyKey":"","k":")", R"("topologyKey":null,"k":")", R"("k":")",
        R"("topologyKey":"dup","topologyKey":")"}},
      {R"("labelSelector":)",
       {R"("labelSelector":null,"s":)", R"("labelSelector":[],"s":)",
        R"("labelSelector":{},"labelSelector":)"}},
      {R"("labelSelector":{)",
       {R"("labelSelector":{"matchLabels":null,)", R"("labelSelector":{"matchExpressions":[],)"}},
      {R"("matchLabels":{)",
       {R"("matchLabels":{"k":null,)", R"("matchLabels":{"k":1,)", R"("matchLabels":{"app":"z",)"}},
      {R"("namespaceSelector":{})",
       {R"("namespaceSelector":null)", R"("namespaceSelector":[])",
        R"("namespaceSelector":{"matchExpressions":[{"key":"a","operator":"In"}]})"}},
      {R"("namespaces":[)", {R"("namespaces":[null,)", R"("namespaces":["",)"}},
      {R"("matchExpressions":[)",
       {R"("matchExpressions":[{"key":"k","operator":"Exists"},)",
        R"("matchExpressions":[{"key":"k","operator":"Gt","values":["1"]},)",
        R"("matchExpressions":[null,)"}},
      {R"("matchFields":[)",
       {R"("matchFields":[{"key":"metadata.name","operator":"In","values":["n"]},)",
        R"("matchFields":[{"key":"metadata.name","operator":"Gt","values":["1"]},)"}},
      {R"("nodeSelectorTerms":[)",
       {R"("nodeSelectorTerms":null,"t":[)", R"("nodeSelectorTerms":[null,)", R"("nodeSelectorTerms":[{},)"}},
      {R"("requiredDuringSchedulingIgnoredDuringExecution":{)",
       {R"("requiredDuringSchedulingIgnoredDuringExecution":null,"r":{)",
        R"("requiredDuringSchedulingIgnoredDuringExecution":[],"r":{)"}},
      {R"("requiredDuringSchedulingIgnoredDuringExecution":[)",
       {R"("requiredDuringSchedulingIgnoredDuringExecution":[null,)",
        R"("requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"t"},)",
        R"("requiredDuringSchedulingIgnoredDuringExecution":null,"r":[)"}},
      {R"("preferredDuringSchedulingIgnoredDuringExecution":[)",
       {R"("preferredDuringSchedulingIgnoredDuringExecution":{},"p":[)",
        R"("preferredDuringSchedulingIgnoredDuringExecution":[],"preferredDuringSchedulingIgnoredDuringExecution":[)"}},
      {R"("nodeAffinity":{)", {R"("nodeAffinity":null,"n":{)", R"("nodeAffinity":{},"nodeAffinity":{)"}},
      {R"("podAffinity":{)", {R"("podAffinity":[],"n":{)", R"("podAffinity":null,"n":{)"}},
      {R"("podAntiAffinity":{)", {R"("podAntiAffinity":"x","n":{)"}},
      {R"("maxSkew":2)", {R"("maxSkew":0)", R"("maxSkew":null)", R"("maxSkew":-1)", R"("maxSkew":2.5)"}},
      {R"("minDomains":3)", {R"("minDomains":0)", R"("minDomains":null)", R"("minDomains":-3)"}},
      {R"("minDomains":null)", {R"("minDomains":1)", R"("minDomains":0)"}},
      {R"("ScheduleAnyway")", {R"("DoNotSchedule")", R"("")", "null", R"("scheduleAnyway")"}},
      {R"("DoNotSchedule")", {R"("ScheduleAnyway")", R"("")", R"("Never")"}},
      {R"("whenUnsatisfiable":"")", {R"("whenUnsatisfiable":"ScheduleAnyway")", R"("whenUnsatisfiable":1)"}},
      {R"("Honor")", {R"("Ignore")", R"("")", "null", R"("honor")"}},
      {R"("Ignore")", {R"("Honor")", R"("ignore")"}},
      {R"("matchLabelKeys":[)", {R"("matchLabelKeys":[null,)", R"("matchLabelKeys":["",)"}},
      {R"("topologySpreadConstraints":[)",
       {R"("topologySpreadConstraints":[{"topologyKey":"zone2"},)", R"("topologySpreadConstraints":[{},)",
        R"("topologySpreadConstraints":{},"t":[)"}},
  };
  int variants = 0;
  int handled = 0;
  for (const Edit& e : edits) {
    const std::string from = e.from;
    size_t occurrences = 0;
    for (size_t pos = seed.find(from); pos != std::string::npos; pos = seed.find(from, pos + 1)) {
      ++occurrences;
      for (const char* to : e.to) {
        std::string text = seed;
        text.replace(pos, from.size(), to);
        ++variants;
        handled += ExpectSameAsReference(text);
        if (::testing::Test::HasFailure()) return;  // one diff is enough to read
      }
    }
    EXPECT_GT(occurrences, 0u) << from;
  }
  // Both kinds occur: valid variants decoded by the fast path, invalid ones left to the reference.
  EXPECT_GT(handled, variants / 5);
  EXPECT_LT(handled, variants);
}

TEST(DecodeFastDifferential, Corners) {
  for (const std::string& text : Corners()) ExpectSameAsReference(text);
}

// Values the decoder skips (members it never reads, such as managedFields) are checked as
// strictly as the reference checks them: a valid one is decoded by the fast path alone, an
// invalid one is left to the reference, which reports the error. Strings are scanned 16 bytes
// at a time, so escapes and bad bytes are placed at every offset around those boundaries.
TEST(DecodeFastDifferential, SkippedValuesAreCheckedExactly) {
  auto pod_with = [](const std::string& value) {
    return R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","managedFields":[{"fieldsV1":)" + value +
           R"(}]},"x":)" + value + "}";
  };
  auto expect = [&](const std::string& value, bool valid) {
    SCOPED_TRACE(value);
    const std::string text = pod_with(value);
    EXPECT_EQ(ExpectSameAsReference(text), valid ? 1 : 0);
    EXPECT_EQ(DecodeObjectReference(text).ok(), valid);
  };
  for (size_t pad = 0; pad < 40; ++pad) {
    const std::string a(pad, 'a');
    expect(R"({")" + a + R"(\"k\":\"v\"":{}})", true);          // \" around a block boundary
    expect(R"({"k":")" + a + R"(\\"})", true);                  // an escaped backslash before the quote
    expect(R"({"k":")" + a + R"(\\\"})", false);                // ...then an escaped quote: unterminated
    expect(R"({"k":")" + a + R"(\u00e9\ud83d\ude00"})", true);  // unicode escapes, a surrogate pair
    expect(R"({"k":")" + a + R"(\ud83d"})", false);             // a lone high surrogate
    expect(R"({"k":")" + a + R"(\ude00"})", false);             // a lone low surrogate
    expect(R"({"k":")" + a + R"(\u00g9"})", false);             // a bad hex digit
    expect(R"({"k":")" + a + R"(\q"})", false);                 // an unknown escape
    expect(R"({"k":")" + a + "\x01" + R"("})", false);          // a control character
    expect(R"({"k":")" + a + "\x1f" + R"("})", false);
    expect(R"({"k":")" + a + "\xc3\xa9" + R"("})", true);  // UTF-8
    expect(R"({"k":")" + a + "\xc3" + R"("})", false);     // truncated UTF-8
    expect(R"({")" + a + "\x7f" + R"(":1})", true);        // DEL is a plain byte
    expect(R"([")" + a, false);                            // unterminated at the end of input
  }
  // Structure, numbers and literals inside a skipped value.
  for (const char* ok : {"[]", "{}", "[[],{}]", R"({"a":{"b":[1,-0,2.5,true,false,null,"s"]}})",
                         " [ 1 , { } ] ", R"({"a":1,"a":2})"}) {
    expect(ok, true);
  }
  for (const char* bad : {R"({"a" 1})", R"({"a":1 "b":2})",
                          "{,}",        "[1 2]",
                          R"({"a":})",  "{1:2}",
                          "[}",         "{]",
                          "[1,]",       R"({"a":1,})",
                          "[-]",        "[01]",
                          "[1.]",       "[.5]",
                          "[tru]",      "[True]",
                          "[nul]",      "[",
                          "{",          R"({"a")",
                          R"({"a":)"}) {
    expect(bad, false);
  }
  // Exponents are valid JSON the fast path leaves to the reference.
  EXPECT_EQ(ExpectSameAsReference(pod_with("[1e5]")), 0);
  EXPECT_TRUE(DecodeObjectReference(pod_with("[1e5]")).ok());
  // Nesting: the fast path takes up to 128 levels in all (the value in managedFields opens
  // level 5); deeper documents are left to the reference, which accepts them.
  for (int levels : {100, 123, 124, 125, 126, 200}) {
    SCOPED_TRACE(levels);
    std::string deep;
    for (int i = 0; i < levels; ++i) deep += i % 2 == 0 ? R"({"k":)" : "[";
    deep += "1";
    for (int i = levels - 1; i >= 0; --i) deep += i % 2 == 0 ? "}" : "]";
    const std::string text = pod_with(deep);
    EXPECT_TRUE(DecodeObjectReference(text).ok());
    EXPECT_EQ(ExpectSameAsReference(text), levels <= 124 ? 1 : 0);
  }
}

// Random edits of valid documents: flipped, deleted, inserted and duplicated bytes, chosen
// from the characters that matter to JSON. Every variant must decode as the reference does.
TEST(DecodeFastDifferential, MutatedDocuments) {
  std::vector<std::string> seeds = Corners();
  {
    std::istringstream in(testing::ReadFileOrDie(K8sData("watch/pod-watch-events-kind-2023.jsonl")));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) seeds.push_back(line);
    }
  }
  seeds.push_back(testing::ReadFileOrDie(K8sData("core/podlist-apiserver-rancher-2018.json")));
  seeds.push_back(testing::ReadFileOrDie(K8sData("core/node-minikube-2020-01.json")));
  static const char kAlphabet[] = "{}[],:\"\\/ nul0123456789-+.eEtrfasxu\x01\x7f\x80\xc3\xa9\xed\xf4";
  std::mt19937 rng(20261121);
  for (const std::string& seed : seeds) {
    if (seed.empty()) continue;
    for (int i = 0; i < 60; ++i) {
      std::string text = seed;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        const size_t pos = rng() % text.size();
        const char ch = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
        switch (rng() % 4) {
          case 0:
            text[pos] = ch;
            break;
          case 1:
            text.erase(pos, 1 + rng() % 4);
            break;
          case 2:
            text.insert(pos, 1, ch);
            break;
          case 3:
            text.insert(pos, text.substr(pos, rng() % 40));
            break;
        }
      }
      ExpectSameAsReference(text);
      if (::testing::Test::HasFailure()) return;  // one diff is enough to read
    }
  }
}

}  // namespace
}  // namespace volcache::k8s
