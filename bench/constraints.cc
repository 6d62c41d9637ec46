#include "bench/constraints.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "bench/workload.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "session/allocate.h"
#include "workers/clock.h"

namespace volcache::bench {

namespace {

using Clk = std::chrono::steady_clock;
constexpr const char* kZoneKey = "topology.kubernetes.io/zone";
constexpr int kZones = 50;
constexpr int kGangs = 500;
constexpr int kGangSize = 10;

std::string Zone(int i) { return fmt::format("zone-{:02d}", i % kZones); }

k8s::PodAffinityTerm OwnGang(const std::string& gang, const char* topology) {
  k8s::PodAffinityTerm t;
  k8s::LabelSelector s;
  s.match_labels.emplace("gang", gang);
  t.label_selector = std::move(s);
  t.topology_key = topology;
  return t;
}

// The pending pod `i` of gang `j` of `kind` (one of the five, or "plain").
k8s::PodPtr PendingPod(const std::string& kind, int j, int i) {
  const std::string gang = fmt::format("bench-{:04d}", j);
  auto p = std::make_shared<k8s::Pod>();
  p->metadata.name = fmt::format("{}-{}", gang, i);
  p->metadata.namespace_ = "default";
  p->metadata.uid = fmt::format("uid-{}-{}", gang, i);
  p->metadata.resource_version = "1";
  p->metadata.creation_timestamp = 1000 + j;
  p->metadata.annotations.emplace("scheduling.k8s.io/group-name", gang);
  p->metadata.labels.emplace("gang", gang);
  p->spec.scheduler_name = "volcano";
  k8s::Container c;
  c.name = "main";
  c.image = "busybox";
  c.requests = {{"cpu", *Quantity::Parse("1")}, {"memory", *Quantity::Parse("2Gi")}};
  p->spec.containers = std::vector<k8s::Container>{c};
  p->status.phase = "Pending";
  std::string k = kind;
  if (k == "mixed") {
    static const char* kinds[] = {"anti-affinity", "pod-affinity", "node-affinity", "spread", "plain"};
    k = kinds[j % 5];
  }
  if (k == "anti-affinity") {
    p->spec.mutable_rare().pod_anti_affinity.required.push_back(OwnGang(gang, "kubernetes.io/hostname"));
    p->spec.has_pod_anti_affinity = true;
  } else if (k == "pod-affinity") {
    p->spec.mutable_rare().pod_affinity.required.push_back(OwnGang(gang, kZoneKey));
    p->spec.has_pod_affinity = true;
  } else if (k == "node-affinity") {
    k8s::NodeSelectorTerm term;
    term.match_expressions.push_back({kZoneKey, "In", {Zone(j), Zone(j + 1)}});
    k8s::PreferredSchedulingTerm pref;
    pref.weight = 10;
    pref.preference.match_expressions.push_back({kZoneKey, "In", {Zone(j)}});
    auto& na = p->spec.mutable_rare().node_affinity;
    na.required = std::vector<k8s::NodeSelectorTerm>{term};
    na.preferred.push_back(pref);
    p->spec.has_node_affinity = true;
  } else if (k == "spread") {
    k8s::TopologySpreadConstraint c2;
    c2.max_skew = 1;
    c2.topology_key = kZoneKey;
    k8s::LabelSelector s;
    s.match_labels.emplace("gang", gang);
    c2.label_selector = std::move(s);
    p->spec.mutable_rare().topology_spread_constraints.push_back(std::move(c2));
  }
  return p;
}

// The shape with zone labels, its running pods, and the kind's pending gangs.
Workload WithPending(const Workload& base, const std::string& kind) {
  Workload w;
  w.shape = base.shape;
  w.queues = base.queues;
  for (size_t i = 0; i < base.nodes.size(); ++i) {
    auto n = std::make_shared<k8s::Node>(*base.nodes[i]);
    n->metadata.labels[kZoneKey] = Zone(static_cast<int>(i));
    w.nodes.push_back(std::move(n));
  }
  std::set<std::string> running_groups;
  for (const auto& p : base.pods) {
    if (p->spec.node_name.empty()) continue;
    w.pods.push_back(p);
    auto it = p->metadata.annotations.find("scheduling.k8s.io/group-name");
    if (it != p->metadata.annotations.end()) running_groups.insert(std::string(it->second));
  }
  for (const auto& pg : base.pod_groups) {
    if (running_groups.count(std::string(pg->metadata.name))) w.pod_groups.push_back(pg);
  }
  for (int j = 0; j < kGangs; ++j) {
    auto pg = std::make_shared<k8s::PodGroup>();
    pg->metadata.name = fmt::format("bench-{:04d}", j);
    pg->metadata.namespace_ = "default";
    pg->metadata.uid = fmt::format("uid-pg-bench-{:04d}", j);
    pg->metadata.resource_version = "1";
    pg->metadata.creation_timestamp = 1000 + j;
    pg->spec.min_member = kGangSize;
    pg->spec.queue = fmt::format("q{}", j % 10 + 1);
    pg->status.phase = "Inqueue";
    w.pod_groups.push_back(std::move(pg));
    for (int i = 0; i < kGangSize; ++i) w.pods.push_back(PendingPod(kind, j, i));
  }
  return w;
}

struct Setup {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  std::unique_ptr<SchedulerCache> cache;
  std::shared_ptr<const ClusterInfo> snapshot;
};

std::unique_ptr<Setup> Load(const Workload& w, std::ostream& err) {
  auto s = std::make_unique<Setup>();
  s->cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, s->clock, &s->source);
  if (Status st = LoadWorkload(w, &s->source, s->cache.get()); !st.ok()) {
    err << "bench constraints: loading the workload: " << st.ToString() << "\n";
    return nullptr;
  }
  s->snapshot = s->cache->Snapshot();
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int Constraints(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  static const std::vector<std::string> kKinds = {"anti-affinity", "pod-affinity", "node-affinity", "spread",
                                                  "mixed"};
  std::vector<std::string> kinds;
  if (o.kind.empty()) {
    kinds = kKinds;
  } else if (std::find(kKinds.begin(), kKinds.end(), o.kind) != kKinds.end()) {
    kinds = {o.kind};
  } else {
    err << "bench constraints: --kind must be anti-affinity, pod-affinity, node-affinity, spread or mixed, "
           "not "
        << o.kind << "\n";
    return 2;
  }
  auto shape = ShapeByName(o.shape);
  if (!shape.ok()) {
    err << shape.status().message() << "\n";
    return 2;
  }
  const Workload base = BuildWorkload(*shape);
  auto plain = Load(WithPending(base, "plain"), err);
  if (!plain) return 1;
  const SessionOptions options;
  for (const std::string& kind : kinds) {
    auto setup = Load(WithPending(base, kind), err);
    if (!setup) return 1;
    std::vector<double> kind_ms, plain_ms;
    size_t kind_placed = 0, plain_placed = 0;
    Allocate(*setup->snapshot, options);  // warm-up
    for (int r = 0; r < std::max(1, o.runs); ++r) {
      auto t0 = Clk::now();
      const AllocationPlan a = Allocate(*setup->snapshot, options);
      kind_ms.push_back(std::chrono::duration<double, std::milli>(Clk::now() - t0).count());
      kind_placed = a.placements.size();
      t0 = Clk::now();
      const AllocationPlan b = Allocate(*plain->snapshot, options);
      plain_ms.push_back(std::chrono::duration<double, std::milli>(Clk::now() - t0).count());
      plain_placed = b.placements.size();
    }
    const double km = Median(kind_ms), pm = Median(plain_ms);
    nlohmann::ordered_json j;
    j["bench"] = "constraints";
    j["kind"] = kind;
    j["shape"] = o.shape;
    j["nodes"] = setup->snapshot->nodes().size();
    j["pending_pods"] = kGangs * kGangSize;
    j["placed"] = kind_placed;
    j["allocate_ms"] = km;
    j["pods_per_s"] = km > 0 ? static_cast<double>(kind_placed) / km * 1000 : 0;
    j["plain_placed"] = plain_placed;
    j["plain_allocate_ms"] = pm;
    j["plain_pods_per_s"] = pm > 0 ? static_cast<double>(plain_placed) / pm * 1000 : 0;
    j["runs"] = kind_ms.size();
    out << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace volcache::bench
