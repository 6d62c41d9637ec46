#pragma once
// The Kubernetes object model volcache reads: the fields a batch scheduler needs from
// core/v1 Pods, Nodes and ResourceQuotas, scheduling.k8s.io/v1 PriorityClasses, and
// scheduling.volcano.sh/v1beta1 PodGroups and Queues, topology.volcano.sh/v1alpha1
// HyperNodes. Objects are plain values; the
// decoder (api/k8s/decode.h) builds them from JSON/YAML and validates every quantity.
//
// A decoded Pod is shared with plugins as `std::shared_ptr<const Pod>` (PodPtr): it is
// immutable once published, so tasks, snapshots and plugins share one copy.
//
// Thread-safety: value types.

#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "api/inline_string.h"
#include "api/k8s/boxed.h"
#include "api/k8s/interned.h"
#include "api/k8s/shared.h"
#include "api/k8s/string_map.h"
#include "api/quantity.h"
#include "api/version_string.h"

namespace volcache::k8s {

// Milliseconds since the Unix epoch (RFC 3339 timestamps as the API server writes them).
using TimeMs = int64_t;

// An optional int64 in 8 bytes (a std::optional<int64_t> takes 16): INT64_MIN stands for
// "absent", and the decoders refuse it as a value (no timestamp or count of seconds is near
// it). Read and written like a std::optional: `if (t)`, `*t`, `t = v`, `t.reset()`, `t == v`.
class OptionalInt64 {
 public:
  static constexpr int64_t kAbsent = INT64_MIN;
  constexpr OptionalInt64() = default;
  constexpr OptionalInt64(std::nullopt_t) {}     // NOLINT(google-explicit-constructor)
  constexpr OptionalInt64(int64_t v) : v_(v) {}  // NOLINT(google-explicit-constructor)
  constexpr bool has_value() const { return v_ != kAbsent; }
  constexpr explicit operator bool() const { return has_value(); }
  constexpr int64_t operator*() const { return v_; }  // has_value() must hold
  constexpr int64_t value_or(int64_t absent) const { return has_value() ? v_ : absent; }
  constexpr void reset() { v_ = kAbsent; }
  friend constexpr bool operator==(OptionalInt64, OptionalInt64) = default;
  friend constexpr bool operator==(OptionalInt64 a, int64_t b) { return a.has_value() && a.v_ == b; }

 private:
  int64_t v_ = kAbsent;
};

// metadata.generation and metadata.deletionGracePeriodSeconds in 8 bytes, where two int64
// fields took 16 (so that a pod, a PodGroup and a node each drop a tcmalloc class). Nothing
// in the cache reads them; the decoders and the dump do. The word is the generation while the
// grace period is absent and the generation is not negative: every object but one being
// deleted (pods and nodes have no generation; a PodGroup's counts from 1). Otherwise its top
// bit is set and the rest is the address of a heap block that holds both.
class GenerationAndGrace {
 public:
  GenerationAndGrace() = default;
  GenerationAndGrace(const GenerationAndGrace& o) { Set(o.generation(), o.grace_period_seconds()); }
  GenerationAndGrace(GenerationAndGrace&& o) noexcept : w_(o.w_) { o.w_ = 0; }
  GenerationAndGrace& operator=(const GenerationAndGrace& o) {
    if (this != &o) Set(o.generation(), o.grace_period_seconds());
    return *this;
  }
  GenerationAndGrace& operator=(GenerationAndGrace&& o) noexcept {
    if (this != &o) {
      Free();
      w_ = o.w_;
      o.w_ = 0;
    }
    return *this;
  }
  ~GenerationAndGrace() { Free(); }

  int64_t generation() const { return boxed() ? box()->generation : static_cast<int64_t>(w_); }
  OptionalInt64 grace_period_seconds() const { return boxed() ? box()->grace : OptionalInt64(); }
  void Set(int64_t generation, OptionalInt64 grace) {
    Free();
    if (!grace.has_value() && generation >= 0) {
      w_ = static_cast<uint64_t>(generation);
    } else {
      w_ = kBoxed | reinterpret_cast<uintptr_t>(new Box{generation, grace});
    }
  }
  // Whether the two are in a heap block (an object being deleted).
  bool boxed() const { return (w_ & kBoxed) != 0; }

 private:
  struct Box {
    int64_t generation;
    OptionalInt64 grace;
  };
  static constexpr uint64_t kBoxed = uint64_t{1} << 63;
  const Box* box() const { return reinterpret_cast<const Box*>(static_cast<uintptr_t>(w_ & ~kBoxed)); }
  void Free() {
    if (boxed()) delete box();
    w_ = 0;
  }

  uint64_t w_ = 0;
};

// An optional int32 in 5 bytes of data: declared [[no_unique_address]], it lends the last 3
// of its 8 bytes to the fields after it (the ABI never reuses a std::optional's padding), which
// is where PodSpec keeps its four flags. Read and written like a std::optional<int32_t>.
class OptionalInt32 {
 public:
  constexpr OptionalInt32() = default;
  constexpr OptionalInt32(std::nullopt_t) {}                 // NOLINT(google-explicit-constructor)
  constexpr OptionalInt32(int32_t v) : v_(v), has_(true) {}  // NOLINT(google-explicit-constructor)
  constexpr OptionalInt32(const std::optional<int32_t>& o)   // NOLINT(google-explicit-constructor)
      : v_(o.value_or(0)), has_(o.has_value()) {}
  constexpr bool has_value() const { return has_; }
  constexpr explicit operator bool() const { return has_; }
  constexpr int32_t operator*() const { return v_; }  // has_value() must hold
  constexpr int32_t value_or(int32_t absent) const { return has_ ? v_ : absent; }
  constexpr std::optional<int32_t> get() const { return has_ ? std::optional<int32_t>(v_) : std::nullopt; }
  constexpr void reset() { *this = OptionalInt32(); }
  friend constexpr bool operator==(OptionalInt32 a, OptionalInt32 b) { return a.get() == b.get(); }
  friend constexpr bool operator==(OptionalInt32 a, int32_t b) { return a.has_ && a.v_ == b; }

 private:
  int32_t v_ = 0;
  bool has_ = false;
};

// Labels, annotations and selectors: StringMap (api/k8s/string_map.h), a string map sorted by
// key with the keys interned, that copies of an object share as a Shared field (`operator[]`,
// `emplace`, ... copy a shared block first) and that is one heap block of 8 + 20 bytes an entry.
// PlainStringMap is the same map as a plain value (what the decoders build one from).
using PlainStringMap = FlatStringMap;
// A ResourceList; names are kept verbatim, values parsed. Entries are sorted by name: the
// decoder reads JSON objects as nlohmann::json (a sorted map), so document order is not seen.
using ResourceList = std::vector<std::pair<std::string, Quantity>>;

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  // The name: 16 bytes, half a std::string (api/inline_string.h), up to 14 characters inline;
  // the uid 8, its characters in a heap block as a std::string's; the resourceVersion 8, an
  // etcd revision as the number itself (api/version_string.h). A pod is then 176 bytes and its
  // make_shared block tcmalloc's 192-byte class (192 and 208 with a 16-byte resourceVersion and
  // the status's qosClass; 208 and 224 with 8-byte Interned fields; 224 and 240 with a 16-byte
  // uid and the generation and grace period as two fields besides; 272 and 288 with the three
  // strings as std::strings). The labels and annotations are 8 bytes each, and one heap block
  // each when not empty (api/k8s/string_map.h: 32 bytes for one entry), shared by copies.
  ShortString name;
  Interned namespace_;  // empty for cluster-scoped objects; namespaces repeat (interned.h)
  UidString uid;
  VersionString resource_version;  // 8 bytes: an etcd revision is the number itself
  TimeMs creation_timestamp = 0;
  OptionalInt64 deletion_timestamp;  // TimeMs
  GenerationAndGrace generation_and_grace;
  int64_t generation() const { return generation_and_grace.generation(); }
  void set_generation(int64_t g) { generation_and_grace.Set(g, generation_and_grace.grace_period_seconds()); }
  OptionalInt64 deletion_grace_period_seconds() const { return generation_and_grace.grace_period_seconds(); }
  void set_deletion_grace_period_seconds(OptionalInt64 s) {
    generation_and_grace.Set(generation_and_grace.generation(), s);
  }
  StringMap labels;
  StringMap annotations;
  Shared<std::vector<OwnerReference>> owner_references;
};

// ---------------------------------------------------------------- core/v1 Pod

// metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist), ANDed.
struct LabelSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
};

struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
};

// Kubernetes' LabelSelectorAsSelector semantics over a label set (an empty selector matches
// everything).
bool LabelSelectorMatches(const LabelSelector& selector, const StringMap& labels);

// core/v1 NodeSelectorRequirement: `key <op> values` over a node's labels (matchExpressions) or
// fields (matchFields: only `metadata.name`). The decoders refuse an operator other than In,
// NotIn, Exists, DoesNotExist, Gt, Lt, and a Gt/Lt whose single value is not an integer.
struct NodeSelectorRequirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};

// Requirements ANDed; an empty term matches no node (as in Kubernetes).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;  // 1..100
  NodeSelectorTerm preference;
  friend bool operator==(const PreferredSchedulingTerm&, const PreferredSchedulingTerm&) = default;
};

// spec.affinity.nodeAffinity. `required` is requiredDuringSchedulingIgnoredDuringExecution's
// nodeSelectorTerms (ORed); absent when the pod sets none.
struct NodeAffinity {
  std::optional<std::vector<NodeSelectorTerm>> required;
  std::vector<PreferredSchedulingTerm> preferred;
};

// core/v1 PodAffinityTerm. A null labelSelector matches no pod; no namespaces and no
// namespaceSelector mean the pod's own namespace; an empty namespaceSelector every namespace.
struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;  // 1..100
  PodAffinityTerm term;
};

// spec.affinity.podAffinity or podAntiAffinity.
struct PodAffinity {
  std::vector<PodAffinityTerm> required;  // requiredDuringSchedulingIgnoredDuringExecution
  std::vector<WeightedPodAffinityTerm> preferred;
};

// core/v1 TopologySpreadConstraint. A null labelSelector matches no pod.
struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  std::string when_unsatisfiable = "DoNotSchedule";  // or ScheduleAnyway
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  std::string node_affinity_policy;  // "" = Honor (the v1.24 behaviour), or Ignore
  std::string node_taints_policy;    // "" = Ignore (the v1.24 behaviour), or Honor
  std::vector<std::string> match_label_keys;
};

struct ContainerPort {
  int32_t container_port = 0;
  int32_t host_port = 0;
  std::string protocol = "TCP";
  std::string host_ip;
  friend bool operator==(const ContainerPort&, const ContainerPort&) = default;
};

struct Container {
  std::string name;
  std::string image;
  ResourceList requests;
  ResourceList limits;
  std::vector<ContainerPort> ports;
  // Init containers only: "Always" marks a restartable sidecar.
  std::string restart_policy;
  friend bool operator==(const Container&, const Container&) = default;
};

struct Toleration {
  std::string key;
  std::string operator_;  // "Equal" (default) or "Exists"
  std::string value;
  std::string effect;  // "" means all effects
  std::optional<int64_t> toleration_seconds;
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

struct PodCondition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  TimeMs last_transition_time = 0;
  friend bool operator==(const PodCondition&, const PodCondition&) = default;
};

// The strings of PodSpec and PodStatus whose values repeat from pod to pod are Interned
// (api/k8s/interned.h): a 4-byte number each.
struct PodSpec {
  Interned node_name;
  Interned scheduler_name;  // "default-scheduler" when unset
  // The flags live in the last bytes of `priority`'s 8 (see OptionalInt32): bit-fields, so a
  // pointer to one cannot be taken (the decoders read into a local).
  [[no_unique_address]] OptionalInt32 priority;
  bool has_node_affinity : 1 = false;
  bool has_pod_affinity : 1 = false;
  bool has_pod_anti_affinity : 1 = false;
  bool host_network : 1 = false;
  Interned priority_class_name;
  // Shared between copies, and between pods with equal ones once compacted (api/k8s/compact.h).
  Shared<std::vector<Container>> containers;
  Shared<std::vector<Container>> init_containers;
  StringMap node_selector;
  Shared<std::vector<Toleration>> tolerations;

  // What few pods set, behind one pointer that is null when all three are empty (a pod was
  // then 224 bytes with its eight k8s::Shared fields of 8 bytes each, its make_shared block
  // tcmalloc's 240-byte class; it was 432 and 448 with the three inline, 288 and 320 with a
  // std::shared_ptr here and the flags beside the priority; see ObjectMeta for today's).
  // Counted in place, like k8s::Shared: one pointer. Read through the accessors; write
  // through mutable_rare(), which first copies a block that another copy of the spec shares.
  struct Rare : boost::intrusive_ref_counter<Rare, boost::thread_safe_counter> {
    ResourceList overhead;
    std::vector<std::string> pvc_names;  // volumes[].persistentVolumeClaim.claimName
    std::vector<std::string> scheduling_gates;
    // spec.affinity and spec.topologySpreadConstraints (placement constraints: session/).
    NodeAffinity node_affinity;
    PodAffinity pod_affinity;
    PodAffinity pod_anti_affinity;
    std::vector<TopologySpreadConstraint> topology_spread_constraints;
  };
  boost::intrusive_ptr<const Rare> rare;
  const ResourceList& overhead() const;
  const std::vector<std::string>& pvc_names() const;
  const std::vector<std::string>& scheduling_gates() const;
  const NodeAffinity& node_affinity() const;
  const PodAffinity& pod_affinity() const;
  const PodAffinity& pod_anti_affinity() const;
  const std::vector<TopologySpreadConstraint>& topology_spread_constraints() const;
  Rare& mutable_rare();
};

// qosClass is not kept: PodQosClass computes it (the API server derives it from the containers
// too). Without it, and with the two Interned fields side by side, the status is 24 bytes and a
// pod 176 (see ObjectMeta).
struct PodStatus {
  Interned phase;  // Pending, Running, Succeeded, Failed, Unknown
  Interned nominated_node_name;
  Shared<std::vector<PodCondition>> conditions;
  OptionalInt64 start_time;  // TimeMs
};

struct Pod {
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
};
using PodPtr = std::shared_ptr<const Pod>;

// The pod's QoS class, as the API server computes it into status.qosClass (Kubernetes'
// GetPodQOS): "BestEffort" when no container or init container requests or limits cpu or
// memory; "Guaranteed" when every one has cpu and memory limits and the pod's requests equal
// its limits; else "Burstable". Only cpu and memory count, and only positive quantities.
std::string_view PodQosClass(const Pod& pod);

// ---------------------------------------------------------------- core/v1 Node

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct NodeCondition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  friend bool operator==(const NodeCondition&, const NodeCondition&) = default;
};

struct ContainerImage {
  std::vector<std::string> names;
  int64_t size_bytes = 0;
};

// The taints and the images are Shared (8 bytes each, none when empty; copies of the node share
// them): a Node is 136 bytes and its make_shared block tcmalloc's 160-byte class (192 with the
// two std::vectors inline).
struct NodeSpec {
  bool unschedulable = false;
  Shared<std::vector<Taint>> taints;
};

// Capacity, allocatable and conditions repeat from node to node (a node pool's machines are
// alike): Shared fields, compacted (api/k8s/compact.h) so that equal ones are held once.
struct NodeStatus {
  Shared<ResourceList> capacity;
  Shared<ResourceList> allocatable;
  Shared<std::vector<NodeCondition>> conditions;
  Shared<std::vector<ContainerImage>> images;
};

struct Node {
  ObjectMeta metadata;
  NodeSpec spec;
  NodeStatus status;
};
using NodePtr = std::shared_ptr<const Node>;

// ------------------------------------------------- scheduling.volcano.sh PodGroup

struct PodGroupCondition {
  std::string type;  // Unschedulable, Scheduled
  std::string status;
  std::string transition_id;
  TimeMs last_transition_time = 0;
  std::string reason;
  std::string message;
};

// PodGroup/subGroup `networkTopology` (Volcano 1.11+).
struct NetworkTopologySpec {
  std::string mode = "hard";                    // hard | soft (the CRD's default is hard)
  std::optional<int32_t> highest_tier_allowed;  // not both this and highest_tier_name
  std::string highest_tier_name;
};

struct SubGroupPolicy {
  std::string name;
  int32_t sub_group_size = 1;
  std::optional<NetworkTopologySpec> network_topology;
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> match_label_keys;
};

struct PodGroupSpec {
  int32_t min_member = 0;
  // Interned, as the status phase: names that repeat from group to group.
  Interned queue;
  Interned priority_class_name;

  // What few groups set, behind one pointer that is null when all four are empty (a PodGroup
  // was then 176 bytes, its make_shared block tcmalloc's 192-byte class, and is 144 and 160
  // with the uid, generation and Interned fields of ObjectMeta's comment; 200 and 224 with a
  // pointer each, 368 and 384 with a std::optional and two std::vectors inline and the
  // metadata's name, uid and resourceVersion std::strings). Counted in place, as PodSpec's:
  // copies of the spec share the block. Read through the accessors; write through
  // mutable_rare(), which first copies a block that another copy of the spec shares.
  struct Rare : boost::intrusive_ref_counter<Rare, boost::thread_safe_counter> {
    // A k8s::Shared map, which the JobInfo shares rather than copies.
    Shared<std::map<std::string, int32_t, std::less<>>> min_task_member;
    ResourceList min_resources;
    std::optional<NetworkTopologySpec> network_topology;
    std::vector<SubGroupPolicy> sub_group_policy;
  };
  boost::intrusive_ptr<const Rare> rare;
  const Shared<std::map<std::string, int32_t, std::less<>>>& min_task_member() const;
  const ResourceList& min_resources() const;
  const std::optional<NetworkTopologySpec>& network_topology() const;
  const std::vector<SubGroupPolicy>& sub_group_policy() const;
  Rare& mutable_rare();
};

struct PodGroupStatus {
  Interned phase;       // Pending, Running, Unknown, Inqueue, Completed
  int32_t running = 0;  // beside the 4-byte phase: the status is 24 bytes, a PodGroup 144
  Shared<std::vector<PodGroupCondition>> conditions;
  int32_t succeeded = 0;
  int32_t failed = 0;
};

struct PodGroup {
  ObjectMeta metadata;
  PodGroupSpec spec;
  PodGroupStatus status;
};

// ---------------------------------------------------- scheduling.volcano.sh Queue

struct QueueSpec {
  int32_t weight = 1;  // the CRD defaults weight to 1
  ResourceList capability;
  std::optional<bool> reclaimable;  // absent means true
  ResourceList deserved;
  ResourceList guarantee;  // spec.guarantee.resource
  std::string parent;
};

struct QueueStatus {
  std::string state;  // Open, Closed, Closing, Unknown; "" = not written yet (counts as Open)
  ResourceList allocated;
  int32_t pending = 0;
  int32_t running = 0;
  int32_t inqueue = 0;
  int32_t completed = 0;
  int32_t unknown = 0;
};

struct Queue {
  ObjectMeta metadata;
  QueueSpec spec;
  QueueStatus status;
};

// ------------------------------------------ scheduling.k8s.io PriorityClass, ResourceQuota

struct PriorityClass {
  ObjectMeta metadata;
  int32_t value = 0;
  bool global_default = false;
  std::string preemption_policy;
};

struct ResourceQuota {
  ObjectMeta metadata;
  ResourceList spec_hard;
  ResourceList status_hard;
  ResourceList status_used;
};

// --------------------------- core/v1 PersistentVolumeClaim, PersistentVolume, storage.k8s.io StorageClass
// Read for placement only (VolumeBinding, VolumeZone): what a pod's claims bind it to.

struct PersistentVolumeClaim {
  ObjectMeta metadata;
  std::string volume_name;  // spec.volumeName: "" while the claim is unbound
  // The annotation volume.beta.kubernetes.io/storage-class when present (it takes precedence,
  // as in kube's GetPersistentVolumeClaimClass), else spec.storageClassName; absent when
  // neither is set.
  std::optional<std::string> storage_class_name;
  std::string phase;  // status.phase: Pending, Bound, Lost
};

struct PersistentVolume {
  ObjectMeta metadata;  // labels: topology.kubernetes.io/zone and /region for VolumeZone
  // spec.nodeAffinity.required.nodeSelectorTerms (terms ORed); absent: every node.
  std::optional<std::vector<NodeSelectorTerm>> node_affinity;
  std::string storage_class_name;  // the beta annotation when present, else spec.storageClassName
  std::string phase;               // status.phase: Pending, Available, Bound, Released, Failed
};

// Cluster-scoped.
struct StorageClass {
  ObjectMeta metadata;
  std::string provisioner;
  std::string volume_binding_mode = "Immediate";  // or WaitForFirstConsumer
};

// ------------------------------------------------- topology.volcano.sh HyperNode

// One member of a HyperNode: a Node or HyperNode selected by exactly one selector
// (labelMatch only for Node members; regexMatch is an unanchored RE2 search).
struct HyperNodeMember {
  enum class Type : uint8_t { kNode, kHyperNode };
  enum class Selector : uint8_t { kExact, kRegex, kLabel };
  Type type = Type::kNode;
  Selector selector = Selector::kExact;
  std::string name_or_pattern;  // exactMatch.name or regexMatch.pattern
  LabelSelector labels;         // labelMatch
};

struct HyperNodeSpec {
  int32_t tier = 0;
  std::string tier_name;
  std::vector<HyperNodeMember> members;
};

// Cluster-scoped; status (nodeCount, conditions) is not read.
struct HyperNode {
  ObjectMeta metadata;
  HyperNodeSpec spec;
};
using HyperNodePtr = std::shared_ptr<const HyperNode>;

// A well-formed Kubernetes object of a kind volcache does not model (a vcjob, a
// Deployment, a CRD). Decoding it succeeds so that manifests can be read whole; the cache
// refuses it with an error naming the kind.
struct Unstructured {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
};

using Object = std::variant<Pod, Node, PodGroup, Queue, PriorityClass, ResourceQuota, HyperNode,
                            PersistentVolumeClaim, PersistentVolume, StorageClass, Unstructured>;

// "Pod", "Node", "PodGroup", "Queue", "PriorityClass", "ResourceQuota", "HyperNode",
// "PersistentVolumeClaim", "PersistentVolume", "StorageClass", or the Unstructured kind.
std::string_view KindOf(const Object& obj);
const ObjectMeta& MetaOf(const Object& obj);
// "<namespace>/<name>", or the name alone for a cluster-scoped object: how stores key objects.
std::string ObjectKey(const ObjectMeta& meta);
// "<kind> <namespace>/<name>" or "<kind> <name>": how errors name an object.
std::string DescribeObject(const Object& obj);

// A List object (PodList, NodeList, ...).
struct ObjectList {
  std::string kind;              // e.g. "PodList"
  std::string resource_version;  // metadata.resourceVersion
  std::string continue_token;    // metadata.continue
  std::vector<Object> items;
};

// A Kubernetes `Status` object (errors, and the object of an ERROR watch event).
struct ApiStatus {
  std::string status;  // "Failure"
  std::string message;
  std::string reason;  // e.g. "Expired", "Gone", "Conflict", "AlreadyExists"
  int32_t code = 0;
};

enum class WatchEventType : uint8_t { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view WatchEventTypeName(WatchEventType t);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // For ADDED/MODIFIED/DELETED: the object; for BOOKMARK: an Unstructured (or typed) object
  // carrying only metadata.resourceVersion; for ERROR: unset, see `error`.
  std::optional<Object> object;
  ApiStatus error;
};

}  // namespace volcache::k8s
