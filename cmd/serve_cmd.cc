// `volcache serve`: run the cache and its workers against a Kubernetes cluster (kube/).
//   volcache serve --kubeconfig ~/.kube/config      (or in-cluster: the service account)
// SIGTERM/SIGINT end it in every phase (also during the initial sync): binds in flight
// finish, queued ones are not attempted, and a watchdog bounds the exit
// (--shutdown-grace-seconds).
//
// From the start: the HTTP admin surface (--listen, default 127.0.0.1:8080; --no-admin;
// /readyz 503 "syncing" until the cache synced). Once synced: the reference scheduling
// session at once and then every --schedule-period (--no-schedule for a cache only);
// SIGUSR2 dumps the cache to the log.
//
// Leader election (--leader-elect, default on; kube/leader_election.h, docs/ADMIN.md "High
// availability"): every replica syncs its cache (warm standby); only the holder of the Lease
// runs sessions, and the REST client refuses every write while this replica is not the
// leader. A leader that misses its renew deadline fails /healthz and exits with status 1
// ("leaderelection lost"), like kube-scheduler, to restart clean; SIGTERM releases the lease
// after the last write.
//
// Multi-scheduler sharding (--multi-scheduler / MULTI_SCHEDULER_ENABLE, kube/shard.h,
// docs/ADMIN.md "Sharding"): Volcano-compatible; every instance is active and keeps only the
// nodes and jobs the hash ring gives it. With leader election on, each member elects on its
// own Lease (<--leader-elect-resource-name>-<pod name>), so the members never wait for one
// another while two processes claiming one member name never both write.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "api/duration.h"
#include "api/fmt.h"
#include "api/mutex.h"
#include "app/daemon_wiring.h"
#include "cache/runtime.h"
#include "cmd/bind_flow_flags.h"
#include "cmd/command.h"
#include "cmd/flag_defaults.h"
#include "cmd/kube_metrics.h"
#include "cmd/yaml_config.h"
#include "kube/daemon.h"
#include "kube/leader_election.h"
#include "kube/rest_client.h"
#include "kube/shard.h"
#include "server/admin_flags.h"
#include "server/admin_server.h"
#include "session/scheduler.h"
#include "workers/bind_flow.h"

namespace volcache::cmd {
namespace {

// Defaults come from the option structs the flags fill (kube::DaemonOptions and what it holds,
// SchedulerOptions, kube::LeaderElectionOptions, AdminOptions): one source of truth.
struct ServeFlags {
  std::string kubeconfig;
  std::string context;
  double qps = kube::RestClientOptions{}.qps;
  int burst = kube::RestClientOptions{}.burst;
  int bind_concurrency = static_cast<int>(kube::RestBinderOptions{}.max_in_flight);
  std::string scheduler_name = RuntimeOptions{}.cache.scheduler_name;
  std::string default_queue = RuntimeOptions{}.cache.default_queue;
  int node_worker_threads = RuntimeOptions{}.node_worker_threads;
  BindFlowFlags bind_flow;
  bool eviction_api = false;
  int sync_timeout_seconds = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(kube::DaemonOptions{}.sync_timeout).count());
  bool no_schedule = false;
  std::string schedule_period = DurationFlagDefault(SchedulerOptions{}.period);
  std::string score{ScoreStrategyName(SchedulerOptions{}.session.score)};
  std::string actions = "allocate";
  bool no_admin = false;
  AdminOptions admin;
  double readyz_max_stale_seconds = 0;
  double shutdown_grace_seconds = 1.2;
  bool leader_elect = true;
  std::string lease_duration = DurationFlagDefault(kube::LeaderElectionOptions{}.lease_duration);
  std::string renew_deadline = DurationFlagDefault(kube::LeaderElectionOptions{}.renew_deadline);
  std::string retry_period = DurationFlagDefault(kube::LeaderElectionOptions{}.retry_period);
  std::string lease_namespace = kube::LeaderElectionOptions{}.lease_namespace;
  std::string lease_name = kube::LeaderElectionOptions{}.lease_name;
  bool multi_scheduler = false;  // given only when the flag was (else MULTI_SCHEDULER_ENABLE)
  std::string scheduler_num;
  std::string scheduler_pod_name;
};

// "Seconds since the last successful watch or list" from what the reflectors count today:
// contact is fresh when some reflector made progress (lists, pages, events, bookmarks) or
// none recorded a new stream error since the previous call. (A Reflector accessor with the
// exact last-event age replaces this approximation once it exists.)
class ContactTracker {
 public:
  explicit ContactTracker(kube::Connector* connector) : connector_(connector) {}
  double SecondsSinceContact() EXCLUDES(mu_) {
    uint64_t progress = 0, errors = 0;
    for (kube::ResourceKind kind : kube::kAllResourceKinds) {
      const kube::ReflectorStats st = connector_->reflector(kind).stats();
      progress += st.lists + st.list_pages + st.events + st.bookmarks;
      errors += st.stream_errors;
    }
    MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    if (progress != progress_ || errors == errors_) last_contact_ = now;
    progress_ = progress;
    errors_ = errors;
    return std::chrono::duration<double>(now - last_contact_).count();
  }

 private:
  kube::Connector* connector_;
  Mutex mu_;
  uint64_t progress_ GUARDED_BY(mu_) = 0;
  uint64_t errors_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point last_contact_ GUARDED_BY(mu_) = std::chrono::steady_clock::now();
};

// Ends the process (exit 0, log flushed) when the shutdown takes longer than `grace`.
class ShutdownWatchdog {
 public:
  // `last_words` runs before the exit (e.g. logs the final bind counts).
  ShutdownWatchdog(Duration grace, std::function<void()> last_words)
      : thread_([this, grace, last_words = std::move(last_words)] {
          const TimePoint deadline = SaturatingAdd(std::chrono::steady_clock::now(), grace);
          MutexLock lock(&mu_);
          while (!done_ && cv_.WaitUntil(&mu_, deadline)) {
          }
          if (done_) return;
          spdlog::warn("volcache serve: shutdown still running after {} ms; exiting now",
                       std::chrono::duration_cast<std::chrono::milliseconds>(grace).count());
          if (last_words) last_words();
          spdlog::default_logger()->flush();
          std::_Exit(0);
        }) {}
  ~ShutdownWatchdog() {
    {
      MutexLock lock(&mu_);
      done_ = true;
    }
    cv_.SignalAll();
    thread_.join();
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool done_ GUARDED_BY(mu_) = false;
  std::thread thread_;
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
  sub.add_option("--actions", f->actions,
                 "the session's actions, Volcano's list: allocate, plus any of enqueue, reclaim, preempt")
      ->capture_default_str();
  sub.add_flag("--no-admin", f->no_admin, "do not start the HTTP admin server");
  AddAdminFlags(sub, &f->admin);
  sub.add_option(
         "--readyz-max-stale-seconds", f->readyz_max_stale_seconds,
         "/readyz answers 503 \"stale\" after this long without a successful watch or list (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--shutdown-grace-seconds", f->shutdown_grace_seconds,
                 "on SIGTERM/SIGINT: binds in flight get this long to finish, then the process exits")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--kubeconfig", f->kubeconfig,
                 "kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube/config)");
  sub.add_option("--context", f->context, "kubeconfig context (default: current-context)");
  sub.add_option("--kube-api-qps", f->qps, "client-side QPS limit towards the API server")
      ->check(CLI::PositiveNumber);
  sub.add_option("--kube-api-burst", f->burst, "client-side burst towards the API server")
      ->check(CLI::PositiveNumber);
  sub.add_option(
         "--kube-bind-concurrency", f->bind_concurrency,
         "pod bindings in flight at once towards the API server (each still counts against --kube-api-qps)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--scheduler-name", f->scheduler_name, "pods of other schedulers count only when bound");
  sub.add_option("--default-queue", f->default_queue, "queue of PodGroups that name none");
  sub.add_option("--node-worker-threads", f->node_worker_threads, "node-sync workers")
      ->check(CLI::PositiveNumber);
  AddBindFlowFlags(sub, &f->bind_flow);
  sub.add_flag("--eviction-api", f->eviction_api,
               "evict through the Eviction API (PodDisruptionBudgets) instead of DELETE");
  sub.add_option("--sync-timeout-seconds", f->sync_timeout_seconds,
                 "give up when the initial lists take longer")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--leader-elect", f->leader_elect,
               "run leader election (a Lease): only the leader schedules and writes; standbys keep "
               "their caches synced (--leader-elect=false: a single replica that always writes)")
      ->capture_default_str();
  sub.add_option("--leader-elect-lease-duration", f->lease_duration,
                 "how long a standby waits after the last observed renewal before taking over")
      ->capture_default_str();
  sub.add_option("--leader-elect-renew-deadline", f->renew_deadline,
                 "the leader stops (and exits) when it could not renew for this long")
      ->capture_default_str();
  sub.add_option("--leader-elect-retry-period", f->retry_period, "between acquire / renew attempts")
      ->capture_default_str();
  sub.add_option("--leader-elect-resource-namespace", f->lease_namespace, "namespace of the Lease")
      ->capture_default_str();
  sub.add_option("--leader-elect-resource-name", f->lease_name, "name of the Lease")->capture_default_str();
  CLI::Option* multi_opt =
      sub.add_flag("--multi-scheduler", f->multi_scheduler,
                   "Volcano's multi-scheduler mode: this instance schedules only the nodes and jobs a "
                   "consistent hash ring gives it (default: $MULTI_SCHEDULER_ENABLE == true)");
  CLI::Option* num_opt =
      sub.add_option("--scheduler-num", f->scheduler_num,
                     "members of the ring, <base>-0 .. <base>-(N-1) (default: $SCHEDULER_NUM)");
  CLI::Option* pod_opt = sub.add_option(
      "--scheduler-pod-name", f->scheduler_pod_name,
      "this instance's member name, <base>-<i> (default: $SCHEDULER_POD_NAME, the StatefulSet pod)");
  AddConfigFlag(sub);
  return [f, multi_opt, num_opt, pod_opt]() -> int {
    if (Status s = ApplyActions(f->actions, std::make_unique<SchedulerOptions>().get()); !s.ok()) {
      std::cerr << "volcache serve: --" << s.message() << "\n";
      return 2;
    }
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
    opts.rest.max_idle_connections =
        std::max(opts.rest.max_idle_connections, opts.connector.binder.max_in_flight);
    opts.sync_timeout = std::chrono::seconds(f->sync_timeout_seconds);
    opts.clock = RealClock::Instance();  // the process's one clock: the runtime and the sync deadline

    auto period = ParseDuration(f->schedule_period);
    if (!period.ok() || *period < std::chrono::milliseconds(20)) {
      std::cerr << "volcache serve: --schedule-period: want a duration of at least 20ms, e.g. 1s\n";
      return 2;
    }
    // Multi-scheduler sharding: flags over Volcano's environment variables.
    kube::ShardSettings shard_settings;
    auto env = [](const char* name) -> std::optional<std::string> {
      const char* v = std::getenv(name);
      return v ? std::optional<std::string>(v) : std::nullopt;
    };
    shard_settings.enable_env = env(kube::kMultiSchedulerEnableEnv);
    shard_settings.num_env = env(kube::kSchedulerNumEnv);
    shard_settings.pod_name_env = env(kube::kSchedulerPodNameEnv);
    if (multi_opt->count() > 0) shard_settings.enable_flag = f->multi_scheduler;
    if (num_opt->count() > 0) shard_settings.num_flag = f->scheduler_num;
    if (pod_opt->count() > 0) shard_settings.pod_name_flag = f->scheduler_pod_name;
    auto shard_config = kube::ResolveShard(shard_settings);
    if (!shard_config.ok()) {
      std::cerr << "volcache serve: " << shard_config.status().message() << "\n";
      return 2;
    }
    std::shared_ptr<const kube::Shard> shard;
    if (shard_config->has_value()) {
      shard = std::make_shared<kube::Shard>(**shard_config);
      opts.connector.shard = shard;
      // The audit log tells the members apart by user agent.
      opts.rest.user_agent += " (" + shard->identity() + ")";
      spdlog::info("volcache serve: multi-scheduler: this is {} of {} members ({}-0 .. {}-{})",
                   shard->identity(), shard->config().num, shard->config().base, shard->config().base,
                   shard->config().num - 1);
    }
    std::string identity;
    if (f->leader_elect) {
      kube::LeaderElectionOptions le;
      le.lease_namespace = f->lease_namespace;
      le.lease_name = f->lease_name;
      // Sharded: one Lease per member, so that all members are active at once.
      if (shard) le.lease_name += "-" + shard->identity();
      for (auto [flag, text, out] :
           {std::tuple{"--leader-elect-lease-duration", &f->lease_duration, &le.lease_duration},
            std::tuple{"--leader-elect-renew-deadline", &f->renew_deadline, &le.renew_deadline},
            std::tuple{"--leader-elect-retry-period", &f->retry_period, &le.retry_period}}) {
        auto d = ParseDuration(*text);
        if (!d.ok()) {
          std::cerr << "volcache serve: " << flag << ": want a duration, e.g. 15s\n";
          return 2;
        }
        *out = *d;
      }
      if (Status s = kube::ValidateLeaderElection(le); !s.ok()) {
        std::cerr << "volcache serve: " << s.message() << "\n";
        return 2;
      }
      le.identity = identity = kube::DefaultIdentity();
      opts.leader_election = le;
      // The audit log tells replicas apart by user agent (they may share credentials).
      opts.rest.user_agent += " (" + identity + ")";
    }
    // Every thread started from here on inherits the blocked set; this thread waits for them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto poll_signal = [&signals](Duration wait) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
      timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
      return sigtimedwait(&signals, nullptr, &ts);  // the signal, or -1 on timeout
    };

    spdlog::info("volcache serve: {} (context {}), scheduler {}, score {}, actions {}", opts.config.server,
                 opts.config.context.empty() ? "in-cluster" : opts.config.context, f->scheduler_name,
                 f->score, f->actions);
    // Launch without waiting for the sync: the probes answer and signals count from here on.
    auto daemon = kube::KubeDaemon::Launch(std::move(opts));
    if (!daemon.ok()) {
      std::cerr << "volcache serve: " << daemon.status().ToString() << "\n";
      return 1;
    }
    CacheRuntime& runtime = (*daemon)->runtime();
    app::DaemonWiring wiring(&runtime);
    auto kube_metrics = std::make_unique<KubeMetrics>(&wiring.registry(), &(*daemon)->connector());
    kube::LeaderElector* elector = (*daemon)->elector();
    auto leader_metrics = std::make_unique<LeaderMetrics>(&wiring.registry(), elector);
    ContactTracker contact(&(*daemon)->connector());
    std::atomic<bool> synced{false};
    if (!f->no_admin) {
      AdminServer& admin = wiring.CreateAdmin(f->admin);
      admin.SetReadiness([&synced, &contact, max_stale = f->readyz_max_stale_seconds] {
        return ReadinessReason(synced.load(), contact.SecondsSinceContact(), max_stale);
      });
      admin.SetLiveness([elector]() -> std::string {
        if (elector && !elector->Healthy())
          return "leader election: renew deadline missed (leaderelection lost)";
        return "";
      });
      kube::Connector* connector = &(*daemon)->connector();
      admin.SetShard([connector] { return connector->ShardJson(); });
      if (Status s = wiring.StartAdmin(); !s.ok()) {
        std::cerr << "volcache serve: admin server: " << s.ToString() << "\n";
        (*daemon)->StopNow();
        return 1;
      }
      spdlog::info("volcache serve: admin on {}", wiring.admin()->url());
    }
    wiring.StartSignalDump();

    int sig = 0;
    Status sync = (*daemon)->WaitForSync([&] {
      sig = poll_signal(Duration::zero());
      return sig > 0;
    });
    std::unique_ptr<Scheduler> scheduler;
    bool lost = false;
    if (sync.ok()) {
      synced = true;
      if (!f->no_schedule) {
        SchedulerOptions so;
        so.period = *period;
        so.first_cycle_delay = Duration::zero();  // the first session right after the sync
        so.session.score =
            f->score == "least-allocated" ? ScoreStrategy::kLeastAllocated : ScoreStrategy::kBinpack;
        (void)ApplyActions(f->actions, &so);  // validated before connecting
        scheduler = std::make_unique<Scheduler>(&runtime, so);
        scheduler->SetCycleObserver([&wiring](const CycleStats& st) { wiring.ObserveSession(st); });
        // With leader election the session starts once this replica leads (below).
        if (!elector) scheduler->Start(RealClock::Instance());
      }
      bool scheduling = elector == nullptr;
      while (sig <= 0) {
        if (elector) {
          if (elector->state() == kube::LeaderState::kLost) {
            lost = true;
            break;
          }
          if (!scheduling && elector->IsLeader()) {
            scheduling = true;
            spdlog::info("volcache serve: leading as {}; scheduling", identity);
            if (scheduler) scheduler->Start(RealClock::Instance());
          }
        }
        // Not leading yet: look often, so the first session starts within 10 ms of the lease.
        sig = poll_signal(!elector     ? Duration(std::chrono::seconds(1))
                          : scheduling ? Duration(std::chrono::milliseconds(100))
                                       : Duration(std::chrono::milliseconds(10)));
      }
    } else if (sync.code() != StatusCode::kCancelled) {
      std::cerr << "volcache serve: " << sync.ToString() << "\n";
    }
    if (lost) spdlog::error("volcache serve: leaderelection lost; exiting with status 1 to restart clean");
    spdlog::info("volcache serve: {}; stopping (binds in flight finish first)",
                 lost      ? std::string("leaderelection lost")
                 : sig > 0 ? "signal " + std::to_string(sig)
                           : std::string("sync failed"));
    // Bounded exit: whatever blocks (a request to an unresponsive server), the process ends
    // within the grace period after the signal.
    auto log_counts = [&runtime](const char* what) {
      const RuntimeCounters c = runtime.counters();
      spdlog::info(
          "volcache serve: {}; binds ok {} failed {} not attempted {}, evictions ok {} failed {}, status "
          "writes {}",
          what, c.binds_succeeded, c.binds_failed, c.binds_cancelled, c.evictions_ok, c.evictions_failed,
          c.status_writes);
    };
    ShutdownWatchdog watchdog(
        std::chrono::milliseconds(static_cast<int64_t>(f->shutdown_grace_seconds * 1000)),
        [&] { log_counts("exiting"); });
    // The runtime first: a session waiting in Bind on a full channel returns at once.
    (*daemon)->StopNow();
    if (scheduler) scheduler->Stop();
    wiring.Stop();  // the dump, the admin server, the cache metrics
    kube_metrics.reset();
    leader_metrics.reset();
    scheduler.reset();
    log_counts("stopped");
    if (lost) return 1;
    return sync.ok() || sig > 0 ? 0 : 1;
  };
}

VOLCACHE_COMMAND("serve", "run the cache against a Kubernetes cluster (kubeconfig or in-cluster)", AddServe);

}  // namespace
}  // namespace volcache::cmd
