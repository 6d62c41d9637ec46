#pragma once
// Enqueue: the session's admission step (Volcano's `enqueue` action with the `proportion`
// and `overcommit` plugins), a pure function of a snapshot like Allocate.
//
// A job whose PodGroup is Pending (or has no phase yet) moves to Inqueue when its minimum
// request (minResources, else the requests of its first minAvailable tasks) fits
//   * its queue's remaining deserved share: the queue's allocated + inqueue is still below
//     its deserved share (share < 1; deserved as Allocate computes it: weight-proportional
//     water-filling of the Ready nodes' allocatable, capped by min(request, capability)) —
//     so a queue overshoots its share by at most one job, as gangs are indivisible — or
//   * the cluster's overcommitted idle: total allocatable × overcommit_factor − allocated −
//     inqueue (Volcano's overcommit plugin, factor 1.2 by default).
// `inqueue` is the sum of the minimum requests of jobs already Inqueue and not yet ready.
// Queues take turns by share ((allocated + inqueue) / deserved, then name), one job per turn;
// jobs inside a queue go by priority, creation time, then uid. Closed/Closing queues admit
// nothing. With SessionOptions::require_inqueue, Allocate tries Inqueue (or later) jobs only.
//
// Thread-safety: a pure function; the snapshot must not be mutated while it runs.

#include <string>
#include <utility>
#include <vector>

#include "api/cluster_info.h"
#include "session/allocate.h"

namespace volcache {

struct EnqueueResult {
  std::vector<JobId> enqueued;                      // in admission order
  std::vector<std::pair<JobId, std::string>> held;  // left Pending, with why (sorted by job)
};

EnqueueResult Enqueue(const ClusterInfo& snapshot, const SessionOptions& options = {});

}  // namespace volcache
