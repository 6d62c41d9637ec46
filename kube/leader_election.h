#pragma once
// LeaderElector: one `volcache serve` replica out of several decides (binds, evicts, writes
// status and events); the others keep their caches warm and wait. The lock is a
// coordination.k8s.io/v1 Lease with client-go leaderelection semantics:
//
//   acquire  GET the Lease; absent → POST it with us as holder; present → take it over only
//            when its holderIdentity is empty (released) or the record has not changed for
//            leaseDurationSeconds of *our* clock (observed time of the last change + the
//            record's duration: expiry is judged locally, never by comparing clocks across
//            machines); the PUT carries the resourceVersion of the GET, so of two candidates
//            racing for an expired lease one gets 409 Conflict and stays a standby.
//            Candidates retry every retry_period · (1 + jitter·U[0,1)), or sooner: at the
//            moment the observed record expires, when that comes first.
//   renew    the leader PUTs renewTime every retry_period. When no renewal has succeeded for
//            renew_deadline (measured from the *start* of the last successful attempt) the
//            leader has lost: the gate is closed from that instant on, even while a renewal
//            request is still hanging, and state() becomes kLost for good. The process is
//            expected to exit and restart clean (kube-scheduler's "leaderelection lost").
//            renew_deadline < lease_duration leaves the margin in which nobody else can
//            have acquired the lease yet.
//   release Stop(/*release=*/true) closes the gate first and then PUTs the Lease with an
//            empty holderIdentity and leaseDurationSeconds 1 (client-go's ReleaseOnCancel),
//            so a standby takes over at its next retry instead of after lease_duration.
//            Call it only once every write guarded by the lease has finished.
//
// The gate: IsLeader() — true only while leading and within the renew deadline. Writers
// consult it (RestClientOptions::write_gate → WriteGate()) right before sending a request;
// the scheduling session runs only while it is true.
//
// Time: every deadline is read from the injected Clock, and the attempts are the Clock's
// timers (AfterFunc): a FakeClock makes the tests step through acquire/renew/expiry
// deterministically; in production pass a RealClock of its own (attempts do blocking HTTP on
// the timer thread and must not delay the runtime's timers).
//
// Thread-safety: safe for concurrent use. Attempts never overlap. Start/Stop from one thread.

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "api/mutex.h"
#include "api/status.h"
#include "kube/rest_client.h"
#include "workers/backoff.h"
#include "workers/clock.h"

namespace volcache::kube {

struct LeaderElectionOptions {
  std::string lease_namespace = "kube-system";         // --leader-elect-resource-namespace
  std::string lease_name = "volcache";                 // --leader-elect-resource-name
  std::string identity;                                // holderIdentity; DefaultIdentity() when empty
  Duration lease_duration = std::chrono::seconds(15);  // --leader-elect-lease-duration
  Duration renew_deadline = std::chrono::seconds(10);  // --leader-elect-renew-deadline
  Duration retry_period = std::chrono::seconds(2);     // --leader-elect-retry-period
  double jitter = 1.2;  // candidates wait retry_period * (1 + jitter * U[0,1)), as client-go
  uint64_t seed = 0;    // jitter's random source; 0: from std::random_device
};

// client-go's rules: lease_duration > renew_deadline > jitter-free retry (renew_deadline >
// 1.2 · retry_period), all positive, lease_duration a whole number of seconds >= 1.
// InvalidArgument naming the flag otherwise.
Status ValidateLeaderElection(const LeaderElectionOptions& o);

// "<hostname>_<16 random hex digits>" (client-go: hostname + "_" + uuid).
std::string DefaultIdentity();

enum class LeaderState {
  kStandby,  // not (yet) the leader: trying to acquire
  kLeading,  // acquired; renewing
  kLost,     // was leading and missed the renew deadline (final)
  kStopped,  // Stop() was called (after releasing the lease when asked to)
};
const char* ToString(LeaderState s);

// The Lease's spec as the elector reads and writes it. Times are MicroTime strings
// ("2006-01-02T15:04:05.000000Z"), kept as read.
struct LeaseRecord {
  std::string holder;
  int64_t lease_duration_seconds = 0;
  std::string acquire_time, renew_time;
  int64_t transitions = 0;
  bool operator==(const LeaseRecord&) const = default;
};

class LeaderElector {
 public:
  // Borrows `client` (it must outlive the elector); use a client of its own, so renewals do
  // not queue behind binds on the rate limiter, and without a write gate.
  LeaderElector(RestClient* client, std::shared_ptr<Clock> clock, LeaderElectionOptions options);
  ~LeaderElector();  // Stop(false)
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // The first attempt runs at once (as the clock's next timer), then on its own schedule.
  void Start() EXCLUDES(mu_);
  // No further attempt; waits for one in progress. With `release` and while still the
  // leader, closes the gate and releases the Lease (one PUT; its failure is logged: the
  // lease then simply expires). Idempotent.
  void Stop(bool release) EXCLUDES(mu_);

  // The gate: leading and within the renew deadline now. Once the deadline passes this is
  // false for good (state() becomes kLost).
  bool IsLeader() EXCLUDES(mu_);
  // OK, or FailedPrecondition "not the leader" (RestClientOptions::write_gate).
  Status WriteGate() EXCLUDES(mu_);
  LeaderState state() EXCLUDES(mu_);
  // False only when this replica was leading and missed its renew deadline (/healthz).
  bool Healthy() EXCLUDES(mu_);
  // Times this replica became or stopped being the leader.
  uint64_t transitions() const EXCLUDES(mu_);
  const std::string& identity() const { return options_.identity; }
  const LeaderElectionOptions& options() const { return options_; }

  // The lease as last observed (tests, logs).
  LeaseRecord observed() const EXCLUDES(mu_);

 private:
  struct Anchor;  // shared with the timer callbacks; cleared by Stop()
  void Step() EXCLUDES(mu_);
  // One GET + POST/PUT; true when we hold the lease afterwards. `now` is when it started.
  bool TryAcquireOrRenew(TimePoint now) EXCLUDES(mu_);
  // Latches kLost when the renew deadline has passed (REQUIRES mu_).
  void CheckDeadlineLocked(TimePoint now) REQUIRES(mu_);
  void Release() EXCLUDES(mu_);
  void Warn(const std::string& key, const std::string& message);

  RestClient* const client_;
  const std::shared_ptr<Clock> clock_;
  const LeaderElectionOptions options_;
  const std::string path_;             // .../leases/NAME
  const std::string collection_path_;  // .../leases
  LogThrottle log_;
  std::shared_ptr<Anchor> anchor_;

  mutable Mutex mu_;
  LeaderState state_ GUARDED_BY(mu_) = LeaderState::kStandby;
  bool started_ GUARDED_BY(mu_) = false;
  uint64_t timer_ GUARDED_BY(mu_) = 0;
  TimePoint renewed_at_ GUARDED_BY(mu_){};  // start of the last successful acquire/renew
  LeaseRecord observed_ GUARDED_BY(mu_);
  std::string observed_rv_ GUARDED_BY(mu_);
  TimePoint observed_time_ GUARDED_BY(mu_){};  // when observed_ last changed, our clock
  bool observed_any_ GUARDED_BY(mu_) = false;
  uint64_t transitions_ GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ GUARDED_BY(mu_);
};

// The JSON of a Lease (apiVersion, kind, metadata name/namespace[/resourceVersion], spec).
std::string LeaseBody(const std::string& ns, const std::string& name, const LeaseRecord& r,
                      const std::string& resource_version);
// Parses a Lease's spec and metadata.resourceVersion; InvalidArgument on anything else.
Status ParseLease(std::string_view body, LeaseRecord* record, std::string* resource_version);
// RFC 3339 with exactly six fraction digits, UTC (a Kubernetes MicroTime).
std::string FormatMicroTime(int64_t micros_since_epoch);

}  // namespace volcache::kube
