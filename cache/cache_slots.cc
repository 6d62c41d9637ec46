// Slots: the copy-on-write versions of nodes and jobs, their generations, the change logs
// and the removal log that incremental snapshots read (cache/cache_state.h).

#include "api/check.h"
#include "cache/cache_state.h"

namespace volcache {

NodeInfo& SchedulerCache::Impl::WritableNode(const std::string& name, NodeSlot& s) {
  if (s.published) {
    s.info = std::make_shared<NodeInfo>(*s.info);
    s.published = false;
  }
  node_log.Append(s, NextGen());
  s.info->set_generation(s.gen);
  (void)name;
  return *s.info;
}

JobInfo& SchedulerCache::Impl::WritableJob(JobSlot& s) {
  if (s.published) {
    s.info = std::make_shared<JobInfo>(*s.info);
    s.published = false;
  }
  job_log.Append(s, NextGen());
  s.info->set_generation(s.gen);
  return *s.info;
}

NodeInfo& SchedulerCache::Impl::WritableNodeTasks(NodeSlot& s) {
  const bool answered = s.included_known;
  NodeInfo& node = WritableNode(s.info->name(), s);
  s.included_known = answered;
  return node;
}

JobInfo& SchedulerCache::Impl::WritableJobTasks(JobSlot& s) {
  const bool answered = s.included_known;
  JobInfo& job = WritableJob(s);
  s.included_known = answered;
  return job;
}

SchedulerCache::NodeSlot& SchedulerCache::Impl::CreateNodeSlot(const std::string& name,
                                                               std::shared_ptr<NodeInfo> info) {
  auto entry = nodes.try_emplace(name).first;
  NodeSlot& s = entry->second;
  s.info = std::move(info);
  node_log.Append(s, NextGen());
  s.info->set_generation(s.gen);
  return s;
}

SchedulerCache::JobSlot& SchedulerCache::Impl::CreateJobSlot(k8s::SharedString id) {
  auto [entry, added] = jobs.try_emplace(id);
  VC_CHECK(added, "job slot " + id + " created twice");  // callers look the id up first
  JobSlot& s = entry->second;
  s.info = std::make_shared<JobInfo>(std::move(id));  // the same block as the key
  job_log.Append(s, NextGen());
  s.info->set_generation(s.gen);
  return s;
}

void SchedulerCache::Impl::LogRemoval(bool is_node, const std::string& key) {
  removals.push_back({is_node, key, NextGen()});
  while (removals.size() > options.removal_log_capacity) {
    removals_floor = removals.front().gen;
    removals.pop_front();
  }
}

void SchedulerCache::Impl::EraseNodeSlot(const std::string& name) {
  auto it = nodes.find(name);
  if (it == nodes.end()) return;
  node_log.Erase(it->second);
  nodes.erase(it);
  tree.Remove(name);
  LogRemoval(true, name);
}

const UidString& SchedulerCache::Impl::PodGroupUid(const JobSlot& s) const {
  if (const auto& pg = s.info->pod_group()) return pg->metadata.uid;
  static const UidString kNone;
  auto it = departed_pod_groups.find(s.info->uid());
  return it != departed_pod_groups.end() ? it->second : kNone;
}

void SchedulerCache::Impl::EraseJobSlot(const JobId& id) {
  auto it = jobs.find(id);
  if (it == jobs.end()) return;
  job_log.Erase(it->second);
  departed_pod_groups.erase(it->first);
  LogRemoval(false, id);  // first: `id` may be the slot's own
  jobs.erase(it);
}

}  // namespace volcache
