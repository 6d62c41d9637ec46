#include "cache/scheduler_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <thread>

#include "api/check.h"
#include "api/resource_list.h"
#include "cache/cache_state.h"
#include "cache/reclaimer.h"
#include "workers/rate_limiter.h"
#include "workers/work_queue.h"

namespace volcache {

// ================================================== calls that leave the cache (never under mu)

Result<k8s::NodePtr> SchedulerCache::Impl::SourceNode(const std::string& name) const {
  return source->GetNode(name);
}

Result<k8s::PodPtr> SchedulerCache::Impl::SourcePod(const std::string& ns, const std::string& name) const {
  return source->GetPod(ns, name);
}

std::vector<k8s::NodePtr> SchedulerCache::Impl::SourceNodes() const { return source->ListNodes(); }

std::vector<k8s::PodPtr> SchedulerCache::Impl::SourcePods() const { return source->ListPods(); }

void SchedulerCache::Impl::Retire(RetiredVersions retired) const { reclaimer->Retire(std::move(retired)); }

// ============================================================================ public API

SchedulerCache::SchedulerCache(SchedulerCacheOptions options, std::shared_ptr<Clock> clock,
                               const ClusterSource* source)
    : impl_(std::make_unique<Impl>()), options_(std::move(options)) {
  impl_->self = this;
  impl_->clock = clock;
  impl_->source = source;
  impl_->options = options_;
  impl_->reclaimer = options_.reclaimer;
  if (options_.background_reclaim && impl_->reclaimer == nullptr) {
    impl_->owned_reclaimer = std::make_unique<Reclaimer>();
    impl_->reclaimer = impl_->owned_reclaimer.get();
  }
  node_queue_ = std::make_unique<WorkQueue>("node", clock, DefaultNodeQueueRateLimiter(clock));
  err_tasks_ = std::make_unique<WorkQueue>("errTasks", clock, DefaultRetryQueueRateLimiter(clock));
  deleted_jobs_ = std::make_unique<WorkQueue>("deletedJobs", clock, DefaultRetryQueueRateLimiter(clock));
  hypernode_queue_ = std::make_unique<WorkQueue>("hyperNode", clock, DefaultNodeQueueRateLimiter(clock));
}

SchedulerCache::~SchedulerCache() {
  node_queue_->ShutDown();
  err_tasks_->ShutDown();
  deleted_jobs_->ShutDown();
  hypernode_queue_->ShutDown();
}

namespace {

// The member of a shared object, sharing its ownership (no copy).
template <typename T>
std::shared_ptr<const T> Share(const std::shared_ptr<const k8s::Object>& obj) {
  return std::shared_ptr<const T>(obj, &std::get<T>(*obj));
}

Status NotCached(const k8s::Object& obj, const k8s::Unstructured& u) {
  return Status::InvalidArgument(k8s::DescribeObject(obj) + ": kind " + u.kind + " (" + u.api_version +
                                 ") is not an object volcache caches");
}

Status Count(CacheCounters& c, Status s) {
  if (s.ok()) {
    ++c.events_applied;
  } else {
    ++c.events_refused;
  }
  return s;
}
}  // namespace

Status SchedulerCache::AddPod(k8s::PodPtr pod) {
  MutexLock lock(&impl_->mu);
  return Count(impl_->counters, impl_->AddPodLocked(pod));
}

Status SchedulerCache::UpdatePod(k8s::PodPtr old_pod, k8s::PodPtr new_pod) {
  MutexLock lock(&impl_->mu);
  const std::string key = KeyOf(new_pod->metadata);
  Status s;
  if (const TaskInfo* cached = impl_->FindTask(key)) {
    s = impl_->UpdatePodLocked(*cached, new_pod);
  } else {
    s = impl_->AddPodLocked(new_pod);
  }
  return Count(impl_->counters, s);
}

Status SchedulerCache::DeletePod(const k8s::Pod& pod) {
  MutexLock lock(&impl_->mu);
  const std::string key = KeyOf(pod.metadata);
  if (!impl_->task_index.count(key)) {
    if (!IsOurs(pod, options_.scheduler_name)) return Status::Ok();
    return Count(impl_->counters, Status::NotFound("Pod " + key + ": not in the cache"));
  }
  impl_->RemoveTaskLocked(key, /*queue_empty_job=*/true);
  return Count(impl_->counters, Status::Ok());
}

void SchedulerCache::AddNode(const k8s::Node& node) { node_queue_->Add(node.metadata.name); }
void SchedulerCache::UpdateNode(const k8s::Node&, const k8s::Node& new_node) {
  node_queue_->Add(new_node.metadata.name);
}
void SchedulerCache::DeleteNode(const k8s::Node& node) { node_queue_->Add(node.metadata.name); }

Status SchedulerCache::SyncNode(const std::string& name) {
  auto node = impl_->SourceNode(name);  // outside the lock: the lister may block
  MutexLock lock(&impl_->mu);
  if (!node.ok()) {
    if (node.status().code() != StatusCode::kNotFound) return node.status();
    impl_->RemoveNodeLocked(name);
    return Status::Ok();
  }
  return Count(impl_->counters, impl_->AddOrUpdateNodeLocked(*node).WithPrefix("Node " + name));
}

void SchedulerCache::AddHyperNode(k8s::HyperNodePtr hn) {
  const std::string name = hn->metadata.name;
  {
    MutexLock lock(&impl_->mu);
    impl_->hypernodes_desired[name] = std::move(hn);
  }
  hypernode_queue_->Add(name);
}

void SchedulerCache::UpdateHyperNode(k8s::HyperNodePtr, k8s::HyperNodePtr new_hn) {
  AddHyperNode(std::move(new_hn));
}

void SchedulerCache::DeleteHyperNode(const k8s::HyperNode& hn) {
  {
    MutexLock lock(&impl_->mu);
    impl_->hypernodes_desired[hn.metadata.name] = nullptr;
  }
  hypernode_queue_->Add(hn.metadata.name);
}

Status SchedulerCache::SyncHyperNode(const std::string& name) {
  std::vector<std::string> retry;
  Status s;
  {
    Impl& m = *impl_;
    MutexLock lock(&m.mu);
    auto it = m.hypernodes_desired.find(name);
    if (it == m.hypernodes_desired.end()) return Status::Ok();  // applied by an earlier pass
    if (it->second == nullptr) {
      m.hypernodes_desired.erase(it);
      s = m.forest.Remove(name);
      if (s.code() == StatusCode::kNotFound) s = Status::Ok();  // never applied (it was refused)
    } else {
      s = m.forest.Apply(it->second);
    }
    s = Count(m.counters, s);
    // A change may resolve what an earlier update of another HyperNode was refused for.
    if (s.ok()) {
      for (const auto& [refused, _] : m.forest.refused()) retry.push_back(refused);
    }
  }
  for (const std::string& r : retry) hypernode_queue_->Add(r);
  if (!s.ok()) spdlog::warn("hypernode {}: {}", name, s.ToString());
  return s;
}

bool SchedulerCache::HyperNodesReady() const {
  MutexLock lock(&impl_->mu);
  return impl_->forest.ready();
}

Status SchedulerCache::AddPodGroup(std::shared_ptr<const k8s::PodGroup> pg) {
  MutexLock lock(&impl_->mu);
  return Count(impl_->counters, impl_->SetPodGroupLocked(pg));
}

Status SchedulerCache::UpdatePodGroup(std::shared_ptr<const k8s::PodGroup>,
                                      std::shared_ptr<const k8s::PodGroup> new_pg) {
  MutexLock lock(&impl_->mu);
  const JobId id = PodKey(new_pg->metadata.namespace_, new_pg->metadata.name);
  if (auto it = impl_->jobs.find(id); it != impl_->jobs.end()) {
    const auto& cur = it->second.info->pod_group();
    if (cur && cur->metadata.uid == new_pg->metadata.uid && !new_pg->metadata.resource_version.empty() &&
        cur->metadata.resource_version == new_pg->metadata.resource_version) {
      return Status::Ok();  // resync with nothing new
    }
  }
  return Count(impl_->counters, impl_->SetPodGroupLocked(new_pg));
}

Status SchedulerCache::DeletePodGroup(const k8s::PodGroup& pg) {
  MutexLock lock(&impl_->mu);
  const JobId id = PodKey(pg.metadata.namespace_, pg.metadata.name);
  auto it = impl_->jobs.find(id);
  if (it == impl_->jobs.end() || !it->second.info->pod_group()) {
    return Count(impl_->counters, Status::NotFound("PodGroup " + id + ": not in the cache"));
  }
  const UidString pg_uid = it->second.info->pod_group()->metadata.uid;
  impl_->WritableJob(it->second).UnsetPodGroup();
  impl_->departed_pod_groups.insert_or_assign(it->first, pg_uid);
  deleted_jobs_->Add(id + "/" + pg_uid);
  return Count(impl_->counters, Status::Ok());
}

Status SchedulerCache::AddQueue(std::shared_ptr<const k8s::Queue> queue) {
  MutexLock lock(&impl_->mu);
  auto info = QueueInfo::FromQueue(queue);
  if (!info.ok()) return Count(impl_->counters, info.status());
  impl_->queues[info->name] = std::move(*info);
  ++impl_->queue_version;
  return Count(impl_->counters, Status::Ok());
}

Status SchedulerCache::UpdateQueue(std::shared_ptr<const k8s::Queue>,
                                   std::shared_ptr<const k8s::Queue> new_queue) {
  return AddQueue(std::move(new_queue));
}

Status SchedulerCache::DeleteQueue(const k8s::Queue& queue) {
  MutexLock lock(&impl_->mu);
  if (impl_->queues.erase(queue.metadata.name) == 0) {
    return Count(impl_->counters, Status::NotFound("Queue " + queue.metadata.name + ": not in the cache"));
  }
  ++impl_->queue_version;
  return Count(impl_->counters, Status::Ok());
}

void SchedulerCache::EnsureDefaultQueues() {
  MutexLock lock(&impl_->mu);
  if (!impl_->queues.count(std::string(kRootQueue))) {
    QueueInfo root;
    root.name = kRootQueue;
    root.weight = 1;
    root.reclaimable = false;
    impl_->queues[root.name] = root;
    ++impl_->queue_version;
  }
  if (!impl_->queues.count(options_.default_queue)) {
    QueueInfo def;
    def.name = options_.default_queue;
    def.weight = 1;
    def.reclaimable = true;
    def.parent = kRootQueue;
    impl_->queues[def.name] = def;
    ++impl_->queue_version;
  }
}

Status SchedulerCache::AddPriorityClass(const k8s::PriorityClass& pc) {
  MutexLock lock(&impl_->mu);
  impl_->priority_classes[pc.metadata.name] = pc.value;
  if (pc.global_default) {
    impl_->global_default_class = pc.metadata.name;
  } else if (impl_->global_default_class == pc.metadata.name) {
    impl_->global_default_class.clear();
  }
  impl_->RecomputeDefaultPriority();
  impl_->RecomputePriorities();
  return Count(impl_->counters, Status::Ok());
}

Status SchedulerCache::UpdatePriorityClass(const k8s::PriorityClass&, const k8s::PriorityClass& new_pc) {
  return AddPriorityClass(new_pc);
}

Status SchedulerCache::DeletePriorityClass(const k8s::PriorityClass& pc) {
  MutexLock lock(&impl_->mu);
  if (impl_->priority_classes.erase(pc.metadata.name) == 0) {
    return Count(impl_->counters,
                 Status::NotFound("PriorityClass " + pc.metadata.name + ": not in the cache"));
  }
  if (impl_->global_default_class == pc.metadata.name) impl_->global_default_class.clear();
  impl_->RecomputeDefaultPriority();
  impl_->RecomputePriorities();
  return Count(impl_->counters, Status::Ok());
}

namespace {

template <class T>
auto& VolumeMap(VolumeInfo& v) {
  if constexpr (std::is_same_v<T, k8s::PersistentVolumeClaim>) {
    return v.claims;
  } else if constexpr (std::is_same_v<T, k8s::PersistentVolume>) {
    return v.volumes;
  } else {
    static_assert(std::is_same_v<T, k8s::StorageClass>);
    return v.classes;
  }
}

}  // namespace

template <class T>
Status SchedulerCache::AddVolumeObject(const T& obj) {
  auto p = std::make_shared<const T>(obj);
  std::string key = k8s::ObjectKey(obj.metadata);
  MutexLock lock(&impl_->mu);
  VolumeMap<T>(impl_->volume_objects).insert_or_assign(std::move(key), std::move(p));
  impl_->volumes.reset();
  return Count(impl_->counters, Status::Ok());
}

template <class T>
Status SchedulerCache::DeleteVolumeObject(const T& obj) {
  const std::string key = k8s::ObjectKey(obj.metadata);
  MutexLock lock(&impl_->mu);
  auto& map = VolumeMap<T>(impl_->volume_objects);
  auto it = map.find(key);
  if (it == map.end()) {
    return Count(impl_->counters,
                 Status::NotFound(k8s::DescribeObject(k8s::Object(obj)) + ": not in the cache"));
  }
  map.erase(it);
  impl_->volumes.reset();
  return Count(impl_->counters, Status::Ok());
}

template Status SchedulerCache::AddVolumeObject(const k8s::PersistentVolumeClaim&);
template Status SchedulerCache::AddVolumeObject(const k8s::PersistentVolume&);
template Status SchedulerCache::AddVolumeObject(const k8s::StorageClass&);
template Status SchedulerCache::DeleteVolumeObject(const k8s::PersistentVolumeClaim&);
template Status SchedulerCache::DeleteVolumeObject(const k8s::PersistentVolume&);
template Status SchedulerCache::DeleteVolumeObject(const k8s::StorageClass&);

Status SchedulerCache::AddResourceQuota(const k8s::ResourceQuota& quota) {
  const std::string what = "ResourceQuota " + KeyOf(quota.metadata);
  bool use_status = !quota.status_hard.empty();
  auto hard = ResourceFromList(use_status ? quota.status_hard : quota.spec_hard,
                               use_status ? "status.hard" : "spec.hard");
  auto used = ResourceFromList(quota.status_used, "status.used");
  MutexLock lock(&impl_->mu);
  if (!hard.ok()) return Count(impl_->counters, hard.status().WithPrefix(what));
  if (!used.ok()) return Count(impl_->counters, used.status().WithPrefix(what));
  impl_->quotas[quota.metadata.namespace_][quota.metadata.name] =
      QuotaEntry{std::move(*hard), std::move(*used)};
  return Count(impl_->counters, Status::Ok());
}

Status SchedulerCache::UpdateResourceQuota(const k8s::ResourceQuota&, const k8s::ResourceQuota& new_quota) {
  return AddResourceQuota(new_quota);
}

Status SchedulerCache::DeleteResourceQuota(const k8s::ResourceQuota& quota) {
  MutexLock lock(&impl_->mu);
  auto ns = impl_->quotas.find(quota.metadata.namespace_);
  if (ns == impl_->quotas.end() || ns->second.erase(quota.metadata.name) == 0) {
    return Count(impl_->counters,
                 Status::NotFound("ResourceQuota " + KeyOf(quota.metadata) + ": not in the cache"));
  }
  if (ns->second.empty()) impl_->quotas.erase(ns);
  return Count(impl_->counters, Status::Ok());
}

Status SchedulerCache::Apply(EventType type, const k8s::Object& obj) {
  return std::visit(
      [&](const auto& o) -> Status {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, k8s::Pod>) {
          if (type == EventType::kDelete) return DeletePod(o);
          auto p = std::make_shared<const k8s::Pod>(o);
          if (type == EventType::kUpdate) return UpdatePod(nullptr, p);
          return AddPod(p);
        } else if constexpr (std::is_same_v<T, k8s::Node>) {
          if (type == EventType::kDelete) {
            DeleteNode(o);
          } else {
            AddNode(o);
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, k8s::PodGroup>) {
          if (type == EventType::kDelete) return DeletePodGroup(o);
          auto p = std::make_shared<const k8s::PodGroup>(o);
          return type == EventType::kUpdate ? UpdatePodGroup(nullptr, p) : AddPodGroup(p);
        } else if constexpr (std::is_same_v<T, k8s::Queue>) {
          if (type == EventType::kDelete) return DeleteQueue(o);
          return AddQueue(std::make_shared<const k8s::Queue>(o));
        } else if constexpr (std::is_same_v<T, k8s::PriorityClass>) {
          if (type == EventType::kDelete) return DeletePriorityClass(o);
          return AddPriorityClass(o);
        } else if constexpr (std::is_same_v<T, k8s::ResourceQuota>) {
          if (type == EventType::kDelete) return DeleteResourceQuota(o);
          return AddResourceQuota(o);
        } else if constexpr (std::is_same_v<T, k8s::PersistentVolumeClaim> ||
                             std::is_same_v<T, k8s::PersistentVolume> ||
                             std::is_same_v<T, k8s::StorageClass>) {
          if (type == EventType::kDelete) return DeleteVolumeObject(o);
          return AddVolumeObject(o);
        } else if constexpr (std::is_same_v<T, k8s::HyperNode>) {
          if (type == EventType::kDelete) {
            DeleteHyperNode(o);
          } else {
            AddHyperNode(std::make_shared<const k8s::HyperNode>(o));
          }
          return Status::Ok();
        } else {
          return NotCached(obj, o);
        }
      },
      obj);
}

Status SchedulerCache::Add(std::shared_ptr<const k8s::Object> obj) {
  if (std::holds_alternative<k8s::Pod>(*obj)) return AddPod(Share<k8s::Pod>(obj));
  return Apply(EventType::kAdd, *obj);
}

Status SchedulerCache::Update(std::shared_ptr<const k8s::Object> old_obj,
                              std::shared_ptr<const k8s::Object> new_obj) {
  if (old_obj->index() != new_obj->index()) {
    return Status::InvalidArgument(k8s::DescribeObject(*new_obj) + ": update from " +
                                   k8s::DescribeObject(*old_obj) + ", an object of another kind");
  }
  return std::visit(
      [&](const auto& o) -> Status {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, k8s::Pod>) {
          return UpdatePod(Share<k8s::Pod>(old_obj), Share<k8s::Pod>(new_obj));
        } else if constexpr (std::is_same_v<T, k8s::Node>) {
          UpdateNode(std::get<k8s::Node>(*old_obj), o);
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, k8s::PodGroup>) {
          return UpdatePodGroup(Share<k8s::PodGroup>(old_obj), Share<k8s::PodGroup>(new_obj));
        } else if constexpr (std::is_same_v<T, k8s::Queue>) {
          return UpdateQueue(Share<k8s::Queue>(old_obj), Share<k8s::Queue>(new_obj));
        } else if constexpr (std::is_same_v<T, k8s::PriorityClass>) {
          return UpdatePriorityClass(std::get<k8s::PriorityClass>(*old_obj), o);
        } else if constexpr (std::is_same_v<T, k8s::ResourceQuota>) {
          return UpdateResourceQuota(std::get<k8s::ResourceQuota>(*old_obj), o);
        } else if constexpr (std::is_same_v<T, k8s::PersistentVolumeClaim> ||
                             std::is_same_v<T, k8s::PersistentVolume> ||
                             std::is_same_v<T, k8s::StorageClass>) {
          return AddVolumeObject(o);
        } else if constexpr (std::is_same_v<T, k8s::HyperNode>) {
          UpdateHyperNode(Share<k8s::HyperNode>(old_obj), Share<k8s::HyperNode>(new_obj));
          return Status::Ok();
        } else {
          return NotCached(*new_obj, o);
        }
      },
      *new_obj);
}

// ------------------------------------------------------------- assume / bind

Status SchedulerCache::AddBindTask(const std::string& key, const std::string& node_name) {
  Impl& m = *impl_;
  MutexLock lock(&m.mu);
  const TaskInfo* cached = m.FindTask(key);
  if (!cached) return Status::NotFound("bind " + key + ": task not in the cache");
  if (auto a = m.assumed.find(key); a != m.assumed.end()) {
    return Status::AlreadyExists("bind " + key + ": task is already assumed on node " + a->second.node);
  }
  if (cached->job().empty()) return Status::FailedPrecondition("bind " + key + ": task belongs to no job");
  if (cached->status != TaskStatus::kPending) {
    return Status::FailedPrecondition("bind " + key + ": task is " +
                                      std::string(TaskStatusName(cached->status)) + ", not Pending");
  }
  auto n = m.nodes.find(node_name);
  if (n == m.nodes.end())
    return Status::NotFound("bind " + key + ": node " + node_name + " not in the cache");
  if (n->second.info->is_placeholder()) {
    return Status::FailedPrecondition("bind " + key + ": node " + node_name + " has no Node object yet");
  }
  TaskInfo binding = *cached;
  binding.status = TaskStatus::kBinding;
  binding.node_name = node_name;
  // Checked before anything is written: a refused bind must not even bump generations.
  VC_RETURN_IF_ERROR(n->second.info->CanAddTask(binding).WithPrefix("bind " + key));
  Status s = m.WritableNodeTasks(n->second).AddTask(binding);
  VC_CHECK(s.ok(), s.ToString());
  auto j = m.jobs.find(binding.job());
  JobInfo& job = m.WritableJobTasks(j->second);
  VC_CHECK(job.DeleteTask(binding.uid()).ok(), "job lost task " + key);
  VC_CHECK(job.AddTask(binding).ok(), "job refused task " + key);
  m.assumed[key] = AssumedEntry{node_name, false, {}};
  return Status::Ok();
}

Status SchedulerCache::FinishBinding(const std::string& key) {
  MutexLock lock(&impl_->mu);
  auto a = impl_->assumed.find(key);
  if (a == impl_->assumed.end())
    return Status::FailedPrecondition("finish binding " + key + ": task is not assumed");
  if (a->second.binding_finished) {
    return Status::FailedPrecondition("finish binding " + key + ": binding already finished");
  }
  a->second.binding_finished = true;
  a->second.deadline = impl_->clock->Now() + options_.assumed_ttl;
  return Status::Ok();
}

Status SchedulerCache::ForgetTask(const std::string& key, const std::string& node) {
  MutexLock lock(&impl_->mu);
  auto a = impl_->assumed.find(key);
  if (a == impl_->assumed.end()) return Status::FailedPrecondition("forget " + key + ": task is not assumed");
  if (a->second.node != node) {
    return Status::FailedPrecondition("forget " + key + ": task is assumed on node " + a->second.node +
                                      ", not " + node);
  }
  AssumedEntry entry = a->second;
  impl_->UnassumeLocked(key, entry);
  err_tasks_->Add(key);
  return Status::Ok();
}

bool SchedulerCache::IsAssumed(const std::string& key) const {
  MutexLock lock(&impl_->mu);
  return impl_->assumed.count(key) > 0;
}

Result<TaskInfo> SchedulerCache::GetTask(const std::string& key) const {
  MutexLock lock(&impl_->mu);
  const TaskInfo* t = impl_->FindTask(key);
  if (!t) return Status::NotFound("task " + key + " not in the cache");
  return *t;
}

bool SchedulerCache::HasTask(const std::string& key) const {
  MutexLock lock(&impl_->mu);
  return impl_->task_index.count(key) > 0;
}

size_t SchedulerCache::CleanupExpiredAssumed() {
  if (options_.assumed_ttl <= Duration::zero()) return 0;
  MutexLock lock(&impl_->mu);
  const TimePoint now = impl_->clock->Now();
  std::vector<std::pair<std::string, AssumedEntry>> expired;
  for (const auto& [key, e] : impl_->assumed) {
    if (e.binding_finished && e.deadline <= now) expired.emplace_back(key, e);
  }
  std::sort(expired.begin(), expired.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, e] : expired) {
    spdlog::warn("assumed task {} on {} expired without confirmation", key, e.node);
    impl_->UnassumeLocked(key, e);
    err_tasks_->Add(key);
  }
  return expired.size();
}

Status SchedulerCache::Evict(const std::string& key, const std::string& reason) {
  Impl& m = *impl_;
  MutexLock lock(&m.mu);
  const TaskInfo* cached = m.FindTask(key);
  if (!cached) return Status::NotFound("evict " + key + ": task not in the cache");
  if (cached->job().empty()) return Status::FailedPrecondition("evict " + key + ": task belongs to no job");
  const JobSlot& js = m.jobs.at(cached->job());
  if (!js.info->pod_group()) {
    return Status::FailedPrecondition("evict " + key + ": job " + cached->job() + " has no PodGroup");
  }
  if (m.assumed.count(key)) return Status::FailedPrecondition("evict " + key + ": a bind is in flight");
  if (cached->status == TaskStatus::kReleasing)
    return Status::FailedPrecondition("evict " + key + ": already Releasing");
  if (cached->node_name.empty() || !IsAllocatedStatus(cached->status)) {
    return Status::FailedPrecondition("evict " + key + ": task is " +
                                      std::string(TaskStatusName(cached->status)) +
                                      ", not running on a node");
  }
  auto n = m.nodes.find(cached->node_name);
  if (n == m.nodes.end())
    return Status::NotFound("evict " + key + ": node " + cached->node_name + " not in the cache");
  TaskInfo releasing = *cached;
  releasing.status = TaskStatus::kReleasing;
  {
    NodeInfo trial = *n->second.info;
    VC_RETURN_IF_ERROR(trial.UpdateTask(releasing).WithPrefix("evict " + key));
  }
  VC_CHECK(m.WritableNodeTasks(n->second).UpdateTask(releasing).ok(), "evict " + key);
  JobInfo& job = m.WritableJobTasks(m.jobs.at(releasing.job()));
  VC_CHECK(job.UpdateTaskStatus(releasing.uid(), TaskStatus::kReleasing).ok(), "evict " + key);
  m.evictions.push_back(EvictionRequest{releasing, reason});
  return Status::Ok();
}

std::vector<EvictionRequest> SchedulerCache::TakeEvictionRequests() {
  MutexLock lock(&impl_->mu);
  return std::exchange(impl_->evictions, {});
}

// ------------------------------------------------------------- retry workers

Status SchedulerCache::ResyncTask(const std::string& key) {
  auto [ns, name] = SplitKey(key);
  auto pod = impl_->SourcePod(ns, name);  // outside the lock
  Impl& m = *impl_;
  MutexLock lock(&m.mu);
  if (!pod.ok()) {
    if (pod.status().code() != StatusCode::kNotFound) return pod.status();
    if (m.task_index.count(key)) m.RemoveTaskLocked(key, true);
    return Status::Ok();
  }
  const TaskInfo* cached = m.FindTask(key);
  if (!cached) return m.AddPodLocked(*pod);
  // As an update from the cluster: UpdatePod's rules apply, including the bind-in-flight
  // one (the task may have been assumed again since it was queued for this resync).
  return m.UpdatePodLocked(*cached, *pod);
}

Status SchedulerCache::CleanupJob(const std::string& key) {
  auto pos = key.rfind('/');
  if (pos == std::string::npos)
    return Status::InvalidArgument("deleted job key " + key + " has no PodGroup UID part");
  const JobId id = key.substr(0, pos);
  const std::string pg_uid = key.substr(pos + 1);
  MutexLock lock(&impl_->mu);
  auto it = impl_->jobs.find(id);
  if (it == impl_->jobs.end() || impl_->PodGroupUid(it->second) != pg_uid || it->second.info->pod_group()) {
    return Status::Ok();  // gone, or re-created with another PodGroup: nothing to do
  }
  if (!it->second.info->tasks().empty()) {
    return Status::Unavailable("job " + id + " still has " + std::to_string(it->second.info->tasks().size()) +
                               " task(s)");
  }
  impl_->EraseJobSlot(id);
  return Status::Ok();
}

size_t SchedulerCache::DrainQueuesOnce() {
  size_t processed = 0;
  for (bool progress = true; progress;) {
    progress = false;
    std::string item;
    while (node_queue_->TryGet(&item)) {
      Status s = SyncNode(item);
      if (s.ok()) {
        node_queue_->Forget(item);
      } else {
        spdlog::warn("sync node {}: {}", item, s.ToString());
        node_queue_->AddRateLimited(item);
      }
      node_queue_->Done(item);
      ++processed;
      progress = true;
    }
    while (err_tasks_->TryGet(&item)) {
      Status s = ResyncTask(item);
      bool still_cached;
      {
        MutexLock lock(&impl_->mu);
        still_cached = impl_->task_index.count(item) > 0;
      }
      if (s.ok() || !still_cached) {
        err_tasks_->Forget(item);
      } else {
        spdlog::warn("resync task {}: {}", item, s.ToString());
        err_tasks_->AddRateLimited(item);
      }
      err_tasks_->Done(item);
      ++processed;
      progress = true;
    }
    while (hypernode_queue_->TryGet(&item)) {
      Status s = SyncHyperNode(item);
      if (s.ok()) {
        hypernode_queue_->Forget(item);
      } else {
        hypernode_queue_->AddRateLimited(item);
      }
      hypernode_queue_->Done(item);
      ++processed;
      progress = true;
    }
    while (deleted_jobs_->TryGet(&item)) {
      Status s = CleanupJob(item);
      if (s.ok()) {
        deleted_jobs_->Forget(item);
      } else {
        deleted_jobs_->AddRateLimited(item);
      }
      deleted_jobs_->Done(item);
      ++processed;
      progress = true;
    }
  }
  return processed;
}

// ---------------------------------------------------------------- snapshots

std::unique_ptr<ClusterInfo> SchedulerCache::Snapshot() const {
  auto snap = std::make_unique<ClusterInfo>();
  MutexLock lock(&impl_->mu);
  impl_->FullSnapshot(snap.get());
  return snap;
}

void SchedulerCache::UpdateSnapshot(ClusterInfo* snap) const {
  using B = ClusterInfo::Builder;
  RetiredVersions retired;
  {
    Impl& m = *impl_;
    MutexLock lock(&m.mu);
    if (B::owner(*snap) != this || B::generation(*snap) < m.removals_floor ||
        B::structure_version(*snap) != m.queue_version) {
      m.FullSnapshot(snap);
      return;
    }
    m.IncrementalSnapshot(snap, &retired);
  }
  // The versions the snapshot let go of are freed off the session's path.
  if (options_.background_reclaim) impl_->Retire(std::move(retired));
}

void SchedulerCache::MaterializeSnapshot(ClusterInfo* snap, int threads) {
  using B = ClusterInfo::Builder;
  std::vector<std::shared_ptr<const NodeInfo>*> nodes;
  std::vector<std::shared_ptr<const JobInfo>*> jobs;
  B::dirty_nodes(*snap).reserve(B::nodes(*snap).size());
  B::dirty_jobs(*snap).reserve(B::jobs(*snap).size());
  for (auto& [name, p] : B::nodes(*snap)) {
    if (B::dirty_nodes(*snap).insert(name).second) nodes.push_back(&p);
  }
  for (auto& [id, p] : B::jobs(*snap)) {
    if (B::dirty_jobs(*snap).insert(id).second) jobs.push_back(&p);
  }
  const size_t total = nodes.size() + jobs.size();
  const size_t n = std::max<size_t>(1, std::min<size_t>(threads > 0 ? threads : 1, total / 64 + 1));
  // Each copy reads a chain of cold lines: the snapshot map's entry, the object, its task
  // entries, and each task's TaskMeta, whose reference count the copy bumps (a third of the
  // copy when not fetched ahead). Later objects' links are fetched a stage at a time, so
  // the misses of several objects overlap.
  auto tasks_of = [&](size_t i) -> const TaskTable& {
    return i < nodes.size() ? (*nodes[i])->tasks() : (*jobs[i - nodes.size()])->tasks();
  };
  auto entry_of = [&](size_t i) -> const void* {
    return i < nodes.size() ? static_cast<const void*>(nodes[i])
                            : static_cast<const void*>(jobs[i - nodes.size()]);
  };
  auto work = [&](size_t t) {
    for (size_t i = t; i < total; i += n) {
      if (const size_t a = i + 8 * n; a < total) __builtin_prefetch(entry_of(a));
      if (const size_t a = i + 6 * n; a < total) __builtin_prefetch(&tasks_of(a));
      if (const size_t a = i + 4 * n; a < total) tasks_of(a).PrefetchEntries();
      if (const size_t a = i + 2 * n; a < total) tasks_of(a).PrefetchMetas();
      // Non-const objects: ClusterInfo::MutableNode/MutableJob later write to these
      // private copies through a const_cast, which is only defined for non-const objects.
      if (i < nodes.size()) {
        *nodes[i] = std::make_shared<NodeInfo>(**nodes[i]);
      } else {
        auto& p = *jobs[i - nodes.size()];
        p = std::make_shared<JobInfo>(*p);
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& t : pool) t.join();
}

// ---------------------------------------------------------------- counters

CacheCounters SchedulerCache::counters() const {
  MutexLock lock(&impl_->mu);
  return impl_->counters;
}

std::vector<SchedulerCache::LeftOutJob> SchedulerCache::JobsLeftOutOfSnapshots() const {
  std::vector<LeftOutJob> out;
  MutexLock lock(&impl_->mu);
  for (const auto& [id, slot] : impl_->jobs) {
    const JobInfo& job = *slot.info;
    if (impl_->IncludeJob(job)) continue;
    LeftOutJob j{std::string(id), job.pod_group() != nullptr, job.pod_group() ? job.queue() : "", {}};
    for (const TaskInfo* t : job.TasksWithStatus(TaskStatus::kPending)) j.pending.push_back(t->meta);
    if (!j.pending.empty()) out.push_back(std::move(j));
  }
  return out;
}

size_t SchedulerCache::num_jobs() const {
  MutexLock lock(&impl_->mu);
  return impl_->jobs.size();
}

size_t SchedulerCache::num_nodes() const {
  MutexLock lock(&impl_->mu);
  return impl_->nodes.size();
}

size_t SchedulerCache::num_tasks() const {
  MutexLock lock(&impl_->mu);
  return impl_->task_index.size();
}

}  // namespace volcache
