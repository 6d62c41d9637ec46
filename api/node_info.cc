#include "api/node_info.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "api/check.h"
#include "api/resource_list.h"

namespace volcache {

namespace {

constexpr std::string_view kUnInitialized = "UnInitialized";
constexpr std::string_view kNotReadyReason = "NotReady";

bool HasNegative(const Resource& r) {
  if (r.milli_cpu() < 0 || r.memory() < 0) return true;
  for (const Resource::Scalar* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->value < 0) return true;
  }
  return false;
}

void Apply(Resource& target, const Resource& r, int sign) {
  if (sign > 0) {
    target.Add(r);
  } else {
    target.SubUnchecked(r);
  }
}

// Whether a task in `status` takes from Idle (and counts in the kube-scheduler aggregates).
bool TakesIdle(TaskStatus status) { return status != TaskStatus::kPipelined; }

// The reasons, interned once (interning looks the table up under its mutex).
const k8s::Interned& UnInitializedReason() {
  static const k8s::Interned reason(kUnInitialized);
  return reason;
}
const k8s::Interned& NotReadyReason() {
  static const k8s::Interned reason(kNotReadyReason);
  return reason;
}

NodeState StateOf(const k8s::Node& node) {
  for (const k8s::NodeCondition& c : node.status.conditions) {
    if (c.type == "Ready") {
      if (c.status == "True") return NodeState{NodePhase::kReady, k8s::Interned()};
      break;
    }
  }
  return NodeState{NodePhase::kNotReady, NotReadyReason()};
}

}  // namespace

NodeInfo::NodeInfo(std::string name)
    : name_(std::move(name)), state_{NodePhase::kNotReady, UnInitializedReason()} {}

Result<NodeInfo> NodeInfo::FromNode(k8s::NodePtr node) {
  if (node == nullptr) return Status::InvalidArgument("NodeInfo::FromNode: null node");
  NodeInfo ni(node->metadata.name);
  VC_RETURN_IF_ERROR(ni.SetNode(std::move(node)));
  return ni;
}

Resource NodeInfo::capacity() const {
  if (node_ == nullptr) return Resource();
  // SetNode refuses a Node whose capacity does not parse: the node held parses.
  Result<Resource> capacity = ResourceFromList(node_->status.capacity, "status.capacity");
  VC_CHECK(capacity.ok(), capacity.status().ToString());
  return std::move(capacity).value();
}

Status NodeInfo::SetNode(k8s::NodePtr node) {
  if (node == nullptr)
    return Status::InvalidArgument(fmt::format("Node {}: SetNode with a null node", name_));
  if (node->metadata.name != name_.str()) {
    return Status::InvalidArgument(
        fmt::format("Node {}: SetNode with the object of node {}", name_, node->metadata.name));
  }
  const std::string prefix = fmt::format("Node {}", name_);
  Result<Resource> capacity = ResourceFromList(node->status.capacity, "status.capacity");
  if (!capacity.ok()) return capacity.status().WithPrefix(prefix);
  Result<Resource> allocatable = capacity;
  if (!node->status.allocatable.empty()) {
    allocatable = ResourceFromList(node->status.allocatable, "status.allocatable");
    if (!allocatable.ok()) return allocatable.status().WithPrefix(prefix);
  }

  std::unordered_map<std::string, ImageState> images;
  for (const k8s::ContainerImage& image : node->status.images) {
    for (const std::string& name : image.names) images[name] = ImageState{image.size_bytes, 1};
  }
  std::string zone;
  if (auto it = node->metadata.labels.find(kRevocableZoneLabel); it != node->metadata.labels.end()) {
    zone = it->second;
  }

  // Nothing below can fail.
  state_ = StateOf(*node);
  allocatable_ = std::move(allocatable).value();
  images_ = std::move(images);
  revocable_zone_ = std::move(zone);
  node_ = std::move(node);
  RecomputeFromTasks();
  ++generation_;
  return Status::Ok();
}

void NodeInfo::UnsetNode() {
  node_ = nullptr;
  state_ = NodeState{NodePhase::kNotReady, UnInitializedReason()};
  allocatable_ = Resource();
  images_.clear();
  revocable_zone_.clear();
  RecomputeFromTasks();
  ++generation_;
}

void NodeInfo::RecomputeFromTasks() {
  idle_ = node_ ? allocatable_ : Resource();
  used_ = Resource();
  future_.reset();
  non_zero_requested_ = NonZeroRequest{};
  used_ports_.clear();
  pvc_ref_counts_.clear();
  pods_with_affinity_ = 0;
  pods_with_required_anti_affinity_ = 0;
  // Binding tasks are accounted like Allocated here: the fit check belongs to the moment a
  // bind is decided, not to a later change of the Node object.
  for (const auto& [key, task] : tasks_) Account(task, +1);
  if (node_ != nullptr && HasNegative(idle_)) {
    ++negative_idle_events_;
    spdlog::warn("node {}: idle is negative after recomputing from {} tasks: idle <{}>, allocatable <{}>",
                 name_, tasks_.size(), idle_.ToString(), allocatable_.ToString());
  }
}

void NodeInfo::Account(const TaskInfo& t, int sign) {
  if (node_ == nullptr) return;  // placeholders hold tasks but account nothing
  const Resource& r = t.resreq();
  if (!TakesIdle(t.status)) {
    Apply(MutableFuture().pipelined, r, sign);
    if (sign < 0) DropFutureIfZero();
    return;
  }
  Apply(idle_, r, -sign);
  Apply(used_, r, sign);
  if (t.status == TaskStatus::kReleasing) {
    Apply(MutableFuture().releasing, r, sign);
    if (sign < 0) DropFutureIfZero();
  }

  // kube-scheduler aggregates (Requested is Used).
  const TaskMeta& m = *t.meta;
  const NonZeroRequest non_zero = m.non_zero();
  non_zero_requested_.milli_cpu += sign * non_zero.milli_cpu;
  non_zero_requested_.memory += sign * non_zero.memory;
  if (m.node_facts != nullptr) AccountNodeFacts(*m.node_facts, sign);
}

void NodeInfo::AccountNodeFacts(const TaskMeta::NodeFacts& pc, int sign) {
  if (pc.has_affinity) pods_with_affinity_ += sign;
  if (pc.has_required_anti_affinity) pods_with_required_anti_affinity_ += sign;
  if (!pc.host_ports.empty()) {
    auto& ports = used_ports_.mut();  // copied first when a copy of the node shares it
    for (const HostPort& hp : pc.host_ports) {
      auto it =
          std::find_if(ports.begin(), ports.end(), [&](const auto& entry) { return entry.first == hp; });
      if (sign > 0) {
        if (it == ports.end()) {
          ports.emplace_back(hp, 1);
        } else {
          ++it->second;
        }
      } else if (it != ports.end() && --it->second <= 0) {
        ports.erase(it);
      }
    }
    if (ports.empty()) used_ports_.clear();  // no block for no ports
  }
  for (const std::string& pvc : pc.pvcs) {
    if (sign > 0) {
      ++pvc_ref_counts_[pvc];
    } else if (pvc_ref_counts_.find(pvc) != pvc_ref_counts_.end()) {
      auto& counts = pvc_ref_counts_.mut();
      if (auto it = counts.find(pvc); --it->second <= 0) counts.erase(it);
    }
  }
}

Status NodeInfo::CheckTaskNode(const TaskInfo& task) const {
  if (!task.node_name.empty() && task.node_name != name_) {
    return Status::FailedPrecondition(
        fmt::format("task {} is on node {}, not on node {}", task.key(), task.node_name, name_));
  }
  return Status::Ok();
}

Status NodeInfo::CheckBindingFits(const TaskInfo& task, const Resource& idle) const {
  if (node_ == nullptr || task.status != TaskStatus::kBinding) return Status::Ok();
  if (task.resreq().LessEqual(idle, DimensionDefault::kZero)) return Status::Ok();
  return Status::FailedPrecondition(fmt::format("task {} does not fit node {}: insufficient {}", task.key(),
                                                name_, task.resreq().InsufficientDimensions(idle)));
}

void NodeInfo::NoteNegativeIdle(const TaskInfo& task, std::optional<bool> was_negative) {
  if (node_ == nullptr || !TakesIdle(task.status) || !HasNegative(idle_)) return;
  ++negative_idle_events_;
  if (!was_negative) {
    Resource before = idle_;
    before.Add(task.resreq());
    was_negative = HasNegative(before);
  }
  if (*was_negative) return;
  spdlog::warn("node {}: idle is negative after adding task {} ({}, request <{}>): idle <{}>", name_,
               task.key(), TaskStatusName(task.status), task.resreq().ToString(), idle_.ToString());
}

Status NodeInfo::AlreadyOnNode(const TaskInfo& task) const {
  return Status::AlreadyExists(fmt::format("task {} is already on node {}", task.key(), name_));
}

Status NodeInfo::CanAddTask(const TaskInfo& task) const {
  VC_RETURN_IF_ERROR(CheckTaskNode(task));
  if (tasks_.find(task.key()) != tasks_.end()) return AlreadyOnNode(task);
  return CheckBindingFits(task, idle_);
}

Status NodeInfo::AddTask(const TaskInfo& task) {
  // Same checks, in the same order, as CanAddTask, with one lookup.
  VC_RETURN_IF_ERROR(CheckTaskNode(task));
  // The node keeps its own copy so later changes to the caller's task do not skew the
  // accounting; removal reverses exactly this copy.
  auto [stored, inserted] = tasks_.try_emplace(task);
  if (!inserted) return AlreadyOnNode(task);
  if (Status fits = CheckBindingFits(task, idle_); !fits.ok()) {
    tasks_.erase(tasks_.end() - 1);  // the entry just added
    return fits;
  }
  Account(*stored, +1);
  NoteNegativeIdle(*stored);
  ++generation_;
  return Status::Ok();
}

Status NodeInfo::RemoveTask(const TaskInfo& task) {
  auto it = tasks_.find(task.key());
  if (it == tasks_.end()) {
    return Status::NotFound(fmt::format("task {} is not on node {}", task.key(), name_));
  }
  Account(it->second, -1);
  tasks_.erase(it);
  ++generation_;
  return Status::Ok();
}

Status NodeInfo::UpdateTask(const TaskInfo& task) {
  auto it = tasks_.find(task.key());
  if (it == tasks_.end()) {
    return Status::NotFound(fmt::format("task {} is not on node {}", task.key(), name_));
  }
  VC_RETURN_IF_ERROR(CheckTaskNode(task));
  if (node_ != nullptr && task.status == TaskStatus::kBinding) {
    Resource idle = idle_;
    if (TakesIdle(it->second.status)) idle.Add(it->second.resreq());
    VC_RETURN_IF_ERROR(CheckBindingFits(task, idle));
  }
  const bool was_negative = HasNegative(idle_);
  Account(it->second, -1);
  // Re-keyed: the key views the stored task's TaskMeta, which `task` may replace.
  const TaskInfo& stored = tasks_.replace(it, task);
  Account(stored, +1);
  NoteNegativeIdle(stored, was_negative);
  ++generation_;
  return Status::Ok();
}

Resource NodeInfo::FutureIdle() const {
  Resource r = idle_;
  if (future_) {
    r.Add(future_->releasing);
    r.SubUnchecked(future_->pipelined);
  }
  return r;
}

NodeInfo::Future& NodeInfo::MutableFuture() {
  if (!future_) future_.emplace();
  return *future_;
}

// Exactly zero (Equal compares integers; not Resource::IsEmpty's tolerance): a residue must
// stay counted.
void NodeInfo::DropFutureIfZero() {
  auto zero = [](const Resource& r) { return r.Equal(Resource::Zero(), DimensionDefault::kZero); };
  if (future_ && zero(future_->releasing) && zero(future_->pipelined)) future_.reset();
}

const TaskInfo* NodeInfo::FindTask(KeyView key) const {
  auto it = tasks_.find(key);
  return it == tasks_.end() ? nullptr : &it->second;
}

}  // namespace volcache
