// Slots: the copy-on-write versions of nodes and jobs, their generations, the most-recently-
// changed lists and the removal log that incremental snapshots read (cache/cache_state.h).

#include "cache/cache_state.h"

namespace volcache {

NodeInfo& SchedulerCache::Impl::WritableNode(const std::string& name, NodeSlot& s) {
  if (s.published) {
    s.info = std::make_shared<NodeInfo>(*s.info);
    s.published = false;
  }
  s.gen = NextGen();
  node_mru.splice(node_mru.begin(), node_mru, s.mru);
  s.info->set_generation(s.gen);
  (void)name;
  return *s.info;
}

JobInfo& SchedulerCache::Impl::WritableJob(JobSlot& s) {
  if (s.published) {
    s.info = std::make_shared<JobInfo>(*s.info);
    s.published = false;
  }
  s.gen = NextGen();
  job_mru.splice(job_mru.begin(), job_mru, s.mru);
  s.info->set_generation(s.gen);
  return *s.info;
}

SchedulerCache::NodeSlot& SchedulerCache::Impl::CreateNodeSlot(const std::string& name,
                                                               std::shared_ptr<NodeInfo> info) {
  auto entry = nodes.try_emplace(name).first;
  NodeSlot& s = entry->second;
  s.info = std::move(info);
  s.gen = NextGen();
  s.info->set_generation(s.gen);
  node_mru.push_front({&entry->first, &s});
  s.mru = node_mru.begin();
  return s;
}

SchedulerCache::JobSlot& SchedulerCache::Impl::CreateJobSlot(const JobId& id) {
  auto entry = jobs.try_emplace(id).first;
  JobSlot& s = entry->second;
  s.info = std::make_shared<JobInfo>(id);
  s.gen = NextGen();
  s.info->set_generation(s.gen);
  job_mru.push_front({&entry->first, &s});
  s.mru = job_mru.begin();
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
  node_mru.erase(it->second.mru);
  nodes.erase(it);
  tree.Remove(name);
  LogRemoval(true, name);
}

void SchedulerCache::Impl::EraseJobSlot(const JobId& id) {
  auto it = jobs.find(id);
  if (it == jobs.end()) return;
  job_mru.erase(it->second.mru);
  jobs.erase(it);
  LogRemoval(false, id);
}

}  // namespace volcache
