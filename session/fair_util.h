#pragma once
// Helpers shared by the session's fairness actions (enqueue, reclaim, preempt): the task
// order, a job's minimum request, and the per-dimension "fits under" test they all use.
// Internal to session/. Thread-safety: pure functions.

#include <vector>

#include "api/cluster_info.h"
#include "api/job_info.h"
#include "api/resource.h"
#include "api/task_info.h"

namespace volcache::fair {

// Pending, not scheduling-gated tasks in task order (priority, creation time, uid), the
// order Allocate places them in.
std::vector<const TaskInfo*> SchedulablePending(const JobInfo& job);

// The PodGroup's minResources; without one, the sum of the requests (without pods) of the
// first minAvailable tasks in task order over the job's allocated-status and schedulable
// pending tasks (what Volcano's job controller writes into minResources for a vcjob).
Resource MinRequest(const JobInfo& job);

// base + add <= limit in every dimension `add` requests (> 0), pods excepted.
bool FitsUnder(const Resource& base, const Resource& add, const Resource& limit);

// Volcano's share (max over dimensions of allocated / deserved, 1 for something allocated of
// a dimension deserving none) is >= 1: the queue holds at least its deserved share.
bool AtOrAboveDeserved(const Resource& allocated, const Resource& deserved);

// The queue a job counts under in `snap` (its own, or `default_queue` when unknown).
const std::string& QueueOf(const ClusterInfo& snap, const JobInfo& job, const std::string& default_queue);

}  // namespace volcache::fair
