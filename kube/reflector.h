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
// Threading: one thread per reflector runs the loop and calls the handler — calls for one
// reflector are sequential, never concurrent. Store reads (Get/List) are safe from any
// thread; the store is updated before the handler is called.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"
#include "kube/rest_client.h"

namespace volcache::kube {

enum class ResourceKind : uint8_t { kPods, kNodes, kPodGroups, kQueues, kPriorityClasses, kResourceQuotas };

struct ResourceInfo {
  std::string_view name;         // "pods"
  std::string_view kind;         // "Pod"
  std::string_view api_version;  // "v1", "scheduling.volcano.sh/v1beta1"
  std::string_view prefix;       // "/api/v1", "/apis/scheduling.volcano.sh/v1beta1"
  bool namespaced = true;
};
const ResourceInfo& Info(ResourceKind kind);
// The collection path, e.g. "/api/v1/pods", or with `ns` "/api/v1/namespaces/ns/pods".
std::string CollectionPath(ResourceKind kind, std::string_view ns = {});
// The object path, e.g. "/api/v1/namespaces/ns/pods/name".
std::string ObjectPath(ResourceKind kind, std::string_view ns, std::string_view name);
// "namespace/name" or "name" (cluster-scoped).
std::string StoreKey(const k8s::ObjectMeta& meta);

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
  int watch_timeout_seconds = 300;  // the server ends each watch after this long
  Duration read_timeout_margin = std::chrono::seconds(30);
  Duration initial_backoff = std::chrono::milliseconds(800);
  Duration max_backoff = std::chrono::seconds(30);
  std::string label_selector;
  std::string field_selector;
};

struct ReflectorStats {
  uint64_t lists = 0;        // complete LISTs
  uint64_t list_pages = 0;
  uint64_t relists = 0;      // LISTs after the first (410, ERROR)
  uint64_t watches = 0;      // watch requests started
  uint64_t events = 0;       // ADDED/MODIFIED/DELETED applied
  uint64_t bookmarks = 0;
  uint64_t tombstones = 0;   // deletes found by a relist
  uint64_t decode_errors = 0;
  uint64_t stream_errors = 0;  // watches that ended in an error (connection, truncation, bad line)
  std::string resource_version;
};

class Reflector {
 public:
  Reflector(ResourceKind kind, RestClient* client, ReflectorHandler* handler, ReflectorOptions options = {});
  ~Reflector();  // Stop()
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start();
  // Cancels the watch in progress and joins the thread. Idempotent.
  void Stop();
  // True once the first LIST has been applied (and stays true).
  bool HasSynced() const;
  // Waits for HasSynced (real time); DeadlineExceeded naming the resource after `timeout`.
  Status WaitForSync(Duration timeout) const;

  ResourceKind kind() const { return kind_; }
  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  size_t size() const;
  ReflectorStats stats() const;

 private:
  void Loop();
  Status ListAndReplace();
  // Returns true when a relist is needed.
  bool WatchOnce(bool* clean_end);
  Status HandleLine(std::string_view line, bool* relist, bool* stop_stream);
  void ApplyUpsert(ObjectPtr obj);
  void ApplyDelete(ObjectPtr obj);
  void SleepBackoff(Duration d);
  std::string Selectors() const;

  const ResourceKind kind_;
  RestClient* const client_;
  ReflectorHandler* const handler_;
  const ReflectorOptions options_;
  WatchHandle watch_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::unordered_map<std::string, ObjectPtr> store_;  // guarded by mu_
  ReflectorStats stats_;                              // guarded by mu_
  bool synced_ = false;                               // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  bool finished_ = false;                             // guarded by mu_
  std::string rv_;  // loop thread only
  std::thread thread_;
};

}  // namespace volcache::kube
