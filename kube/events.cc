#include "kube/events.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "api/fmt.h"
#include "kube/rest_client.h"
#include "kube/rest_writers.h"
#include "workers/timer_wake.h"

namespace volcache::kube {

namespace {

using json = nlohmann::json;

constexpr char kCombinedPrefix[] = "(combined from similar events): ";

// Keys join their parts with a byte no Kubernetes name, kind or reason contains.
std::string ObjectKey(const EventRef& o, const std::string& component) {
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", component, o.kind, o.namespace_, o.name, o.uid);
}

std::string EventNamespace(const EventRef& o) { return o.namespace_.empty() ? "default" : o.namespace_; }

// What may succeed later: the server unreachable or overloaded (client-go retries every
// error that is not an API status; our 5xx are kUnavailable too, and retrying them is safe).
bool IsRetryable(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
}

std::string Describe(const KubeEvent& e) {
  return fmt::format("event {} on {} {}{}{}", e.reason, e.object.kind, e.object.namespace_,
                     e.object.namespace_.empty() ? "" : "/", e.object.name);
}

}  // namespace

// ------------------------------------------------------------------------------ sink

Status RestEventSink::Create(const KubeEvent& e) {
  json involved = {{"kind", e.object.kind}, {"name", e.object.name}};
  if (!e.object.namespace_.empty()) involved["namespace"] = e.object.namespace_;
  if (!e.object.uid.empty()) involved["uid"] = e.object.uid;
  involved["apiVersion"] = e.object.kind == "Pod" ? "v1" : "scheduling.volcano.sh/v1beta1";
  json body = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"name", e.name}, {"namespace", e.namespace_}}},
               {"involvedObject", std::move(involved)},
               {"reason", e.reason},
               {"message", e.message},
               {"type", e.type},
               {"source", {{"component", e.component}}},
               {"reportingComponent", e.component},
               {"firstTimestamp", FormatTimestamp(e.first_ms)},
               {"lastTimestamp", FormatTimestamp(e.last_ms)},
               {"count", e.count}};
  auto resp = client_->Do("POST", fmt::format("/api/v1/namespaces/{}/events", e.namespace_), body.dump());
  if (resp.ok() && resp->status == 403) LogForbiddenOnce("create", "events", "");
  const std::string what = "create " + Describe(e);
  if (!resp.ok()) return resp.status().WithPrefix(what);
  if (resp->status == 409) return Status::AlreadyExists(what + ": exists");
  return ApiError(resp->status, resp->body, what);
}

Status RestEventSink::Patch(const KubeEvent& e) {
  // What client-go's recorder patches: count, lastTimestamp and message (an aggregated
  // event keeps its object while its latest message changes).
  json patch = {{"count", e.count}, {"lastTimestamp", FormatTimestamp(e.last_ms)}, {"message", e.message}};
  auto resp = client_->Do("PATCH", fmt::format("/api/v1/namespaces/{}/events/{}", e.namespace_, e.name),
                          patch.dump(), kStrategicMergePatch);
  if (resp.ok() && resp->status == 403) LogForbiddenOnce("patch", "events", "");
  const std::string what = "patch " + Describe(e);
  if (!resp.ok()) return resp.status().WithPrefix(what);
  if (resp->status == 404) return Status::NotFound(what + ": gone");
  return ApiError(resp->status, resp->body, what);
}

// ------------------------------------------------------------------------ correlator

template <typename V>
V* EventCorrelator::Lru<V>::Find(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

template <typename V>
V& EventCorrelator::Lru<V>::Put(const std::string& key, V value) {
  if (V* v = Find(key)) {
    *v = std::move(value);
    return *v;
  }
  order_.emplace_front(key, std::move(value));
  map_[key] = order_.begin();
  while (map_.size() > cap_ && !order_.empty()) {
    map_.erase(order_.back().first);
    order_.pop_back();
  }
  return order_.front().second;
}

EventCorrelator::EventCorrelator(std::shared_ptr<Clock> clock, EventCorrelatorOptions options)
    : clock_(std::move(clock)),
      options_(options),
      aggregate_(std::max<size_t>(1, options.cache_size)),
      observed_(std::max<size_t>(1, options.cache_size)),
      spam_(std::max<size_t>(1, options.cache_size)) {}

EventCorrelator::Result EventCorrelator::Correlate(const EventRef& object, const std::string& component,
                                                   const std::string& type, const std::string& reason,
                                                   const std::string& message, int64_t wall_ms) {
  const TimePoint now = clock_->Now();
  const std::string object_key = ObjectKey(object, component);
  const std::string aggregate_key = fmt::format("{}\x1f{}\x1f{}", object_key, type, reason);

  Result r;
  KubeEvent& e = r.event;
  e.namespace_ = EventNamespace(object);
  e.object = object;
  e.type = type;
  e.reason = reason;
  e.message = message;
  e.component = component;
  e.first_ms = e.last_ms = wall_ms;

  // Aggregator: distinct messages of (source, object, type, reason) within the window.
  Aggregate* agg = aggregate_.Find(aggregate_key);
  if (agg == nullptr || now - agg->last > options_.aggregate_window) {
    agg = &aggregate_.Put(aggregate_key, Aggregate{});
  }
  agg->messages.insert(message);
  agg->last = now;
  std::string observe_key;
  if (agg->messages.size() < options_.max_similar) {
    observe_key = aggregate_key + "\x1f" + message;
  } else {
    // Keep the set at its cap: it only has to tell "at the cap" from "below it".
    if (agg->messages.size() > options_.max_similar) agg->messages.erase(agg->messages.begin());
    e.message = kCombinedPrefix + message;
    observe_key = aggregate_key;
  }

  // Logger: the same key again is the same Event object, one count higher.
  if (Observed* seen = observed_.Find(observe_key)) {
    seen->count = seen->count < INT32_MAX ? seen->count + 1 : seen->count;
    e.name = seen->name;
    e.count = seen->count;
    e.first_ms = seen->first_ms;
    r.patch = true;
  } else {
    e.name =
        fmt::format("{}.{:x}", object.name, static_cast<uint64_t>(wall_ms) * 1000000 + (seq_++ % 1000000));
    e.count = 1;
    observed_.Put(observe_key, Observed{e.name, 1, wall_ms});
  }

  // Spam filter: a passive token bucket per source + object (client-go applies it after
  // the logger, so a dropped event still counts in the next one that is sent).
  const double per_token = std::chrono::duration<double>(options_.spam_refill).count();
  Bucket* b = spam_.Find(object_key);
  if (b == nullptr) b = &spam_.Put(object_key, Bucket{static_cast<double>(options_.spam_burst), now});
  if (per_token > 0) {
    const double elapsed = std::chrono::duration<double>(now - b->last).count();
    b->tokens = std::min<double>(options_.spam_burst, b->tokens + std::max(0.0, elapsed) / per_token);
  } else {
    b->tokens = options_.spam_burst;
  }
  b->last = now;
  if (b->tokens >= 1.0) {
    b->tokens -= 1.0;
  } else {
    r.skip = true;
  }
  return r;
}

// -------------------------------------------------------------------------- recorder

RestEventRecorder::RestEventRecorder(EventSink* sink, std::shared_ptr<Clock> clock,
                                     RestEventRecorderOptions options)
    : sink_(sink),
      clock_(clock),
      component_(std::move(options.component)),
      capacity_(std::max<size_t>(1, options.capacity)),
      max_tries_(std::max(1, options.max_tries)),
      retry_sleep_(options.retry_sleep),
      correlator_(std::move(clock), options.correlator),
      rng_(options.seed != 0 ? options.seed : std::random_device{}()) {
  thread_ = std::thread([this] { Run(); });
}

RestEventRecorder::~RestEventRecorder() { Stop(); }

void RestEventRecorder::Event(const EventRef& object, const std::string& type, const std::string& reason,
                              const std::string& message) {
  const int64_t wall = WallNowMs();
  {
    MutexLock lock(&mu_);
    if (stopping_) {
      ++stats_.dropped;
      return;
    }
    EventCorrelator::Result r = correlator_.Correlate(object, component_, type, reason, message, wall);
    if (r.skip) {
      ++stats_.spam_dropped;
      return;
    }
    auto it = queued_.find(r.event.name);
    if (it != queued_.end()) {
      // Not sent yet: the newer state replaces it (a create stays a create, with the count).
      it->second.event = std::move(r.event);
      ++stats_.coalesced;
      return;
    }
    if (queued_.size() >= capacity_) {
      ++stats_.dropped;
      return;
    }
    std::string name = r.event.name;
    queued_.emplace(name, Pending{std::move(r.event), r.patch});
    order_.push_back(std::move(name));
  }
  cv_.Signal();
}

void RestEventRecorder::Stop(Duration timeout) {
  {
    MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      drain_deadline_ = std::chrono::steady_clock::now() + timeout;
    }
  }
  cv_.SignalAll();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

RestEventRecorder::Stats RestEventRecorder::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void RestEventRecorder::Run() {
  MutexLock lock(&mu_);
  for (;;) {
    while (!stopping_ && order_.empty()) cv_.Wait(&mu_);
    if (order_.empty()) return;  // stopping and drained
    if (stopping_ && std::chrono::steady_clock::now() > drain_deadline_) {
      stats_.dropped += order_.size();
      order_.clear();
      queued_.clear();
      return;
    }
    std::string name = std::move(order_.front());
    order_.pop_front();
    auto it = queued_.find(name);
    Pending p = std::move(it->second);
    queued_.erase(it);
    Status s;
    {
      MutexUnlock unlock(&mu_);  // the sink's I/O
      s = Write(p);
    }
    ++p.tries;
    if (s.ok()) {
      ++(p.patch ? stats_.patched : stats_.created);
    } else if (IsRetryable(s) && p.tries < max_tries_ && !stopping_) {
      spdlog::debug("{} (may retry after sleeping)", s);
      RetryLater(std::move(p));
    } else {
      ++stats_.failed;
      spdlog::debug("{}{}", s, p.tries >= max_tries_ && IsRetryable(s) ? " (retry limit exceeded)" : "");
    }
  }
}

void RestEventRecorder::RetryLater(Pending p) {
  std::string name = p.event.name;
  const int tries = p.tries;
  auto it = queued_.find(name);
  if (it != queued_.end()) {
    // A newer state of the same Event was queued meanwhile: it is what gets sent, but as a
    // create if this write (a create) never reached the server, and with this one's tries.
    it->second.patch = it->second.patch && p.patch;
    it->second.tries = tries;
    auto pos = std::find(order_.begin(), order_.end(), name);
    if (pos != order_.end()) order_.erase(pos);
  } else {
    queued_.emplace(name, std::move(p));
  }
  order_.push_front(std::move(name));
  ++stats_.retried;
  // client-go: a random part of the sleep before the first retry (clients do not retry in
  // step after an outage), the whole sleep before each later one.
  Duration sleep = retry_sleep_;
  if (tries == 1) {
    rng_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = rng_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    sleep = Duration(static_cast<Duration::rep>(static_cast<double>(retry_sleep_.count()) *
                                                (static_cast<double>(z >> 11) * 0x1.0p-53)));
  }
  const uint64_t seen = wakes_;
  MutexUnlock unlock(&mu_);  // TimerWake's callback takes mu_
  TimerWake wake(clock_.get(), sleep, &mu_, &cv_, &wakes_);
  MutexLock relock(&mu_);
  while (!stopping_ && wakes_ == seen) cv_.Wait(&mu_);
}

Status RestEventRecorder::Write(const Pending& p) {
  if (!p.patch) {
    Status s = sink_->Create(p.event);
    // 409: an Event of that name exists (a create retried after a lost answer): done.
    return s.code() == StatusCode::kAlreadyExists ? Status::Ok() : s;
  }
  Status s = sink_->Patch(p.event);
  if (s.code() != StatusCode::kNotFound) return s;
  // The Event vanished (TTL, deleted, or its create failed): write it again, whole.
  s = sink_->Create(p.event);
  return s.code() == StatusCode::kAlreadyExists ? Status::Ok() : s;
}

}  // namespace volcache::kube
