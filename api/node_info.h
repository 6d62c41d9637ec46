#pragma once
// NodeInfo: one node's resources and the tasks placed on it, with Volcano's per-status
// accounting and kube-scheduler's aggregates.
//
// Accounting when a task is added (by the task's status at that moment; only when the
// node's Node object is known — a placeholder node created from a pod's nodeName holds its
// tasks but accounts nothing until SetNode):
//   Releasing → Idle −= r, Releasing += r, Used += r
//   Pipelined → Pipelined += r only
//   Binding   → refused (FailedPrecondition naming the short dimensions) unless r ≤ Idle
//   other     → Idle −= r (may go negative: logged and counted), Used += r
// Removal reverses exactly what the stored copy of the task contributed.
// kube-scheduler aggregates (Requested, NonZeroRequested, used host ports, PVC ref counts,
// pods with affinity) count every non-Pipelined task.
// FutureIdle = Idle + Releasing − Pipelined. SetNode recomputes everything from the tasks.
//
// Every mutating method is all-or-nothing: on error the NodeInfo is unchanged.
// Thread-safety: value type, externally synchronized.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/k8s/objects.h"
#include "api/resource.h"
#include "api/status.h"
#include "api/task_info.h"
#include "api/task_table.h"

namespace volcache {

enum class NodePhase : uint8_t { kReady, kNotReady };

struct NodeState {
  NodePhase phase = NodePhase::kNotReady;
  // "" when Ready; "UnInitialized" (placeholder) or "NotReady": interned (8 bytes, not a
  // 32-byte std::string).
  k8s::Interned reason;
  friend bool operator==(const NodeState&, const NodeState&) = default;
};

struct ImageState {
  int64_t size_bytes = 0;
  int32_t num_nodes = 0;
};

class NodeInfo {
 public:
  // A placeholder: named, no Node object, NotReady/UnInitialized, accounts nothing.
  explicit NodeInfo(std::string name);
  // A node built from its object (equivalent to placeholder + SetNode).
  static Result<NodeInfo> FromNode(k8s::NodePtr node);

  // Sets (or replaces) the Node object and recomputes allocatable, capacity, state and all
  // accounting from the stored tasks. Fails (unchanged) on invalid quantities.
  Status SetNode(k8s::NodePtr node);
  // Drops the Node object: the node becomes a placeholder again (tasks kept, nothing
  // accounted). Used when the Node is deleted while tasks still reference it.
  void UnsetNode();

  Status AddTask(const TaskInfo& task);
  // What AddTask(task) would answer, without changing anything.
  Status CanAddTask(const TaskInfo& task) const;
  // Removes the task with task.key() using the *stored* copy's status and request.
  Status RemoveTask(const TaskInfo& task);
  // RemoveTask(old stored copy) + AddTask(task), all-or-nothing.
  Status UpdateTask(const TaskInfo& task);

  const std::string& name() const { return name_; }
  const k8s::NodePtr& node() const { return node_; }
  bool is_placeholder() const { return node_ == nullptr; }
  const NodeState& state() const { return state_; }
  bool Ready() const { return state_.phase == NodePhase::kReady; }
  const std::string& revocable_zone() const { return revocable_zone_; }

  const Resource& allocatable() const { return allocatable_; }
  // status.capacity of the Node object (zero for a placeholder). Read from the object on
  // demand rather than kept beside allocatable: nothing on a scheduling path reads it, and
  // keeping it cost every NodeInfo 48 bytes.
  Resource capacity() const;
  const Resource& idle() const { return idle_; }
  const Resource& used() const { return used_; }
  const Resource& releasing() const { return future_ ? future_->releasing : Resource::Zero(); }
  const Resource& pipelined() const { return future_ ? future_->pipelined : Resource::Zero(); }
  Resource FutureIdle() const;

  // kube-scheduler's Requested: the requests of every non-Pipelined task, which are exactly
  // the tasks and the requests Used sums, so one field answers both.
  const Resource& requested() const { return used_; }
  const NonZeroRequest& non_zero_requested() const { return non_zero_requested_; }
  // (ip/protocol/port) → number of tasks using it.
  const std::vector<std::pair<HostPort, int32_t>>& used_ports() const { return used_ports_.get(); }
  const std::map<std::string, int32_t, std::less<>>& pvc_ref_counts() const { return pvc_ref_counts_.get(); }
  int32_t pods_with_affinity() const { return pods_with_affinity_; }
  // Pods with pod anti-affinity (the object model does not tell required from preferred).
  int32_t pods_with_required_anti_affinity() const { return pods_with_required_anti_affinity_; }
  // Times Idle went negative on AddTask/SetNode (each is also logged): every AddTask or
  // UpdateTask whose task takes from Idle and leaves a dimension negative, and every
  // SetNode/UnsetNode recompute that ends negative.
  int64_t negative_idle_events() const { return negative_idle_events_; }

  // Tasks by "namespace/name" (the key views the parts in the task's pod: TaskMeta::key()), flat
  // (api/task_table.h): a FindTask pointer holds until the next AddTask or RemoveTask.
  const TaskTable& tasks() const { return tasks_; }
  const TaskInfo* FindTask(KeyView key) const;

  // Image name → state (from the Node object's status.images).
  const std::unordered_map<std::string, ImageState>& images() const { return images_.get(); }

  // Bumped by every mutation; the cache uses it for incremental snapshots.
  uint64_t generation() const { return generation_; }
  void set_generation(uint64_t g) { generation_ = g; }

  // Labels and taints for predicates come from node().

 private:
  void Account(const TaskInfo& t, int sign);  // adds (+1) or reverses (-1) t's contribution
  void AccountNodeFacts(const TaskMeta::NodeFacts& pc, int sign);  // Account's rare part
  void RecomputeFromTasks();
  Status CheckTaskNode(const TaskInfo& task) const;
  Status AlreadyOnNode(const TaskInfo& task) const;  // the AlreadyExists error
  // Binding tasks must fit `idle` (only when the Node object is known).
  Status CheckBindingFits(const TaskInfo& task, const Resource& idle) const;
  // Counts `added` leaving idle negative; warns only when idle was not negative before, so a
  // node that stays over-committed logs once, not once per task. `was_negative` unset: idle
  // before was idle + added's request (`added` was just accounted as a new task).
  void NoteNegativeIdle(const TaskInfo& added, std::optional<bool> was_negative = std::nullopt);

  // First: a snapshot stamps it when it takes a new version (cache/snapshot_building.cc), so
  // it shares a cache line with the reference count the snapshot also writes, in front of
  // the object in its make_shared block (at the end it was one more miss per changed node).
  uint64_t generation_ = 0;
  // Interned, as a task's node_name (api/k8s/interned.h): a 4-byte number, which a task's
  // node_name compares equal to as a number.
  k8s::Interned name_;
  k8s::NodePtr node_;
  NodeState state_;
  // Interned (zones repeat): 4 bytes, not a 32-byte std::string.
  k8s::Interned revocable_zone_;
  Resource allocatable_, idle_, used_;
  // Releasing and Pipelined: zero on almost every node, so kept in a block of their own that
  // exists only while one of them is not zero (k8s::Boxed; copies of the node copy it).
  struct Future {
    Resource releasing, pipelined;
  };
  k8s::Boxed<Future> future_;
  Future& MutableFuture();
  void DropFutureIfZero();
  NonZeroRequest non_zero_requested_;
  // Empty on most nodes (host ports, PVCs) or unchanged from copy to copy (images): copies
  // of the node share them (k8s::Shared, 8 bytes each), so a deep copy does not copy a
  // node's image list, and a NodeInfo is 304 bytes, its make_shared block tcmalloc's
  // 320-byte class (384 with the ports a std::vector and the name a std::string; 704 with
  // the maps inline; 576 with capacity and Requested kept and the state reason a
  // std::string; 448 with Releasing and Pipelined inline).
  k8s::Shared<std::vector<std::pair<HostPort, int32_t>>> used_ports_;
  k8s::Shared<std::map<std::string, int32_t, std::less<>>> pvc_ref_counts_;
  int32_t pods_with_affinity_ = 0;
  int32_t pods_with_required_anti_affinity_ = 0;
  int64_t negative_idle_events_ = 0;
  TaskTable tasks_{TaskInfo::kByKey};
  k8s::Shared<std::unordered_map<std::string, ImageState>> images_;
};

}  // namespace volcache
