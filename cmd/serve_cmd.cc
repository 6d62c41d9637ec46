// `volcache serve`: run the cache and its workers against a Kubernetes cluster (kube/).
//   volcache serve --kubeconfig ~/.kube/config      (or in-cluster: the service account)
// Exits cleanly on SIGTERM/SIGINT: binds in flight finish, then the watches stop.
//
// Once the cache synced: the HTTP admin surface (--listen, default 127.0.0.1:8080; --no-admin)
// and the reference scheduling session every --schedule-period (--no-schedule for a cache
// only); SIGUSR2 dumps the cache to the log.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "api/fmt.h"
#include "cmd/bind_flow_flags.h"
#include "cmd/command.h"
#include "kube/daemon.h"
#include "server/admin_flags.h"
#include "server/admin_server.h"
#include "server/cache_metrics.h"
#include "server/metrics.h"
#include "server/signal_dump.h"
#include "session/scheduler.h"
#include "sim/workload.h"
#include "workers/bind_flow.h"

namespace volcache::cmd {
namespace {

struct ServeFlags {
  std::string kubeconfig;
  std::string context;
  double qps = 2000;
  int burst = 2000;
  int bind_concurrency = static_cast<int>(kube::RestBinderOptions{}.max_in_flight);
  std::string scheduler_name = "volcano";
  std::string default_queue = "default";
  int node_worker_threads = 20;
  BindFlowFlags bind_flow;
  bool eviction_api = false;
  int sync_timeout_seconds = 300;
  bool no_schedule = false;
  std::string schedule_period = "1s";
  std::string score = "binpack";
  bool no_admin = false;
  AdminOptions admin;
};

// --kubeconfig, else in-cluster, else $KUBECONFIG, else ~/.kube/config.
Result<kube::KubeConfig> ResolveConfig(const ServeFlags& f) {
  if (!f.kubeconfig.empty()) return kube::LoadKubeConfig(f.kubeconfig, f.context);
  if (std::getenv("KUBERNETES_SERVICE_HOST")) return kube::InClusterConfig();
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first(env);
    first = first.substr(0, first.find(':'));
    return kube::LoadKubeConfig(first, f.context);
  }
  if (const char* home = std::getenv("HOME")) {
    std::string path = std::string(home) + "/.kube/config";
    if (std::filesystem::exists(path)) return kube::LoadKubeConfig(path, f.context);
  }
  return Status::FailedPrecondition(
      "no cluster configuration: pass --kubeconfig PATH, set KUBECONFIG, or run in a pod (service account)");
}

CommandRunner AddServe(CLI::App& sub) {
  auto f = std::make_shared<ServeFlags>();
  sub.add_flag("--no-schedule", f->no_schedule, "cache only: do not run the reference scheduling session");
  sub.add_option("--schedule-period", f->schedule_period, "session period")->capture_default_str();
  sub.add_option("--score", f->score, "binpack | least-allocated")
      ->check(CLI::IsMember({"binpack", "least-allocated"}))
      ->capture_default_str();
  sub.add_flag("--no-admin", f->no_admin, "do not start the HTTP admin server");
  AddAdminFlags(sub, &f->admin);
  sub.add_option("--kubeconfig", f->kubeconfig, "kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube/config)");
  sub.add_option("--context", f->context, "kubeconfig context (default: current-context)");
  sub.add_option("--kube-api-qps", f->qps, "client-side QPS limit towards the API server")->check(CLI::PositiveNumber);
  sub.add_option("--kube-api-burst", f->burst, "client-side burst towards the API server")->check(CLI::PositiveNumber);
  sub.add_option("--kube-bind-concurrency", f->bind_concurrency,
                 "pod bindings in flight at once towards the API server (each still counts against --kube-api-qps)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--scheduler-name", f->scheduler_name, "pods of other schedulers count only when bound");
  sub.add_option("--default-queue", f->default_queue, "queue of PodGroups that name none");
  sub.add_option("--node-worker-threads", f->node_worker_threads, "node-sync workers")->check(CLI::PositiveNumber);
  AddBindFlowFlags(sub, &f->bind_flow);
  sub.add_flag("--eviction-api", f->eviction_api, "evict through the Eviction API (PodDisruptionBudgets) instead of DELETE");
  sub.add_option("--sync-timeout-seconds", f->sync_timeout_seconds, "give up when the initial lists take longer")
      ->check(CLI::PositiveNumber);
  return [f]() -> int {
    auto config = ResolveConfig(*f);
    if (!config.ok()) {
      std::cerr << "volcache serve: " << config.status().message() << "\n";
      return 2;
    }
    kube::DaemonOptions opts;
    opts.config = std::move(config).value();
    opts.rest.qps = f->qps;
    opts.rest.burst = f->burst;
    opts.runtime.cache.scheduler_name = f->scheduler_name;
    opts.runtime.cache.default_queue = f->default_queue;
    opts.runtime.node_worker_threads = f->node_worker_threads;
    if (Status s = ApplyBindFlowFlags(f->bind_flow, &opts.runtime.bind_flow); !s.ok()) {
      std::cerr << "volcache serve: " << s.message() << "\n";
      return 2;
    }
    opts.connector.use_eviction_api = f->eviction_api;
    opts.connector.binder.max_in_flight = static_cast<size_t>(f->bind_concurrency);
    // Every binding in flight can keep its keep-alive connection between bindings.
    opts.rest.max_idle_connections = std::max(opts.rest.max_idle_connections, opts.connector.binder.max_in_flight);
    opts.sync_timeout = std::chrono::seconds(f->sync_timeout_seconds);

    auto period = sim::ParseDuration(f->schedule_period);
    if (!period.ok() || *period < std::chrono::milliseconds(20)) {
      std::cerr << "volcache serve: --schedule-period: want a duration of at least 20ms, e.g. 1s\n";
      return 2;
    }
    // Every thread started from here on inherits the blocked set; this thread waits for them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    spdlog::info("volcache serve: {} (context {}), scheduler {}", opts.config.server,
                 opts.config.context.empty() ? "in-cluster" : opts.config.context, f->scheduler_name);
    auto daemon = kube::KubeDaemon::Start(std::move(opts));
    if (!daemon.ok()) {
      std::cerr << "volcache serve: " << daemon.status().ToString() << "\n";
      return 1;
    }
    CacheRuntime& runtime = (*daemon)->runtime();
    metrics::Registry registry;
    auto cache_metrics = std::make_unique<CacheMetrics>(&registry, &runtime);
    std::unique_ptr<AdminServer> admin;
    if (!f->no_admin) {
      admin = std::make_unique<AdminServer>(f->admin, &runtime, &registry);
      if (Status s = admin->Start(); !s.ok()) {
        std::cerr << "volcache serve: admin server: " << s.ToString() << "\n";
        (*daemon)->Stop();
        return 1;
      }
      spdlog::info("volcache serve: admin on {}", admin->url());
    }
    SignalDump dump(LogCacheDumpCallback(&runtime));
    if (Status s = dump.Start(); !s.ok()) spdlog::warn("SIGUSR2 dump not available: {}", s.ToString());
    std::unique_ptr<Scheduler> scheduler;
    if (!f->no_schedule) {
      SchedulerOptions so;
      so.period = *period;
      so.session.score = f->score == "least-allocated" ? ScoreStrategy::kLeastAllocated : ScoreStrategy::kBinpack;
      scheduler = std::make_unique<Scheduler>(&runtime, so);
      scheduler->Start(RealClock::Instance());
    }
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("volcache serve: signal {}; stopping (binds in flight finish first)", sig);
    if (scheduler) scheduler->Stop();
    (*daemon)->Stop();
    dump.Stop();
    if (admin) admin->Stop();
    admin.reset();
    cache_metrics.reset();
    scheduler.reset();
    const RuntimeCounters c = (*daemon)->runtime().counters();
    spdlog::info("volcache serve: stopped; binds ok {} failed {}, evictions ok {} failed {}, status writes {}",
                 c.binds_succeeded, c.binds_failed, c.evictions_ok, c.evictions_failed, c.status_writes);
    return 0;
  };
}

VOLCACHE_COMMAND("serve", "run the cache against a Kubernetes cluster (kubeconfig or in-cluster)", AddServe);

}  // namespace
}  // namespace volcache::cmd
