#include "bench/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "api/k8s/decode.h"
#include "api/task_info.h"
#include "bench/backlog.h"
#include "bench/constraints.h"
#include "bench/workload.h"
#include "binder/binder.h"
#include "cache/cluster_source.h"
#include "cache/runtime.h"
#include "cache/scheduler_cache.h"
#include "session/scheduler.h"
#include "sim/workload.h"
#include "workers/clock.h"
#ifdef VOLCACHE_BENCH_KUBE
#include "bench/loopback_binding_server.h"
#include "bench/watch_path.h"
#include "kube/rest_client.h"
#include "kube/rest_writers.h"
#endif

namespace volcache::bench {

namespace {

using Clk = std::chrono::steady_clock;

volatile char benchmark_sink = 0;  // keeps memcpy from being optimized out

double MsSince(Clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clk::now() - t0).count();
}

nlohmann::ordered_json Stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  nlohmann::ordered_json j;
  j["min"] = v.front();
  j["median"] = v[v.size() / 2];
  j["max"] = v.back();
  return j;
}

// Fastest of 5 memcpy's of `bytes` between two buffers touched beforehand: the yardstick
// for "within 3x of memcpy of the bytes the snapshot holds".
double MemcpyMs(size_t bytes) {
  if (bytes == 0) return 0;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 1e300;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clk::now();
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark_sink = dst[static_cast<size_t>(i) % bytes];
    best = std::min(best, MsSince(t0));
  }
  return best;
}

struct Loaded {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  std::unique_ptr<SchedulerCache> cache;
};

std::unique_ptr<Loaded> Load(const Workload& w, std::ostream& err) {
  auto l = std::make_unique<Loaded>();
  l->cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, l->clock, &l->source);
  Status s = LoadWorkload(w, &l->source, l->cache.get());
  if (!s.ok()) {
    err << "loading the workload: " << s.ToString() << "\n";
    return nullptr;
  }
  return l;
}

nlohmann::ordered_json Line(const char* bench, const char* mode, const BenchOptions& o) {
  nlohmann::ordered_json j;
  j["bench"] = bench;
  j["mode"] = mode;
  j["shape"] = o.shape;
  return j;
}

// Applies `churn` of the tasks as pod updates and `churn` of the nodes as node updates.
// Returns how many cache objects (jobs and nodes) the churn changed: what an incremental
// refresh has to take over.
size_t Churn(const Workload& w, Loaded& l, double churn, std::mt19937_64& rng, int round) {
  const size_t pods = static_cast<size_t>(churn * w.pods.size());
  const size_t nodes = static_cast<size_t>(churn * w.nodes.size());
  std::unordered_set<std::string> changed_jobs, changed_nodes;
  for (size_t i = 0; i < pods; ++i) {
    const auto& old = w.pods[rng() % w.pods.size()];
    auto p = std::make_shared<k8s::Pod>(*old);
    p->metadata.resource_version = std::to_string(2 + round);
    p->metadata.labels["churn"] = std::to_string(round);
    l.cache->UpdatePod(old, p);
    if (Result<TaskInfo> t = TaskInfo::FromPod(p); t.ok()) {
      changed_jobs.insert(t->job());
      if (!p->spec.node_name.empty()) changed_nodes.insert(p->spec.node_name.str());
    }
  }
  for (size_t i = 0; i < nodes; ++i) {
    auto n = std::make_shared<k8s::Node>(*w.nodes[rng() % w.nodes.size()]);
    n->metadata.labels["churn"] = std::to_string(round);
    l.source.PutNode(n);
    l.cache->UpdateNode(*n, *n);
    changed_nodes.insert(n->metadata.name);
  }
  l.cache->DrainQueuesOnce();
  return changed_jobs.size() + changed_nodes.size();
}

int Snapshot(const BenchOptions& o, const Workload& w, std::ostream& out, std::ostream& err) {
  auto l = Load(w, err);
  if (!l) return 1;
  const int threads =
      o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t full_bytes = 0, deep_bytes = 0;
  {
    // Full snapshot: every Ready node and eligible job, sharing immutable versions.
    std::vector<double> ms;
    l->cache->Snapshot();  // warm-up
    for (int r = 0; r < o.runs; ++r) {
      auto t0 = Clk::now();
      auto snap = l->cache->Snapshot();
      ms.push_back(MsSince(t0));
    }
    // The bytes a snapshot holds (heap it allocates), and a memcpy of as many bytes.
    const int64_t h0 = HeapInUseBytes();
    auto held = l->cache->Snapshot();
    const int64_t h1 = HeapInUseBytes();
    SchedulerCache::MaterializeSnapshot(held.get(), 1);
    const int64_t h2 = HeapInUseBytes();
    held.reset();
    full_bytes = static_cast<size_t>(std::max<int64_t>(0, h1 - h0));
    deep_bytes = static_cast<size_t>(std::max<int64_t>(0, h2 - h0));
    auto j = Line("snapshot", "full", o);
    j["threads"] = 1;
    j["runs"] = o.runs;
    j["nodes"] = l->cache->Snapshot()->nodes().size();
    j["jobs"] = l->cache->Snapshot()->jobs().size();
    j["ms"] = Stats(ms);
    const double memcpy_ms = MemcpyMs(full_bytes);
    j["bytes"] = full_bytes;
    j["memcpy_ms"] = memcpy_ms;
    j["x_memcpy"] = memcpy_ms > 0 ? j["ms"]["median"].get<double>() / memcpy_ms : 0.0;
    out << j.dump() << std::endl;
  }
  for (int t : {1, threads}) {
    // Deep copy: a snapshot whose every node and job is privately copied (parallel).
    std::vector<double> ms;
    for (int r = 0; r <= o.runs; ++r) {
      auto t0 = Clk::now();
      auto snap = l->cache->Snapshot();
      SchedulerCache::MaterializeSnapshot(snap.get(), t);
      double v = MsSince(t0);
      if (r > 0) ms.push_back(v);  // first run is the warm-up
    }
    auto j = Line("snapshot", "deep", o);
    j["threads"] = t;
    j["runs"] = o.runs;
    j["ms"] = Stats(ms);
    const double memcpy_ms = MemcpyMs(deep_bytes);
    j["bytes"] = deep_bytes;
    j["memcpy_ms"] = memcpy_ms;
    j["x_memcpy"] = memcpy_ms > 0 ? j["ms"]["median"].get<double>() / memcpy_ms : 0.0;
    out << j.dump() << std::endl;
    if (t == threads) break;
  }
  std::mt19937_64 rng(7);
  for (double churn : {o.churn, 0.0}) {
    auto snap = l->cache->Snapshot();
    std::vector<double> ms;
    size_t changed = 0;
    for (int r = 0; r <= o.runs; ++r) {
      const size_t c = churn > 0 ? Churn(w, *l, churn, rng, r) : 0;
      auto t0 = Clk::now();
      l->cache->UpdateSnapshot(snap.get());
      double v = MsSince(t0);
      if (r > 0) {
        ms.push_back(v);
        changed += c;
      }
    }
    auto j = Line("snapshot", "incremental", o);
    j["churn"] = churn;
    j["threads"] = 1;
    j["runs"] = o.runs;
    j["ms"] = Stats(ms);
    // Issue 16 reads the refresh per changed object: the median over the mean count.
    const double per_run = o.runs > 0 ? static_cast<double>(changed) / o.runs : 0.0;
    j["changed_objects"] = per_run;
    if (per_run > 0) j["us_per_changed_object"] = j["ms"]["median"].get<double>() * 1000.0 / per_run;
    out << j.dump() << std::endl;
  }
  return 0;
}

int Ingest(const BenchOptions& o, const Workload& w, std::ostream& out, std::ostream& err) {
  // In process: pod add events applied to a cache that already has nodes and PodGroups.
  std::vector<double> per_s;
  const int runs = std::max(3, o.runs / 3);
  for (int r = 0; r < runs; ++r) {
    Workload base;
    base.shape = w.shape;
    base.nodes = w.nodes;
    base.queues = w.queues;
    base.pod_groups = w.pod_groups;
    auto l = Load(base, err);
    if (!l) return 1;
    auto t0 = Clk::now();
    for (const auto& p : w.pods) {
      Status s = l->cache->AddPod(p);
      if (!s.ok()) {
        err << s.ToString() << "\n";
        return 1;
      }
    }
    per_s.push_back(static_cast<double>(w.pods.size()) / (MsSince(t0) / 1000.0));
  }
  auto j = Line("ingest", "in_process", o);
  j["events"] = w.pods.size();
  j["runs"] = runs;
  j["per_s"] = Stats(per_s);
  out << j.dump() << std::endl;

  // From JSON: watch events of real-size pod objects decoded and applied.
  const size_t n = std::min<size_t>(w.pods.size(), 200000);
  std::vector<std::string> lines;
  lines.reserve(n);
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    lines.push_back("{\"type\":\"ADDED\",\"object\":" + PodJson(*w.pods[i]) + "}");
    bytes += lines.back().size();
  }
  std::vector<double> json_per_s;
  for (int r = 0; r < runs; ++r) {
    Workload base;
    base.shape = w.shape;
    base.nodes = w.nodes;
    base.queues = w.queues;
    base.pod_groups = w.pod_groups;
    auto l = Load(base, err);
    if (!l) return 1;
    auto t0 = Clk::now();
    for (const auto& line : lines) {
      auto ev = k8s::DecodeWatchEvent(line);
      if (!ev.ok()) {
        err << ev.status().ToString() << "\n";
        return 1;
      }
      Status s = l->cache->Apply(SchedulerCache::EventType::kAdd, *ev->object);
      if (!s.ok()) {
        err << s.ToString() << "\n";
        return 1;
      }
    }
    json_per_s.push_back(static_cast<double>(n) / (MsSince(t0) / 1000.0));
  }
  auto jj = Line("ingest", "watch_json", o);
  jj["events"] = n;
  jj["bytes_per_event"] = bytes / std::max<size_t>(1, n);
  jj["runs"] = runs;
  jj["per_s"] = Stats(json_per_s);
  out << jj.dump() << std::endl;
  return 0;
}

// A binder that answers at once: what the pipeline itself costs.
class InstantBinder final : public Binder {
 public:
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override {
    return std::vector<Status>(batch.size());
  }
};

struct Placement {
  std::string task;
  std::string node;
};

// First fit of every pending task (job-major order) on the Ready nodes, round robin from
// where the last fit was found, on a local idle estimate: the binds a session would make.
std::vector<Placement> PlanBinds(const ClusterInfo& snap) {
  std::vector<std::pair<std::string, Resource>> idle;
  for (const auto& [name, node] : snap.nodes()) idle.emplace_back(name, node->idle());
  std::sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const JobInfo*> jobs;
  for (const auto& [id, job] : snap.jobs()) jobs.push_back(job.get());
  std::sort(jobs.begin(), jobs.end(), [](const JobInfo* a, const JobInfo* b) { return a->uid() < b->uid(); });
  std::vector<Placement> out;
  size_t cursor = 0;
  for (const JobInfo* job : jobs) {
    std::vector<const TaskInfo*> tasks;
    for (const auto& [key, t] : job->tasks()) {
      if (t.status == TaskStatus::kPending) tasks.push_back(&t);
    }
    std::sort(tasks.begin(), tasks.end(),
              [](const TaskInfo* a, const TaskInfo* b) { return a->key() < b->key(); });
    for (const TaskInfo* t : tasks) {
      for (size_t tried = 0; tried < idle.size(); ++tried) {
        auto& [name, free] = idle[(cursor + tried) % idle.size()];
        if (!t->resreq().LessEqual(free, DimensionDefault::kZero)) continue;
        free.SubUnchecked(t->resreq());
        out.push_back({std::string(t->key()), name});
        cursor = (cursor + tried) % idle.size();
        break;
      }
    }
  }
  return out;
}

// Pushes every planned bind through rt.AddBindTask (GetTask → BindContext), as a session's
// commit does. Returns the first refusal.
Status PushPlan(CacheRuntime& rt, const std::vector<Placement>& plan) {
  for (const auto& p : plan) {
    auto ctx = std::make_unique<BindContext>();
    auto task = rt.cache().GetTask(p.task);
    if (!task.ok()) return task.status();
    ctx->task = std::move(*task);
    ctx->node_name = p.node;
    VC_RETURN_IF_ERROR(rt.AddBindTask(std::move(ctx)));
  }
  return Status::Ok();
}

// A threaded CacheRuntime on the real clock with an instant binder, loaded with `w`: the
// bind and end-to-end measurements' rig.
struct ThreadedRig {
  ObjectStoreSource source;
  InstantBinder instant;
  std::unique_ptr<CacheRuntime> rt;

  // `binder` (borrowed, outlives the rig) replaces the instant binder when non-null.
  Status Load(const Workload& w, int threads, const BindFlowOptions& bind_flow, Binder* binder = nullptr) {
    RuntimeOptions ro;
    ro.dispatch_threads =
        std::max(1, threads == 0 ? static_cast<int>(std::thread::hardware_concurrency()) : threads);
    ro.bind_flow = bind_flow;
    rt = std::make_unique<CacheRuntime>(ro, RealClock::Instance(), &source, binder ? binder : &instant,
                                        nullptr, nullptr, nullptr);
    return LoadWorkload(w, &source, &rt->cache()).WithPrefix("loading the workload");
  }
  // Until `n` bind outcomes (success or failure) have been handled.
  void WaitForOutcomes(uint64_t n) const {
    while (rt->counters().binds_succeeded + rt->counters().binds_failed < n) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  // Plans first-fit binds of the pending tasks, starts the runtime, pushes the plan and waits
  // for every outcome. Returns binds/s from the first push.
  Result<double> RunPlan(std::vector<Placement>* plan) {
    *plan = PlanBinds(*rt->cache().Snapshot());
    rt->Run();
    auto t0 = Clk::now();
    VC_RETURN_IF_ERROR(PushPlan(*rt, *plan));
    WaitForOutcomes(plan->size());
    return static_cast<double>(plan->size()) / (MsSince(t0) / 1000.0);
  }
};

#ifdef VOLCACHE_BENCH_KUBE
// The pipeline with the REST binder: AddBindTask → BindFlowChannel → 20 ms tick → batches on
// the dispatch pool → kube::RestBinder → kube::RestClient (keep-alive pool, QPS limiter set
// to 1,000,000 so that it never throttles) → POST …/pods/{name}/binding over loopback HTTP to
// an in-process server → FinishBinding. Timed from the first push until the last outcome.
// Every run then checks that the server received each planned binding exactly once, for the
// planned node, and — after confirming them as the watch would (pod update with nodeName,
// untimed) — that every task is Bound on its node in the cache.
int BindRestLoopback(const BenchOptions& o, const Workload& w, int runs, std::ostream& out,
                     std::ostream& err) {
  constexpr double kQps = 1e6;
  const int dispatch = o.threads > 0 ? o.threads : RuntimeOptions{}.dispatch_threads;  // serve's default
  kube::RestBinderOptions bopts;
  if (o.bind_concurrency > 0) bopts.max_in_flight = static_cast<size_t>(o.bind_concurrency);
  std::unordered_map<std::string, k8s::PodPtr> pods;
  for (const auto& p : w.pods) pods.emplace(p->metadata.namespace_ + "/" + p->metadata.name, p);
  std::vector<double> per_s;
  size_t planned = 0;
  kube::RestClientStats last{};
  for (int r = 0; r < runs; ++r) {
    // Declared before the rig: destroyed after the runtime that borrows them.
    LoopbackBindingServer server(static_cast<int>(bopts.max_in_flight) + 16);
    if (Status s = server.Start(); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    kube::KubeConfig config;
    config.server = server.url();
    kube::RestClientOptions copts;
    copts.qps = kQps;
    copts.burst = static_cast<int>(kQps);
    copts.max_idle_connections = std::max(copts.max_idle_connections, bopts.max_in_flight);
    auto client = kube::RestClient::Create(config, copts);
    if (!client.ok()) {
      err << client.status().ToString() << "\n";
      return 1;
    }
    kube::RestBinder binder(client->get(), bopts);
    ThreadedRig rig;
    if (Status s = rig.Load(w, dispatch, o.bind_flow, &binder); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    CacheRuntime& rt = *rig.rt;
    std::vector<Placement> plan;
    Result<double> rate = rig.RunPlan(&plan);
    if (!rate.ok()) {
      err << rate.status().ToString() << "\n";
      return 1;
    }
    planned = plan.size();
    per_s.push_back(*rate);
    rt.Stop();
    last = (*client)->stats();

    // Every bind accounted for: succeeded in the runtime, received once by the server, for
    // the planned node, and Bound there in the cache once confirmed.
    std::vector<std::string> errors;
    const auto counters = rt.counters();
    if (counters.binds_succeeded != plan.size() || counters.binds_failed != 0) {
      errors.push_back(fmt::format("{} binds succeeded and {} failed of {}", counters.binds_succeeded,
                                   counters.binds_failed, plan.size()));
    }
    auto received = server.TakeBindings();
    if (received.size() != plan.size()) {
      errors.push_back(
          fmt::format("the server received bindings for {} pods, {} planned", received.size(), plan.size()));
    }
    if (server.bad_requests() != 0) errors.push_back(fmt::format("{} bad requests", server.bad_requests()));
    if (last.requests != plan.size()) {
      errors.push_back(fmt::format("{} requests sent for {} binds", last.requests, plan.size()));
    }
    for (const auto& p : plan) {
      auto it = received.find(p.task);
      if (it == received.end() || it->second.count != 1 || it->second.node != p.node) {
        errors.push_back(it == received.end()
                             ? p.task + ": no binding received"
                             : fmt::format("{}: {} bindings received, last to {}, planned {}", p.task,
                                           it->second.count, it->second.node, p.node));
        continue;
      }
      const k8s::PodPtr& old_pod = pods.at(p.task);
      auto bound = std::make_shared<k8s::Pod>(*old_pod);
      bound->spec.node_name = p.node;
      bound->metadata.resource_version = "2";
      if (Status s = rt.cache().UpdatePod(old_pod, bound); !s.ok()) errors.push_back(s.ToString());
      auto task = rt.cache().GetTask(p.task);
      if (!task.ok() || task->status != TaskStatus::kBound || task->node_name != p.node) {
        errors.push_back(p.task + ": not Bound on " + p.node + " in the cache");
      }
      if (errors.size() > 20) break;
    }
    if (Status s = rt.cache().CheckInvariants(); !s.ok()) errors.push_back(s.ToString());
    if (!errors.empty()) {
      err << "bench bind rest_loopback: run " << r << ": NOT every bind accounted for:\n";
      for (const auto& e : errors) err << "  " << e << "\n";
      return 1;
    }
  }
  auto j = Line("bind", "rest_loopback", o);
  j["binds"] = planned;
  j["runs"] = runs;
  j["batch_bind_num"] = o.bind_flow.batch_size;
  j["dispatch_threads"] = dispatch;
  j["bind_concurrency"] = bopts.max_in_flight;
  j["kube_api_qps"] = kQps;
  j["connections"] = last.connections;
  j["per_s"] = Stats(per_s);
  out << j.dump() << std::endl;
  return 0;
}
#endif

// AddBindTask alone: the assume step on the cache, calls/s.
int BindAssume(const BenchOptions& o, const Workload& w, int runs, std::ostream& out, std::ostream& err) {
  std::vector<double> assume_per_s;
  size_t planned = 0;
  for (int r = 0; r < runs; ++r) {
    auto l = Load(w, err);
    if (!l) return 1;
    auto plan = PlanBinds(*l->cache->Snapshot());
    planned = plan.size();
    auto t0 = Clk::now();
    for (const auto& p : plan) {
      Status s = l->cache->AddBindTask(p.task, p.node);
      if (!s.ok()) {
        err << s.ToString() << "\n";
        return 1;
      }
    }
    assume_per_s.push_back(static_cast<double>(plan.size()) / (MsSince(t0) / 1000.0));
  }
  auto j = Line("bind", "add_bind_task", o);
  j["binds"] = planned;
  j["runs"] = runs;
  j["per_s"] = Stats(assume_per_s);
  out << j.dump() << std::endl;
  return 0;
}

// The whole pipeline on real threads and the real clock: AddBindTask → BindFlowChannel →
// 20 ms tick → batches → instant binder → FinishBinding + Scheduled event.
int BindPipelineInstant(const BenchOptions& o, const Workload& w, int runs, std::ostream& out,
                        std::ostream& err) {
  std::vector<double> flow_per_s;
  size_t planned = 0;
  BindFlow::Stats last{};
  for (int r = 0; r < runs; ++r) {
    ThreadedRig rig;
    if (Status s = rig.Load(w, o.threads, o.bind_flow); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    CacheRuntime& rt = *rig.rt;
    std::vector<Placement> plan;
    Result<double> rate = rig.RunPlan(&plan);
    if (!rate.ok()) {
      err << rate.status().ToString() << "\n";
      return 1;
    }
    planned = plan.size();
    flow_per_s.push_back(*rate);
    last = rt.bind_flow_stats();
    rt.Stop();
    if (rt.counters().binds_failed != 0) {
      err << rt.counters().binds_failed << " binds failed with an instant binder\n";
      return 1;
    }
  }
  auto jf = Line("bind", "pipeline_instant", o);
  jf["binds"] = planned;
  jf["runs"] = runs;
  jf["batch_bind_num"] = o.bind_flow.batch_size;
  jf["per_s"] = Stats(flow_per_s);
  jf["batches"] = last.batches;
  out << jf.dump() << std::endl;
  return 0;
}

int Bind(const BenchOptions& o, const Workload& w, std::ostream& out, std::ostream& err) {
  const int runs = std::max(3, o.runs / 3);
  const auto wanted = [&](std::string_view mode) { return o.mode.empty() || o.mode == mode; };
  if (!o.mode.empty() && o.mode != "add_bind_task" && o.mode != "pipeline_instant" &&
      o.mode != "rest_loopback") {
    err << "bench bind: unknown --mode " << o.mode << " (add_bind_task, pipeline_instant, rest_loopback)\n";
    return 2;
  }
  if (wanted("add_bind_task")) {
    if (int rc = BindAssume(o, w, runs, out, err); rc != 0) return rc;
  }
  if (wanted("pipeline_instant")) {
    if (int rc = BindPipelineInstant(o, w, runs, out, err); rc != 0) return rc;
  }
  if (wanted("rest_loopback")) {
#ifdef VOLCACHE_BENCH_KUBE
    return BindRestLoopback(o, w, runs, out, err);
#else
    if (!o.mode.empty()) {
      err << "bench bind: rest_loopback needs the Kubernetes connector (kube/), not in this build\n";
      return 2;
    }
#endif
  }
  return 0;
}

// End to end: the reference session on the shape's pending work, through a threaded
// CacheRuntime with an instant binder, cycle after cycle until nothing more is placed.
int EndToEnd(const BenchOptions& o, const Workload& w, std::ostream& out, std::ostream& err) {
  const int runs = std::max(1, o.runs / 3);
  std::vector<double> per_s, first_open, first_allocate, first_commit, first_close, incr_open;
  int64_t bound = 0;
  int cycles = 0;
  for (int r = 0; r < runs; ++r) {
    ThreadedRig rig;
    if (Status s = rig.Load(w, o.threads, o.bind_flow); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    CacheRuntime& rt = *rig.rt;
    rt.Run();
    Scheduler sched(&rt);
    auto t0 = Clk::now();
    int64_t binds = 0;
    cycles = 0;
    for (;;) {
      CycleStats c = sched.RunOnce();
      ++cycles;
      if (cycles == 1) {
        first_open.push_back(c.open_ms);
        first_allocate.push_back(c.allocate_ms);
        first_commit.push_back(c.commit_ms);
        first_close.push_back(c.close_ms);
      } else {
        incr_open.push_back(c.open_ms);
      }
      binds += c.binds;
      if (c.binds == 0 || cycles >= 50) break;
    }
    rig.WaitForOutcomes(static_cast<uint64_t>(binds));
    per_s.push_back(static_cast<double>(binds) / (MsSince(t0) / 1000.0));
    bound = binds;
    rt.Stop();
  }
  auto j = Line("e2e", "session_instant_binder", o);
  j["binds"] = bound;
  j["cycles"] = cycles;
  j["runs"] = runs;
  j["per_s"] = Stats(per_s);
  j["first_session_ms"] = {{"open", Stats(first_open)},
                           {"allocate", Stats(first_allocate)},
                           {"commit", Stats(first_commit)},
                           {"close", Stats(first_close)}};
  if (!incr_open.empty()) j["later_open_ms"] = Stats(incr_open);
  out << j.dump() << std::endl;
  return 0;
}

// The standard shapes, or the traces: "openb" (the Alibaba 2023 GPU cluster: 1,523 nodes,
// 8,152 pods, each its own job) and "philly" (352 nodes, 82,247 gangs), every pod pending.
// `nodes_only`: the queues and nodes alone.
Result<Workload> WorkloadFor(const std::string& name, bool nodes_only = false) {
  if (name == "openb" || name == "philly") {
    sim::TraceOptions t;
    t.max_jobs = SIZE_MAX;
    auto sw = sim::LoadWorkload(name == "openb" ? "trace:alibaba" : "trace:philly", t);
    if (!sw.ok()) return sw.status();
    Workload w;
    w.shape = Shape{name, static_cast<int>(sw->nodes.size()), static_cast<int>(sw->jobs.size()), 0};
    w.nodes = sw->nodes;
    w.queues = sw->queues;
    if (nodes_only) return w;
    for (const auto& job : sw->jobs) {
      w.pod_groups.push_back(job.pod_group);
      w.pods.insert(w.pods.end(), job.pods.begin(), job.pods.end());
    }
    return w;
  }
  auto shape = ShapeByName(name);
  if (!shape.ok())
    return Status::NotFound("unknown shape \"" + name + "\" (S, M, L, XL, XXL, openb, philly)");
  if (nodes_only) shape->jobs = 0;
  return BuildWorkload(*shape);
}

// Memory held by the cache, filled in two steps, each from a workload whose own references
// are gone when the step ends (what remains is held by the cache and its source): the shape's
// queues and nodes, then its PodGroups and pods. The first step's growth is the nodes' share:
// it is measured in the same process and cache as the whole, before anything else is interned
// (a second cache would find the node names and label keys already interned by the first).
int Memory(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  const int64_t heap0 = HeapInUseBytes();
  Loaded l;
  l.cache = std::make_unique<SchedulerCache>(SchedulerCacheOptions{}, l.clock, &l.source);
  size_t nodes = 0;
  {
    auto loaded = WorkloadFor(o.shape, /*nodes_only=*/true);
    if (!loaded.ok()) {
      err << loaded.status().message() << "\n";
      return 2;
    }
    nodes = loaded->nodes.size();
    for (const auto& q : loaded->queues) l.cache->AddQueue(q);
    for (const auto& n : loaded->nodes) {
      l.source.PutNode(n);
      l.cache->AddNode(*n);
    }
    l.cache->DrainQueuesOnce();
  }
  const int64_t heap_nodes = HeapInUseBytes();
  size_t tasks = 0;
  double pod_bytes_per_task = 0;
  {
    auto loaded = WorkloadFor(o.shape);
    if (!loaded.ok()) {
      err << loaded.status().message() << "\n";
      return 2;
    }
    const Workload& w = *loaded;
    tasks = w.pods.size();
    {
      // One component alone: the decoded pod objects (what the cache shares with the source),
      // on copies of the first 10,000 (few enough that the freed copies do not move the
      // resident set measured below).
      const size_t sample = std::min<size_t>(tasks, 10000);
      std::vector<k8s::PodPtr> copies;
      copies.reserve(sample);
      const int64_t before = HeapInUseBytes();
      for (size_t i = 0; i < sample; ++i) copies.push_back(std::make_shared<const k8s::Pod>(*w.pods[i]));
      pod_bytes_per_task = static_cast<double>(HeapInUseBytes() - before) / static_cast<double>(sample);
    }
    for (const auto& pg : w.pod_groups) l.cache->AddPodGroup(pg);
    for (const auto& p : w.pods) {
      if (Status s = l.cache->AddPod(p); !s.ok()) {
        err << s.ToString() << "\n";
        return 1;
      }
    }
  }
  const int64_t heap1 = HeapInUseBytes();
  auto j = Line("memory", "cache", o);
  j["tasks"] = tasks;
  j["nodes"] = nodes;
  j["heap_bytes"] = heap1 - heap0;
  // All in: everything the cache holds (queues and nodes included) over its tasks.
  j["bytes_per_task"] = static_cast<double>(heap1 - heap0) / static_cast<double>(tasks);
  // The parts: the queues and nodes per node; the rest (jobs, tasks, pods) per task.
  j["bytes_per_node"] =
      nodes > 0 ? static_cast<double>(heap_nodes - heap0) / static_cast<double>(nodes) : 0.0;
  j["job_and_task_bytes_per_task"] = static_cast<double>(heap1 - heap_nodes) / static_cast<double>(tasks);
  // Of which the decoded k8s::Pod objects (measured alone on copies of them).
  j["pod_bytes_per_task"] = pod_bytes_per_task;
  j["rss_bytes"] = ResidentBytes();
  out << j.dump() << std::endl;
  return 0;
}

}  // namespace

int RunBench(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  if (o.what == "memory") return Memory(o, out, err);
  if (o.what == "backlog") return Backlog(o, out, err);
  if (o.what == "constraints") return Constraints(o, out, err);
#ifdef VOLCACHE_BENCH_KUBE
  if (o.what == "watch") return WatchPath(o, out, err);
#endif
  auto loaded = WorkloadFor(o.shape);
  if (!loaded.ok()) {
    err << loaded.status().message() << "\n";
    return 2;
  }
  const Workload& w = *loaded;
  if (o.what == "snapshot") return Snapshot(o, w, out, err);
  if (o.what == "ingest") return Ingest(o, w, out, err);
  if (o.what == "bind") return Bind(o, w, out, err);
  if (o.what == "e2e") return EndToEnd(o, w, out, err);
  err << "unknown benchmark " << o.what
      << " (snapshot, ingest, bind, e2e, memory, watch, backlog, constraints)\n";
  return 2;
}

}  // namespace volcache::bench
