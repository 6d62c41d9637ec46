#pragma once
// FakeApiServer (tests only): an HTTP server on loopback speaking enough of the Kubernetes
// API for the connector — pods, nodes, resourcequotas, persistentvolumeclaims,
// persistentvolumes (core/v1), priorityclasses (scheduling.k8s.io/v1), storageclasses
// (storage.k8s.io/v1), podgroups and queues (scheduling.volcano.sh/v1beta1), hypernodes
// (topology.volcano.sh/v1alpha1; SetServed(false) answers 404 as a server without the CRD),
// events.
//   LIST with limit/continue (consistent pages from a snapshot; continue tokens expire on
//   Compact() → 410), resourceVersion on everything; WATCH as chunked JSON lines from a
//   resourceVersion (history per resource; older than the compaction point → ERROR 410),
//   bookmarks on request, timeoutSeconds; POST create (409 AlreadyExists), pods/binding
//   (409 when already assigned), pods/eviction, DELETE (uid precondition), PATCH status
//   (strategic merge of pod conditions by type; JSON merge patch for queues; podgroups/status
//   is 404 as on a real server: the CRD has no status subresource), PATCH of an object (JSON
//   merge patch, null removes a key; metadata.resourceVersion and metadata.uid in the patch are
//   preconditions → 409 Conflict),
//   PUT update (leases, coordination.k8s.io/v1: a stale metadata.resourceVersion → 409
//   Conflict; PUT of a missing object → 404).
// Concurrency: counts the requests in flight (and their maximum); HoldRequests() makes
// matching requests wait for each other in groups (proof that a client sends them at once).
// Fault injection: scripted rules (status, Retry-After, delay, "apply then fail" = a lost
// response), random faults with a seed, dropped / truncated watch streams, malformed lines.
//
// Thread-safety: every method is safe for concurrent use (one mutex).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/kubeconfig.h"

namespace volcache::testing {

struct FaultRule {
  std::string method;         // "" = any (GET, POST, PATCH, DELETE, WATCH for watch requests)
  std::string path_contains;  // "" = any
  int status = 500;           // 0 = no error (only the delay)
  std::string reason = "InternalError";
  int retry_after = -1;  // >= 0 sets Retry-After (seconds)
  std::chrono::milliseconds delay{0};
  int times = 1;             // requests it applies to; -1 = forever
  bool after_apply = false;  // perform the request, then answer with the error
};

struct RandomFaults {
  double error_rate = 0;            // 500 before applying (any non-watch request)
  double lost_response_rate = 0;    // writes: apply, then answer 500
  double throttle_rate = 0;         // 429 with Retry-After: 0
  double conflict_rate = 0;         // writes: 409 Conflict before applying
  double watch_drop_rate = 0;       // per watch event: drop the stream instead of sending it
  double watch_truncate_rate = 0;   // per watch event: send half the line, then drop
  double watch_malformed_rate = 0;  // per watch event: send a garbage line first
  uint64_t seed = 1;
};

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  std::string url() const;
  kube::KubeConfig Config() const;

  // Loads ../shared/data/k8s: core Nodes/Pods/PodList, Volcano PodGroups and Queues (with
  // status and examples), PriorityClasses. Returns how many objects were stored.
  size_t SeedFromSharedData();

  // Direct object access (as if another client wrote). `obj` needs kind and metadata.name.
  // Returns the new resourceVersion. Create fails (returns "") if it exists.
  std::string Create(nlohmann::json obj);
  std::string Upsert(nlohmann::json obj);
  bool Delete(const std::string& resource, const std::string& ns, const std::string& name);
  std::optional<nlohmann::json> Get(const std::string& resource, const std::string& ns,
                                    const std::string& name) const;
  std::vector<nlohmann::json> List(const std::string& resource) const;
  int64_t resource_version() const;

  void AddFault(FaultRule rule);
  void ClearFaults();
  void SetRandomFaults(RandomFaults faults);
  void DropWatches();  // every open watch ends abruptly (no final chunk)
  // Every open watch ends normally now (the final chunk), as at its timeoutSeconds.
  void EndWatches();
  void TruncateNextWatchEvents(int n);  // the next n events: half a line, then the stream drops
  void MalformNextWatchEvents(int n);   // the next n events are preceded by a garbage line
  void SendBookmarks();                 // a BOOKMARK on every open watch that allows them
  void Compact();                       // history and continue tokens before now are gone (410)
  void SetListPageLimit(int64_t max);   // cap on `limit` (forces pagination)
  // false: every request on `resource` (e.g. "hypernodes") is answered 404 NotFound, as a real
  // server answers for a resource whose CRD is not installed. Objects stored stay stored.
  void SetServed(const std::string& resource, bool served);
  // A barrier for concurrency tests: every request whose path contains `path_contains`
  // waits until `count` of them are waiting at once, then they all proceed (and the next
  // `count` form the next group). A request that waits longer than `timeout` proceeds alone
  // and counts in hold_timeouts. count <= 0 removes the barrier.
  void HoldRequests(std::string path_contains, int count,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

  struct Counters {
    uint64_t lists = 0, list_pages = 0, watches = 0, open_watches = 0;
    uint64_t cache_lists = 0;  // LISTs with resourceVersion=0: answered whole, `limit` ignored
    uint64_t binds = 0, bind_conflicts = 0, status_patches = 0, deletes = 0, evictions = 0, events = 0,
             creates = 0, faults = 0;
    uint64_t object_patches = 0;  // merge patches of whole objects (PodGroup status, pod metadata)
    uint64_t updates = 0, update_conflicts = 0;  // PUTs (leases) and those refused with 409
    std::map<std::string, int> binds_per_pod;    // successful bindings per "ns/name"
    // Non-watch requests being handled now, and the most at any one time.
    uint64_t in_flight = 0, max_in_flight = 0;
    uint64_t hold_timeouts = 0;  // HoldRequests waits that timed out
    uint64_t not_served = 0;     // requests answered 404 because of SetServed(false)
    // Non-watch requests by their Authorization header ("" when none).
    std::map<std::string, int> authorizations;
  };
  Counters counters() const;
  std::vector<nlohmann::json> Events() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// JSON builders for tests.
nlohmann::json PodJson(const std::string& ns, const std::string& name, const std::string& cpu,
                       const std::string& memory, const std::string& group = "",
                       const std::string& scheduler = "volcano", const std::string& node = "");
nlohmann::json NodeJson(const std::string& name, const std::string& cpu, const std::string& memory,
                        int pods = 110);
nlohmann::json PodGroupJson(const std::string& ns, const std::string& name, int min_member,
                            const std::string& queue = "default");
nlohmann::json QueueJson(const std::string& name, int weight = 1);
// A HyperNode whose members are all of `member_type` ("Node", "HyperNode"), each selected by
// exactMatch name.
nlohmann::json HyperNodeJson(const std::string& name, int tier, const std::string& member_type,
                             const std::vector<std::string>& members);

}  // namespace volcache::testing
