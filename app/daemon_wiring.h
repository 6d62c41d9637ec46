#pragma once
// DaemonWiring: what `volcache run` and `volcache serve` put around their CacheRuntime — the
// metrics registry, CacheMetrics on it, the optional HTTP admin server and the SIGUSR2 cache
// dump — built and torn down in one order for both commands.
//
// Owns: the registry (other metric families a command adds, e.g. kube/leader metrics, must be
// destroyed before this object), the CacheMetrics, the AdminServer (when created) and the
// SignalDump. The runtime is borrowed and must outlive Stop().
// Lifecycle: construct once the runtime exists → CreateAdmin (optional; configure the returned
// server) → StartAdmin → StartSignalDump → … → Stop (also in the destructor). Stop tears down
// in order: the dump, the admin server, then the cache metrics (before the runtime they observe).
// Failure: StartAdmin returns the admin server's error and drops the server; what that means
// (warn and continue, or exit) is the command's decision. A SignalDump that cannot start is
// logged as a warning ("SIGUSR2 dump not available") and the daemon runs without it.
// Thread-safety: all methods but the observers from one thread (the command's main thread);
// ObserveSnapshot/ObserveSession may be called from the session's thread until Stop().

#include <memory>

#include "api/status.h"
#include "server/admin_server.h"
#include "server/cache_metrics.h"
#include "server/metrics.h"
#include "server/signal_dump.h"
#include "session/scheduler.h"

namespace volcache::app {

class DaemonWiring {
 public:
  explicit DaemonWiring(CacheRuntime* runtime);
  ~DaemonWiring();  // Stop()
  DaemonWiring(const DaemonWiring&) = delete;
  DaemonWiring& operator=(const DaemonWiring&) = delete;

  metrics::Registry& registry() { return registry_; }
  // Null after Stop().
  CacheMetrics* cache_metrics() { return cache_metrics_.get(); }

  // Creates (does not start) the admin server on this runtime and registry; the caller may set
  // its readiness, liveness and shard hooks before StartAdmin.
  AdminServer& CreateAdmin(const AdminOptions& options);
  // Starts the admin server made by CreateAdmin. On failure the server is dropped (admin()
  // becomes null) and its status returned.
  Status StartAdmin();
  // Null when none was created or it failed to start.
  AdminServer* admin() { return admin_.get(); }

  // SIGUSR2 → the cache dump in the log; a warning when it cannot start.
  void StartSignalDump();

  // A session's snapshot time (what `run` records after every session).
  void ObserveSnapshot(const CycleStats& cycle);
  // A whole session: placements, binds, unschedulable jobs and the snapshot time (`serve`).
  void ObserveSession(const CycleStats& cycle);

  // The dump, the admin server, the cache metrics, in that order. Idempotent.
  void Stop();

 private:
  CacheRuntime* runtime_;
  metrics::Registry registry_;
  std::unique_ptr<CacheMetrics> cache_metrics_;
  std::unique_ptr<AdminServer> admin_;
  SignalDump dump_;
};

}  // namespace volcache::app
