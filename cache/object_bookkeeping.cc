// Nodes, PodGroups and priorities: the cache's objects other than tasks (cache/cache_state.h).

#include <algorithm>

#include "api/k8s/compact.h"
#include "cache/cache_state.h"

namespace volcache {

Status SchedulerCache::Impl::AddOrUpdateNodeLocked(const k8s::NodePtr& node) {
  const std::string& name = node->metadata.name;
  auto it = nodes.find(name);
  const bool was_ready = it != nodes.end() && it->second.info->Ready();
  if (it == nodes.end()) {
    auto info = NodeInfo::FromNode(node);
    if (!info.ok()) return info.status();
    CreateNodeSlot(name, std::make_shared<NodeInfo>(std::move(*info)));
  } else {
    // Validate on a scratch copy so that a refused update leaves the slot untouched.
    NodeInfo trial = *it->second.info;
    VC_RETURN_IF_ERROR(trial.SetNode(node));
    if (!(trial.allocatable() == it->second.info->allocatable())) it->second.allocatable_changed = true;
    NodeInfo& w = WritableNode(name, it->second);
    int64_t before = w.negative_idle_events();
    w = std::move(trial);
    w.set_generation(it->second.gen);
    counters.negative_idle += static_cast<uint64_t>(std::max<int64_t>(0, w.negative_idle_events() - before));
  }
  tree.Add(name, ZoneKey(node->metadata.labels));
  forest.UpsertNode(name, node->metadata.labels);
  // Snapshots narrow leaf sets to Ready nodes: only a HyperNode leaf's readiness matters.
  if (was_ready != nodes.at(name).info->Ready() && forest.Selects(name)) ++ready_version;
  return Status::Ok();
}

void SchedulerCache::Impl::RemoveNodeLocked(const std::string& name) {
  auto it = nodes.find(name);
  if (it == nodes.end()) return;
  if (it->second.info->Ready() && forest.Selects(name)) ++ready_version;
  forest.RemoveNode(name);
  if (it->second.info->tasks().empty()) {
    EraseNodeSlot(name);
    return;
  }
  // Tasks still reference the node: keep a placeholder until they leave; it is not Ready,
  // so it drops out of snapshots at once.
  WritableNode(name, it->second).UnsetNode();
  tree.Remove(name);
}

Status SchedulerCache::Impl::SetPodGroupLocked(const std::shared_ptr<const k8s::PodGroup>& pg) {
  const JobId id = PodKey(pg->metadata.namespace_, pg->metadata.name);
  auto it = jobs.find(id);
  if (it != jobs.end()) {
    JobInfo trial = *it->second.info;
    VC_RETURN_IF_ERROR(trial.SetPodGroup(pg, options.default_queue));
    trial.set_priority(PriorityFor(trial));
    JobInfo& w = WritableJob(it->second);
    uint64_t g = w.generation();
    w = std::move(trial);
    w.set_generation(g);
    departed_pod_groups.erase(it->first);
    return Status::Ok();
  }
  k8s::SharedString key = k8s::InternShared(id);  // once, for the job and its slot
  JobInfo fresh(key);
  VC_RETURN_IF_ERROR(fresh.SetPodGroup(pg, options.default_queue));
  fresh.set_priority(PriorityFor(fresh));
  JobSlot& s = CreateJobSlot(std::move(key));
  uint64_t g = s.info->generation();
  *s.info = std::move(fresh);
  s.info->set_generation(g);
  return Status::Ok();
}

int32_t SchedulerCache::Impl::PriorityFor(const JobInfo& job) const {
  if (!job.pod_group()) return 0;
  const std::string& pc = job.pod_group()->spec.priority_class_name;
  if (!pc.empty()) {
    if (auto it = priority_classes.find(pc); it != priority_classes.end()) return it->second;
  }
  return default_priority;
}

void SchedulerCache::Impl::RecomputePriorities() {
  for (auto& [id, slot] : jobs) {
    int32_t p = PriorityFor(*slot.info);
    if (p != slot.info->priority()) WritableJobTasks(slot).set_priority(p);
  }
}

void SchedulerCache::Impl::RecomputeDefaultPriority() {
  default_priority = 0;
  if (!global_default_class.empty()) {
    if (auto it = priority_classes.find(global_default_class); it != priority_classes.end()) {
      default_priority = it->second;
    }
  }
}

}  // namespace volcache
