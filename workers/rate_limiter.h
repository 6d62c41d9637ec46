#pragma once
// Rate limiters for WorkQueue::AddRateLimited, with the semantics of client-go's
// workqueue limiters: When(item) records one more failure/request for `item` and returns
// how long the caller should wait before retrying it; Forget(item) clears the per-item
// history once the item succeeded; NumRequeues(item) is how many failures are on record.
//
// Time is read from an injected Clock (the token bucket only), so tests drive it with a
// FakeClock.
//
// Thread-safety: every implementation here is safe for concurrent use (each guards its own
// state with one mutex; MaxOfRateLimiter has no state of its own). They never call back
// into the caller.

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/mutex.h"
#include "workers/clock.h"

namespace volcache {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // Delay before `item` may be retried (>= 0). Records the request.
  virtual Duration When(const std::string& item) = 0;
  // Stops tracking `item` (its next When starts from scratch).
  virtual void Forget(const std::string& item) = 0;
  virtual int NumRequeues(const std::string& item) = 0;
};

// Per item: base * 2^failures, capped at max. Overflow-safe: any number of failures gives
// at most max. Memory grows with the number of distinct items not yet forgotten.
class ItemExponentialFailureRateLimiter final : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(Duration base, Duration max);

  Duration When(const std::string& item) override EXCLUDES(mu_);
  void Forget(const std::string& item) override EXCLUDES(mu_);
  int NumRequeues(const std::string& item) override EXCLUDES(mu_);

 private:
  const Duration base_;
  const Duration max_;
  Mutex mu_;
  std::unordered_map<std::string, int> failures_ GUARDED_BY(mu_);
};

// One token bucket shared by all items (golang.org/x/time/rate semantics): refills at
// `qps` tokens per second up to `burst`; starts full. When() reserves a token and returns
// the delay until it is available, so back-to-back calls past the burst are spaced 1/qps
// apart (the bucket goes into debt, like rate.Limiter.Reserve().Delay()).
// Requires qps > 0 (infinity means "no limit") and burst >= 1.
// Forget is a no-op and NumRequeues is always 0.
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, std::shared_ptr<Clock> clock);

  Duration When(const std::string& item) override EXCLUDES(mu_);
  void Forget(const std::string& item) override {}
  int NumRequeues(const std::string& item) override { return 0; }

 private:
  const double qps_;
  const int burst_;
  const std::shared_ptr<Clock> clock_;
  Mutex mu_;
  double tokens_ GUARDED_BY(mu_);   // negative = reserved ahead of refill
  TimePoint last_ GUARDED_BY(mu_);  // when tokens_ was last brought up to date
};

// The most restrictive of its limiters: When is the max over all (each one records the
// request), NumRequeues the max, Forget forgets in all.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);

  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// SPEC §4 defaults.
inline constexpr Duration kDefaultRetryBaseDelay = std::chrono::milliseconds(5);
inline constexpr Duration kDefaultRetryMaxDelay = std::chrono::seconds(1000);
inline constexpr double kNodeQueueQps = 10;
inline constexpr int kNodeQueueBurst = 100;
inline constexpr double kRetryQueueQps = 100;
inline constexpr int kRetryQueueBurst = 1000;

// Node queue: max(exponential 5 ms..1000 s, bucket 10 qps / burst 100).
std::unique_ptr<RateLimiter> DefaultNodeQueueRateLimiter(std::shared_ptr<Clock> clock);
// errTasks and DeletedJobs queues: max(exponential 5 ms..1000 s, bucket 100 qps / burst 1000).
std::unique_ptr<RateLimiter> DefaultRetryQueueRateLimiter(std::shared_ptr<Clock> clock);

}  // namespace volcache
