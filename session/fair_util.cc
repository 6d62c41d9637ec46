#include "session/fair_util.h"

#include <algorithm>

#include "api/task_status.h"

namespace volcache::fair {

std::vector<const TaskInfo*> SchedulablePending(const JobInfo& job) {
  std::vector<const TaskInfo*> pending;
  for (const TaskInfo* t : job.TasksWithStatus(TaskStatus::kPending)) {
    if (!t->scheduling_gated) pending.push_back(t);
  }
  std::sort(pending.begin(), pending.end(), [](const TaskInfo* a, const TaskInfo* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->meta->creation_timestamp() != b->meta->creation_timestamp()) {
      return a->meta->creation_timestamp() < b->meta->creation_timestamp();
    }
    return a->uid() < b->uid();
  });
  return pending;
}

Resource MinRequest(const JobInfo& job) {
  Resource r;
  if (!job.min_resources().IsEmpty()) {
    r = job.min_resources();
  } else {
    int32_t left = job.min_available();
    for (const auto& [_, t] : job.tasks()) {
      if (left <= 0) break;
      if (IsAllocatedStatus(t.status)) {
        r.Add(t.resreq());
        --left;
      }
    }
    for (const TaskInfo* t : SchedulablePending(job)) {
      if (left-- <= 0) break;
      r.Add(t->resreq());
    }
  }
  r.RemoveScalar(ResourceNames::kPods);
  return r;
}

bool FitsUnder(const Resource& base, const Resource& add, const Resource& limit) {
  if (add.milli_cpu() > 0 && base.milli_cpu() + add.milli_cpu() > limit.milli_cpu()) return false;
  if (add.memory() > 0 && base.memory() + add.memory() > limit.memory()) return false;
  for (const auto* s = add.scalars_begin(); s != add.scalars_end(); ++s) {
    if (s->id == ResourceNames::kPods || s->value <= 0) continue;
    if (base.Get(s->id) + s->value > limit.Get(s->id)) return false;
  }
  return true;
}

bool AtOrAboveDeserved(const Resource& allocated, const Resource& deserved) {
  auto dim = [](int64_t a, int64_t d) { return d > 0 ? a >= d : a > 0; };
  if (dim(allocated.milli_cpu(), deserved.milli_cpu()) || dim(allocated.memory(), deserved.memory()))
    return true;
  for (const auto* s = allocated.scalars_begin(); s != allocated.scalars_end(); ++s) {
    if (s->id != ResourceNames::kPods && dim(s->value, deserved.Get(s->id))) return true;
  }
  return false;
}

const std::string& QueueOf(const ClusterInfo& snap, const JobInfo& job, const std::string& default_queue) {
  return snap.queues.count(job.queue()) ? job.queue() : default_queue;
}

}  // namespace volcache::fair
