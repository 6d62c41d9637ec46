#include "workers/rate_limiter.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "api/check.h"

namespace volcache {

// ---------------------------------------------------------------------------------------
// ItemExponentialFailureRateLimiter

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(Duration base, Duration max)
    : base_(std::max(base, Duration::zero())), max_(std::max(max, Duration::zero())) {}

Duration ItemExponentialFailureRateLimiter::When(const std::string& item) {
  int exp;
  {
    MutexLock lock(&mu_);
    int& failures = failures_[item];
    exp = failures;
    if (failures < INT_MAX) ++failures;
  }
  // base * 2^exp <= max  <=>  base <= floor(max / 2^exp): decided without ever computing a
  // product that could overflow.
  const int64_t base = base_.count();
  const int64_t max = max_.count();
  if (exp >= 63 || base > (max >> exp)) return max_;
  return Duration(base << exp);
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& item) {
  MutexLock lock(&mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& item) {
  MutexLock lock(&mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

// ---------------------------------------------------------------------------------------
// BucketRateLimiter

BucketRateLimiter::BucketRateLimiter(double qps, int burst, std::shared_ptr<Clock> clock)
    : qps_(qps), burst_(burst), clock_(std::move(clock)), tokens_(burst) {
  VC_CHECK(qps > 0, "BucketRateLimiter needs qps > 0");
  VC_CHECK(burst >= 1, "BucketRateLimiter needs burst >= 1");
  VC_CHECK(clock_ != nullptr, "BucketRateLimiter needs a clock");
  last_ = clock_->Now();
}

Duration BucketRateLimiter::When(const std::string& /*item*/) {
  if (std::isinf(qps_)) return Duration::zero();
  MutexLock lock(&mu_);
  TimePoint now = clock_->Now();
  if (now > last_) {
    // ns * qps / 1e9 rather than seconds * qps: exact for whole-millisecond steps.
    double refill = static_cast<double>((now - last_).count()) * qps_ / 1e9;
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + refill);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return Duration::zero();
  // Rounded to the nanosecond so that e.g. 10 qps gives exactly 100 ms steps.
  double wait_ns = -tokens_ / qps_ * 1e9;
  if (wait_ns >= static_cast<double>(Duration::max().count())) return Duration::max();
  return Duration(std::llround(wait_ns));
}

// ---------------------------------------------------------------------------------------
// MaxOfRateLimiter

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {
  for (const auto& l : limiters_) VC_CHECK(l != nullptr, "MaxOfRateLimiter given a null limiter");
}

Duration MaxOfRateLimiter::When(const std::string& item) {
  Duration result = Duration::zero();
  for (const auto& l : limiters_) result = std::max(result, l->When(item));
  return result;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (const auto& l : limiters_) l->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int result = 0;
  for (const auto& l : limiters_) result = std::max(result, l->NumRequeues(item));
  return result;
}

// ---------------------------------------------------------------------------------------
// Factories

namespace {

std::unique_ptr<RateLimiter> MaxOfExpAndBucket(double qps, int burst, std::shared_ptr<Clock> clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(
      std::make_unique<ItemExponentialFailureRateLimiter>(kDefaultRetryBaseDelay, kDefaultRetryMaxDelay));
  limiters.push_back(std::make_unique<BucketRateLimiter>(qps, burst, std::move(clock)));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace

std::unique_ptr<RateLimiter> DefaultNodeQueueRateLimiter(std::shared_ptr<Clock> clock) {
  return MaxOfExpAndBucket(kNodeQueueQps, kNodeQueueBurst, std::move(clock));
}

std::unique_ptr<RateLimiter> DefaultRetryQueueRateLimiter(std::shared_ptr<Clock> clock) {
  return MaxOfExpAndBucket(kRetryQueueQps, kRetryQueueBurst, std::move(clock));
}

}  // namespace volcache
