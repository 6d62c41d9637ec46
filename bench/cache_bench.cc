// Hot paths of cache/: pod add/remove, assume/forget, snapshots (full, deep, incremental
// after no change, one pod, 1 % churn).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>

#include "bench/workload.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "workers/clock.h"

namespace volcache {
namespace {

struct Fixture {
  explicit Fixture(const char* shape) : w(bench::BuildWorkload(*bench::ShapeByName(shape))) {
    cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, clock, &source);
    if (!bench::LoadWorkload(w, &source, cache.get()).ok()) std::abort();
  }
  bench::Workload w;
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  std::unique_ptr<SchedulerCache> cache;
};

const char* kShapes[] = {"S", "M", "L"};

void BM_AddRemovePod(benchmark::State& state) {
  Fixture f(kShapes[state.range(0)]);
  const auto& pod = f.w.pods.back();
  (void)f.cache->DeletePod(*pod);
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.cache->AddPod(pod).ok());
    benchmark::DoNotOptimize(f.cache->DeletePod(*pod).ok());
  }
}
BENCHMARK(BM_AddRemovePod)->Arg(0)->Arg(1);

void BM_AssumeForget(benchmark::State& state) {
  Fixture f("M");
  // A pending task of a CPU-only job (pods are job-major; pending jobs have no node).
  std::string key;
  for (const auto& p : f.w.pods) {
    if (p->spec.node_name.empty() && !p->spec.containers[0].requests.empty() &&
        p->spec.containers[0].requests.size() == 2) {
      key = p->metadata.namespace_ + "/" + p->metadata.name;
      break;
    }
  }
  const std::string node = f.w.nodes[1]->metadata.name;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.cache->AddBindTask(key, node).ok());
    benchmark::DoNotOptimize(f.cache->ForgetTask(key, node).ok());
  }
}
BENCHMARK(BM_AssumeForget);

void BM_SnapshotFull(benchmark::State& state) {
  Fixture f(kShapes[state.range(0)]);
  for (auto _ : state) benchmark::DoNotOptimize(f.cache->Snapshot());
}
BENCHMARK(BM_SnapshotFull)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_SnapshotDeep(benchmark::State& state) {
  Fixture f(kShapes[state.range(0)]);
  for (auto _ : state) {
    auto snap = f.cache->Snapshot();
    SchedulerCache::MaterializeSnapshot(snap.get(), static_cast<int>(state.range(1)));
    benchmark::DoNotOptimize(snap);
  }
}
BENCHMARK(BM_SnapshotDeep)
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({2, 1})
    ->Args({2, 2})
    ->Unit(benchmark::kMillisecond);

void BM_SnapshotIncrementalNoChange(benchmark::State& state) {
  Fixture f(kShapes[state.range(0)]);
  auto snap = f.cache->Snapshot();
  for (auto _ : state) f.cache->UpdateSnapshot(snap.get());
}
BENCHMARK(BM_SnapshotIncrementalNoChange)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_SnapshotIncrementalOnePod(benchmark::State& state) {
  Fixture f(kShapes[state.range(0)]);
  auto snap = f.cache->Snapshot();
  const auto& pod = f.w.pods.front();
  int v = 0;
  for (auto _ : state) {
    auto p = std::make_shared<k8s::Pod>(*pod);
    p->metadata.resource_version = std::to_string(++v);
    (void)f.cache->UpdatePod(pod, p);
    f.cache->UpdateSnapshot(snap.get());
  }
}
BENCHMARK(BM_SnapshotIncrementalOnePod)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// Incremental snapshot after 1 % of the pods (relabelled) changed since the previous one;
// the churn itself is not timed.
void BM_SnapshotIncrementalChurn(benchmark::State& state) {
  Fixture f(kShapes[state.range(0)]);
  auto snap = f.cache->Snapshot();
  const size_t n = std::max<size_t>(1, f.w.pods.size() / 100);
  size_t next = 0;
  int v = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++v;
    for (size_t i = 0; i < n; ++i) {
      // A stride through the pods touches as many different jobs and nodes as random churn.
      const auto& pod = f.w.pods[next];
      next = (next + 7919) % f.w.pods.size();
      auto p = std::make_shared<k8s::Pod>(*pod);
      p->metadata.resource_version = std::to_string(v);
      p->metadata.labels["churn"] = std::to_string(v);
      (void)f.cache->UpdatePod(pod, p);
    }
    state.ResumeTiming();
    f.cache->UpdateSnapshot(snap.get());
  }
}
BENCHMARK(BM_SnapshotIncrementalChurn)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace volcache
