#include "session/enqueue.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>

#include "api/queue_info.h"
#include "api/task_status.h"
#include "session/fair_util.h"

namespace volcache {

namespace {

struct QueueTally {
  std::string name;
  int32_t weight = 1;
  bool closed = false;
  Resource cap;  // min(request, capability), the water-filling cap
  Resource request, allocated, inqueue, deserved;
  std::vector<const JobInfo*> pending;  // Pending-phase jobs, in job order
  size_t next = 0;
  double share = 0;  // Share(), kept current while the queue waits in the admission order

  double Share() const {
    Resource used = allocated;
    used.Add(inqueue);
    double s = 0;
    auto dim = [&](int64_t u, int64_t d) {
      if (d > 0) {
        s = std::max(s, static_cast<double>(u) / static_cast<double>(d));
      } else if (u > 0) {
        s = std::max(s, 1.0);
      }
    };
    dim(used.milli_cpu(), deserved.milli_cpu());
    dim(used.memory(), deserved.memory());
    for (const auto* x = used.scalars_begin(); x != used.scalars_end(); ++x) {
      if (x->id != ResourceNames::kPods) dim(x->value, deserved.Get(x->id));
    }
    return s;
  }
};

}  // namespace

EnqueueResult Enqueue(const ClusterInfo& snap, const SessionOptions& o) {
  std::map<std::string, QueueTally> queues;
  Resource cluster_used;  // allocated + inqueue over every job
  for (const auto& [id, jp] : snap.jobs()) {
    const JobInfo& job = *jp;
    if (!job.pod_group()) continue;
    const std::string& qname = fair::QueueOf(snap, job, o.default_queue);
    auto [it, inserted] = queues.try_emplace(qname);
    QueueTally& q = it->second;
    if (inserted) {
      q.name = qname;
      if (auto qi = snap.queues.find(qname); qi != snap.queues.end()) {
        q.weight = std::max<int32_t>(1, qi->second.weight);
        q.closed = qi->second.state == QueueState::kClosed || qi->second.state == QueueState::kClosing;
        if (qi->second.has_capability) q.cap = qi->second.capability;
      }
    }
    Resource allocated = job.allocated();
    allocated.RemoveScalar(ResourceNames::kPods);
    q.allocated.Add(allocated);
    q.request.Add(allocated);
    cluster_used.Add(allocated);
    for (const TaskInfo* t : job.TasksWithStatus(TaskStatus::kPending)) {  // a sum: any order
      if (t->scheduling_gated) continue;
      Resource r = t->resreq();
      r.RemoveScalar(ResourceNames::kPods);
      q.request.Add(r);
    }
    if (job.IsPending()) {
      q.pending.push_back(&job);
    } else if (!job.IsReady() && job.pod_group_phase() == "Inqueue") {
      Resource min = fair::MinRequest(job);
      q.inqueue.Add(min);
      cluster_used.Add(min);
    }
  }
  // Deserved, as Allocate computes it (request capped by capability, water-filled).
  std::vector<QueueTally*> qs;
  std::vector<int32_t> weights;
  std::vector<Resource> caps;
  for (auto& [name, q] : queues) {
    Resource cap = q.request;
    if (!q.cap.IsEmpty()) {
      if (q.cap.milli_cpu() > 0) cap.set_milli_cpu(std::min(cap.milli_cpu(), q.cap.milli_cpu()));
      if (q.cap.memory() > 0) cap.set_memory(std::min(cap.memory(), q.cap.memory()));
      for (const auto* s = q.request.scalars_begin(); s != q.request.scalars_end(); ++s) {
        if (q.cap.Has(s->id)) cap.SetScalar(s->id, std::min(s->value, q.cap.Get(s->id)));
      }
    }
    qs.push_back(&q);
    weights.push_back(q.weight);
    caps.push_back(std::move(cap));
  }
  Resource total = snap.total_allocatable();
  total.RemoveScalar(ResourceNames::kPods);
  std::vector<Resource> deserved = WaterFill(total, weights, caps);
  for (size_t i = 0; i < qs.size(); ++i) qs[i]->deserved = std::move(deserved[i]);
  Resource overcommitted = total;
  overcommitted.Multi(o.overcommit_factor);

  auto job_before = [](const JobInfo* a, const JobInfo* b) {
    if (a->priority() != b->priority()) return a->priority() > b->priority();
    if (a->creation_timestamp() != b->creation_timestamp())
      return a->creation_timestamp() < b->creation_timestamp();
    return a->uid() < b->uid();
  };
  auto queue_after = [](const QueueTally* a, const QueueTally* b) {
    if (a->share != b->share) return a->share > b->share;
    return a->name > b->name;
  };
  std::priority_queue<QueueTally*, std::vector<QueueTally*>, decltype(queue_after)> order(queue_after);
  EnqueueResult out;
  for (QueueTally* q : qs) {
    std::sort(q->pending.begin(), q->pending.end(), job_before);
    if (q->closed) {
      for (const JobInfo* j : q->pending)
        out.held.emplace_back(j->uid(), fmt::format("queue {} is closed", q->name));
      continue;
    }
    if (q->pending.empty()) continue;
    q->share = q->Share();
    order.push(q);
  }
  while (!order.empty()) {
    QueueTally* q = order.top();
    order.pop();
    const JobInfo& job = *q->pending[q->next++];
    const Resource min = fair::MinRequest(job);
    Resource queue_used = q->allocated;
    queue_used.Add(q->inqueue);
    // Below its deserved share, a queue may admit one job that takes it past (gangs are not
    // divisible: a share that is not a multiple of the gang size would otherwise starve).
    if (!fair::AtOrAboveDeserved(queue_used, q->deserved) ||
        fair::FitsUnder(cluster_used, min, overcommitted)) {
      q->inqueue.Add(min);
      q->share = q->Share();
      cluster_used.Add(min);
      out.enqueued.push_back(job.uid());
    } else {
      out.held.emplace_back(
          job.uid(), fmt::format("queue {}: minResources {} exceed the queue's remaining deserved share "
                                 "and the cluster's overcommitted idle",
                                 q->name, min.ToString()));
    }
    if (q->next < q->pending.size()) order.push(q);
  }
  std::sort(out.held.begin(), out.held.end());
  return out;
}

}  // namespace volcache
