#pragma once
// AdminServer: volcache's HTTP admin surface (SPEC §8; endpoints and metrics in
// docs/ADMIN.md).
//
//   GET /healthz          200 "ok" while the process serves HTTP, unless SetLiveness says
//                         otherwise (503 with its reason: a leader past its renew deadline)
//   GET /readyz           200 "ok" once `ready()` is true (the cache synced), else 503
//   GET /metrics          the registry in the Prometheus text format 0.0.4 (prometheus-cpp)
//   GET /debug/cache      SchedulerCache::Dump() (SPEC §8 JSON)
//   GET /debug/snapshot   a fresh snapshot: counts and how long it took, plus the snapshot
//                         itself (DumpClusterInfo) unless ?summary=1
//   GET /debug/compare    the cache against the cluster source (SchedulerCache::Compare) and
//                         the accounting invariants (CheckInvariants)
//   GET /debug/shard      what this instance owns in multi-scheduler mode (SetShard's JSON;
//                         503 when none is attached)
// HEAD works wherever GET does. Errors are JSON `{"error":"..."}`: 401 without the bearer
// token (when one is configured), 404 unknown path, 405 other methods on a known path (with
// `Allow`), 413 request bodies over `max_body_bytes`, 503 not ready / no cache attached.
// /healthz and /readyz never require the token: probes (kubelet, load balancers) carry no
// credentials, and the answers reveal nothing but liveness.
//
// Binds to loopback by default; anything wider is the operator's explicit choice
// (`--listen 0.0.0.0:8080`), ideally with `--admin-token-file`.
//
// Usage (the daemon commands):
//   metrics::Registry registry;
//   CacheMetrics cache_metrics(&registry, &runtime);           // session: ObserveSnapshot(d)
//   AdminServer admin(options, &runtime, &registry, [&] { return runtime.synced(); });
//   if (Status s = admin.Start(); !s.ok()) { ...exit... }     // admin.port() is the real port
//   ... run ...
//   admin.Stop();                                              // also in the destructor
//
// Borrows: the runtime and the registry (either may be null: the endpoints that need them
// answer 503) must outlive the server, or at least Stop().
// Thread-safety: Start/Stop/port may be called from any thread; requests are served on the
// server's own threads (`threads`), concurrently.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "api/status.h"

namespace volcache {

class CacheRuntime;
namespace metrics {
class Registry;
}

struct AdminOptions {
  // host:port; "[::1]:8080" for IPv6. Port 0 picks a free port (see AdminServer::port()).
  std::string listen = "127.0.0.1:8080";
  // When non-empty, every endpoint but /healthz and /readyz needs
  // `Authorization: Bearer <token>`.
  std::string bearer_token;
  size_t max_body_bytes = 64 * 1024;  // larger bodies get 413
  int threads = 4;                    // requests served concurrently
};

// Splits "host:port" / "[v6]:port". InvalidArgument naming the input when malformed or the
// port is out of 0..65535.
Status ParseListenAddress(const std::string& listen, std::string* host, int* port);

// The /readyz rule of `serve` (docs/ADMIN.md, "Readiness"). Inputs: whether the cache has
// synced, and the seconds since the last successful watch or list of the API server
// (negative: unknown). Answers "" when ready, else the reason /readyz gives with its 503:
//   not synced                                           -> "syncing"
//   max_stale_seconds > 0 and silence > max_stale_seconds -> "stale: no successful watch or
//                                                            list for N s"
// Otherwise ready: a cache serving a briefly unreachable API server keeps scheduling on
// what it knows.
std::string ReadinessReason(bool synced, double seconds_since_contact, double max_stale_seconds);

class AdminServer {
 public:
  // `ready` decides /readyz; null means runtime->synced() (false without a runtime).
  AdminServer(AdminOptions options, CacheRuntime* runtime, metrics::Registry* registry,
              std::function<bool()> ready = nullptr);
  ~AdminServer();  // Stop()
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Replaces the readiness rule: `reason` answers "" when ready, else why not (the 503's
  // plain-text body, e.g. "syncing"). Call before Start().
  void SetReadiness(std::function<std::string()> reason);
  // The /healthz rule: `reason` answers "" when alive, else the 503's plain-text body. Call
  // before Start(). Unset: always alive.
  void SetLiveness(std::function<std::string()> reason);
  // The /debug/shard answer: `json` returns the JSON document (kube::Connector::ShardJson).
  // Call before Start(). Unset: 503.
  void SetShard(std::function<std::string()> json);

  // Binds and starts serving on a background thread; returns once requests are accepted.
  // InvalidArgument for a bad address, Unavailable when the address cannot be bound.
  // Starting twice is FailedPrecondition.
  Status Start();
  // Stops accepting, finishes the requests in progress and joins the threads. Idempotent.
  void Stop();
  // The bound port (the ephemeral one when the options said 0); 0 before Start.
  int port() const;
  // "http://host:port" for logs and tests.
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache
