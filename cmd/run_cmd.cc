// `volcache run`: the daemon's main job on its embedded simulated cluster (app/run_driver.h) —
// a time-scaled slice of a real trace by default, a live progress line on stderr, the HTTP
// admin surface while it runs, and a report at the end (text, or JSON with --report json).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>

#include "api/duration.h"
#include "app/daemon_wiring.h"
#include "app/run_driver.h"
#include "cmd/bind_flow_flags.h"
#include "cmd/command.h"
#include "cmd/flag_defaults.h"
#include "cmd/yaml_config.h"
#include "server/admin_flags.h"
#include "sim/workload.h"

namespace volcache::cmd {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

struct RunFlags {
  app::RunOptions run;
  AdminOptions admin;
  bool no_admin = false;
  std::string duration;
  // Defaults from the option structs (sim::SimOptions, SchedulerOptions, SessionOptions).
  std::string start_delay = DurationFlagDefault(run.sim.start_delay);
  std::string period = DurationFlagDefault(run.scheduler.period);
  std::string watch_latency = DurationFlagDefault(run.sim.watch_latency);
  std::string report = "text";
  std::string score{ScoreStrategyName(run.scheduler.session.score)};
  bool quiet = false;
  bool shared_pool = false;
  bool no_reclaim = false;
  std::string topology;  // --topology racks:N,spines:M (checked at parse time)
  std::string actions;   // empty: "allocate", or with --shared-pool all four (reclaim unless --no-reclaim)
  BindFlowFlags bind_flow;
  // --jobs and --skip: unless given (command line or --config), the workload's own slice
  // (sim::DefaultTraceSlice), so that each trace's default selects jobs.
  CLI::Option* jobs_option = nullptr;
  CLI::Option* skip_option = nullptr;
};

// "20000 for trace:philly, 4000 for trace:alibaba" (or the same for --jobs), for --help.
std::string TraceSliceDefaults(size_t sim::TraceSlice::*field) {
  std::string out;
  for (const char* trace : {"trace:philly", "trace:alibaba"}) {
    if (!out.empty()) out += ", ";
    out += std::to_string((*sim::DefaultTraceSlice(trace)).*field) + " for " + trace;
  }
  return out;
}

// A duration flag is checked when it is parsed (on the command line or from --config), so that
// its error names the flag, and from a file the key and its line. `zero`: "0" is accepted
// (--duration: until every job finished).
CLI::Validator DurationCheck(std::chrono::nanoseconds min = {}, bool zero = false) {
  return CLI::Validator(
      [min, zero](std::string& v) -> std::string {
        if (zero && v == "0") return {};
        auto d = ParseDuration(v);
        if (!d.ok()) return d.status().message();
        if (*d < min) return "at least " + DurationFlagDefault(min);
        return {};
      },
      "DURATION");
}

Status ApplyDurations(RunFlags& f) {
  if (!f.duration.empty() && f.duration != "0") {
    auto d = ParseDuration(f.duration);
    if (!d.ok()) return d.status().WithPrefix("--duration");
    f.run.duration = *d;
  }
  auto sd = ParseDuration(f.start_delay);
  if (!sd.ok()) return sd.status().WithPrefix("--start-delay");
  f.run.sim.start_delay = *sd;
  auto wl = ParseDuration(f.watch_latency);
  if (!wl.ok()) return wl.status().WithPrefix("--watch-latency");
  f.run.sim.watch_latency = *wl;
  auto p = ParseDuration(f.period);
  if (!p.ok()) return p.status().WithPrefix("--schedule-period");
  if (*p < std::chrono::milliseconds(20)) return Status::InvalidArgument("--schedule-period: at least 20ms");
  f.run.scheduler.period = *p;
  return Status::Ok();
}

int Run(RunFlags& f) {
  if (Status s = ApplyDurations(f); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  if (Status s = ApplyBindFlowFlags(f.bind_flow, &f.run.runtime.bind_flow); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  if (auto slice = sim::DefaultTraceSlice(f.run.workload)) {
    if (f.skip_option->count() == 0) f.run.trace.skip = slice->skip;
    if (f.jobs_option->count() == 0) f.run.trace.max_jobs = slice->max_jobs;
  }
  f.run.runtime.cache.scheduler_name = f.run.trace.scheduler_name;
  f.run.scheduler.session.score =
      f.score == "least-allocated" ? ScoreStrategy::kLeastAllocated : ScoreStrategy::kBinpack;
  if (f.shared_pool) {  // fairness through the session: enqueue, reclaim, preempt, pipelining
    f.run.trace.shared_pool = true;
    f.run.scheduler.enqueue = f.run.scheduler.preempt = true;
    f.run.scheduler.reclaim = !f.no_reclaim;
    f.run.scheduler.session.pipeline = true;
    f.run.scheduler.check_evictions = true;
  }
  if (!f.topology.empty()) {
    auto t = sim::ParseTopology(f.topology);
    if (!t.ok()) {  // the validator already refused it; kept for a --config value
      std::cerr << "--topology: " << t.status().message() << "\n";
      return 2;
    }
    t->mode = f.run.topology.mode;
    t->highest_tier = f.run.topology.highest_tier;
    f.run.topology = *t;
  }
  if (!f.actions.empty()) {
    if (Status s = ApplyActions(f.actions, &f.run.scheduler); !s.ok()) {
      std::cerr << "--" << s.message() << "\n";
      return 2;
    }
  }
  spdlog::info("volcache run: workload {}{}, score {}, schedule period {}, actions {}", f.run.workload,
               sim::DefaultTraceSlice(f.run.workload)
                   ? fmt::format(" (skip {}, jobs {})", f.run.trace.skip, f.run.trace.max_jobs)
                   : std::string(),
               ScoreStrategyName(f.run.scheduler.session.score), f.period, ActionsName(f.run.scheduler));
  if (!f.quiet) {
    f.run.progress = &std::cerr;
    f.run.progress_tty = isatty(STDERR_FILENO) == 1;
  }

  std::unique_ptr<app::DaemonWiring> wiring;
  app::SimRun* self = nullptr;
  // After every session: its snapshot time to the metrics, and SIGINT/SIGTERM → stop.
  f.run.on_cycle = [&](const CycleStats& c) {
    if (wiring) wiring->ObserveSession(c);
    if (g_stop.load() && self != nullptr) self->RequestStop();
  };
  app::SimRun run(f.run);
  self = &run;
  if (Status s = run.Load(); !s.ok()) {
    std::cerr << "volcache run: " << s.message() << "\n";
    return 2;
  }
  wiring = std::make_unique<app::DaemonWiring>(&run.runtime());
  if (!f.no_admin) {
    wiring->CreateAdmin(f.admin);
    if (Status s = wiring->StartAdmin(); !s.ok()) {
      spdlog::warn("admin server not started: {} (the run continues without it)", s.ToString());
    } else if (!f.quiet) {
      std::cerr << "admin: " << wiring->admin()->url() << " (/metrics, /readyz, /debug/cache)\n";
    }
  }
  wiring->StartSignalDump();
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);

  app::RunReport report = run.Run();
  wiring->Stop();  // the dump, the admin server, the metrics: before the runtime they observe
  self = nullptr;
  if (f.report == "json") {
    std::cout << report.ToJson() << "\n";
  } else {
    std::cout << report.ToText();
  }
  return report.errors.empty() ? 0 : 1;
}

CommandRunner AddRun(CLI::App& sub) {
  auto f = std::make_shared<RunFlags>();
  // The bundled workload: a time-scaled slice of the Philly trace on a tenth of its cluster,
  // arrivals ten times denser than in 2017, for one simulated hour. The slice (--skip, --jobs)
  // is each trace's own unless given.
  f->run.trace.time_scale = 60;
  f->run.trace.arrival_scale = 10;
  f->run.trace.cluster_scale = 0.1;
  f->duration = "1h";
  sub.add_option("--workload", f->run.workload, "trace:philly | trace:alibaba | a manifest file (YAML/JSON)")
      ->capture_default_str();
  f->jobs_option = sub.add_option(
      "--jobs", f->run.trace.max_jobs,
      "jobs of the trace to run (default: " + TraceSliceDefaults(&sim::TraceSlice::max_jobs) + ")");
  f->skip_option = sub.add_option("--skip", f->run.trace.skip,
                                  "jobs of the trace (in arrival order) to skip first (default: " +
                                      TraceSliceDefaults(&sim::TraceSlice::skip) + ")");
  sub.add_option("--time-scale", f->run.trace.time_scale, "trace seconds per simulated second")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub.add_option("--arrival-scale", f->run.trace.arrival_scale,
                 "arrivals compressed this much more than run times")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub.add_option("--cluster-scale", f->run.trace.cluster_scale,
                 "philly: share of each virtual cluster's nodes to simulate")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub.add_option("--duration", f->duration, "simulated time to run (e.g. 30m); 0 = until every job finished")
      ->check(DurationCheck({}, true))
      ->capture_default_str();
  sub.add_option("--speed", f->run.speed, "simulated seconds per wall second (0 = as fast as possible)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--report", f->report, "text | json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub.add_flag("-q,--quiet", f->quiet, "no progress line");
  sub.add_option("--seed", f->run.sim.seed, "fault-injection seed")->capture_default_str();
  sub.add_option("--bind-error-rate", f->run.sim.bind_error_rate, "share of binds the cluster fails")
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("--bind-conflict-rate", f->run.sim.bind_conflict_rate, "share of binds answered 409")
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("--watch-drop-rate", f->run.sim.watch_drop_rate,
                 "share of watch events lost until the next relist")
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("--watch-latency", f->watch_latency, "write → watch event delay")
      ->check(DurationCheck())
      ->capture_default_str();
  sub.add_option("--start-delay", f->start_delay, "bind → pod Running delay")
      ->check(DurationCheck())
      ->capture_default_str();
  sub.add_option("--schedule-period", f->period, "session period")
      ->check(DurationCheck(std::chrono::milliseconds(20)))
      ->capture_default_str();
  sub.add_option("--score", f->score, "binpack | least-allocated")
      ->check(CLI::IsMember({"binpack", "least-allocated"}))
      ->capture_default_str();
  sub.add_option("--scheduler-name", f->run.trace.scheduler_name, "pods' schedulerName")
      ->capture_default_str();
  AddBindFlowFlags(sub, &f->bind_flow);
  sub.add_flag("--shared-pool", f->shared_pool,
               "philly: every queue shares all nodes (weights from the VC sizes, no capability); the session "
               "enqueues, reclaims, preempts and pipelines");
  sub.add_flag("--no-reclaim", f->no_reclaim,
               "with --shared-pool: no reclaim between queues (for comparison)");
  sub.add_option("--actions", f->actions,
                 "the session's actions, Volcano's list: allocate, plus any of enqueue, reclaim, preempt "
                 "(default: allocate; with --shared-pool: all four)");
  sub.add_option("--topology", f->topology,
                 "racks:N[,spines:M]: HyperNodes over the simulated nodes in name order, racks of N nodes "
                 "(tier 1) and spines of M racks (tier 2); the report shows each job's span tier")
      ->check(CLI::Validator(
          [](std::string& v) {
            auto t = sim::ParseTopology(v);
            return t.ok() ? std::string() : t.status().message();
          },
          "racks:N[,spines:M]"));
  sub.add_option("--topology-mode", f->run.topology.mode,
                 "with --topology: what every gang job (minMember > 1) asks for: hard | soft | none")
      ->check(CLI::IsMember({"hard", "soft", "none"}))
      ->capture_default_str();
  sub.add_option("--topology-tier", f->run.topology.highest_tier,
                 "with --topology: the gangs' networkTopology.highestTierAllowed")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  sub.add_flag("--no-admin", f->no_admin, "do not start the HTTP admin server");
  AddAdminFlags(sub, &f->admin);
  AddConfigFlag(sub);
  return [f]() -> int { return Run(*f); };
}

VOLCACHE_COMMAND("run", "run the cache and the reference scheduler on the embedded simulated cluster",
                 AddRun);

}  // namespace
}  // namespace volcache::cmd
