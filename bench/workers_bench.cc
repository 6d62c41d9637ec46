// Hot paths of workers/: the rate-limited work queue and the BindFlow channel.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "api/task_info.h"
#include "binder/binder.h"
#include "workers/bind_flow.h"
#include "workers/clock.h"
#include "workers/executor.h"
#include "workers/rate_limiter.h"
#include "workers/work_queue.h"

namespace volcache {
namespace {

std::vector<std::string> Keys(size_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) keys.push_back("ns/task-" + std::to_string(i));
  return keys;
}

// Add → Get → Done for a batch of distinct keys (the node-sync and resync worker loop).
void BM_WorkQueueAddGetDone(benchmark::State& state) {
  auto clock = std::make_shared<FakeClock>();
  WorkQueue q("bench", clock, DefaultRetryQueueRateLimiter(clock));
  const auto keys = Keys(static_cast<size_t>(state.range(0)));
  std::string item;
  for (auto _ : state) {
    for (const auto& k : keys) q.Add(k);
    while (q.TryGet(&item)) q.Done(item);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_WorkQueueAddGetDone)->Arg(1000);

// AddRateLimited + Forget: the retry bookkeeping of a failing item.
void BM_WorkQueueRateLimitedForget(benchmark::State& state) {
  auto clock = std::make_shared<FakeClock>();
  WorkQueue q("bench", clock, DefaultRetryQueueRateLimiter(clock));
  const auto keys = Keys(1000);
  size_t i = 0;
  for (auto _ : state) {
    const auto& k = keys[i++ % keys.size()];
    q.AddRateLimited(k);
    q.Forget(k);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WorkQueueRateLimitedForget);

class NullBinder final : public Binder {
 public:
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override {
    return std::vector<Status>(batch.size());
  }
};

class NullHandler final : public BindOutcomeHandler {
 public:
  void OnBindSucceeded(BindContext&) override {}
  void OnBindFailed(BindContext&, const Status&) override {}
};

// Push N contexts, then one tick flushes them through an instant binder (inline): the
// channel, batching and outcome plumbing without the cache. Arg: BATCH_BIND_NUM.
void BM_BindFlowPushFlush(benchmark::State& state) {
  auto clock = std::make_shared<FakeClock>();
  NullBinder binder;
  NullHandler handler;
  InlineExecutor dispatch;
  BindFlowOptions o;
  o.batch_size = static_cast<size_t>(state.range(0));
  o.max_concurrent_binds = 5000;
  BindFlow flow(o, clock, &binder, nullptr, &handler, &dispatch);
  constexpr int kPerTick = 1000;
  std::vector<TaskMetaPtr> metas;
  for (const auto& k : Keys(kPerTick)) {
    auto pod = std::make_shared<k8s::Pod>();
    pod->metadata.name = k.substr(3);
    pod->metadata.namespace_ = "ns";
    boost::intrusive_ptr<TaskMeta> m(new TaskMeta());
    m->pod = std::move(pod);
    metas.push_back(std::move(m));
  }
  for (auto _ : state) {
    for (const auto& m : metas) {
      auto ctx = std::make_unique<BindContext>();
      ctx->task.meta = m;
      ctx->node_name = "n1";
      if (!flow.Push(std::move(ctx)).ok()) std::abort();
    }
    benchmark::DoNotOptimize(flow.FlushOnce());
  }
  flow.Stop(/*drain=*/true);
  state.SetItemsProcessed(state.iterations() * kPerTick);
}
BENCHMARK(BM_BindFlowPushFlush)->Arg(1)->Arg(16);

}  // namespace
}  // namespace volcache
