// Task accounting: where each task lives (its node, its job or `jobless`, task_index), pods
// coming in and going out, and assumed tasks going back to Pending (cache/cache_state.h).

#include <cstring>
#include <string_view>

#include "api/check.h"
#include "api/keyed_table_impl.h"
#include "cache/cache_state.h"
#include "workers/work_queue.h"

namespace volcache {

template class KeyedTable<TaskLoc>;

// The authoritative copy of a cached task.
const TaskInfo* SchedulerCache::Impl::FindTask(KeyView key) const {
  auto it = task_index.find(key);
  return it == task_index.end() ? nullptr : TaskAt(it->second);
}

const TaskInfo* SchedulerCache::Impl::TaskAt(const TaskLoc& loc) const {
  if (loc.job().empty()) {
    auto j = jobless.find(loc.meta->key().str());
    return j == jobless.end() ? nullptr : &j->second;
  }
  auto j = jobs.find(loc.job());
  if (j == jobs.end()) return nullptr;
  return j->second.info->FindTask(loc.uid());
}

// Checks that AddTaskLocked(task) cannot fail. `replacing`: the task's current entry is
// removed first (so its own entries do not count as conflicts).
Status SchedulerCache::Impl::CheckCanAdd(const TaskInfo& task, bool replacing, JobSlot** job) {
  if (job != nullptr) *job = nullptr;
  if (!replacing && task_index.count(task.key())) {
    return Status::AlreadyExists(fmt::format("task {} is already in the cache", task.key()));
  }
  if (!task.job().empty()) {
    if (auto j = jobs.find(task.job()); j != jobs.end()) {
      if (job != nullptr) *job = &j->second;
      const TaskInfo* other = j->second.info->FindTask(task.uid());
      if (other && other->key() != task.key()) {
        return Status::AlreadyExists(fmt::format("task uid {} of {} is already held by {} in job {}",
                                                 task.uid(), task.key(), other->key(), task.job()));
      }
    }
  }
  return Status::Ok();
}

// Adds a task whose addition was checked with CheckCanAdd. Never fails.
void SchedulerCache::Impl::AddTaskLocked(const TaskInfo& task, JobSlot* job) {
  if (!task.node_name.empty() && !IsTerminatedStatus(task.status)) {
    auto it = nodes.find(task.node_name);
    if (it == nodes.end()) {
      CreateNodeSlot(task.node_name, std::make_shared<NodeInfo>(task.node_name));
      it = nodes.find(task.node_name);
    }
    NodeInfo& node = WritableNodeTasks(it->second);
    int64_t before = node.negative_idle_events();
    Status s = node.AddTask(task);
    VC_CHECK(s.ok(), "adding a checked task to node " + task.node_name + ": " + s.ToString());
    counters.negative_idle += static_cast<uint64_t>(node.negative_idle_events() - before);
  }
  if (task.job().empty()) {
    jobless[std::string(task.key())] = task;
  } else {
    if (job == nullptr) {
      auto it = jobs.find(task.job());
      job = it == jobs.end() ? &CreateJobSlot(task.meta->job) : &it->second;
    }
    Status s = WritableJobTasks(*job).AddTask(task);
    VC_CHECK(s.ok(), "adding a checked task to job " + task.job() + ": " + s.ToString());
  }
  // CheckCanAdd refused a key the index holds, and a replacement removed its old entry first.
  const bool indexed = task_index.try_emplace(TaskLoc{task.meta}).second;
  VC_CHECK(indexed, fmt::format("task {} is already in the task index", task.key()));
}

// Removes a cached task (by key) from its node, its job and the assumed set. Never fails
// for a key in task_index.
void SchedulerCache::Impl::RemoveTaskLocked(const std::string& key, bool queue_empty_job) {
  auto it = task_index.find(key);
  VC_CHECK(it != task_index.end(), "removing unknown task " + key);
  const TaskInfo* cached = FindTask(key);
  VC_CHECK(cached != nullptr, "task index points nowhere for " + key);
  TaskInfo task = *cached;  // copy: the job's storage is about to change
  if (!task.node_name.empty()) {
    auto n = nodes.find(task.node_name);
    if (n != nodes.end() && n->second.info->FindTask(key) != nullptr) {
      NodeInfo& node = WritableNodeTasks(n->second);
      Status s = node.RemoveTask(task);
      VC_CHECK(s.ok(), "removing task " + key + " from node: " + s.ToString());
      if (node.is_placeholder() && node.tasks().empty()) EraseNodeSlot(task.node_name);
    }
  }
  if (it->second.job().empty()) {
    jobless.erase(key);
  } else {
    auto j = jobs.find(it->second.job());
    VC_CHECK(j != jobs.end(), "job of task " + key + " missing");
    JobInfo& job = WritableJobTasks(j->second);
    Status s = job.DeleteTask(task.uid());
    VC_CHECK(s.ok(), "removing task " + key + " from job: " + s.ToString());
    if (queue_empty_job && job.tasks().empty() && !job.pod_group()) {
      self->deleted_jobs_->Add(job.uid() + "/" + PodGroupUid(j->second));
    }
  }
  task_index.erase(it);
  assumed.erase(key);
}

// Replaces the cached task `key` by `task` (remove + add, all-or-nothing).
Status SchedulerCache::Impl::ReplaceTaskLocked(const std::string& key, const TaskInfo& task) {
  VC_RETURN_IF_ERROR(CheckCanAdd(task, task.key() == key));
  const JobId old_job = task_index.find(key)->second.job();
  // Not queued on removal: within the same job the task comes straight back.
  RemoveTaskLocked(key, /*queue_empty_job=*/false);
  AddTaskLocked(task);
  // A job emptied by a move to another job is cleaned up like any other.
  if (!old_job.empty() && old_job != task.job()) {
    if (auto j = jobs.find(old_job);
        j != jobs.end() && j->second.info->tasks().empty() && !j->second.info->pod_group()) {
      self->deleted_jobs_->Add(old_job + "/" + PodGroupUid(j->second));
    }
  }
  return Status::Ok();
}

Status SchedulerCache::Impl::AddPodLocked(const k8s::PodPtr& pod) {
  // Each lookup below is a cache miss or two, so a new pod looks each table up once: the
  // task index here (with the key on the stack: the task's TaskMeta builds the one it
  // keeps) and the job in CheckCanAdd, whose slot AddTaskLocked reuses.
  const k8s::ObjectMeta& m = pod->metadata;
  const std::string& ns = m.namespace_;
  char buf[320];
  std::string long_key;
  std::string_view key;
  if (ns.size() + 1 + m.name.size() <= sizeof(buf)) {
    std::memcpy(buf, ns.data(), ns.size());
    buf[ns.size()] = '/';
    std::memcpy(buf + ns.size() + 1, m.name.data(), m.name.size());
    key = std::string_view(buf, ns.size() + 1 + m.name.size());
  } else {
    long_key = KeyOf(m);
    key = long_key;
  }
  auto indexed = task_index.find(key);
  if (indexed != task_index.end()) {
    if (const TaskInfo* cached = TaskAt(indexed->second)) return UpdatePodLocked(*cached, pod);
  }
  if (!IsOurs(*pod, options.scheduler_name)) return Status::Ok();
  auto task = TaskInfo::FromPod(pod);
  if (!task.ok()) return task.status();
  JobSlot* job = nullptr;
  VC_RETURN_IF_ERROR(CheckCanAdd(*task, /*replacing=*/indexed == task_index.end(), &job));
  AddTaskLocked(*task, job);
  return Status::Ok();
}

Status SchedulerCache::Impl::UpdatePodLocked(const TaskInfo& cached, const k8s::PodPtr& pod) {
  // A bind is in flight: the cache already placed the task; a pod update without a
  // nodeName predates the binding and must not undo it.
  if (IsAllocatedStatus(cached.status) && pod->spec.node_name.empty()) return Status::Ok();
  const std::string key(cached.key());
  if (!IsOurs(*pod, options.scheduler_name)) {
    RemoveTaskLocked(key, true);
    return Status::Ok();
  }
  auto task = TaskInfo::FromPod(pod);
  if (!task.ok()) return task.status();
  VC_RETURN_IF_ERROR(ReplaceTaskLocked(key, *task));
  return Status::Ok();
}

// Back to Pending and off the node (forget and expiry).
void SchedulerCache::Impl::UnassumeLocked(const std::string& key, const AssumedEntry& entry) {
  const TaskInfo* cached = FindTask(key);
  VC_CHECK(cached != nullptr, "assumed task " + key + " not cached");
  TaskInfo pending = *cached;
  auto n = nodes.find(entry.node);
  if (n != nodes.end() && n->second.info->FindTask(key)) {
    NodeInfo& node = WritableNodeTasks(n->second);
    VC_CHECK(node.RemoveTask(pending).ok(), "node lost assumed task " + key);
    if (node.is_placeholder() && node.tasks().empty()) EraseNodeSlot(entry.node);
  }
  pending.status = TaskStatus::kPending;
  pending.node_name.clear();
  JobInfo& job = WritableJobTasks(jobs.at(pending.job()));
  VC_CHECK(job.DeleteTask(pending.uid()).ok(), "job lost assumed task " + key);
  VC_CHECK(job.AddTask(pending).ok(), "job refused task " + key);
  assumed.erase(key);
}

}  // namespace volcache
