// Volume predicates (api/placement.h ResolveClaims / VolumeNodeConflict, session/constraints.h):
// kube-scheduler v1.24's VolumeBinding (bound claims, unbound claims, missing objects) and
// VolumeZone, with the cases of its volume_binding_test.go and volume_zone_test.go tables as
// expected verdicts (our own tests), then through Allocate, a gang, the cache's snapshots and
// reclaim's static predicates.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "api/placement.h"
#include "cache/scheduler_cache.h"
#include "session/allocate.h"
#include "tests/fakes/cluster_builders.h"

namespace volcache {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;

k8s::PersistentVolumeClaim Claim(std::string name, std::string volume = "",
                                 std::optional<std::string> cls = std::nullopt) {
  k8s::PersistentVolumeClaim c;
  c.metadata.name = name;
  c.metadata.namespace_ = "ns";
  c.volume_name = std::move(volume);
  c.storage_class_name = std::move(cls);
  c.phase = c.volume_name.empty() ? "Pending" : "Bound";
  return c;
}

k8s::PersistentVolume Volume(std::string name) {
  k8s::PersistentVolume v;
  v.metadata.name = name;
  v.phase = "Bound";
  return v;
}

k8s::PersistentVolume PinnedTo(std::string name, std::string host) {
  k8s::PersistentVolume v = Volume(std::move(name));
  k8s::NodeSelectorTerm t;
  t.match_expressions.push_back({"kubernetes.io/hostname", "In", {std::move(host)}});
  v.node_affinity = std::vector<k8s::NodeSelectorTerm>{t};
  return v;
}

k8s::StorageClass Class(std::string name, std::string mode) {
  k8s::StorageClass c;
  c.metadata.name = name;
  c.provisioner = "example.com/csi";
  c.volume_binding_mode = std::move(mode);
  return c;
}

template <class T>
void Put(VolumeInfo& v, const T& obj) {
  auto p = std::make_shared<const T>(obj);
  if constexpr (std::is_same_v<T, k8s::PersistentVolumeClaim>) {
    v.claims[k8s::ObjectKey(obj.metadata)] = p;
  } else if constexpr (std::is_same_v<T, k8s::PersistentVolume>) {
    v.volumes[obj.metadata.name] = p;
  } else {
    v.classes[obj.metadata.name] = p;
  }
}

std::string Resolve(const VolumeInfo& v, std::vector<std::string> claims,
                    std::vector<const k8s::PersistentVolume*>* bound = nullptr) {
  std::vector<const k8s::PersistentVolume*> b;
  std::string why = placement::ResolveClaims(claims, v, &b);
  if (bound != nullptr) *bound = b;
  return why;
}

// ------------------------------------------------------------------ VolumeBinding (per pod)

TEST(VolumeClaimsTest, EachClaimMustExistAndNotBeTerminating) {
  VolumeInfo v;
  EXPECT_EQ(Resolve(v, {"ns/data"}), "persistentvolumeclaim \"data\" not found");
  k8s::PersistentVolumeClaim c = Claim("data", "pv-1");
  c.metadata.deletion_timestamp = 1000;
  Put(v, c);
  Put(v, Volume("pv-1"));
  EXPECT_EQ(Resolve(v, {"ns/data"}), "persistentvolumeclaim \"data\" is being deleted");
  // Another namespace's claim of that name is not the pod's.
  EXPECT_EQ(Resolve(v, {"other/data"}), "persistentvolumeclaim \"data\" not found");
}

TEST(VolumeClaimsTest, UnboundClaimsWaitByTheirClassBindingMode) {
  VolumeInfo v;
  Put(v, Claim("no-class"));
  Put(v, Claim("empty-class", "", ""));
  Put(v, Claim("immediate", "", "fast"));
  Put(v, Claim("wait", "", "local"));
  Put(v, Claim("missing-class", "", "gone"));
  Put(v, Class("fast", "Immediate"));
  Put(v, Class("local", "WaitForFirstConsumer"));
  EXPECT_EQ(Resolve(v, {"ns/no-class"}), placement::kReasonUnboundImmediate);
  EXPECT_EQ(Resolve(v, {"ns/empty-class"}), placement::kReasonUnboundImmediate);
  EXPECT_EQ(Resolve(v, {"ns/immediate"}), placement::kReasonUnboundImmediate);
  EXPECT_EQ(Resolve(v, {"ns/missing-class"}), "storageclass.storage.k8s.io \"gone\" not found");
  EXPECT_EQ(
      Resolve(v, {"ns/wait"}),
      "pod has unbound PersistentVolumeClaim \"wait\" of WaitForFirstConsumer class \"local\" (volcache "
      "does not bind volumes)");
}

TEST(VolumeClaimsTest, BoundClaimsNeedTheirVolume) {
  VolumeInfo v;
  Put(v, Claim("a", "pv-a"));
  Put(v, Claim("b", "pv-b"));
  Put(v, Volume("pv-a"));
  EXPECT_EQ(Resolve(v, {"ns/a", "ns/b"}), placement::kReasonPVNotExist);
  Put(v, Volume("pv-b"));
  std::vector<const k8s::PersistentVolume*> bound;
  EXPECT_EQ(Resolve(v, {"ns/a", "ns/b"}, &bound), "");
  ASSERT_EQ(bound.size(), 2u);
  EXPECT_EQ(bound[0]->metadata.name, "pv-a");
  EXPECT_EQ(bound[1]->metadata.name, "pv-b");
}

// ------------------------------------------------------------------ per node

TEST(VolumeNodeTest, BoundVolumeNodeAffinity) {
  k8s::PersistentVolume pinned = PinnedTo("pv", "n2");
  k8s::PersistentVolume anywhere = Volume("pv-any");
  const k8s::Node n1 = NodeBuilder("n1").Label("kubernetes.io/hostname", "n1").Build();
  const k8s::Node n2 = NodeBuilder("n2").Label("kubernetes.io/hostname", "n2").Build();
  EXPECT_EQ(placement::VolumeNodeConflict({&pinned}, n1), placement::kReasonVolumeNodeConflict);
  EXPECT_EQ(placement::VolumeNodeConflict({&pinned}, n2), "");
  EXPECT_EQ(placement::VolumeNodeConflict({&anywhere}, n1), "");
  EXPECT_EQ(placement::VolumeNodeConflict({&anywhere, &pinned}, n1), placement::kReasonVolumeNodeConflict);
}

TEST(VolumeNodeTest, VolumeZoneAsKubeSchedulersTable) {
  auto pv = [](std::string key, std::string value) {
    k8s::PersistentVolume v = Volume("pv");
    v.metadata.labels.emplace(std::move(key), std::move(value));
    return v;
  };
  auto node = [](std::map<std::string, std::string> labels) {
    NodeBuilder b("n");
    for (auto& [k, v] : labels) b.Label(k, v);
    return b.Build();
  };
  const std::string zone = "topology.kubernetes.io/zone", region = "topology.kubernetes.io/region";
  const std::string beta_zone = "failure-domain.beta.kubernetes.io/zone";
  struct Case {
    const char* name;
    k8s::PersistentVolume pv;
    k8s::Node node;
    bool fits;
  };
  const Case cases[] = {
      {"node without zone labels", pv(zone, "us-west1-a"), node({{"kubernetes.io/hostname", "n"}}), true},
      {"zone matches", pv(zone, "us-west1-a"), node({{zone, "us-west1-a"}}), true},
      {"zone differs", pv(zone, "us-west1-a"), node({{zone, "us-west1-b"}}), false},
      {"beta zone matches", pv(beta_zone, "us-west1-a"), node({{beta_zone, "us-west1-a"}}), true},
      {"beta zone differs", pv(beta_zone, "us-west1-a"), node({{beta_zone, "us-west1-b"}}), false},
      {"one of several zones", pv(zone, "us-west1-a__us-west1-b"), node({{zone, "us-west1-b"}}), true},
      {"none of several zones", pv(zone, "us-west1-a__us-west1-b"), node({{zone, "us-west1-c"}}), false},
      {"node has region only", pv(zone, "us-west1-a"), node({{region, "us-west1"}}), false},
      {"region matches", pv(region, "us-west1"), node({{region, "us-west1"}, {zone, "x"}}), true},
      {"other PV labels are ignored", pv("disk", "ssd"), node({{zone, "us-west1-a"}}), true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(placement::VolumeNodeConflict({&c.pv}, c.node).empty(), c.fits) << c.name;
    if (!c.fits) {
      EXPECT_EQ(placement::VolumeNodeConflict({&c.pv}, c.node), placement::kReasonVolumeZone) << c.name;
    }
  }
}

// ------------------------------------------------------------------ through the session

struct World {
  World() { h.cache->EnsureDefaultQueues(); }
  void Node(const std::string& name, const char* cpu = "8") {
    h.PutNode(NodeBuilder(name).Allocatable(cpu, "32Gi", "110").Label("kubernetes.io/hostname", name));
  }
  template <class T>
  void Apply(const T& obj, EventType type = EventType::kAdd) {
    ASSERT_TRUE(h.cache->Apply(type, k8s::Object(obj)).ok());
  }
  void Pod(const std::string& name, const std::string& group, std::vector<std::string> claims) {
    k8s::Pod p = PodBuilder("ns", name).Group(group).Request("4", "1Gi").Build();
    for (auto& c : claims) p.spec.mutable_rare().pvc_names.push_back(std::move(c));
    ASSERT_TRUE(h.PutPod(std::make_shared<const k8s::Pod>(p)).ok());
  }
  void Group(const std::string& name, int min) {
    ASSERT_TRUE(h.cache->AddPodGroup(PodGroupBuilder("ns", name).MinMember(min).Ptr()).ok());
  }
  testing::CacheHarness h;
};

std::map<std::string, std::string> Placed(const AllocationPlan& plan) {
  std::map<std::string, std::string> out;
  for (const auto& p : plan.placements) out[p.task_key] = p.node;
  return out;
}

std::string FitError(const AllocationPlan& plan) {
  for (const auto& j : plan.jobs) {
    for (const auto& [_, why] : j.task_fit_errors) return why;
  }
  return "";
}

TEST(VolumeSessionTest, ALocalVolumeTakesThePodToItsNode) {
  World w;
  for (const char* n : {"n1", "n2", "n3"}) w.Node(n);
  w.Apply(PinnedTo("pv-local", "n3"));
  w.Apply(Claim("data", "pv-local"));
  w.Group("g", 1);
  w.Pod("p", "g", {"data"});
  auto snap = w.h.cache->Snapshot();
  AllocationPlan plan = Allocate(*snap, {});
  EXPECT_EQ(Placed(plan), (std::map<std::string, std::string>{{"ns/p", "n3"}}));
}

TEST(VolumeSessionTest, AClaimThatCannotBeUsedFailsEveryNodeWithItsReason) {
  World w;
  for (const char* n : {"n1", "n2", "n3"}) w.Node(n);
  w.Group("g", 1);
  w.Pod("p", "g", {"data"});
  auto snap = w.h.cache->Snapshot();
  AllocationPlan plan = Allocate(*snap, {});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_EQ(FitError(plan), "0/3 nodes are available: 3 persistentvolumeclaim \"data\" not found.");
  // The claim arrives bound to a volume on n1: the refreshed snapshot carries it.
  w.Apply(Volume("pv"));
  w.Apply(PinnedTo("pv", "n1"), EventType::kUpdate);
  w.Apply(Claim("data", "pv"));
  w.h.cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(Placed(Allocate(*snap, {})), (std::map<std::string, std::string>{{"ns/p", "n1"}}));
  // Deleted again: unschedulable again.
  w.Apply(Claim("data", "pv"), EventType::kDelete);
  w.h.cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(FitError(Allocate(*snap, {})),
            "0/3 nodes are available: 3 persistentvolumeclaim \"data\" not found.");
}

TEST(VolumeSessionTest, NodesFailingOtherFiltersCountTheirOwnReasonsBeforeVolumes) {
  World w;
  w.Node("n1");
  w.Node("n2", "2");  // too small for the 4-cpu pod
  w.Apply(PinnedTo("pv", "n2"));
  w.Apply(Claim("data", "pv"));
  w.Group("g", 1);
  w.Pod("p", "g", {"data"});
  auto snap = w.h.cache->Snapshot();
  EXPECT_EQ(FitError(Allocate(*snap, {})),
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had volume node affinity conflict.");
}

TEST(VolumeSessionTest, AGangWhoseVolumesPinItToOneNodeStaysUnplacedWhenItDoesNotFit) {
  World w;
  w.Node("n1", "6");  // room for one 4-cpu pod
  w.Node("n2", "16");
  for (const char* c : {"a", "b"}) {
    w.Apply(PinnedTo(std::string("pv-") + c, "n1"));
    w.Apply(Claim(std::string("data-") + c, std::string("pv-") + c));
  }
  w.Group("g", 2);
  w.Pod("p-a", "g", {"data-a"});
  w.Pod("p-b", "g", {"data-b"});
  auto snap = w.h.cache->Snapshot();
  AllocationPlan plan = Allocate(*snap, {});
  EXPECT_TRUE(plan.placements.empty()) << Placed(plan).size();
  // With its volumes anywhere the gang fits (both on n2, or one on each node).
  for (const char* c : {"a", "b"}) w.Apply(Volume(std::string("pv-") + c), EventType::kUpdate);
  w.h.cache->UpdateSnapshot(snap.get());
  EXPECT_EQ(Allocate(*snap, {}).placements.size(), 2u);
}

TEST(VolumeSessionTest, ReclaimsStaticPredicatesIncludeVolumes) {
  World w;
  w.Node("n1");
  w.Node("n2");
  w.Apply(PinnedTo("pv", "n2"));
  w.Apply(Claim("data", "pv"));
  w.Group("g", 1);
  w.Pod("p", "g", {"data"});
  auto snap = w.h.cache->Snapshot();
  const TaskInfo* task = nullptr;
  for (const auto& [_, job] : snap->jobs()) {
    for (const auto& [_, t] : job->tasks()) task = &t;
  }
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(NodePredicateFailure(*task, *snap->FindNode("n1"), snap->volumes.get()),
            placement::kReasonVolumeNodeConflict);
  EXPECT_EQ(NodePredicateFailure(*task, *snap->FindNode("n2"), snap->volumes.get()), "");
  EXPECT_EQ(NodePredicateFailure(*task, *snap->FindNode("n1")), "");  // without volumes: static only
}

TEST(VolumeSessionTest, TheCacheRefusesToDeleteWhatItDoesNotHold) {
  World w;
  EXPECT_EQ(w.h.cache->Apply(EventType::kDelete, k8s::Object(Claim("data"))).code(), StatusCode::kNotFound);
  w.Apply(Class("local", "WaitForFirstConsumer"));
  auto snap = w.h.cache->Snapshot();
  EXPECT_EQ(snap->volumes->classes.size(), 1u);
  w.Apply(Class("local", "WaitForFirstConsumer"), EventType::kDelete);
  w.h.cache->UpdateSnapshot(snap.get());
  EXPECT_TRUE(snap->volumes->classes.empty());
}

}  // namespace
}  // namespace volcache
