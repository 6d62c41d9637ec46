#pragma once
// Reflector: keeps a local store of one Kubernetes resource in step with the API server and
// reports every change to a handler, in the order the server produced them (client-go's
// reflector + informer, without the shared-informer machinery).
//
// Loop: LIST (paginated with limit/continue; a continue token that expired restarts the
// list) → replace the store, reporting adds/updates and, for objects that vanished while
// we were not watching, deletes flagged `final_state_unknown` (tombstones) → WATCH from the
// list's resourceVersion with allowWatchBookmarks and timeoutSeconds; the client read
// timeout is timeoutSeconds + a margin. Watch outcomes:
//   - the server ends the stream (timeout)        → watch again from the last resourceVersion;
//   - connection lost, 5xx/429, truncated stream,
//     a line that is not JSON                      → back off (exponential, capped), resume from
//                                                    the last resourceVersion;
//   - 410 Gone / ERROR event with code 410        → relist;
//   - BOOKMARK                                    → only the resourceVersion advances.
// A well-formed event whose object is invalid (e.g. a bad quantity) is skipped with an error
// naming the object and field; the store and the handler keep the previous version. The same
// holds for invalid items of a LIST (they are neither added nor treated as deleted).
//
//
// Retries (client-go's reflector): a failed LIST or a watch that failed waits
// initial_backoff (800 ms) doubling to max_backoff (30 s), each wait jittered by
// backoff_jitter (client-go: 1.0, i.e. d..2d); a watch that ran normally — ended by the
// server, ended by a 410, or ran for at least healthy_watch — resets the backoff. Identical
// error lines are rate-limited with a repeat count (LogThrottle); a 403 on LIST or WATCH is
// logged once, at error level, naming the missing permission (verb, resource, API group);
// the first success after failures logs "watch pods: reconnected after N failures (T s)".
// All timing (backoff waits, the healthy-watch threshold, the times in stats()) reads
// options.clock, so tests drive it with a FakeClock.
//
// Threading: one thread per reflector runs the loop and calls the handler — calls for one
// reflector are sequential, never concurrent, and never made with the reflector's lock held
// (a handler may call Get/List/stats). Store reads (Get/List) are safe from any thread; the
// store is updated before the handler is called.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/k8s/objects.h"
#include "api/mutex.h"
#include "api/status.h"
#include "kube/rest_client.h"
#include "workers/backoff.h"
#include "workers/clock.h"

namespace volcache::kube {

enum class ResourceKind : uint8_t {
  kPods,
  kNodes,
  kPodGroups,
  kQueues,
  kPriorityClasses,
  kResourceQuotas,
  kHyperNodes,  // topology.volcano.sh/v1alpha1: optional (the CRD may not be installed)
  // Read for kube-scheduler's VolumeBinding and VolumeZone filters; every cluster serves them.
  kPersistentVolumeClaims,
  kPersistentVolumes,
  kStorageClasses,  // storage.k8s.io/v1
};
// Every kind, in ResourceKind order.
inline constexpr ResourceKind kAllResourceKinds[] = {ResourceKind::kPods,
                                                     ResourceKind::kNodes,
                                                     ResourceKind::kPodGroups,
                                                     ResourceKind::kQueues,
                                                     ResourceKind::kPriorityClasses,
                                                     ResourceKind::kResourceQuotas,
                                                     ResourceKind::kHyperNodes,
                                                     ResourceKind::kPersistentVolumeClaims,
                                                     ResourceKind::kPersistentVolumes,
                                                     ResourceKind::kStorageClasses};

struct ResourceInfo {
  std::string_view name;         // "pods"
  std::string_view kind;         // "Pod"
  std::string_view api_version;  // "v1", "scheduling.volcano.sh/v1beta1"
  std::string_view prefix;       // "/api/v1", "/apis/scheduling.volcano.sh/v1beta1"
  bool namespaced = true;
  // Served by a CRD a cluster may not have (HyperNodes: Volcano's scheduler runs without
  // them). A 404 on the LIST means "not served": the reflector counts as synced with an empty
  // set (objects it held are deleted), logs that once at info, and LISTs again with backoff
  // (up to max_backoff) so that a CRD installed later is picked up.
  bool optional = false;
};
const ResourceInfo& Info(ResourceKind kind);
// The collection path, e.g. "/api/v1/pods", or with `ns` "/api/v1/namespaces/ns/pods".
std::string CollectionPath(ResourceKind kind, std::string_view ns = {});
// The object path, e.g. "/api/v1/namespaces/ns/pods/name".
std::string ObjectPath(ResourceKind kind, std::string_view ns, std::string_view name);

using ObjectPtr = std::shared_ptr<const k8s::Object>;

class ReflectorHandler {
 public:
  virtual ~ReflectorHandler() = default;
  virtual void OnAdd(const ObjectPtr& obj) = 0;
  virtual void OnUpdate(const ObjectPtr& old_obj, const ObjectPtr& new_obj) = 0;
  // `final_state_unknown`: the object disappeared while the watch was down (found on a
  // relist); `obj` is the last version seen.
  virtual void OnDelete(const ObjectPtr& obj, bool final_state_unknown) = 0;
  // A LIST item or watch event that could not be decoded (message names object and field).
  virtual void OnDecodeError(const Status& error) {}
};

struct ReflectorOptions {
  int64_t page_size = 500;
  // The first LIST (nothing synced yet) asks for resourceVersion=0, as client-go's reflector
  // does: a server with a watch cache answers it from memory in one response (no pages, no
  // etcd read), which is what makes the initial sync of a large cluster fast. Relists after
  // a 410 read from etcd (no resourceVersion), paginated.
  bool initial_list_from_cache = true;
  int watch_timeout_seconds = 300;  // the server ends each watch after this long
  Duration read_timeout_margin = std::chrono::seconds(30);
  Duration initial_backoff = std::chrono::milliseconds(800);
  Duration max_backoff = std::chrono::seconds(30);
  double backoff_jitter = 1.0;                        // client-go's reflector: wait d * (1 + U[0, 1))
  Duration healthy_watch = std::chrono::seconds(10);  // a watch this long resets the backoff
  std::shared_ptr<Clock> clock;                       // RealClock::Instance() when null
  uint64_t backoff_seed = 0;                          // 0: random
  std::string label_selector;
  std::string field_selector;
  // Pods and Nodes go through the streaming decoder (api/k8s/decode_fast.h), the DOM decoder
  // taking what it does not handle. false: the DOM decoder only (the benchmark's baseline).
  bool fast_decode = true;
  // Pods and Nodes on a watch: the thread reading the stream decodes, a second thread applies
  // (store, handler, cache), with at most this many events decoded and not yet applied
  // (kube/apply_pipe.h). 0: one thread does both.
  size_t watch_pipeline = 1024;
};

// A snapshot of one reflector's counters (Reflector::stats()); times are options.clock's,
// TimePoint{} when it never happened.
struct ReflectorStats {
  uint64_t lists = 0;  // complete LISTs
  uint64_t list_pages = 0;
  uint64_t list_failures = 0;  // LISTs that failed (transport, HTTP error, bad answer)
  uint64_t relists = 0;        // LISTs after the first (410, ERROR)
  uint64_t watches = 0;        // watch requests started
  uint64_t events = 0;         // ADDED/MODIFIED/DELETED applied
  uint64_t added = 0;          // ... of which ADDED
  uint64_t modified = 0;       // ... MODIFIED
  uint64_t deleted = 0;        // ... DELETED
  uint64_t bookmarks = 0;
  uint64_t error_events = 0;  // ERROR events (410 Expired included)
  uint64_t tombstones = 0;    // deletes found by a relist
  uint64_t decode_errors = 0;
  uint64_t stream_errors = 0;  // watches that ended in an error (connection, HTTP, truncation, bad line)
  uint64_t fast_decoded = 0;   // objects the streaming decoder handled (the rest: the DOM decoder)
  uint64_t consecutive_failures = 0;    // LIST/watch failures since the last success
  Duration backoff = Duration::zero();  // the current (last) retry wait; zero when not backing off
  bool backing_off = false;             // waiting to retry right now
  TimePoint last_event{};               // the last watch event of any type (bookmarks included)
  TimePoint last_list{};                // the last successful LIST
  TimePoint last_watch_start{};         // the last watch the server answered (status 200 received)
  std::string resource_version;
  bool not_served = false;  // an optional resource's last LIST was answered 404 (no CRD)
};

template <typename T>
class ApplyPipe;

class Reflector {
 public:
  Reflector(ResourceKind kind, RestClient* client, ReflectorHandler* handler, ReflectorOptions options = {});
  ~Reflector();  // Stop()
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start() EXCLUDES(mu_);
  // Cancels the watch in progress and joins the thread. Idempotent.
  void Stop() EXCLUDES(mu_);
  // True once the first LIST has been applied (and stays true).
  bool HasSynced() const EXCLUDES(mu_);
  // Waits for HasSynced (real time); DeadlineExceeded naming the resource after `timeout`.
  Status WaitForSync(Duration timeout) const EXCLUDES(mu_);

  ResourceKind kind() const { return kind_; }
  ObjectPtr Get(const std::string& key) const EXCLUDES(mu_);
  std::vector<ObjectPtr> List() const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);
  ReflectorStats stats() const EXCLUDES(mu_);

 private:
  // Everything below runs on the loop thread (ApplyDecoded also on the watch's apply
  // thread) and does I/O or calls the handler: never with mu_ held.
  void Loop() EXCLUDES(mu_);
  // `*http_status`: the HTTP status of a failed LIST (0 when not an HTTP error).
  // `*not_served`: an optional resource answered 404; the store was replaced by nothing.
  Status ListAndReplace(int* http_status, bool* not_served) EXCLUDES(mu_);
  // Returns true when a relist is needed.
  // A failed watch sets *error (and *http_status when the server answered an HTTP error).
  bool WatchOnce(bool* clean_end, int* http_status, Status* error) EXCLUDES(mu_);
  // A watch event the streaming decoder produced, on its way to ApplyDecoded.
  struct DecodedEvent {
    ObjectPtr obj;
    bool deleted = false;
    const char* type = "";  // ADDED, MODIFIED, DELETED
  };
  // `pipe`: where decoded events go (null: applied here); drained before any other line.
  Status HandleLine(std::string_view line, ApplyPipe<DecodedEvent>* pipe, bool* relist, bool* stop_stream)
      EXCLUDES(mu_);
  void ApplyDecoded(DecodedEvent& ev) EXCLUDES(mu_);
  void ApplyUpsert(ObjectPtr obj) EXCLUDES(mu_);
  void ApplyDelete(ObjectPtr obj) EXCLUDES(mu_);
  // Waits `d` on options.clock (or until Stop); false when stopping. `retry`: the wait follows
  // a failure (stats.backing_off); false for the re-check of a resource that is not served.
  bool SleepBackoff(Duration d, bool retry = true) EXCLUDES(mu_);
  // A LIST or watch failed: counts it and logs `error` (throttled; a 403 names the permission).
  void Failure(std::string_view verb, int http_status, const Status& error, Duration next_wait) EXCLUDES(mu_);
  // A LIST or watch worked: logs the reconnect when it follows failures.
  void Success(std::string_view verb) EXCLUDES(mu_);
  std::string Selectors() const;
  // The streaming decoder handles this reflector's kind (Pods, Nodes) and is enabled.
  bool FastKind() const {
    return options_.fast_decode && (kind_ == ResourceKind::kPods || kind_ == ResourceKind::kNodes);
  }

  const ResourceKind kind_;
  RestClient* const client_;
  ReflectorHandler* const handler_;
  const ReflectorOptions options_;
  WatchHandle watch_;
  const std::shared_ptr<Clock> clock_;
  LogThrottle log_throttle_;

  mutable Mutex mu_;
  mutable CondVar cv_;  // synced_, stopping_, finished_ or wake_generation_ changed
  std::unordered_map<std::string, ObjectPtr> store_ GUARDED_BY(mu_);
  ReflectorStats stats_ GUARDED_BY(mu_);
  bool synced_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  uint64_t wake_generation_ GUARDED_BY(mu_) = 0;  // bumped by backoff timers
  std::string rv_;             // loop thread, or the watch's apply thread while the loop thread waits on it
  TimePoint first_failure_{};  // loop thread only: start of the current failure run
  bool forbidden_logged_[2] = {false, false};  // loop thread only: list, watch
  bool not_served_logged_ = false;             // loop thread only: the 404 of an optional resource
  std::thread thread_;
};

}  // namespace volcache::kube
