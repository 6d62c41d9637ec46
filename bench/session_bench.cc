// The session's fairness actions on shape L (5,000 nodes, 10,000 gangs of 10 in q1..q10 with
// weights 1..10; the GPU jobs, spread over the ten queues here, fill the GPUs with about equal
// counts per queue, so the low-weight queues hold far more than their share and the
// high-weight ones starve: 10 queues contended). Timed: Enqueue, and PlanEvictions (reclaim + preempt) on the
// plan Allocate made of the same snapshot. Allocate itself is `volcache bench e2e` (docs/BENCHMARKS.md).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "bench/workload.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "session/allocate.h"
#include "session/enqueue.h"
#include "session/reclaim.h"
#include "workers/clock.h"

namespace volcache {
namespace {

struct ShapeL {
  ShapeL() {
    auto shape = bench::ShapeByName("L");
    if (!shape.ok()) std::abort();
    w = bench::BuildWorkload(*shape);
    // Shape L puts the GPU jobs (j % 4 == 0) in q1, q3, q5, q7 and q9 only; spread them over
    // q1..q10 ((j / 4) % 10 + 1) so that all ten queues contend for the GPUs.
    for (auto& pg : w.pod_groups) {
      const int j = std::stoi(pg->metadata.name.substr(4));
      if (j % 4 != 0) continue;
      auto copy = std::make_shared<k8s::PodGroup>(*pg);
      copy->spec.queue = "q" + std::to_string((j / 4) % 10 + 1);
      pg = std::move(copy);
    }
    cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, clock, &source);
    if (!bench::LoadWorkload(w, &source, cache.get()).ok()) std::abort();
    snap = cache->Snapshot();
    plan = Allocate(*snap, options);
  }
  bench::Workload w;
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  std::unique_ptr<SchedulerCache> cache;
  std::unique_ptr<ClusterInfo> snap;
  SessionOptions options;
  AllocationPlan plan;
};

ShapeL& Fixture() {
  static ShapeL* f = new ShapeL();
  return *f;
}

void BM_PlanEvictionsShapeL(benchmark::State& state) {
  ShapeL& f = Fixture();
  EvictionPlan p;
  for (auto _ : state) {
    p = PlanEvictions(*f.snap, f.plan, f.options);
    benchmark::DoNotOptimize(p.evictions.data());
  }
  int64_t served = 0;
  for (const auto& j : p.jobs) served += j.served ? 1 : 0;
  state.counters["evictions"] = static_cast<double>(p.evictions.size());
  state.counters["starving_jobs_visited"] = static_cast<double>(p.jobs.size());
  state.counters["jobs_served"] = static_cast<double>(served);
  int contended = 0;
  for (const auto& q : f.plan.queues)
    contended += q.request.Get("nvidia.com/gpu") > q.allocated.Get("nvidia.com/gpu");
  state.counters["contended_queues"] = contended;
}
BENCHMARK(BM_PlanEvictionsShapeL)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_EnqueueShapeL(benchmark::State& state) {
  ShapeL& f = Fixture();
  EnqueueResult r;
  for (auto _ : state) {
    r = Enqueue(*f.snap, f.options);
    benchmark::DoNotOptimize(r.enqueued.data());
  }
  state.counters["enqueued"] = static_cast<double>(r.enqueued.size());
}
BENCHMARK(BM_EnqueueShapeL)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace volcache
