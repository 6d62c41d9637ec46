#include "app/run_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <thread>

#include "api/mutex.h"
#include "cache/hypernode_forest.h"
#include "session/allocate.h"
#include "session/reclaim.h"

namespace volcache::app {

using sim::JobRecord;
using sim::LoadWorkload;
using sim::SimCluster;
using sim::SimStats;
using sim::SimWorkload;

namespace {

using WallClock = std::chrono::steady_clock;

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

Percentiles Summarize(std::vector<double> v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  p.p50 = at(0.5);
  p.p95 = at(0.95);
  p.max = v.back();
  return p;
}

int64_t GpuMilli(const Resource& r) {
  static const uint32_t gpu = ResourceNames::Intern("nvidia.com/gpu");
  return r.Get(gpu);
}

// "kubelet refused 3 pods: 2 NodePorts, 1 OutOfcpu (first: ml/web-1 on n1: NodePorts: Pod Predicate
// NodePorts failed)": reasons by count, most first.
std::string KubeletRefusals(const SimStats& st) {
  std::vector<std::pair<std::string, uint64_t>> reasons(st.admission_refusal_reasons.begin(),
                                                        st.admission_refusal_reasons.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string by_reason;
  for (const auto& [reason, n] : reasons)
    by_reason += fmt::format("{}{} {}", by_reason.empty() ? "" : ", ", n, reason);
  return fmt::format("kubelet refused {} pod{}: {}{}", st.admission_refusals,
                     st.admission_refusals == 1 ? "" : "s", by_reason,
                     st.admission_refusal_examples.empty()
                         ? ""
                         : fmt::format(" (first: {})", st.admission_refusal_examples.front()));
}

nlohmann::ordered_json PercentilesJson(const Percentiles& p) {
  return {{"count", p.count}, {"mean", p.mean}, {"p50", p.p50}, {"p95", p.p95}, {"max", p.max}};
}

// Fairness figures, session by session (see FairnessReport).
struct FairnessAcc {
  FairnessReport totals;
  double jain_sum = 0;
  struct Burst {
    bool open = false;
    size_t start = 0;
    double last_deserved = 0;
  };
  std::map<std::string, Burst> bursts;
  std::vector<double> convergence;
  std::map<std::string, uint64_t> evicted, evicted_for;
  std::map<std::string, std::vector<QueueReport::SharePoint>> series;
  std::vector<std::string> check_errors;  // the first 5
  size_t session = 0;

  void Session(const CycleStats& st, const std::vector<QueueOutcome>& queues, const EvictionPlan& ev,
               int64_t total_gpu_milli) {
    ++session;
    totals.enqueued += static_cast<uint64_t>(st.enqueued);
    totals.pipelined += static_cast<uint64_t>(st.pipelined);
    totals.evictions_reclaim += static_cast<uint64_t>(st.evictions_reclaim);
    totals.evictions_preempt += static_cast<uint64_t>(st.evictions_preempt);
    totals.eviction_refusals += static_cast<uint64_t>(st.eviction_refusals);
    if (!st.eviction_check_error.empty() && check_errors.size() < 5)
      check_errors.push_back(st.eviction_check_error);
    std::map<JobId, std::string> queue_of;
    for (const StarvingOutcome& j : ev.jobs) queue_of[j.job] = j.queue;
    if (st.eviction_check_error.empty()) {
      for (const Eviction& e : ev.evictions) {
        ++evicted[e.queue];
        ++evicted_for[queue_of[e.for_job]];
      }
    }
    int64_t demand = 0;
    for (const QueueOutcome& q : queues) demand += GpuMilli(q.request);
    if (demand > total_gpu_milli && total_gpu_milli > 0) {
      double sum = 0, sq = 0;
      size_t n = 0;
      for (const QueueOutcome& q : queues) {
        const double d = static_cast<double>(GpuMilli(q.deserved));
        if (d <= 0) continue;
        const double x = static_cast<double>(GpuMilli(q.allocated)) / d;
        sum += x;
        sq += x * x;
        ++n;
      }
      if (n > 0 && sq > 0) {
        jain_sum += sum * sum / (static_cast<double>(n) * sq);
        ++totals.contended_sessions;
      }
    }
    for (const QueueOutcome& q : queues) {
      const double d = static_cast<double>(GpuMilli(q.deserved)) / 1000.0;
      const double held = static_cast<double>(GpuMilli(q.allocated)) / 1000.0;
      if (session % kShareSeriesPeriod == 0) series[q.name].push_back({session, d, held});
      const bool waiting = GpuMilli(q.request) > GpuMilli(q.allocated);
      Burst& b = bursts[q.name];
      if (b.open && (held >= 0.95 * d || !waiting)) {
        convergence.push_back(static_cast<double>(session - b.start));
        b.open = false;
      }
      if (!b.open && d - b.last_deserved >= std::max(1.0, 0.05 * b.last_deserved) && held < 0.95 * d &&
          waiting) {
        b.open = true;
        b.start = session;
        ++totals.bursts;
      }
      b.last_deserved = d;
    }
  }

  FairnessReport Report(const SchedulerOptions& o) {
    FairnessReport r = totals;
    r.enqueue = o.enqueue;
    r.reclaim = o.reclaim;
    r.preempt = o.preempt;
    r.jain_index = r.contended_sessions > 0 ? jain_sum / static_cast<double>(r.contended_sessions) : 0;
    for (const auto& [name, b] : bursts) r.unconverged += b.open ? 1 : 0;
    r.convergence_periods = Summarize(convergence);
    return r;
  }
};

// See TopologyReport. The leaf sets come from the cache's own forest type, built here over the
// workload's nodes and HyperNodes (so a manifest's regex or label members count the same way).
TopologyReport TopologySpans(const SimWorkload& w, const std::vector<JobRecord>& records) {
  TopologyReport r;
  if (w.hypernodes.empty()) return r;
  r.enabled = true;
  HyperNodeForest forest;
  for (const auto& n : w.nodes) forest.UpsertNode(n->metadata.name, n->metadata.labels);
  for (const auto& hn : w.hypernodes) forest.Apply(hn);            // a refused one just holds no nodes
  std::vector<std::pair<int32_t, std::set<std::string>>> domains;  // by tier, lowest first
  for (auto& [name, v] : forest.Views())
    domains.emplace_back(v.tier, std::set<std::string>(v.nodes.begin(), v.nodes.end()));
  std::stable_sort(domains.begin(), domains.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::map<std::string, int32_t> min_member;
  for (const auto& j : w.jobs)
    min_member[j.pod_group->metadata.namespace_ + "/" + j.pod_group->metadata.name] =
        j.pod_group->spec.min_member;
  for (const JobRecord& j : records) {
    if (!j.all_started || j.nodes.empty()) continue;
    TopologyReport::JobSpan span{j.name, min_member[j.name], j.nodes.size(), 0};
    for (const auto& [tier, nodes] : domains) {
      if (std::includes(nodes.begin(), nodes.end(), j.nodes.begin(), j.nodes.end())) {
        span.tier = tier;
        break;
      }
    }
    ++r.span_histogram[span.tier];
    if (span.min_member > 1) {
      ++r.gangs;
      r.gangs_in_one_rack += span.tier == 1 ? 1 : 0;
    }
    r.jobs.push_back(std::move(span));
  }
  r.gang_rack_share =
      r.gangs > 0 ? static_cast<double>(r.gangs_in_one_rack) / static_cast<double>(r.gangs) : 0;
  return r;
}

}  // namespace

struct SimRun::State {
  RunOptions options;
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::unique_ptr<SimCluster> sim;
  std::unique_ptr<CacheRuntime> runtime;
  EventSink* events = nullptr;  // the simulated watch's destination: runtime->cache()
  std::unique_ptr<Scheduler> scheduler;
  SimWorkload workload;
  std::atomic<bool> stop{false};
  // Events the cache refused, noted by the simulated watch (the delivery callback).
  Mutex refused_mu;
  std::vector<std::string> refused GUARDED_BY(refused_mu);  // the first 20
  uint64_t refused_count GUARDED_BY(refused_mu) = 0;
};

SimRun::SimRun(RunOptions options) : s_(std::make_unique<State>()) {
  s_->options = std::move(options);
  s_->options.runtime.inline_execution = true;
  s_->sim = std::make_unique<SimCluster>(s_->options.sim, s_->clock);
  SimCluster* sim = s_->sim.get();
  s_->runtime = std::make_unique<CacheRuntime>(s_->options.runtime, s_->clock, sim, sim, sim, sim, sim);
  s_->events = &s_->runtime->cache();
  s_->sim->SetDeliver([st = s_.get()](EventType type, const k8s::Object& obj) {
    Status s = st->events->Apply(type, obj);
    if (s.ok()) return;
    MutexLock lock(&st->refused_mu);
    if (++st->refused_count <= 20) st->refused.push_back(s.ToString());
  });
  s_->scheduler = std::make_unique<Scheduler>(s_->runtime.get(), s_->options.scheduler);
}

SimRun::~SimRun() {
  s_->runtime->Stop();
  s_->sim->Shutdown();
}

CacheRuntime& SimRun::runtime() { return *s_->runtime; }
SimCluster& SimRun::cluster() { return *s_->sim; }
void SimRun::RequestStop() { s_->stop = true; }

Status SimRun::Load() {
  auto w = LoadWorkload(s_->options.workload, s_->options.trace);
  if (!w.ok()) return w.status();
  if (w->nodes.empty()) return Status::InvalidArgument("workload " + s_->options.workload + ": no nodes");
  if (Status t = sim::AddTopology(s_->options.topology, &*w); !t.ok()) return t;
  s_->workload = std::move(*w);
  s_->sim->Load(s_->workload);
  s_->runtime->Run();
  return Status::Ok();
}

RunReport SimRun::Run() {
  State& s = *s_;
  const RunOptions& o = s.options;
  RunReport report;
  report.workload = s.workload.name;
  const auto wall0 = WallClock::now();
  auto last_progress = wall0;
  const TimePoint t0 = s.clock->Now();
  TimePoint next_cycle = t0 + o.scheduler.period;
  const Duration limit = o.duration > Duration::zero() ? o.duration : o.max_duration;
  const Resource total = s.sim->total_allocatable();
  const double total_gpu = static_cast<double>(GpuMilli(total));
  const double total_cpu = static_cast<double>(total.milli_cpu());
  double gpu_integral = 0, cpu_integral = 0, sampled_seconds = 0;
  std::vector<double> open_ms, cycle_ms;
  double phase_sum[6] = {};
  struct QueueAcc {
    double deserved = 0, held = 0;
    size_t sessions = 0;
  };
  std::map<std::string, QueueAcc> queue_acc;  // contended sessions only
  std::map<std::string, QueueAcc> over_acc;   // cluster contended, queue demand above deserved
  FairnessAcc fair;
  CycleStats last{};
  bool marked = false;

  auto progress = [&](bool final_line) {
    if (o.progress == nullptr) return;
    const auto now = WallClock::now();
    if (!final_line && now - last_progress < o.progress_every) return;
    last_progress = now;
    SimStats st = s.sim->stats();
    const Resource running = s.sim->running_requests();
    const double t = Seconds(s.clock->Now() - t0);
    const uint64_t pending = st.jobs_submitted - st.jobs_running - st.jobs_finished;
    const std::string line = fmt::format(
        "t={:>8.0f}s  jobs {} pending / {} running / {} done of {}  GPU {:5.1f}%  CPU {:5.1f}%  binds "
        "{:.0f}/s  "
        "snapshot {:.3f} ms",
        t, pending, st.jobs_running, st.jobs_finished, s.workload.jobs.size(),
        total_gpu > 0 ? 100.0 * static_cast<double>(GpuMilli(running)) / total_gpu : 0.0,
        total_cpu > 0 ? 100.0 * static_cast<double>(running.milli_cpu()) / total_cpu : 0.0,
        t > 0 ? static_cast<double>(s.runtime->counters().binds_succeeded) / t : 0.0, last.open_ms);
    if (o.progress_tty) {
      *o.progress << "\r" << line << (final_line ? "\n" : "") << std::flush;
    } else {
      *o.progress << line << "\n" << std::flush;
    }
  };

  for (;;) {
    s.clock->Advance(o.step);
    s.runtime->RunDueWorkInline();
    if (!marked) {
      s.runtime->MarkInitialListsApplied();
      marked = true;
    }
    const TimePoint now = s.clock->Now();
    if (now >= next_cycle) {
      last = s.scheduler->RunOnce();
      s.runtime->RunDueWorkInline();
      const std::vector<QueueOutcome> outcomes = s.scheduler->last_queues();
      fair.Session(last, outcomes, s.scheduler->last_evictions(), GpuMilli(total));
      int64_t demand = 0;
      for (const QueueOutcome& q : outcomes) demand += GpuMilli(q.request);
      for (const QueueOutcome& q : outcomes) {
        if (GpuMilli(q.request) <= GpuMilli(q.allocated)) continue;  // nothing left waiting
        for (auto* m : {&queue_acc, &over_acc}) {
          if (m == &over_acc && (demand <= GpuMilli(total) || GpuMilli(q.deserved) >= GpuMilli(q.request)))
            continue;
          auto& acc = (*m)[q.name];
          acc.deserved += static_cast<double>(GpuMilli(q.deserved)) / 1000.0;
          acc.held += static_cast<double>(GpuMilli(q.allocated)) / 1000.0;
          ++acc.sessions;
        }
      }
      open_ms.push_back(last.open_ms);
      cycle_ms.push_back(last.total_ms);
      const double phases[] = {last.open_ms,  last.enqueue_ms, last.allocate_ms,
                               last.evict_ms, last.commit_ms,  last.close_ms};
      for (size_t i = 0; i < std::size(phases); ++i) phase_sum[i] += phases[i];
      if (o.on_cycle) o.on_cycle(last);
      const double dt = Seconds(o.scheduler.period);
      const Resource running = s.sim->running_requests();
      if (total_gpu > 0) gpu_integral += dt * static_cast<double>(GpuMilli(running)) / total_gpu;
      if (total_cpu > 0) cpu_integral += dt * static_cast<double>(running.milli_cpu()) / total_cpu;
      sampled_seconds += dt;
      next_cycle += o.scheduler.period;
    }
    progress(false);
    if (s.sim->AllJobsFinished()) {
      report.all_finished = true;
      break;
    }
    if (now - t0 >= limit) {
      report.stopped_by_limit = o.duration == Duration::zero();
      break;
    }
    if (s.stop) break;
    if (o.speed > 0) {
      const auto due = wall0 + std::chrono::duration_cast<WallClock::duration>(
                                   std::chrono::duration<double>(Seconds(now - t0) / o.speed));
      std::this_thread::sleep_until(due);
    }
  }
  progress(true);

  // Settle: no more faults; the watch delivers what is in flight and, when events were lost,
  // the next relist brings the rest; then the cache must equal the cluster.
  const TimePoint run_end = s.clock->Now();
  s.sim->StopFaults();
  const Duration settle = (o.sim.watch_drop_rate > 0 ? o.sim.relist_period : Duration::zero()) + 5 * o.step;
  for (Duration waited{}; waited < settle; waited += o.step) {
    s.clock->Advance(o.step);
    s.runtime->RunDueWorkInline();
  }
  report.simulated_seconds = Seconds(run_end - t0);
  report.wall_seconds = std::chrono::duration<double>(WallClock::now() - wall0).count();
  report.sessions = open_ms.size();
  report.snapshot_ms = Summarize(open_ms);
  report.session_ms = Summarize(cycle_ms);
  {
    const char* names[] = {"open", "enqueue", "allocate", "evict", "commit", "close"};
    for (size_t i = 0; i < std::size(names); ++i) {
      report.phase_ms_mean.emplace_back(names[i], open_ms.empty() ? 0.0 : phase_sum[i] / open_ms.size());
    }
  }
  report.gpu_utilization = sampled_seconds > 0 ? gpu_integral / sampled_seconds : 0;
  report.cpu_utilization = sampled_seconds > 0 ? cpu_integral / sampled_seconds : 0;
  RuntimeCounters c = s.runtime->counters();
  report.binds = c.binds_succeeded;
  report.bind_failures = c.binds_failed;
  report.evictions = c.evictions_ok;
  report.binds_per_sim_second =
      report.simulated_seconds > 0 ? static_cast<double>(c.binds_succeeded) / report.simulated_seconds : 0;
  report.sim = s.sim->stats();

  // Jobs.
  const TimePoint end = run_end;
  std::vector<double> completion, wait;
  std::map<std::string, QueueReport> queues;
  for (const auto& q : s.workload.queues) {
    queues[q->metadata.name].name = q->metadata.name;
    queues[q->metadata.name].weight = q->spec.weight;
  }
  TimePoint first_submit = end, last_finish = t0;
  for (const JobRecord& j : s.sim->jobs()) {
    ++report.jobs;
    QueueReport& q = queues[j.queue];
    q.name = j.queue;
    if (q.weight == 0) q.weight = 1;
    ++q.jobs;
    first_submit = std::min(first_submit, j.submit);
    if (j.finished) {
      ++report.jobs_finished;
      ++q.finished;
      completion.push_back(Seconds(*j.finished - j.submit));
      last_finish = std::max(last_finish, *j.finished);
    } else if (j.all_started) {
      ++report.jobs_running;
    } else {
      ++report.jobs_pending;
    }
    if (j.all_started) {
      wait.push_back(Seconds(*j.all_started - j.submit));
      q.gpu_seconds += static_cast<double>(j.gpus_milli) / 1000.0 *
                       Seconds((j.finished ? *j.finished : end) - *j.all_started);
    }
  }
  report.jobs_pending += s.workload.jobs.size() - report.jobs;  // not arrived yet
  report.jobs = s.workload.jobs.size();
  report.completion_s = Summarize(completion);
  report.wait_s = Summarize(wait);
  report.makespan_seconds = Seconds((report.all_finished ? last_finish : end) - std::min(first_submit, end));
  double weights = 0, gpu_seconds = 0;
  for (auto& [name, q] : queues) {
    if (q.jobs == 0) continue;
    weights += q.weight;
    gpu_seconds += q.gpu_seconds;
  }
  for (auto& [name, q] : queues) {
    if (q.jobs == 0) continue;
    if (auto a = queue_acc.find(name); a != queue_acc.end() && a->second.sessions > 0) {
      q.contended_sessions = a->second.sessions;
      q.deserved_gpus = a->second.deserved / static_cast<double>(a->second.sessions);
      q.allocated_gpus = a->second.held / static_cast<double>(a->second.sessions);
    }
    if (q.deserved_gpus > 0) q.share_error = q.allocated_gpus / q.deserved_gpus - 1;
    if (auto a = over_acc.find(name); a != over_acc.end() && a->second.sessions > 0) {
      q.over_share_sessions = a->second.sessions;
      q.over_share_deserved_gpus = a->second.deserved / static_cast<double>(a->second.sessions);
      q.over_share_held_gpus = a->second.held / static_cast<double>(a->second.sessions);
      if (q.over_share_deserved_gpus > 0)
        q.over_share_error = q.over_share_held_gpus / q.over_share_deserved_gpus - 1;
    }
    q.evicted = fair.evicted[name];
    q.evicted_for = fair.evicted_for[name];
    q.share_series = std::move(fair.series[name]);
    q.weight_fraction = weights > 0 ? q.weight / weights : 0;
    q.gpu_fraction = gpu_seconds > 0 ? q.gpu_seconds / gpu_seconds : 0;
    report.queues.push_back(q);
  }

  report.fairness = fair.Report(o.scheduler);
  report.topology = TopologySpans(s.workload, s.sim->jobs());
  for (const std::string& e : fair.check_errors) report.errors.push_back("evictions: " + e);

  // Errors.
  {
    MutexLock lock(&s.refused_mu);
    for (const auto& r : s.refused) report.errors.push_back("event refused: " + r);
    if (s.refused_count > s.refused.size()) {
      report.errors.push_back(
          fmt::format("... and {} more refused events", s.refused_count - s.refused.size()));
    }
  }
  if (report.sim.admission_refusals > 0) report.errors.push_back(KubeletRefusals(report.sim));
  if (Status inv = s.runtime->cache().CheckInvariants(); !inv.ok())
    report.errors.push_back("invariants: " + inv.message());
  if (std::string diff = s.runtime->cache().Compare(); !diff.empty()) {
    report.errors.push_back("cache differs from the cluster: " + diff);
  }
  return report;
}

std::string RunReport::ToJson() const {
  nlohmann::ordered_json j;
  j["workload"] = workload;
  j["simulated_seconds"] = simulated_seconds;
  j["wall_seconds"] = wall_seconds;
  j["makespan_seconds"] = makespan_seconds;
  j["all_finished"] = all_finished;
  j["stopped_by_limit"] = stopped_by_limit;
  j["jobs"] = {
      {"total", jobs}, {"finished", jobs_finished}, {"running", jobs_running}, {"pending", jobs_pending}};
  j["completion_seconds"] = PercentilesJson(completion_s);
  j["wait_seconds"] = PercentilesJson(wait_s);
  j["utilization"] = {{"gpu", gpu_utilization}, {"cpu", cpu_utilization}};
  j["binds"] = {{"ok", binds}, {"failed", bind_failures}, {"per_simulated_second", binds_per_sim_second}};
  j["evictions"] = evictions;
  j["sessions"] = sessions;
  j["snapshot_ms"] = PercentilesJson(snapshot_ms);
  j["session_ms"] = PercentilesJson(session_ms);
  auto phases = nlohmann::ordered_json::object();
  for (const auto& [name, ms] : phase_ms_mean) phases[name] = ms;
  j["session_phase_ms_mean"] = std::move(phases);
  auto qs = nlohmann::ordered_json::array();
  for (const auto& q : queues) {
    qs.push_back({{"name", q.name},
                  {"weight", q.weight},
                  {"weight_fraction", q.weight_fraction},
                  {"gpu_seconds", q.gpu_seconds},
                  {"gpu_fraction", q.gpu_fraction},
                  {"contended_sessions", q.contended_sessions},
                  {"over_share_sessions", q.over_share_sessions},
                  {"over_share_deserved_gpus", q.over_share_deserved_gpus},
                  {"over_share_held_gpus", q.over_share_held_gpus},
                  {"deserved_gpus", q.deserved_gpus},
                  {"allocated_gpus", q.allocated_gpus},
                  {"share_error", q.share_error},
                  {"evicted", q.evicted},
                  {"evicted_for", q.evicted_for},
                  {"share_series",
                   [&] {
                     auto a = nlohmann::ordered_json::array();
                     for (const auto& p : q.share_series)
                       a.push_back({p.session, p.deserved_gpus, p.held_gpus});
                     return a;
                   }()},
                  {"jobs", q.jobs},
                  {"finished", q.finished}});
  }
  j["queues"] = qs;
  j["fairness"] = {{"enqueue", fairness.enqueue},
                   {"reclaim", fairness.reclaim},
                   {"preempt", fairness.preempt},
                   {"enqueued", fairness.enqueued},
                   {"pipelined", fairness.pipelined},
                   {"evictions_reclaim", fairness.evictions_reclaim},
                   {"evictions_preempt", fairness.evictions_preempt},
                   {"eviction_refusals", fairness.eviction_refusals},
                   {"contended_sessions", fairness.contended_sessions},
                   {"jain_index", fairness.jain_index},
                   {"bursts", fairness.bursts},
                   {"unconverged", fairness.unconverged},
                   {"convergence_periods", PercentilesJson(fairness.convergence_periods)}};
  if (topology.enabled) {
    auto spans = nlohmann::ordered_json::object();
    for (const auto& [tier, n] : topology.span_histogram) spans[std::to_string(tier)] = n;
    auto jobs_json = nlohmann::ordered_json::array();
    for (const auto& s : topology.jobs)
      jobs_json.push_back(
          {{"name", s.name}, {"min_member", s.min_member}, {"nodes", s.nodes}, {"tier", s.tier}});
    j["topology"] = {{"gangs", topology.gangs},
                     {"gangs_in_one_rack", topology.gangs_in_one_rack},
                     {"gang_rack_share", topology.gang_rack_share},
                     {"span_histogram", spans},
                     {"jobs", jobs_json}};
  }
  j["cluster"] = {{"binds", sim.binds},
                  {"bind_faults", sim.bind_faults},
                  {"bind_conflicts", sim.bind_conflicts},
                  {"events_emitted", sim.events_emitted},
                  {"events_dropped", sim.events_dropped},
                  {"relists", sim.relists},
                  {"status_writes", sim.status_writes},
                  {"recorded_events", sim.recorded_events},
                  {"admission_refusals", sim.admission_refusals},
                  {"admission_refusal_reasons", sim.admission_refusal_reasons},
                  {"admission_refusal_examples", sim.admission_refusal_examples}};
  j["errors"] = errors;
  return j.dump();
}

std::string RunReport::ToText() const {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("workload {}: {} jobs, {:.0f} s simulated in {:.1f} s wall{}", workload, jobs,
                   simulated_seconds, wall_seconds, stopped_by_limit ? " (stopped at the time limit)" : ""));
  line(fmt::format("jobs: {} finished, {} running, {} pending", jobs_finished, jobs_running, jobs_pending));
  line(fmt::format(
      "makespan {:.0f} s; completion mean {:.1f} s, p95 {:.1f} s; wait mean {:.1f} s, p95 {:.1f} s",
      makespan_seconds, completion_s.mean, completion_s.p95, wait_s.mean, wait_s.p95));
  line(fmt::format("utilization: GPU {:.1f}%, CPU {:.1f}%", 100 * gpu_utilization, 100 * cpu_utilization));
  line(fmt::format(
      "binds: {} ok, {} failed ({:.1f}/simulated s); {} evictions; {} sessions, snapshot mean {:.3f} ms "
      "(max {:.3f}), session mean {:.3f} ms (max {:.3f})",
      binds, bind_failures, binds_per_sim_second, evictions, sessions, snapshot_ms.mean, snapshot_ms.max,
      session_ms.mean, session_ms.max));
  if (!phase_ms_mean.empty()) {
    std::string phases;
    for (const auto& [name, ms] : phase_ms_mean)
      phases += fmt::format("{}{} {:.3f}", phases.empty() ? "" : ", ", name, ms);
    line("session phases, mean ms: " + phases);
  }
  if (!queues.empty()) {
    line("queue share (GPU time used vs weight; while contended, GPUs deserved by weight vs held):");
    for (const auto& q : queues) {
      line(fmt::format(
          "  {:<16} weight {:>3} ({:5.1f}%)  GPU time {:5.1f}%  contended {:>5} s: deserved {:7.1f} held "
          "{:7.1f}  jobs {}/{} finished",
          q.name, q.weight, 100 * q.weight_fraction, 100 * q.gpu_fraction, q.contended_sessions,
          q.deserved_gpus, q.allocated_gpus, q.finished, q.jobs));
    }
  }
  const FairnessReport& f = fairness;
  if (f.enqueue || f.reclaim || f.preempt) {
    line(
        fmt::format("fairness (enqueue {}, reclaim {}, preempt {}): {} enqueued, {} pipelined, evictions {} "
                    "reclaim + {} preempt ({} refused)",
                    f.enqueue ? "on" : "off", f.reclaim ? "on" : "off", f.preempt ? "on" : "off", f.enqueued,
                    f.pipelined, f.evictions_reclaim, f.evictions_preempt, f.eviction_refusals));
    line(
        fmt::format("  contended {} sessions: Jain's index of held/deserved {:.3f}; {} bursts, converged in "
                    "p50 {:.0f} / p95 {:.0f} / max {:.0f} periods, {} unconverged at the end",
                    f.contended_sessions, f.jain_index, f.bursts, f.convergence_periods.p50,
                    f.convergence_periods.p95, f.convergence_periods.max, f.unconverged));
    for (const auto& q : queues) {
      if (q.contended_sessions == 0 && q.evicted == 0 && q.evicted_for == 0) continue;
      line(
          fmt::format("  {:<16} held/deserved {:+6.1f}%  demand above its share {:>5} s: held/deserved "
                      "{:+6.1f}%  evicted "
                      "{:>5}  evicted for it {:>5}",
                      q.name, 100 * q.share_error, q.over_share_sessions, 100 * q.over_share_error, q.evicted,
                      q.evicted_for));
    }
  }
  if (topology.enabled) {
    std::string spans;
    for (const auto& [tier, n] : topology.span_histogram)
      spans += fmt::format("{}{}: {}", spans.empty() ? "" : ", ",
                           tier == 0 ? "none" : "tier " + std::to_string(tier), n);
    line(fmt::format("topology: {} of {} gang jobs placed within one rack ({:.1f}%); jobs by span: {}",
                     topology.gangs_in_one_rack, topology.gangs, 100 * topology.gang_rack_share,
                     spans.empty() ? "none placed" : spans));
  }
  if (sim.bind_faults + sim.bind_conflicts + sim.events_dropped > 0) {
    line(fmt::format("injected faults: {} bind errors, {} conflicts, {} watch events lost ({} relists)",
                     sim.bind_faults, sim.bind_conflicts, sim.events_dropped, sim.relists));
  }
  if (errors.empty()) {
    line("errors: none (invariants hold; cache consistent with the cluster)");
  } else {
    line(fmt::format("errors: {}", errors.size()));
    for (const auto& e : errors) line("  " + e);
  }
  return out;
}

}  // namespace volcache::app
