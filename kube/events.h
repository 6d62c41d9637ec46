#pragma once
// Kubernetes Events (core/v1) written the way client-go's tools/record writes them, so a
// condition that repeats every session is one Event object whose count grows, not a new
// object per session (issue 11, defect 5):
//
//   EventCorrelator  client-go's EventCorrelator: the aggregator (more than
//                    `max_similar - 1` distinct messages with the same source, object, type
//                    and reason within `aggregate_window` become one event whose message is
//                    "(combined from similar events): <latest message>"), the logger
//                    (identical events are one object: the first is created, the next ones
//                    patch its count and lastTimestamp) and the spam filter (a token bucket
//                    per source + object, `spam_burst` tokens, one more every
//                    `spam_refill`; events without a token are dropped and counted). Every
//                    cache is an LRU bounded by `cache_size` entries.
//   EventSink        where the correlated writes go (Create / Patch); RestEventSink is the
//                    core/v1 REST implementation, tests use a recording fake.
//   RestEventRecorder the EventRecorder the daemon uses: Event() correlates (in memory, no
//                    I/O) and queues the write; one poster thread sends the queue in order.
//                    Writes to the same Event object still queued are coalesced (only the
//                    newest count is sent). A PATCH of an Event the server no longer has
//                    (404) creates it again; a create answered 409 is done (it exists).
//                    A write that may succeed later (connection failed, timeout, HTTP 5xx:
//                    kUnavailable / kDeadlineExceeded) is retried as client-go's recordToSink
//                    does: up to `max_tries` attempts, the poster sleeping (on the injected
//                    clock) a random part of `retry_sleep` before the first retry and
//                    `retry_sleep` before each later one, holding the queue meanwhile (the
//                    server is unreachable for the writes behind it too). Any other answer
//                    (403, 422, ...) is final. Stop() ends the sleeps: what is queued then is
//                    tried once more within the drain timeout.
//
// Thread-safety: EventCorrelator is not thread-safe (externally synchronized; the recorder
// holds its mutex around it). RestEventRecorder and RestEventSink are safe for concurrent
// use; Event() never blocks on the network and never waits for the queue: a full queue drops
// and counts. The sink (and RestClient) must outlive the recorder.

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "api/mutex.h"
#include "api/status.h"
#include "evictor/evictor.h"
#include "workers/clock.h"

namespace volcache::kube {

class RestClient;

// One core/v1 Event as the recorder writes it.
struct KubeEvent {
  std::string name;        // metadata.name ("<object>.<hex>", fixed when first created)
  std::string namespace_;  // the object's namespace ("default" for cluster objects)
  EventRef object;
  std::string type, reason, message;
  std::string component;  // source.component and reportingComponent
  int32_t count = 1;
  int64_t first_ms = 0, last_ms = 0;  // firstTimestamp, lastTimestamp (wall clock, ms)
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  // POST. AlreadyExists when the server has an Event of that name.
  virtual Status Create(const KubeEvent& event) = 0;
  // PATCH of count, lastTimestamp and message. NotFound when the Event is gone.
  virtual Status Patch(const KubeEvent& event) = 0;
};

class RestEventSink final : public EventSink {
 public:
  explicit RestEventSink(RestClient* client) : client_(client) {}
  Status Create(const KubeEvent& event) override;
  Status Patch(const KubeEvent& event) override;

 private:
  RestClient* client_;
};

struct EventCorrelatorOptions {
  size_t cache_size = 4096;                              // each LRU cache
  size_t max_similar = 10;                               // client-go maxEvents
  Duration aggregate_window = std::chrono::minutes(10);  // client-go maxIntervalInSeconds
  int spam_burst = 25;
  Duration spam_refill = std::chrono::minutes(5);  // one token per
};

class EventCorrelator {
 public:
  // `wall_ms` stamps first/lastTimestamp; the windows and the token buckets read `clock`.
  EventCorrelator(std::shared_ptr<Clock> clock, EventCorrelatorOptions options = {});
  EventCorrelator(const EventCorrelator&) = delete;
  EventCorrelator& operator=(const EventCorrelator&) = delete;

  struct Result {
    bool skip = false;   // dropped by the spam filter
    bool patch = false;  // an update of an Event already written (else a create)
    KubeEvent event;
  };
  Result Correlate(const EventRef& object, const std::string& component, const std::string& type,
                   const std::string& reason, const std::string& message, int64_t wall_ms);

  size_t aggregate_entries() const { return aggregate_.size(); }
  size_t observed_entries() const { return observed_.size(); }
  size_t spam_entries() const { return spam_.size(); }

 private:
  template <typename V>
  class Lru {
   public:
    explicit Lru(size_t cap) : cap_(cap) {}
    V* Find(const std::string& key);  // marks it most recently used
    V& Put(const std::string& key, V value);
    size_t size() const { return map_.size(); }

   private:
    using Entry = std::pair<std::string, V>;
    size_t cap_;
    std::list<Entry> order_;  // most recently used first
    std::unordered_map<std::string, typename std::list<Entry>::iterator> map_;
  };
  struct Aggregate {
    std::unordered_set<std::string> messages;  // distinct messages in the window, at most max_similar
    TimePoint last;
  };
  struct Observed {
    std::string name;
    int32_t count = 0;
    int64_t first_ms = 0;
  };
  struct Bucket {
    double tokens = 0;
    TimePoint last;
  };

  std::shared_ptr<Clock> clock_;
  const EventCorrelatorOptions options_;
  Lru<Aggregate> aggregate_;
  Lru<Observed> observed_;
  Lru<Bucket> spam_;
  uint64_t seq_ = 0;
};

struct RestEventRecorderOptions {
  std::string component = "volcano";
  size_t capacity = 4096;  // queued writes (distinct Event objects) before Event() drops
  EventCorrelatorOptions correlator;
  int max_tries = 12;                               // client-go maxTriesPerEvent
  Duration retry_sleep = std::chrono::seconds(10);  // client-go sleepDuration
  uint64_t seed = 0;                                // jitter of the first sleep; 0 = random
};

class RestEventRecorder final : public EventRecorder {
 public:
  RestEventRecorder(EventSink* sink, std::shared_ptr<Clock> clock, RestEventRecorderOptions options = {});
  ~RestEventRecorder() override;  // Stop()
  void Event(const EventRef& object, const std::string& type, const std::string& reason,
             const std::string& message) override EXCLUDES(mu_);
  // Posts what is queued (up to `timeout`), then stops the poster thread. Idempotent.
  void Stop(Duration timeout = std::chrono::seconds(2)) EXCLUDES(mu_);

  struct Stats {
    uint64_t created = 0;       // POSTs that succeeded (the first of each Event object)
    uint64_t patched = 0;       // PATCHes that succeeded (count / lastTimestamp updates)
    uint64_t failed = 0;        // writes the server refused, or that never reached it in max_tries
    uint64_t retried = 0;       // attempts after a retryable failure
    uint64_t dropped = 0;       // queue full or stopping
    uint64_t spam_dropped = 0;  // no token in the object's spam bucket
    uint64_t coalesced = 0;     // writes folded into a newer one for the same Event still queued
  };
  Stats stats() const EXCLUDES(mu_);

 private:
  struct Pending {
    KubeEvent event;
    bool patch = false;
    int tries = 0;  // attempts made so far
  };
  void Run() EXCLUDES(mu_);
  // After a retryable failure: puts `p` back at the head of the queue (merged with a newer
  // write of the same Event queued meanwhile) and sleeps the client-go pause on the clock,
  // unless stopping. Called and returns with mu_ held.
  void RetryLater(Pending p) REQUIRES(mu_);
  // The sink's I/O: never with mu_ held.
  Status Write(const Pending& p) EXCLUDES(mu_);

  EventSink* sink_;
  std::shared_ptr<Clock> clock_;
  const std::string component_;
  const size_t capacity_;
  const int max_tries_;
  const Duration retry_sleep_;
  mutable Mutex mu_;
  CondVar cv_;  // queued, or stopping
  EventCorrelator correlator_ GUARDED_BY(mu_);
  std::deque<std::string> order_ GUARDED_BY(mu_);                    // Event names, send order
  std::unordered_map<std::string, Pending> queued_ GUARDED_BY(mu_);  // by Event name
  Stats stats_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t wakes_ GUARDED_BY(mu_) = 0;  // the retry sleep's TimerWake generation
  uint64_t rng_ GUARDED_BY(mu_);        // splitmix64 state for the first sleep's jitter
  std::chrono::steady_clock::time_point drain_deadline_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace volcache::kube
