#include "session/reclaim.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "api/node_info.h"
#include "api/queue_info.h"
#include "api/task_info.h"
#include "api/task_status.h"
#include "session/fair_util.h"

namespace volcache {

namespace {

Resource WithoutPods(const Resource& r) {
  Resource c = r;
  c.RemoveScalar(ResourceNames::kPods);
  return c;
}

struct QState {
  std::string name;
  Resource deserved, allocated;
  double share = 0;
  bool reclaimable = true;
  bool closed = false;
  bool receiving = false;  // reclaimed for in this plan: never a donor in the same plan
};

struct Victim {
  const TaskInfo* task;
  size_t job;
  size_t node;
  Resource req;
  bool evicted = false;
};

struct JState {
  const JobInfo* job = nullptr;
  size_t queue = 0;
  int32_t ready = 0;      // ready statuses + this plan's binds
  int32_t allocated = 0;  // allocated statuses + this plan's binds (what a whole eviction must cover)
  int32_t evicted = 0;
  mutable std::vector<size_t> victims;  // Running/Bound tasks (by task key once sorted)
  mutable bool sorted = false;
};

struct NState {
  const NodeInfo* info;
  Resource allocatable;  // without pods: a task that exceeds it never fits, whatever is evicted
  Resource future;
  std::vector<size_t> victims;  // in victim order once sorted (NodeVictims)
  bool sorted = false;
};

class Planner {
 public:
  Planner(const ClusterInfo& snap, const AllocationPlan& plan, const SessionOptions& o)
      : snap_(snap), plan_(plan), o_(o) {}

  EvictionPlan Run(EvictOptions e) {
    Open();
    std::vector<size_t> starving = Starving();
    CollectVictims(e, starving);
    std::vector<bool> served(starving.size(), false);
    if (e.reclaim) {
      std::vector<size_t> qorder(queues_.size());
      for (size_t i = 0; i < qorder.size(); ++i) qorder[i] = i;
      std::stable_sort(qorder.begin(), qorder.end(), [&](size_t a, size_t b) {
        if (queues_[a].share != queues_[b].share) return queues_[a].share < queues_[b].share;
        return queues_[a].name < queues_[b].name;
      });
      for (size_t qi : qorder) {
        QState& q = queues_[qi];
        for (size_t k = 0; k < starving.size(); ++k) {
          JState& j = jobs_[starving[k]];
          if (j.queue != qi || served[k]) continue;
          if (fair::AtOrAboveDeserved(q.allocated, q.deserved)) {
            Outcome(j, false, 0, fmt::format("queue {} is not below its deserved share", q.name));
            continue;
          }
          const std::vector<const TaskInfo*> need = Needed(j);
          Resource sum;
          for (const TaskInfo* t : need) sum.Add(WithoutPods(t->resreq()));
          if (Serve(starving[k], need, /*preempt=*/false)) {
            served[k] = true;
            q.allocated.Add(sum);
            q.receiving = true;
          }
        }
      }
    }
    if (e.preempt) {
      for (size_t k = 0; k < starving.size(); ++k) {
        if (served[k]) continue;
        if (Serve(starving[k], Needed(jobs_[starving[k]]), /*preempt=*/true)) served[k] = true;
      }
    }
    return std::move(out_);
  }

 private:
  void Open() {
    // Queues: Allocate's view (deserved; allocated including this plan's placements).
    std::unordered_map<std::string, size_t> qindex;
    for (const QueueOutcome& qo : plan_.queues) {
      QState q;
      q.name = qo.name;
      q.deserved = qo.deserved;
      q.allocated = qo.allocated;
      q.share = qo.share;
      q.closed = qo.closed;
      if (auto it = snap_.queues.find(qo.name); it != snap_.queues.end())
        q.reclaimable = it->second.reclaimable;
      qindex.emplace(q.name, queues_.size());
      queues_.push_back(std::move(q));
    }
    // Nodes, in name order, with future idle minus this plan's placements.
    for (const auto& [name, info] : snap_.nodes()) {
      nodes_.push_back({info.get(), WithoutPods(info->allocatable()), WithoutPods(info->FutureIdle()), {}});
    }
    std::sort(nodes_.begin(), nodes_.end(),
              [](const NState& a, const NState& b) { return a.info->name() < b.info->name(); });
    for (size_t i = 0; i < nodes_.size(); ++i) node_index_.emplace(nodes_[i].info->name(), i);
    std::unordered_map<JobId, int32_t> bound;
    for (const Placement& p : plan_.placements) {
      auto job = snap_.jobs().find(p.job);
      auto node = node_index_.find(p.node);
      if (job == snap_.jobs().end() || node == node_index_.end()) continue;
      const TaskInfo* t = job->second->FindTask(p.task_uid);
      if (t == nullptr) continue;
      nodes_[node->second].future.SubUnchecked(WithoutPods(t->resreq()));
      placed_.insert(t);
      if (p.pipelined) {
        ++pipelined_[p.job];
      } else {
        ++bound[p.job];
      }
    }
    // Jobs and their evictable tasks.
    for (const auto& [id, jp] : snap_.jobs()) {
      const JobInfo& job = *jp;
      if (!job.pod_group()) continue;
      auto q = qindex.find(fair::QueueOf(snap_, job, o_.default_queue));
      if (q == qindex.end()) continue;
      JState j;
      j.job = &job;
      j.queue = q->second;
      int32_t b = 0;
      if (!bound.empty()) {
        if (auto it = bound.find(id); it != bound.end()) b = it->second;
      }
      j.ready = job.ReadyTaskNum() + b;
      j.allocated = b;
      for (TaskStatus st :
           {TaskStatus::kAllocated, TaskStatus::kBinding, TaskStatus::kBound, TaskStatus::kRunning})
        j.allocated += static_cast<int32_t>(job.CountWithStatus(st));
      jobs_.push_back(std::move(j));
    }
  }

  // The evictable (Running/Bound) tasks of the jobs that could ever give some up in this
  // plan: those of queues that may donate to reclaim (reclaimable, at or above their share:
  // a queue's allocated only shrinks here), and those with a lower priority than a starving
  // job of their queue (preempt). Collecting only these keeps Open cheap on large clusters.
  void CollectVictims(EvictOptions e, const std::vector<size_t>& starving) {
    std::vector<int32_t> max_starving_priority(queues_.size(), INT32_MIN);
    if (e.preempt) {
      for (size_t k : starving) {
        const JState& j = jobs_[k];
        max_starving_priority[j.queue] = std::max(max_starving_priority[j.queue], j.job->priority());
      }
    }
    std::vector<bool> donor(queues_.size(), false);
    for (size_t q = 0; q < queues_.size(); ++q) {
      donor[q] = e.reclaim && queues_[q].reclaimable &&
                 fair::AtOrAboveDeserved(queues_[q].allocated, queues_[q].deserved);
    }
    auto collects = [&](const JState& j) {
      return donor[j.queue] || j.job->priority() < max_starving_priority[j.queue];
    };
    size_t tasks = 0;
    for (const JState& j : jobs_) tasks += collects(j) ? j.job->tasks().size() : 0;
    victims_.reserve(tasks);
    // A gang's tasks often share a node: the last lookup is tried before the hash.
    const std::string* last_name = nullptr;
    size_t last_node = 0;
    for (size_t ji = 0; ji < jobs_.size(); ++ji) {
      JState& j = jobs_[ji];
      if (!collects(j)) continue;
      j.victims.reserve(j.job->tasks().size());
      for (const auto& [uid, t] : j.job->tasks()) {
        if ((t.status != TaskStatus::kRunning && t.status != TaskStatus::kBound) || t.node_name.empty())
          continue;
        if (last_name == nullptr || *last_name != t.node_name) {
          auto n = node_index_.find(t.node_name);
          if (n == node_index_.end()) continue;
          last_name = &n->first;
          last_node = n->second;
        }
        j.victims.push_back(victims_.size());
        victims_.push_back({&t, ji, last_node, WithoutPods(t.resreq())});
      }
    }
    std::vector<uint32_t> per_node(nodes_.size(), 0);
    for (const Victim& v : victims_) ++per_node[v.node];
    for (size_t ni = 0; ni < nodes_.size(); ++ni) nodes_[ni].victims.reserve(per_node[ni]);
    min_victim_priority_.assign(queues_.size(), INT32_MAX);
    for (size_t v = 0; v < victims_.size(); ++v) {
      nodes_[victims_[v].node].victims.push_back(v);
      const JState& vj = jobs_[victims_[v].job];
      min_victim_priority_[vj.queue] = std::min(min_victim_priority_[vj.queue], vj.job->priority());
      lowest_victim_priority_ = std::min(lowest_victim_priority_, vj.job->priority());
    }
  }

  // Starving jobs in job order (priority, creation time, uid).
  std::vector<size_t> Starving() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const JState& j = jobs_[i];
      const JobInfo& job = *j.job;
      if (o_.require_inqueue && job.IsPending()) continue;
      if (queues_[j.queue].closed) continue;
      if (job.ValidTaskNum() < job.min_available()) continue;
      const int32_t pipelined = Pipelined(job.uid());
      if (j.ready + pipelined >= job.min_available()) continue;
      out.push_back(i);
    }
    std::sort(out.begin(), out.end(), [&](size_t a, size_t b) {
      const JobInfo& ja = *jobs_[a].job;
      const JobInfo& jb = *jobs_[b].job;
      if (ja.priority() != jb.priority()) return ja.priority() > jb.priority();
      if (ja.creation_timestamp() != jb.creation_timestamp())
        return ja.creation_timestamp() < jb.creation_timestamp();
      return ja.uid() < jb.uid();
    });
    return out;
  }

  std::vector<const TaskInfo*> Needed(const JState& j) const {
    const int32_t pipelined = Pipelined(j.job->uid());
    int32_t want = j.job->min_available() - j.ready - pipelined;
    std::vector<const TaskInfo*> need;
    for (const TaskInfo* t : fair::SchedulablePending(*j.job)) {
      if (want <= 0) break;
      if (!placed_.empty() && placed_.count(t)) continue;
      need.push_back(t);
      --want;
    }
    return need;
  }

  void Outcome(const JState& j, bool served, int32_t evictions, std::string reason) {
    out_.jobs.push_back({j.job->uid(), queues_[j.queue].name, served, evictions, std::move(reason)});
  }

  bool Eligible(const Victim& v, const JState& starving, bool preempt) const {
    if (v.evicted || v.job == static_cast<size_t>(&starving - jobs_.data())) return false;
    const JState& vj = jobs_[v.job];
    if (preempt) return vj.queue == starving.queue && vj.job->priority() < starving.job->priority();
    return vj.queue != starving.queue && queues_[vj.queue].reclaimable && !queues_[vj.queue].receiving;
  }

  // Sorted on first use (most nodes and jobs are never looked at for victims).
  const std::vector<size_t>& NodeVictims(size_t ni) const {
    NState& n = nodes_[ni];
    if (!n.sorted) {
      auto victim_before = [this](size_t a, size_t b) {
        const JobInfo& ja = *jobs_[victims_[a].job].job;
        const JobInfo& jb = *jobs_[victims_[b].job].job;
        if (ja.priority() != jb.priority()) return ja.priority() < jb.priority();
        if (ja.creation_timestamp() != jb.creation_timestamp())
          return ja.creation_timestamp() > jb.creation_timestamp();
        const TaskInfo& ta = *victims_[a].task;
        const TaskInfo& tb = *victims_[b].task;
        if (ta.meta->creation_timestamp() != tb.meta->creation_timestamp()) {
          return ta.meta->creation_timestamp() > tb.meta->creation_timestamp();
        }
        return ta.uid() < tb.uid();
      };
      std::sort(n.victims.begin(), n.victims.end(), victim_before);
      n.sorted = true;
    }
    return n.victims;
  }
  const std::vector<size_t>& JobVictims(const JState& j) const {
    if (!j.sorted) {
      std::sort(j.victims.begin(), j.victims.end(),
                [this](size_t a, size_t b) { return victims_[a].task->key() < victims_[b].task->key(); });
      j.sorted = true;
    }
    return j.victims;
  }

  int32_t Pipelined(const JobId& id) const {
    if (pipelined_.empty()) return 0;
    auto it = pipelined_.find(id);
    return it == pipelined_.end() ? 0 : it->second;
  }

  // Memo and cursor keys: raw bytes, no number formatting (this runs per starving task).
  static void AppendRaw(std::string* key, const Resource& r) {
    auto put = [key](int64_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    put(r.milli_cpu());
    put(r.memory());
    for (const auto* x = r.scalars_begin(); x != r.scalars_end(); ++x) {
      if (x->id == ResourceNames::kPods) continue;
      put(x->id);
      put(x->value);
    }
    key->push_back('|');
  }
  static std::string ShapeKey(bool preempt, size_t queue, int32_t priority, const Resource* req) {
    std::string key(1, preempt ? 'p' : 'r');
    key.append(reinterpret_cast<const char*>(&queue), sizeof(queue));
    key.append(reinterpret_cast<const char*>(&priority), sizeof(priority));
    if (req != nullptr) AppendRaw(&key, *req);
    return key;
  }

  // Whether any job could give up tasks for `j`: for reclaim another reclaimable queue at or
  // above its share, for preempt a lower-priority job of its queue holding a victim.
  bool AnyDonor(const JState& j, bool preempt) const {
    if (preempt) return min_victim_priority_[j.queue] < j.job->priority();
    for (size_t q = 0; q < queues_.size(); ++q) {
      if (q != j.queue && queues_[q].reclaimable && !queues_[q].receiving &&
          fair::AtOrAboveDeserved(queues_[q].allocated, queues_[q].deserved))
        return true;
    }
    return false;
  }

  // Whether freeing `freed` on a node helps a task short of `req` with `avail`: it gives back
  // some of a dimension the task still lacks.
  static bool Relieves(const Resource& freed, const Resource& req, const Resource& avail) {
    if (freed.milli_cpu() > 0 && req.milli_cpu() > avail.milli_cpu()) return true;
    if (freed.memory() > 0 && req.memory() > avail.memory()) return true;
    for (const auto* s = freed.scalars_begin(); s != freed.scalars_end(); ++s) {
      if (s->value > 0 && req.Get(s->id) > avail.Get(s->id)) return true;
    }
    return false;
  }

  // The victims that make room for `req` on node `ni` (whole jobs expanded), or false.
  bool SelectOnNode(size_t ni, const Resource& req, const JState& starving, bool preempt,
                    std::vector<size_t>* chosen) const {
    Resource avail = nodes_[ni].future;
    if (req.LessEqual(avail, DimensionDefault::kZero)) return true;
    // Few victims per call: small vectors searched linearly beat hash maps here.
    std::vector<std::pair<size_t, int32_t>> job_taken;
    std::vector<std::pair<size_t, Resource>> queue_taken;
    auto chosen_already = [&](size_t x) {
      return std::find(chosen->begin(), chosen->end(), x) != chosen->end();
    };
    std::vector<size_t> unit;
    for (size_t vi : NodeVictims(ni)) {
      const Victim& v = victims_[vi];
      if (!Eligible(v, starving, preempt) || chosen_already(vi)) continue;
      if (!Relieves(v.req, req, avail)) continue;  // frees nothing the task is short of
      const JState& vj = jobs_[v.job];
      auto jt =
          std::find_if(job_taken.begin(), job_taken.end(), [&](const auto& e) { return e.first == v.job; });
      const int32_t remaining = vj.ready - vj.evicted - (jt == job_taken.end() ? 0 : jt->second);
      unit.clear();
      if (remaining - 1 >= vj.job->min_available()) {
        unit.push_back(vi);
      } else {
        // The whole job goes (in task-key order), or this victim is skipped: every allocated
        // task must be evictable.
        if (static_cast<int32_t>(vj.victims.size()) != vj.allocated) continue;
        for (size_t x : JobVictims(vj)) {
          if (!victims_[x].evicted && !chosen_already(x)) unit.push_back(x);
        }
      }
      Resource sum;
      for (size_t x : unit) sum.Add(victims_[x].req);
      if (!preempt) {
        const QState& vq = queues_[vj.queue];
        auto qt = std::find_if(queue_taken.begin(), queue_taken.end(),
                               [&](const auto& e) { return e.first == vj.queue; });
        Resource left = vq.allocated;
        if (qt != queue_taken.end()) left.SubUnchecked(qt->second);
        left.SubUnchecked(sum);
        if (!fair::AtOrAboveDeserved(left, vq.deserved)) continue;  // would fall below deserved
        if (qt == queue_taken.end()) {
          queue_taken.emplace_back(vj.queue, sum);
        } else {
          qt->second.Add(sum);
        }
      }
      for (size_t x : unit) {
        chosen->push_back(x);
        if (victims_[x].node == ni) avail.Add(victims_[x].req);
      }
      if (jt == job_taken.end()) {
        job_taken.emplace_back(v.job, static_cast<int32_t>(unit.size()));
      } else {
        jt->second += static_cast<int32_t>(unit.size());
      }
      if (req.LessEqual(avail, DimensionDefault::kZero)) return true;
    }
    return false;
  }

  // Finds room for every needed task of job `ji` (evicting as chosen), or changes nothing.
  bool Serve(size_t ji, const std::vector<const TaskInfo*>& need, bool preempt) {
    JState& j = jobs_[ji];
    // Cheap refusals first: nobody to take from, or a job just like one that failed since
    // the last successful serve (the state only grows tighter between serves).
    if (!AnyDonor(j, preempt)) {
      Outcome(j, false, 0,
              preempt ? fmt::format("no lower-priority job in queue {} to preempt", queues_[j.queue].name)
                      : "no reclaimable queue above its deserved share");
      return false;
    }
    std::string memo_key;
    bool plain = true;
    for (const TaskInfo* t : need) {
      const k8s::PodSpec& spec = t->pod().spec;
      plain = plain && spec.node_selector.empty() && spec.tolerations.empty();
    }
    if (plain) {
      memo_key = ShapeKey(preempt, j.queue, j.job->priority(), nullptr);
      for (const TaskInfo* t : need) AppendRaw(&memo_key, t->resreq());
      if (auto it = unservable_.find(memo_key); it != unservable_.end()) {
        Outcome(j, false, 0, it->second);
        return false;
      }
    }
    struct Undo {
      std::vector<std::pair<size_t, Resource>> reserved;  // node, req
      std::vector<size_t> evicted;
    } undo;
    const size_t evictions_before = out_.evictions.size();
    std::string failure;
    for (const TaskInfo* t : need) {
      const Resource req = WithoutPods(t->resreq());
      size_t best = nodes_.size();
      std::vector<size_t> best_victims;
      // A node that fits as it is (first by name), else the one needing the fewest victims.
      // Future idle only shrinks between evictions, so the scan for a request resumes where
      // the last one for the same request found no room before (evictions rewind it).
      std::string req_key;
      AppendRaw(&req_key, req);
      size_t& cursor = fit_cursor_[req_key];
      for (size_t ni = cursor; ni < nodes_.size(); ++ni) {
        if (!req.LessEqual(nodes_[ni].future, DimensionDefault::kZero)) {
          if (ni == cursor) ++cursor;
          continue;
        }
        if (!NodePredicateFailure(*t, *nodes_[ni].info, snap_.volumes.get()).empty()) continue;
        best = ni;
        break;
      }
      // With victims: the node needing the fewest among the first kVictimNodesToCompare
      // nodes (name order) where victims make room, stopping at a one-victim node. Nodes
      // where none do stay so until something is released on them (evictions rewind the
      // cursor), so the scan for the same starving queue, priority, action and request
      // resumes after them.
      size_t& victim_cursor = victim_cursor_[ShapeKey(preempt, j.queue, j.job->priority(), &req)];
      size_t compared = 0;
      int32_t best_priority = INT32_MAX;  // the highest job priority among best_victims
      for (size_t ni = victim_cursor; best == nodes_.size() || !best_victims.empty(); ++ni) {
        if (ni == nodes_.size() || compared == kVictimNodesToCompare) break;
        // One victim of the lowest priority any victim has cannot be beaten.
        if (best_victims.size() == 1 && best_priority <= lowest_victim_priority_) break;
        bool fails = !req.LessEqual(nodes_[ni].allocatable, DimensionDefault::kZero) ||
                     nodes_[ni].victims.empty() ||
                     !NodePredicateFailure(*t, *nodes_[ni].info, snap_.volumes.get()).empty();
        std::vector<size_t> victims;
        fails = fails || !SelectOnNode(ni, req, j, preempt, &victims);
        if (fails) {
          if (ni == victim_cursor) ++victim_cursor;
          continue;
        }
        ++compared;
        int32_t priority = INT32_MIN;
        for (size_t v : victims) priority = std::max(priority, jobs_[victims_[v].job].job->priority());
        // Lowest priority first (issue 13), then the fewest victims, then the name.
        if (best == nodes_.size() || priority < best_priority ||
            (priority == best_priority && victims.size() < best_victims.size())) {
          best = ni;
          best_victims = std::move(victims);
          best_priority = priority;
        }
      }
      if (best == nodes_.size()) {
        failure = fmt::format("task {} fits no node even with {} victims", t->key(),
                              preempt ? "preemption" : "reclaim");
        break;
      }
      for (size_t vi : best_victims) {
        Victim& v = victims_[vi];
        v.evicted = true;
        nodes_[v.node].future.Add(v.req);
        Rewind(v.node);
        JState& vj = jobs_[v.job];
        ++vj.evicted;
        queues_[vj.queue].allocated.SubUnchecked(v.req);
        undo.evicted.push_back(vi);
        out_.evictions.push_back(
            {std::string(v.task->key()), v.task->uid(), vj.job->uid(), queues_[vj.queue].name,
             nodes_[v.node].info->name(), j.job->uid(), preempt,
             preempt ? fmt::format("preempted by job {} (priority {} > {})", j.job->uid(), j.job->priority(),
                                   vj.job->priority())
                     : fmt::format("reclaimed by job {} of queue {} (queue {} above its "
                                   "deserved share)",
                                   j.job->uid(), queues_[j.queue].name, queues_[vj.queue].name)});
      }
      nodes_[best].future.SubUnchecked(req);
      undo.reserved.emplace_back(best, req);
    }
    if (!failure.empty()) {
      for (const auto& [ni, req] : undo.reserved) nodes_[ni].future.Add(req);
      for (const auto& [ni, req] : undo.reserved) Rewind(ni);
      // Victims come back (and their queues' budgets): any node may have some again.
      if (!undo.evicted.empty()) victim_cursor_.clear();
      for (size_t vi : undo.evicted) {
        Victim& v = victims_[vi];
        v.evicted = false;
        nodes_[v.node].future.SubUnchecked(v.req);
        JState& vj = jobs_[v.job];
        --vj.evicted;
        queues_[vj.queue].allocated.Add(v.req);
      }
      out_.evictions.resize(evictions_before);
      if (!memo_key.empty()) unservable_.emplace(std::move(memo_key), failure);
      Outcome(j, false, 0, std::move(failure));
      return false;
    }
    unservable_.clear();
    const int32_t n = static_cast<int32_t>(out_.evictions.size() - evictions_before);
    (preempt ? out_.preempted : out_.reclaimed) += n;
    Outcome(j, true, n, "");
    return true;
  }

  const ClusterInfo& snap_;
  const AllocationPlan& plan_;
  const SessionOptions& o_;
  std::vector<QState> queues_;
  mutable std::vector<NState> nodes_;  // mutable: victims sorted lazily
  std::unordered_map<std::string, size_t> node_index_;
  std::vector<JState> jobs_;
  std::vector<Victim> victims_;
  std::unordered_set<const TaskInfo*> placed_;  // tasks placed by the plan (the snapshot's)
  std::unordered_map<JobId, int32_t> pipelined_;
  // Request → the first node a fit scan for it may find room on (see Serve).
  std::unordered_map<std::string, size_t> fit_cursor_;
  std::unordered_map<std::string, size_t> victim_cursor_;  // action, queue, priority, request → first node
  static constexpr size_t kVictimNodesToCompare = 16;
  void Rewind(size_t ni) {
    for (auto& [_, c] : fit_cursor_) c = std::min(c, ni);
    for (auto& [_, c] : victim_cursor_) c = std::min(c, ni);
  }
  std::unordered_map<std::string, std::string> unservable_;  // memo: action, queue, priority, requests → why
  std::vector<int32_t> min_victim_priority_;                 // by queue: lowest priority holding a victim
  int32_t lowest_victim_priority_ = INT32_MAX;               // over all victims
  EvictionPlan out_;
};

}  // namespace

Status CheckEvictionPlan(const ClusterInfo& snap, const AllocationPlan& plan, const EvictionPlan& evictions,
                         const SessionOptions& o) {
  std::vector<std::string> bad;
  std::unordered_set<std::string> seen, served;
  std::map<JobId, int32_t> per_job;
  std::map<std::string, Resource> per_queue;
  std::map<JobId, int32_t> bound;
  for (const Placement& p : plan.placements) {
    if (!p.pipelined) ++bound[p.job];
  }
  for (const StarvingOutcome& j : evictions.jobs) {
    if (j.served) served.insert(j.job);
  }
  for (const Eviction& e : evictions.evictions) {
    if (!seen.insert(e.task_uid).second) bad.push_back(fmt::format("{} evicted twice", e.task_key));
    auto vj = snap.jobs().find(e.job);
    auto sj = snap.jobs().find(e.for_job);
    if (vj == snap.jobs().end() || sj == snap.jobs().end()) {
      bad.push_back(fmt::format("{}: job {} or {} not in the snapshot", e.task_key, e.job, e.for_job));
      continue;
    }
    const TaskInfo* t = vj->second->FindTask(e.task_uid);
    if (t == nullptr || (t->status != TaskStatus::kRunning && t->status != TaskStatus::kBound)) {
      bad.push_back(fmt::format("{}: not a Running/Bound task of {}", e.task_key, e.job));
      continue;
    }
    if (!served.count(e.for_job))
      bad.push_back(fmt::format("{}: evicted for {}, which is not served", e.task_key, e.for_job));
    ++per_job[e.job];
    const std::string& vq = fair::QueueOf(snap, *vj->second, o.default_queue);
    const std::string& sq = fair::QueueOf(snap, *sj->second, o.default_queue);
    if (e.preempt) {
      if (vq != sq || vj->second->priority() >= sj->second->priority()) {
        bad.push_back(fmt::format("{}: preempted for {} of queue {} priority {}, victim queue {} priority {}",
                                  e.task_key, e.for_job, sq, sj->second->priority(), vq,
                                  vj->second->priority()));
      }
    } else {
      auto qi = snap.queues.find(vq);
      if (vq == sq || (qi != snap.queues.end() && !qi->second.reclaimable)) {
        bad.push_back(fmt::format("{}: reclaimed from queue {} for queue {}", e.task_key, vq, sq));
      }
      per_queue[vq].Add(WithoutPods(t->resreq()));
    }
  }
  for (const auto& [id, n] : per_job) {
    const JobInfo& job = *snap.jobs().at(id);
    const int32_t left = job.ReadyTaskNum() + (bound.count(id) ? bound.at(id) : 0) - n;
    if (left != 0 && left < job.min_available()) {
      bad.push_back(fmt::format("job {} left with {} ready tasks, below minAvailable {}", id, left,
                                job.min_available()));
    }
  }
  for (const auto& [name, taken] : per_queue) {
    for (const QueueOutcome& q : plan.queues) {
      if (q.name != name) continue;
      Resource left = q.allocated;
      left.SubUnchecked(taken);
      if (!fair::AtOrAboveDeserved(left, q.deserved)) {
        bad.push_back(fmt::format("queue {} reclaimed below its deserved share: {} left of {}", name,
                                  left.ToString(), q.deserved.ToString()));
      }
    }
  }
  if (bad.empty()) return Status::Ok();
  std::string msg = "eviction plan violates its invariants:";
  for (const auto& b : bad) msg += " " + b + ";";
  return Status::Internal(msg);
}

EvictionPlan PlanEvictions(const ClusterInfo& snapshot, const AllocationPlan& plan,
                           const SessionOptions& options, EvictOptions evict) {
  return Planner(snapshot, plan, options).Run(evict);
}

}  // namespace volcache
