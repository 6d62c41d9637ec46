// Hot paths of api/: Resource arithmetic and comparison, Quantity parsing, NodeInfo task
// accounting, pod JSON decoding.
#include <benchmark/benchmark.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "api/job_info.h"
#include "api/k8s/decode.h"
#include "api/k8s/decode_fast.h"
#include "api/node_info.h"
#include "api/quantity.h"
#include "api/resource.h"
#include "api/task_info.h"
#include "bench/workload.h"
#include "sim/workload.h"

namespace volcache {
namespace {

void BM_ResourceAdd(benchmark::State& state) {
  Resource a(1000, 2ll << 30, {{"nvidia.com/gpu", 1000}, {"pods", 1}});
  Resource sum;
  for (auto _ : state) {
    sum.Add(a);
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_ResourceAdd);

void BM_ResourceLessEqual(benchmark::State& state) {
  Resource req(1000, 2ll << 30, {{"nvidia.com/gpu", 1000}, {"pods", 1}});
  Resource idle(64000, 256ll << 30, {{"nvidia.com/gpu", 8000}, {"pods", 110}});
  for (auto _ : state) benchmark::DoNotOptimize(req.LessEqual(idle, DimensionDefault::kZero));
}
BENCHMARK(BM_ResourceLessEqual);

void BM_ResourceCopy(benchmark::State& state) {
  Resource a(1000, 2ll << 30, {{"nvidia.com/gpu", 1000}, {"pods", 1}});
  for (auto _ : state) {
    Resource b = a;
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_ResourceCopy);

void BM_QuantityParse(benchmark::State& state) {
  const char* texts[] = {"100m", "1.5", "2Gi", "129M", "8"};
  size_t i = 0;
  for (auto _ : state) {
    auto q = Quantity::Parse(texts[i++ % 5]);
    benchmark::DoNotOptimize(q.ok());
  }
}
BENCHMARK(BM_QuantityParse);

void BM_NodeInfoAddRemoveTask(benchmark::State& state) {
  auto w = bench::BuildWorkload(*bench::ShapeByName("S"));
  auto node = NodeInfo::FromNode(w.nodes[0]);
  auto pod = std::make_shared<k8s::Pod>(*w.pods[0]);
  pod->spec.node_name = node->name();
  pod->status.phase = "Running";
  auto task = TaskInfo::FromPod(pod);
  for (auto _ : state) {
    benchmark::DoNotOptimize(node->AddTask(*task).ok());
    benchmark::DoNotOptimize(node->RemoveTask(*task).ok());
  }
}
BENCHMARK(BM_NodeInfoAddRemoveTask);

void BM_TaskFromPod(benchmark::State& state) {
  auto w = bench::BuildWorkload(*bench::ShapeByName("S"));
  for (auto _ : state) benchmark::DoNotOptimize(TaskInfo::FromPod(w.pods[0]).ok());
}
BENCHMARK(BM_TaskFromPod);

// A private copy of a job (what a session's first write to a job costs, and the unit of
// MaterializeSnapshot): a 10-task job of the standard shapes.
void BM_JobInfoClone(benchmark::State& state) {
  auto w = bench::BuildWorkload(*bench::ShapeByName("S"));
  JobInfo job(w.pods[0]->metadata.namespace_ + "/job-000000");
  for (const auto& pod : w.pods) {
    auto t = TaskInfo::FromPod(pod);
    if (t.ok() && t->job() == job.uid()) (void)job.AddTask(*t);
  }
  if (job.tasks().size() != 10) std::abort();
  for (auto _ : state) {
    auto copy = std::make_shared<JobInfo>(job);
    benchmark::DoNotOptimize(copy.get());
  }
}
BENCHMARK(BM_JobInfoClone);

// Watch JSON decode of a real-size pod (2,240 bytes): the public path (streaming fast path)
// against the reference DOM decoder, in the same run.
std::string PodWatchLine() {
  auto w = bench::BuildWorkload(*bench::ShapeByName("S"));
  return "{\"type\":\"ADDED\",\"object\":" + bench::PodJson(*w.pods[0]) + "}";
}

void BM_DecodeWatchEventPod(benchmark::State& state) {
  const std::string line = PodWatchLine();
  for (auto _ : state) benchmark::DoNotOptimize(k8s::DecodeWatchEvent(line).ok());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_DecodeWatchEventPod);

void BM_DecodeWatchEventPodReference(benchmark::State& state) {
  const std::string line = PodWatchLine();
  for (auto _ : state) benchmark::DoNotOptimize(k8s::DecodeWatchEventReference(line).ok());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_DecodeWatchEventPodReference);

// The real-layout watch event `volcache bench watch` streams (4.8 KB: the kubectl
// last-applied annotation, managedFields, containerStatuses): the last MODIFIED line of
// ../shared/data/k8s/watch/pod-watch-events-kind-2023.jsonl, through the streaming decoder
// alone (what the reflector's stream thread runs per event).
std::string RealPodWatchLine() {
  std::ifstream in(sim::DataDir() + "/k8s/watch/pod-watch-events-kind-2023.jsonl");
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"MODIFIED\"") != std::string::npos) last = line;
  }
  if (last.empty()) std::abort();  // the shared data set is missing
  return last;
}

void BM_FastDecodeWatchEventRealPod(benchmark::State& state) {
  const std::string line = RealPodWatchLine();
  for (auto _ : state) {
    k8s::WatchEvent ev;
    if (!k8s::FastDecodeWatchEvent(line, &ev)) std::abort();
    benchmark::DoNotOptimize(ev);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_FastDecodeWatchEventRealPod);

}  // namespace
}  // namespace volcache
