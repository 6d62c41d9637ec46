#pragma once
// The REST implementations of the cache's outbound interfaces (SPEC §5, §6):
//   RestBinder        POST pods/{name}/binding (with the pod's annotations), one per task;
//   RestEvictor       pod conditions (Ready=False/Evict, DisruptionTarget=True) on the status
//                     subresource, then DELETE (uid precondition) or the Eviction API;
//   RestStatusUpdater pod conditions (strategic-merge patch), PodGroup and Queue status
//                     (merge patch on the status subresource);
//   RestEventRecorder core/v1 Events, posted asynchronously from a bounded queue (events are
//                     best effort: a full queue drops and counts, never blocks a bind).
// plus CreateQueueIfMissing for volcache's `root` and default queues.
//
// Failure semantics: every error names the operation and the object and carries the HTTP
// status and the server's Status message. A 409 on a binding ("already assigned") or any
// other bind failure is returned as is: the cache forgets the task and the resync from the
// cluster decides what happened (SPEC §3). Writes about objects that no longer exist (404)
// succeed: there is nothing left to write.
//
// Thread-safety: all classes are safe for concurrent use; they borrow the RestClient,
// which must outlive them.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "binder/binder.h"
#include "evictor/evictor.h"
#include "kube/rest_client.h"

namespace volcache::kube {

class RestBinder final : public Binder {
 public:
  explicit RestBinder(RestClient* client) : client_(client) {}
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override;
  // One binding (exposed for tests and tools).
  Status BindOne(const TaskInfo& task, const std::string& node);

 private:
  RestClient* client_;
};

class RestEvictor final : public Evictor {
 public:
  RestEvictor(RestClient* client, bool use_eviction_api) : client_(client), use_eviction_api_(use_eviction_api) {}
  Status Evict(const k8s::Pod& pod, const std::string& reason) override;

 private:
  RestClient* client_;
  bool use_eviction_api_;
};

class RestStatusUpdater final : public StatusUpdater {
 public:
  explicit RestStatusUpdater(RestClient* client) : client_(client) {}
  Status UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) override;
  Status UpdatePodGroup(const k8s::PodGroup& pg) override;
  Status UpdateQueueStatus(const k8s::Queue& queue) override;

 private:
  RestClient* client_;
};

class RestEventRecorder final : public EventRecorder {
 public:
  RestEventRecorder(RestClient* client, std::string component, size_t capacity = 4096);
  ~RestEventRecorder() override;  // Stop()
  void Event(const EventRef& object, const std::string& type, const std::string& reason,
             const std::string& message) override;
  // Posts what is queued (up to `timeout`), then stops the poster thread. Idempotent.
  void Stop(Duration timeout = std::chrono::seconds(2));

  struct Stats {
    uint64_t posted = 0;
    uint64_t failed = 0;
    uint64_t dropped = 0;
  };
  Stats stats() const;

 private:
  struct Pending {
    EventRef object;
    std::string type, reason, message;
    int64_t time_ms;
  };
  void Run();
  Status Post(const Pending& e);

  RestClient* client_;
  const std::string component_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  Stats stats_;                // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::chrono::steady_clock::time_point drain_deadline_;  // guarded by mu_
  std::thread thread_;
};

// POSTs a Queue {name, weight 1, reclaimable}; OK when it exists already (409).
Status CreateQueueIfMissing(RestClient* client, const std::string& name, bool reclaimable);

// RFC 3339 UTC with seconds ("2024-01-02T03:04:05Z").
std::string FormatTimestamp(int64_t ms);

}  // namespace volcache::kube
