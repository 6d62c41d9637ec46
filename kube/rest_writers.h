#pragma once
// The REST implementations of the cache's outbound interfaces (SPEC §5, §6):
//   RestBinder        per task: the BindContext's pod_patch as a JSON merge PATCH of the pod's
//                     metadata (only the keys it names; uid as a precondition), then POST
//                     pods/{name}/binding (with the pod's annotations). A refused PATCH fails
//                     the task without a Binding; a refused Binding undoes the PATCH first
//                     (binder/binder.h);
//   RestEvictor       pod conditions (Ready=False/Evict, DisruptionTarget=True) on the status
//                     subresource, then DELETE (uid precondition) or the Eviction API;
//   RestStatusUpdater pod conditions (strategic-merge patch on pods/status), Queue status
//                     (merge patch on queues/status) and PodGroup status. Volcano's PodGroup
//                     CRD has no status subresource (PATCH podgroups/NAME/status is 404 on a
//                     real server): its status goes in a merge patch of the object itself,
//                     carrying the cached resourceVersion as a precondition; a 409 re-reads
//                     the object (GET) and retries with its resourceVersion, at most
//                     kPodGroupStatusAttempts times (10 ms steps with jitter between, like
//                     client-go retry.DefaultRetry). A status identical to the one this
//                     updater last wrote for the same object version is not sent again.
//                     All status writes use RequestClass::kStatus (their own client bucket).
// (core/v1 Events: kube/events.h.)
// plus CreateQueueIfMissing for volcache's `root` and default queues.
//
// Failure semantics: every error names the operation and the object and carries the HTTP
// status and the server's Status message. A 409 on a binding is success when a GET of the
// pod shows it bound to the same node (our earlier attempt was applied but its answer lost,
// or the client retried it on a fresh connection); any other bind failure is returned as is:
// the cache forgets the task and the resync from the cluster decides what happened (SPEC §3).
// A write answered 404 succeeds ("gone": nothing left to write) only when a GET of the object
// confirms it is gone; otherwise the 404 is an error. A 403 logs, once per (verb, resource),
// which permission is missing (ForbiddenMessage).
//
// Thread-safety: all classes are safe for concurrent use; they borrow the RestClient,
// which must outlive them. RestBinder owns `max_in_flight` worker threads (started by the
// constructor, joined by the destructor) that carry the bindings of concurrent batches.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/mutex.h"
#include "binder/binder.h"
#include "evictor/evictor.h"
#include "kube/rest_client.h"

namespace volcache::kube {

struct RestBinderOptions {
  // Bindings in flight at once, over all batches (--kube-bind-concurrency), >= 1. The
  // default matches RestClientOptions::max_idle_connections: every binding in flight can
  // reuse a keep-alive connection.
  size_t max_in_flight = 16;
};

class RestBinder final : public Binder {
 public:
  explicit RestBinder(RestClient* client, RestBinderOptions options = {});
  ~RestBinder() override EXCLUDES(mu_);  // joins the workers; no Bind() may be running
  RestBinder(const RestBinder&) = delete;
  RestBinder& operator=(const RestBinder&) = delete;

  // The batch's bindings go out concurrently — on the calling thread and the binder's
  // workers, at most `max_in_flight` at once over every Bind() call in progress, in batch
  // order — each through RestClient::Do (its QPS limit applies to each one). Returns one
  // Status per context, in batch order, once all of them have an answer.
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override EXCLUDES(mu_);
  // One binding on the calling thread (exposed for tests and tools; not counted against
  // `max_in_flight`).
  Status BindOne(const TaskInfo& task, const std::string& node);
  // One task on the calling thread: PATCH the pod with ctx.pod_patch (skipped when empty),
  // then the binding. When the binding fails after the PATCH succeeded, the PATCH is undone
  // before returning: every key it named gets back the value the cached pod (ctx.task) had,
  // or is removed if the cached pod did not have it. The undo carries the resourceVersion
  // the PATCH answered with; on a conflict the pod is re-read and only keys still holding the
  // value we wrote are restored (someone else's later write wins), at most
  // kUndoPatchAttempts times. A pod gone meanwhile needs no undo. The returned error is the
  // binding's (with the undo's failure appended, if it failed too).
  Status BindOne(const BindContext& ctx);

  static constexpr int kUndoPatchAttempts = 3;

 private:
  struct Batch;  // one Bind() call in progress
  // POST pods/{name}/binding (BindingBody with `patch`), 409 for the same node is success.
  Status PostBinding(const TaskInfo& task, const std::string& node, const PodPatch* patch);
  // Restores the keys of `patch` on the pod (see BindOne(ctx)); `rv` is the resourceVersion
  // the forward PATCH answered with ("" for none).
  Status UndoPodPatch(const BindContext& ctx, std::string rv);
  void Work() EXCLUDES(mu_);  // a worker thread
  // Claims `b`'s next unclaimed binding and a slot (requires both); returns its index.
  size_t ClaimLocked(Batch* b) REQUIRES(mu_);
  // Runs binding `i` of `b` with mu_ released, then hands back its slot.
  void RunClaimed(Batch* b, size_t i) REQUIRES(mu_);

  RestClient* client_;
  const size_t max_in_flight_;
  Mutex mu_;
  CondVar work_cv_;                             // workers: a binding waits for a free slot, or stopping_
  std::deque<Batch*> waiting_ GUARDED_BY(mu_);  // batches with unclaimed bindings, oldest first
  size_t free_slots_ GUARDED_BY(mu_);           // max_in_flight_ minus bindings in flight
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;  // max_in_flight_ of them
};

class RestEvictor final : public Evictor {
 public:
  RestEvictor(RestClient* client, bool use_eviction_api)
      : client_(client), use_eviction_api_(use_eviction_api) {}
  Status Evict(const k8s::Pod& pod, const std::string& reason) override;

 private:
  RestClient* client_;
  bool use_eviction_api_;
};

class RestStatusUpdater final : public StatusUpdater {
 public:
  static constexpr int kPodGroupStatusAttempts = 4;

  explicit RestStatusUpdater(RestClient* client) : client_(client) {}
  Status UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) override;
  Status UpdatePodGroup(const k8s::PodGroup& pg) override;
  Status UpdateQueueStatus(const k8s::Queue& queue) override;

  struct Stats {
    uint64_t skipped_identical = 0;  // writes not sent: already written for that version
    uint64_t conflicts = 0;          // 409s answered by a re-read and a retry
  };
  Stats stats() const EXCLUDES(mu_);

 private:
  // What this updater last wrote for an object: the status body, the resourceVersion the
  // write started from and the one the server answered with.
  struct Written {
    std::string status;
    std::string rv_before, rv_after;
  };
  // True (and counted) when `status` was already written for `key` at `rv`.
  bool AlreadyWritten(const std::string& key, const std::string& status, const std::string& rv) EXCLUDES(mu_);
  void Remember(const std::string& key, Written w) EXCLUDES(mu_);

  RestClient* client_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Written> written_ GUARDED_BY(mu_);  // key "kind/ns/name"
  Stats stats_ GUARDED_BY(mu_);
};

// The body of POST pods/{name}/binding: a v1 Binding naming the pod (name, namespace, uid
// and its annotations) and the target node. The API server copies the Binding's annotations
// onto the pod, so with a `patch` (already applied to the pod) its annotation values replace
// the cached ones and the keys it removes are left out. Every string is JSON-escaped; bytes
// that are not valid UTF-8 become U+FFFD.
std::string BindingBody(const TaskInfo& task, const std::string& node, const PodPatch* patch = nullptr);

// POSTs a Queue {name, weight 1, reclaimable}; OK when it exists already (409).
Status CreateQueueIfMissing(RestClient* client, const std::string& name, bool reclaimable);

// "forbidden: this client's user or service account needs RBAC permission verb "<verb>" on
// resource "<resource>" in API group "<group>" ... (see deploy/02-clusterrole.yaml)"; the core
// group is "" (the reflectors name a refused LIST/WATCH the same way).
std::string ForbiddenMessage(std::string_view verb, std::string_view resource, std::string_view group);
// Logs ForbiddenMessage once per (verb, resource) for the process; true the first time.
bool LogForbiddenOnce(std::string_view verb, std::string_view resource, std::string_view group);

// RFC 3339 UTC with seconds ("2024-01-02T03:04:05Z").
std::string FormatTimestamp(int64_t ms);
// Wall-clock milliseconds since the Unix epoch (timestamps written to the API server).
int64_t WallNowMs();

// The Content-Type of a strategic-merge PATCH (pod conditions, Events).
inline constexpr char kStrategicMergePatch[] = "application/strategic-merge-patch+json";

}  // namespace volcache::kube
