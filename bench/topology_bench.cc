// Network topology (SPEC §12, issue targets on 2 cores): building the HyperNode forest for
// 10,000 nodes under 1,250 leaves / 3 tiers; one node label change (forest alone, and through
// SchedulerCache::SyncNode); placing a 64-task hard-mode gang with Allocate; snapshots of
// shape L with and without a forest over its nodes.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bench/workload.h"
#include "cache/cluster_source.h"
#include "cache/hypernode_forest.h"
#include "cache/scheduler_cache.h"
#include "session/allocate.h"
#include "workers/clock.h"

namespace volcache {
namespace {

constexpr int kLeafSize = 8;   // nodes per leaf (rack)
constexpr int kSpineFan = 10;  // leaves per tier-2 HyperNode
constexpr int kTopFan = 25;    // tier-2 HyperNodes per tier-3 HyperNode

k8s::HyperNodeMember Member(k8s::HyperNodeMember::Type type, std::string name) {
  k8s::HyperNodeMember m;
  m.type = type;
  m.name_or_pattern = std::move(name);
  return m;
}

// Racks of kLeafSize nodes (exact members, or one labelMatch rack=<name>), spines over
// kSpineFan racks, tops over kTopFan spines.
std::vector<k8s::HyperNodePtr> Tree(const std::vector<k8s::NodePtr>& nodes, bool by_label) {
  std::vector<k8s::HyperNodePtr> out;
  const int racks = static_cast<int>((nodes.size() + kLeafSize - 1) / kLeafSize);
  for (int r = 0; r < racks; ++r) {
    k8s::HyperNode hn;
    hn.metadata.name = "rack-" + std::to_string(r);
    hn.spec.tier = 1;
    hn.spec.tier_name = "rack";
    if (by_label) {
      k8s::HyperNodeMember m;
      m.selector = k8s::HyperNodeMember::Selector::kLabel;
      m.labels.match_labels.emplace("rack", hn.metadata.name);
      hn.spec.members.push_back(std::move(m));
    } else {
      for (size_t i = static_cast<size_t>(r) * kLeafSize; i < nodes.size() && i < (r + 1u) * kLeafSize; ++i) {
        hn.spec.members.push_back(Member(k8s::HyperNodeMember::Type::kNode, nodes[i]->metadata.name));
      }
    }
    out.push_back(std::make_shared<const k8s::HyperNode>(std::move(hn)));
  }
  const int spines = (racks + kSpineFan - 1) / kSpineFan;
  for (int s = 0; s < spines; ++s) {
    k8s::HyperNode hn;
    hn.metadata.name = "spine-" + std::to_string(s);
    hn.spec.tier = 2;
    hn.spec.tier_name = "spine";
    for (int r = s * kSpineFan; r < racks && r < (s + 1) * kSpineFan; ++r) {
      hn.spec.members.push_back(Member(k8s::HyperNodeMember::Type::kHyperNode, "rack-" + std::to_string(r)));
    }
    out.push_back(std::make_shared<const k8s::HyperNode>(std::move(hn)));
  }
  for (int t = 0; t * kTopFan < spines; ++t) {
    k8s::HyperNode hn;
    hn.metadata.name = "top-" + std::to_string(t);
    hn.spec.tier = 3;
    for (int s = t * kTopFan; s < spines && s < (t + 1) * kTopFan; ++s) {
      hn.spec.members.push_back(Member(k8s::HyperNodeMember::Type::kHyperNode, "spine-" + std::to_string(s)));
    }
    out.push_back(std::make_shared<const k8s::HyperNode>(std::move(hn)));
  }
  return out;
}

// The nodes of a shape, labelled rack=rack-<i / kLeafSize>.
std::vector<k8s::NodePtr> RackedNodes(int n) {
  bench::Workload w = bench::BuildWorkload(bench::Shape{"topology", n, 0, 10});
  std::vector<k8s::NodePtr> out;
  for (size_t i = 0; i < w.nodes.size(); ++i) {
    auto node = std::make_shared<k8s::Node>(*w.nodes[i]);
    node->metadata.labels["rack"] = "rack-" + std::to_string(i / kLeafSize);
    out.push_back(std::move(node));
  }
  return out;
}

// Arg: 0 = exact members, 1 = label-matched racks.
void BM_ForestBuild10kNodes(benchmark::State& state) {
  const auto nodes = RackedNodes(10000);
  const auto tree = Tree(nodes, state.range(0) == 1);
  for (auto _ : state) {
    HyperNodeForest forest;
    for (const auto& n : nodes) forest.UpsertNode(n->metadata.name, n->metadata.labels);
    for (const auto& hn : tree) {
      if (!forest.Apply(hn).ok()) std::abort();
    }
    benchmark::DoNotOptimize(forest.version());
  }
  state.counters["hypernodes"] = static_cast<double>(tree.size());
}
BENCHMARK(BM_ForestBuild10kNodes)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One node moves between two label-matched racks (each iteration one label change).
void BM_ForestNodeLabelChange(benchmark::State& state) {
  const auto nodes = RackedNodes(10000);
  HyperNodeForest forest;
  for (const auto& n : nodes) forest.UpsertNode(n->metadata.name, n->metadata.labels);
  for (const auto& hn : Tree(nodes, true)) {
    if (!forest.Apply(hn).ok()) std::abort();
  }
  k8s::StringMap a = nodes[5000]->metadata.labels, b = a;
  b["rack"] = "rack-1249";
  bool flip = false;
  for (auto _ : state) {
    forest.UpsertNode(nodes[5000]->metadata.name, (flip = !flip) ? b : a);
  }
}
BENCHMARK(BM_ForestNodeLabelChange)->Unit(benchmark::kMicrosecond);

struct CacheFixture {
  explicit CacheFixture(const std::vector<k8s::NodePtr>& nodes, bool with_forest,
                        bench::Workload* w = nullptr) {
    cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, clock, &source);
    if (w != nullptr) {
      if (!bench::LoadWorkload(*w, &source, cache.get()).ok()) std::abort();
    } else {
      cache->EnsureDefaultQueues();
      for (const auto& n : nodes) {
        source.PutNode(n);
        cache->AddNode(*n);
      }
    }
    if (with_forest) {
      for (const auto& hn : Tree(nodes, w == nullptr)) cache->AddHyperNode(hn);
    }
    cache->DrainQueuesOnce();
  }
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  std::unique_ptr<SchedulerCache> cache;
};

// The same label change as cache work: the node's new version synced (SetNode + forest).
void BM_CacheNodeLabelChange(benchmark::State& state) {
  const auto nodes = RackedNodes(10000);
  CacheFixture f(nodes, true);
  auto a = nodes[5000];
  auto bn = std::make_shared<k8s::Node>(*a);
  bn->metadata.labels["rack"] = "rack-1249";
  k8s::NodePtr b = bn;
  bool flip = false;
  for (auto _ : state) {
    f.source.PutNode((flip = !flip) ? b : a);
    if (!f.cache->SyncNode(a->metadata.name).ok()) std::abort();
  }
}
BENCHMARK(BM_CacheNodeLabelChange)->Unit(benchmark::kMicrosecond);

// A 64-task gang (8 cpu each: one rack of 8 × 64-cpu nodes holds exactly 64 × 8 cpu),
// hard mode, highestTierAllowed 2, on 10,000 nodes / 1,250 racks: Allocate on a snapshot.
void BM_HardGangPlacement64(benchmark::State& state) {
  const auto nodes = RackedNodes(10000);
  CacheFixture f(nodes, true);
  k8s::PodGroup pg;
  pg.metadata.name = "gang";
  pg.metadata.namespace_ = "default";
  pg.metadata.uid = "gang-uid";
  pg.spec.min_member = 64;
  pg.spec.queue = "default";
  pg.spec.mutable_rare().network_topology = k8s::NetworkTopologySpec{"hard", 2, ""};
  if (!f.cache->AddPodGroup(std::make_shared<const k8s::PodGroup>(pg)).ok()) std::abort();
  for (int i = 0; i < 64; ++i) {
    auto pod = std::make_shared<k8s::Pod>();
    pod->metadata.name = "gang-" + std::to_string(i);
    pod->metadata.namespace_ = "default";
    pod->metadata.uid = "gang-uid-" + std::to_string(i);
    pod->metadata.annotations["scheduling.k8s.io/group-name"] = "gang";
    pod->spec.scheduler_name = "volcano";
    k8s::Container c;
    c.name = "c";
    c.requests = {{"cpu", *Quantity::Parse("8")}, {"memory", *Quantity::Parse("8Gi")}};
    pod->spec.containers.push_back(std::move(c));
    pod->status.phase = "Pending";
    if (!f.cache->AddPod(pod).ok()) std::abort();
  }
  auto snap = f.cache->Snapshot();
  size_t placed = 0;
  for (auto _ : state) {
    AllocationPlan plan = Allocate(*snap);
    placed = plan.placements.size();
  }
  if (placed != 64) state.SkipWithError("the gang was not placed");
}
BENCHMARK(BM_HardGangPlacement64)->Unit(benchmark::kMillisecond);

// Shape L (5,000 nodes, 100,000 tasks): full snapshot and 1 % node churn + incremental, with
// (Arg 1) and without (Arg 0) a 3-tier forest over its nodes.
void BM_SnapshotFullWithForest(benchmark::State& state) {
  bench::Workload w = bench::BuildWorkload(*bench::ShapeByName("L"));
  CacheFixture f(w.nodes, state.range(0) == 1, &w);
  for (auto _ : state) benchmark::DoNotOptimize(f.cache->Snapshot());
}
BENCHMARK(BM_SnapshotFullWithForest)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_SnapshotIncrementalNodeChurnWithForest(benchmark::State& state) {
  bench::Workload w = bench::BuildWorkload(*bench::ShapeByName("L"));
  CacheFixture f(w.nodes, state.range(0) == 1, &w);
  auto snap = f.cache->Snapshot();
  const size_t n = std::max<size_t>(1, w.nodes.size() / 100);
  size_t next = 0;
  int v = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++v;
    for (size_t i = 0; i < n; ++i) {
      auto node = std::make_shared<k8s::Node>(*w.nodes[next]);
      next = (next + 7919) % w.nodes.size();
      node->metadata.resource_version = std::to_string(v);
      node->metadata.annotations["churn"] = std::to_string(v);
      f.source.PutNode(node);
      (void)f.cache->SyncNode(node->metadata.name);
    }
    state.ResumeTiming();
    f.cache->UpdateSnapshot(snap.get());
  }
}
BENCHMARK(BM_SnapshotIncrementalNodeChurnWithForest)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace volcache
