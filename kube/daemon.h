#pragma once
// KubeDaemon: everything `volcache serve` runs against a cluster — the REST client, the
// Connector (reflectors + REST writers) and the CacheRuntime — started in the right order
// and stopped in the reverse one. The seam for other surfaces (the HTTP admin server, a
// scheduling session): they borrow runtime() and connector() after Start() returns.
//
// Leader election (optional, DaemonOptions::leader_election; kube/leader_election.h): the
// elector runs from Launch() on a REST client and a timer thread of its own; every write of
// the connector's client (binds, evictions, status, events, queue creation) passes its gate
// (RestClientOptions::write_gate), so a standby keeps its cache synced and writes nothing.
// Stop() releases the lease after the runtime and the connector stopped (no write of ours
// can follow the release).
//
// Thread-safety: Start/Stop from one thread; runtime()/connector()/elector() are safe to use
// from any thread between them (see their own contracts).

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/status.h"
#include "cache/runtime.h"
#include "kube/connector.h"
#include "kube/kubeconfig.h"
#include "kube/leader_election.h"
#include "kube/rest_client.h"

namespace volcache::kube {

struct DaemonOptions {
  KubeConfig config;
  RestClientOptions rest;
  ConnectorOptions connector;
  RuntimeOptions runtime;
  Duration sync_timeout = std::chrono::minutes(5);       // WaitForCacheSync
  std::optional<LeaderElectionOptions> leader_election;  // unset: always write (no HA)
  // The runtime's clock, and the one the sync deadline is measured on. nullptr:
  // RealClock::Instance().
  std::shared_ptr<Clock> clock;
};

class KubeDaemon {
 public:
  // Builds the client, connector and runtime, runs them and waits for the cache to sync.
  // On error everything started is stopped again. Launch() + WaitForSync().
  static Result<std::unique_ptr<KubeDaemon>> Start(DaemonOptions options);
  // Builds the client, connector and runtime and runs them (the initial LISTs start, in
  // parallel); returns without waiting for them, so the caller can serve probes and handle
  // signals during the sync.
  static Result<std::unique_ptr<KubeDaemon>> Launch(DaemonOptions options);
  // Waits for the cache to sync. DeadlineExceeded after options.sync_timeout (on options.clock),
  // naming the resources whose first LIST is missing; Cancelled as soon as `cancelled`
  // (polled every ~50 ms; may be null) says so. Does not stop anything on error.
  Status WaitForSync(const std::function<bool()>& cancelled = nullptr);
  ~KubeDaemon();  // Stop()

  CacheRuntime& runtime() { return *runtime_; }
  Connector& connector() { return *connector_; }
  // Null without leader election.
  LeaderElector* elector() { return elector_.get(); }
  // CacheRuntime::Stop (binds in flight finish), then the connector. Idempotent.
  void Stop();
  // Stop() for a prompt exit: binds queued and not yet dispatched are dropped (forgotten,
  // never half-done), binds in flight finish (CacheRuntime::StopNow).
  void StopNow();

 private:
  KubeDaemon() = default;
  std::string server_;
  Duration sync_timeout_{};
  std::shared_ptr<Clock> clock_;
  // Declared before the connector and runtime: the write gate they call outlives them.
  std::shared_ptr<Clock> elector_clock_;
  std::unique_ptr<RestClient> elector_client_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<Connector> connector_;
  std::unique_ptr<CacheRuntime> runtime_;
  bool stopped_ = false;
};

}  // namespace volcache::kube
