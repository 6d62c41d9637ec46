#include "workers/backoff.h"

#include <algorithm>
#include <cmath>

namespace volcache {

Backoff::Backoff(BackoffOptions options, uint64_t seed)
    : options_(options), current_(std::max(options.initial, Duration::zero())), rng_(seed) {}

Duration Backoff::Next() {
  const Duration step = current_;
  ++steps_;
  const double grown = static_cast<double>(current_.count()) * std::max(options_.factor, 1.0);
  const double cap = static_cast<double>(std::max(options_.max, Duration::zero()).count());
  current_ = Duration(static_cast<Duration::rep>(std::min(grown, cap)));
  if (options_.jitter <= 0) return step;
  std::uniform_real_distribution<double> u(0.0, options_.jitter);
  const double jittered = static_cast<double>(step.count()) * (1.0 + u(rng_));
  return Duration(static_cast<Duration::rep>(jittered));
}

void Backoff::Reset() {
  current_ = std::max(options_.initial, Duration::zero());
  steps_ = 0;
}

LogThrottle::LogThrottle(std::shared_ptr<Clock> clock, Duration window)
    : clock_(std::move(clock)), window_(window) {}

bool LogThrottle::ShouldLog(const std::string& key, const std::string& message, uint64_t* suppressed) {
  const TimePoint now = clock_->Now();
  MutexLock lock(&mu_);
  auto [it, inserted] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (inserted || e.message != message || now - e.last_logged >= window_) {
    *suppressed = inserted || e.message != message ? 0 : e.suppressed;
    e.message = message;
    e.last_logged = now;
    e.suppressed = 0;
    return true;
  }
  ++e.suppressed;
  return false;
}

std::string LogThrottle::WithRepeats(const std::string& message, uint64_t suppressed) {
  if (suppressed == 0) return message;
  return message + " (repeated " + std::to_string(suppressed) + " times)";
}

}  // namespace volcache
