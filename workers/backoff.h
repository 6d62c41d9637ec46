#pragma once
// Retry pacing for loops that talk to an API server (the queue creator, reflectors, status
// writers), after k8s.io/apimachinery's wait.Backoff and client-go's reflector backoff:
//
//   Backoff b({.initial = 800ms, .factor = 2, .max = 30s, .jitter = 0.1});
//   for (;;) { if (Try()) { b.Reset(); ... } else sleep(b.Next()); }
//
// Next() returns the current step with jitter added (d + rand[0, jitter) * d, as
// wait.Jitter does) and then grows the step by `factor`, capped at `max`; Reset() goes back
// to `initial`. Steps() counts the Next() calls since the last Reset().
//
// LogThrottle keeps a retry loop's log readable: the first occurrence of a message is
// logged, identical repeats within `window` are counted instead, and the next line logged
// for that key carries the count ("(repeated N times)").
//
// Thread-safety: Backoff is not synchronized (one per loop); LogThrottle is safe for
// concurrent use.

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>

#include "api/mutex.h"
#include "workers/clock.h"

namespace volcache {

struct BackoffOptions {
  Duration initial = std::chrono::milliseconds(800);
  double factor = 2.0;                      // >= 1
  Duration max = std::chrono::seconds(30);  // cap on the step (before jitter)
  double jitter = 0.1;                      // >= 0: a step d is d * (1 + U[0, jitter))
};

class Backoff {
 public:
  explicit Backoff(BackoffOptions options = {}, uint64_t seed = std::random_device{}());
  // The delay to wait now; advances the step.
  Duration Next();
  // The step Next() would jitter, without advancing.
  Duration current() const { return current_; }
  void Reset();
  uint64_t steps() const { return steps_; }

 private:
  const BackoffOptions options_;
  Duration current_;
  uint64_t steps_ = 0;
  std::mt19937_64 rng_;
};

class LogThrottle {
 public:
  explicit LogThrottle(std::shared_ptr<Clock> clock, Duration window = std::chrono::seconds(60));
  // True when a line for (key, message) should be logged now; `*suppressed` is then the
  // number of identical lines not logged since the last one (0 the first time). A different
  // message for the same key is always logged.
  bool ShouldLog(const std::string& key, const std::string& message, uint64_t* suppressed) EXCLUDES(mu_);
  // "msg" or "msg (repeated N times)".
  static std::string WithRepeats(const std::string& message, uint64_t suppressed);

 private:
  struct Entry {
    std::string message;
    TimePoint last_logged;
    uint64_t suppressed = 0;
  };
  const std::shared_ptr<Clock> clock_;
  const Duration window_;
  Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace volcache
