#pragma once
// RestClient: HTTP(S) to one Kubernetes API server, on cpp-httplib, and on libcurl for watch
// streams (both kept out of this header).
//
// Owns a pool of keep-alive connections (requests reuse idle ones; a connection that failed
// is discarded; an idle one is retired after `idle_timeout` and checked before reuse: one the
// server closed — readable EOF or unsolicited bytes — is dropped), the client-side rate
// limits (token buckets: `qps`, `burst`, defaults 2000/2000 like --kube-api-qps/--kube-api-
// burst, for ordinary requests; `status_qps`/`status_burst` for RequestClass::kStatus, which
// never takes capacity from the main bucket, so status writes cannot delay binds), TLS
// material (CA, client certificate, insecure-skip-tls-verify) and the bearer token (a token
// file is re-read every minute, as projected service-account tokens rotate).
//
// Do() returns the server's answer for every HTTP status; an error Status only when no
// answer arrived (Unavailable: connection refused/reset; DeadlineExceeded: timeout). A 429
// with Retry-After is retried (up to `max_retries`, waiting at most `max_retry_after` each):
// the server did not act on the request. A request on a reused keep-alive connection that
// failed before any response arrived (the server closed the idle connection under us) is
// retried once on a fresh connection. Nothing else is retried here — callers decide,
// because a POST that timed out may have been applied. ApiError() turns a non-2xx answer
// into a Status naming the operation, the HTTP status and the Kubernetes Status message.
//
// metrics() is a snapshot of requests by verb and HTTP code (0: no answer), latency
// histograms per verb and the total time spent waiting on the client-side rate limiters.
//
// Stream() runs one streaming GET (watch) on its own connection, read with libcurl in pieces
// of up to 256 KiB (cpp-httplib, as Debian builds it, reads 4 KiB at a time): the body,
// its chunked framing removed, goes to `on_chunk` as it arrives. Same TLS material, token
// and basic auth as Do(); no proxy. A WatchHandle cancels it from another thread at once
// (the stream's poll is woken).
//
// Thread-safety: safe for concurrent use; Do() and Stream() may run on many threads.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/status.h"
#include "kube/kubeconfig.h"
#include "workers/clock.h"

namespace volcache::kube {

struct RestClientOptions {
  double qps = 2000;  // --kube-api-qps; <= 0 disables the limit
  int burst = 2000;   // --kube-api-burst
  Duration connect_timeout = std::chrono::seconds(10);
  Duration request_timeout = std::chrono::seconds(30);  // read/write timeout of one request
  size_t max_idle_connections = 16;
  Duration idle_timeout = std::chrono::seconds(30);  // idle pooled connections older are closed
  // A kubeconfig `tokenFile` (a projected service-account token) is re-read this often.
  Duration token_file_refresh = std::chrono::minutes(1);
  double status_qps = 50;  // RequestClass::kStatus bucket; <= 0 disables it
  int status_burst = 100;
  int max_retries = 5;  // 429 + Retry-After
  Duration max_retry_after = std::chrono::seconds(10);
  std::string user_agent = "volcache/0.1";
  std::shared_ptr<Clock> clock;  // the rate limiter's time; RealClock::Instance() when null
  // When set, consulted by Do() for every request but GET right before it is sent (after the
  // rate limiter's wait): an error is returned as is, prefixed with the method and path, and
  // nothing is sent. Leader election's gate (kube/leader_election.h): a standby, or a leader
  // past its renew deadline, writes nothing.
  std::function<Status()> write_gate;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

struct RestClientStats {
  uint64_t requests = 0;          // requests sent (including retries)
  uint64_t transport_errors = 0;  // no answer
  uint64_t throttled = 0;         // 429 answers
  uint64_t connections = 0;       // connections opened
  uint64_t streams = 0;           // streams started
};

// Which client-side bucket a request takes its token from.
enum class RequestClass {
  kDefault,  // binds, reads, creates: the `qps`/`burst` bucket
  kStatus,   // status writes: their own `status_qps`/`status_burst` bucket
};

// A snapshot of the client's request metrics (Prometheus-style data, no dependency on a
// metrics library). Watches count as verb "WATCH".
struct RestClientMetrics {
  // Upper bounds (seconds) of the latency buckets; counts are cumulative, plus +Inf.
  static const std::vector<double>& LatencyBuckets();  // 1 ms .. 10 s
  struct Requests {
    std::string verb;
    int code = 0;  // HTTP status; 0 = transport error (no answer)
    uint64_t count = 0;
  };
  struct Latency {
    std::string verb;
    std::vector<uint64_t> cumulative;  // cumulative[i]: requests <= LatencyBuckets()[i]; last: +Inf
    double sum_seconds = 0;
    uint64_t count = 0;
  };
  std::vector<Requests> requests;        // sorted by (verb, code)
  std::vector<Latency> latency;          // sorted by verb
  double rate_limiter_wait_seconds = 0;  // total time requests waited for a token
  uint64_t rate_limited = 0;             // requests that had to wait
  uint64_t stale_retries = 0;            // requests retried on a fresh connection
  uint64_t stale_connections = 0;        // idle connections found closed or expired and dropped
};

// Cancels a Stream() from another thread. Cheap to copy (shared state).
class WatchHandle {
 public:
  WatchHandle();
  // Aborts the stream in progress (closing its socket) and makes later streams under this
  // handle return at once. Safe to call repeatedly and concurrently.
  void Cancel() const;
  bool cancelled() const;

 private:
  friend class RestClient;
  struct State;
  std::shared_ptr<State> state_;
};

class RestClient {
 public:
  static Result<std::unique_ptr<RestClient>> Create(const KubeConfig& config, RestClientOptions options = {});
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // `path` includes the query string. `method` is GET, POST, PUT, PATCH or DELETE.
  Result<HttpResponse> Do(std::string_view method, const std::string& path, std::string_view body = {},
                          std::string_view content_type = "application/json",
                          RequestClass cls = RequestClass::kDefault);

  struct StreamResult {
    int status = 0;          // HTTP status (0: no answer)
    std::string error_body;  // the body of a non-200 answer
    Status transport;        // OK when the stream ended cleanly (server closed it)
  };
  // A streaming GET. For a 200 answer every piece of the body goes to `on_chunk` (return
  // false to stop); pieces are not lines. `read_timeout` bounds the silence between reads
  // (set it above the server's timeoutSeconds). Returns when the server ends the stream, on
  // error, or on cancel. A broken stream (reset, a truncated or malformed chunk, an end
  // without the last chunk, the read timeout) is Unavailable naming the path; a connect
  // timeout DeadlineExceeded; Cancel or a receiver's false Cancelled.
  // `on_answer` (optional) runs once the status line and headers arrived, before any chunk:
  // a watch counts as established then, even on a quiet resource that sends nothing.
  StreamResult Stream(const std::string& path, Duration read_timeout,
                      const std::function<bool(std::string_view chunk)>& on_chunk, const WatchHandle& handle,
                      const std::function<void(int status)>& on_answer = nullptr);

  const std::string& server() const;
  RestClientStats stats() const;
  RestClientMetrics metrics() const;

 private:
  RestClient();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A Status for a non-2xx answer: "<what>: HTTP <code>: <Status.message or body excerpt>".
// 404 NotFound, 409 Conflict (AlreadyExists when reason says so), 429 ResourceExhausted,
// 400/422 InvalidArgument, 401/403 FailedPrecondition (credentials/RBAC), 5xx and other
// codes Unavailable, 410 FailedPrecondition ("Gone"). OK for 2xx.
Status ApiError(int http_status, std::string_view body, std::string_view what);

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view s);

}  // namespace volcache::kube
