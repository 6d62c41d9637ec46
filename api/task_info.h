#pragma once
// TaskInfo: one pod as the scheduler sees it.
//
// The parts that never change for a given pod version (uid, names, job id, role, the pod
// object itself, the request, non-zero request aggregates, host ports, PVCs) live in an
// immutable TaskMeta shared by every copy of the task (cache, job, node, snapshot, bind
// context). The parts the cache and sessions change (status, node, priority, flags) are
// inline, so a TaskInfo is 24 bytes and copying one is a reference-count increment plus
// two words.
//
// Thread-safety: value type; TaskMeta is immutable and may be shared across threads.

#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/inline_string.h"
#include "api/k8s/objects.h"
#include "api/k8s/shared_string.h"
#include "api/keyed_table.h"
#include "api/resource.h"
#include "api/status.h"
#include "api/task_status.h"

namespace volcache {

// "<namespace>/<name>".
std::string PodKey(std::string_view ns, std::string_view name);

// Annotations and labels volcache reads.
inline constexpr std::string_view kGroupNameAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kTaskSpecKey = "volcano.sh/task-spec";
inline constexpr std::string_view kTaskPriorityAnnotation = "volcano.sh/task-priority";
inline constexpr std::string_view kPreemptableKey = "volcano.sh/preemptable";
inline constexpr std::string_view kRevocableZoneLabel = "volcano.sh/revocable-zone";

// The pod request rule of SPEC §2: sum of regular containers, max'ed per dimension with
// each init container (a restartable sidecar init container — restartPolicy Always — adds
// to every init container after it and to the regular containers), plus spec.overhead,
// plus scalar pods = 1. Fails only on a negative quantity, naming the field.
Result<Resource> PodRequest(const k8s::Pod& pod);

// kube-scheduler's non-zero request: per container, a missing CPU request counts 100m and a
// missing memory request 200 MiB (same init/sidecar/overhead rule as PodRequest).
struct NonZeroRequest {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
};
NonZeroRequest PodNonZeroRequest(const k8s::Pod& pod);
inline constexpr int64_t kDefaultMilliCpuRequest = 100;
inline constexpr int64_t kDefaultMemoryRequest = 200ll * 1024 * 1024;

struct HostPort {
  std::string ip;        // "" means 0.0.0.0
  std::string protocol;  // TCP, UDP, SCTP
  int32_t port = 0;
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// Appends the host ports of `containers` (hostPort > 0; "" for 0.0.0.0, TCP by default).
void AppendHostPorts(const std::vector<k8s::Container>& containers, std::vector<HostPort>* out);

// Counted in place (boost::intrusive_ref_counter, 4 bytes at its start): a pointer to it is
// one word, and every copy of a task holds one.
struct TaskMeta : boost::intrusive_ref_counter<TaskMeta, boost::thread_safe_counter> {
  // uid, name and namespace are read from the pod (not copied).
  const UidString& uid() const { return pod->metadata.uid; }
  const ShortString& name() const { return pod->metadata.name; }
  const std::string& namespace_() const { return pod->metadata.namespace_; }

  // "namespace/name", as its two parts in the pod (api/keyed_table.h): the tables that key
  // tasks by it hash and compare the parts. A TaskMeta is then 88 bytes, tcmalloc's 96-byte
  // class (112 with the key joined here, 28 bytes inline).
  KeyView key() const { return KeyView(pod->metadata.namespace_, pod->metadata.name); }
  // JobId: namespace/<group-name annotation>, empty when none; one block shared by the job's
  // tasks and the job (k8s::InternSharedKey, api/k8s/shared_string.h).
  k8s::SharedString job;
  // volcano.sh/task-spec (annotation, else label), "" when the pod has none: looked up in
  // `pod`, which this TaskMeta keeps alive and never changes (nothing on the cache's paths
  // reads it).
  std::string_view role() const;
  // The pod's request (PodRequest): what the task takes from its node's idle and adds to its
  // job's allocated. Fixed for the pod version, so the job's and the node's copies of the
  // task share it.
  Resource resreq;
  // What a node accounts beyond the request, which most pods do not have: host ports, PVCs
  // ("namespace/claim"), pod (anti-)affinity, and a non-zero request other than the
  // request's cpu and memory. One pointer for all of it, null when the pod has none of it,
  // so that a TaskMeta with its count and request is 112 bytes (a tcmalloc class; 128 with
  // the non-zero request kept for every pod).
  struct NodeFacts {
    std::vector<HostPort> host_ports;
    std::vector<std::string> pvcs;
    // PodNonZeroRequest, when it differs from the request's cpu and memory: a container
    // requests no cpu or no memory, and the defaults stand in for it.
    std::optional<NonZeroRequest> non_zero;
    bool has_affinity = false;  // pod affinity or anti-affinity
    // The object model does not distinguish required from preferred anti-affinity: any
    // anti-affinity counts as required (the conservative choice for predicates).
    bool has_required_anti_affinity = false;
  };
  // Owned: a TaskMeta is never copied (copies of a task share the TaskMeta itself).
  std::unique_ptr<const NodeFacts> node_facts;  // null when the pod has none of them
  const std::vector<HostPort>& host_ports() const;
  const std::vector<std::string>& pvcs() const;
  // The request as a node's non-zero sum counts it (PodNonZeroRequest): the request's cpu and
  // memory, unless node_facts says otherwise.
  NonZeroRequest non_zero() const {
    if (node_facts != nullptr && node_facts->non_zero) return *node_facts->non_zero;
    return {resreq.milli_cpu(), resreq.memory()};
  }
  bool has_affinity() const { return node_facts != nullptr && node_facts->has_affinity; }
  bool has_required_anti_affinity() const {
    return node_facts != nullptr && node_facts->has_required_anti_affinity;
  }
  k8s::PodPtr pod;  // never null
  // Read from the pod rather than copied here.
  k8s::TimeMs creation_timestamp() const { return pod->metadata.creation_timestamp; }
};

using TaskMetaPtr = boost::intrusive_ptr<const TaskMeta>;

struct TaskInfo {
  TaskMetaPtr meta;
  k8s::Interned node_name;  // node names repeat: a 4-byte number (api/k8s/interned.h)
  // priority, status and the three flags pack into 8 bytes, so a TaskInfo is 24 bytes (an
  // entry of its job's and of its node's TaskTable).
  int32_t priority = 0;
  TaskStatus status = TaskStatus::kPending;
  bool preemptable : 1 = true;
  bool best_effort : 1 = false;
  bool scheduling_gated : 1 = false;

  // Builds a task from a pod: request rule, status table, priority (pod priority, the
  // volcano.sh/task-priority annotation overrides), preemptable (annotation, then label;
  // default true), best-effort (empty request apart from pods), scheduling gates.
  // InvalidArgument naming the pod and field on bad input.
  static Result<TaskInfo> FromPod(k8s::PodPtr pod);

  // The string that keys a task in a TaskTable (api/task_table.h): its key on a node, its uid in
  // its job.
  static constexpr uint8_t kByKey = 0;
  static constexpr uint8_t kByUid = 1;
  static KeyView TableKey(const TaskInfo& t, uint8_t kind) {
    return kind == kByUid ? KeyView(std::string_view(t.meta->uid())) : t.meta->key();
  }

  // The request (TaskMeta::resreq). A task whose request changes is a new pod version, so a
  // new TaskMeta: the request cannot be changed on one copy of a task.
  const Resource& resreq() const { return meta->resreq; }
  const UidString& uid() const { return meta->uid(); }
  const ShortString& name() const { return meta->name(); }
  const std::string& namespace_() const { return meta->namespace_(); }
  // "namespace/name" (its parts; `std::string(key())` or key().str() joins them).
  KeyView key() const { return meta->key(); }
  const k8s::SharedString& job() const { return meta->job; }
  std::string_view role() const { return meta->role(); }
  const k8s::Pod& pod() const { return *meta->pod; }
  // Annotations sent with the binding.
  const k8s::StringMap& annotations() const { return meta->pod->metadata.annotations; }
};

}  // namespace volcache
