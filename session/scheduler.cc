#include "session/scheduler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/queue_info.h"
#include "api/task_status.h"
#include "session/enqueue.h"

namespace volcache {

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

namespace {

// NextPodGroupPhase without building a string (the close asks it of every job).
std::string_view NextPhase(const JobInfo& job) {
  auto count = [&](TaskStatus s) { return static_cast<int32_t>(job.CountWithStatus(s)); };
  const int32_t allocated = count(TaskStatus::kAllocated) + count(TaskStatus::kBinding) +
                            count(TaskStatus::kBound) + count(TaskStatus::kRunning);
  const int32_t succeeded = count(TaskStatus::kSucceeded);
  if (allocated + succeeded >= std::max<int32_t>(1, job.min_available())) {
    return allocated == 0 ? "Completed" : "Running";
  }
  if (count(TaskStatus::kRunning) > 0) return "Unknown";
  if (job.pod_group_phase() == "Inqueue") return "Inqueue";
  return "Pending";
}

}  // namespace

std::string NextPodGroupPhase(const JobInfo& job) { return std::string(NextPhase(job)); }

Scheduler::Scheduler(CacheRuntime* runtime, SchedulerOptions options)
    : runtime_(runtime), options_(std::move(options)) {
  if (options_.enqueue) options_.session.require_inqueue = options_.session.share_limit = true;
}

Scheduler::~Scheduler() { Stop(); }

CycleStats Scheduler::RunOnce() {
  MutexLock lock(&mu_);
  return RunOnceLocked();
}

CycleStats Scheduler::RunOnceLocked() {
  CycleStats st;
  st.cycle = ++cycles_;
  const auto cycle_start = std::chrono::steady_clock::now();
  SchedulerCache& cache = runtime_->cache();

  // ---- open
  auto t = std::chrono::steady_clock::now();
  if (snapshot_ == nullptr) {
    snapshot_ = cache.Snapshot();
  } else {
    cache.UpdateSnapshot(snapshot_.get());
  }
  ClusterInfo& snap = *snapshot_;
  st.open_ms = MsSince(t);
  // The jobs by uid, sorted once for the allocator and the close: the map's entries keep their
  // addresses through the session (MutableJob replaces an entry's version, never the entry).
  std::vector<const ClusterInfo::JobMap::value_type*> by_uid;
  by_uid.reserve(snap.jobs().size());
  for (const auto& entry : snap.jobs()) by_uid.push_back(&entry);
  std::sort(by_uid.begin(), by_uid.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<const JobInfo*> jobs;  // their current versions
  auto current_jobs = [&] {
    jobs.clear();
    for (const auto* entry : by_uid) jobs.push_back(entry->second.get());
  };

  // ---- enqueue (Pending → Inqueue), in the snapshot; close writes the phase
  JobIdSet enqueued_now;
  if (options_.enqueue) {
    t = std::chrono::steady_clock::now();
    auto set_inqueue = [&](const JobId& id) {
      JobInfo* job = snap.MutableJob(id);
      if (job == nullptr || !job->pod_group()) return;
      job->SetPodGroupPhase("Inqueue");
    };
    for (auto it = enqueued_.begin(); it != enqueued_.end();) {
      auto job = snap.jobs().find(*it);
      if (job == snap.jobs().end() || !job->second->IsPending()) {
        it = enqueued_.erase(it);  // gone, or the cache has its phase now
        continue;
      }
      set_inqueue(*it);
      ++it;
    }
    EnqueueResult admitted = Enqueue(snap, options_.session);
    for (const JobId& id : admitted.enqueued) {
      set_inqueue(id);
      enqueued_.insert(id);
      enqueued_now.insert(id);
    }
    st.enqueued = static_cast<int64_t>(admitted.enqueued.size());
    st.enqueue_ms = MsSince(t);
  }

  // ---- allocate
  t = std::chrono::steady_clock::now();
  current_jobs();
  // The last plan's storage is reused (last_plan_ is set again before the lock is released).
  std::vector<uint32_t> outcome_positions;  // plan.jobs[i] is the job of by_uid[outcome_positions[i]]
  AllocationPlan plan = Allocate(snap, options_.session, jobs, std::move(last_plan_), &outcome_positions);
  st.allocate_ms = MsSince(t);
  st.placements = static_cast<int64_t>(plan.placements.size());
  st.discarded = plan.discarded;
  st.pipelined = plan.pipelined;

  // ---- reclaim / preempt: plan victims on the same snapshot (evicted after the commit)
  EvictionPlan evictions;
  if (options_.reclaim || options_.preempt) {
    t = std::chrono::steady_clock::now();
    evictions = PlanEvictions(snap, plan, options_.session, EvictOptions{options_.reclaim, options_.preempt});
    if (options_.check_evictions) {
      if (Status c = CheckEvictionPlan(snap, plan, evictions, options_.session); !c.ok()) {
        st.eviction_check_error = c.message();
        spdlog::error("session: {}", c.message());
        evictions.evictions.clear();
      }
    }
    st.evict_ms = MsSince(t);
  }

  // ---- commit
  t = std::chrono::steady_clock::now();
  std::unordered_set<JobId> refused;
  std::unordered_set<JobId> started;
  JobIdSet deferred;  // placed by the plan, left for the next cycle
  std::vector<const Placement*> bound;
  bound.reserve(plan.placements.size());
  const int64_t limit = options_.max_binds_per_cycle;
  for (const Placement& p : plan.placements) {
    if (p.pipelined) continue;  // reserved until the releasing resources are free
    if (refused.count(p.job) > 0) {
      ++st.placements_dropped;
      continue;
    }
    if (limit > 0 && st.binds >= limit && started.count(p.job) == 0) {
      ++st.placements_deferred;
      deferred.insert(p.job);
      continue;
    }
    started.insert(p.job);
    Status s = runtime_->Bind(p.task_key, p.node);
    if (s.ok()) {
      bound.push_back(&p);
      ++st.binds;
    } else {
      ++st.bind_refusals;
      refused.insert(p.job);
      spdlog::warn("session: bind {} to {} refused, dropping the rest of job {} this cycle: {}", p.task_key,
                   p.node, p.job, s.ToString());
    }
  }
  // Binding starts now, not at the next bind tick (the status writes below take a while).
  if (st.binds > 0) runtime_->FlushBinds();
  st.commit_ms = MsSince(t);

  // ---- evict: each victim through the cache (Releasing) and the evictor
  t = std::chrono::steady_clock::now();
  for (const Eviction& e : evictions.evictions) {
    Status s = runtime_->Evict(e.task_key, e.reason);
    if (s.ok()) {
      ++st.evictions;
      ++(e.preempt ? st.evictions_preempt : st.evictions_reclaim);
    } else {
      ++st.eviction_refusals;
      spdlog::warn("session: evict {} for job {} refused: {}", e.task_key, e.for_job, s.ToString());
    }
  }
  st.evict_ms += MsSince(t);

  // ---- close: the snapshot becomes the session's view of the outcome (the next
  // UpdateSnapshot discards these edits).
  t = std::chrono::steady_clock::now();
  std::unordered_set<JobId> scheduled;
  for (const Placement* p : bound) {
    if (JobInfo* job = snap.MutableJob(p->job)) {
      if (job->UpdateTaskStatus(p->task_uid, TaskStatus::kAllocated).ok()) scheduled.insert(p->job);
    }
  }
  st.jobs_scheduled = static_cast<int64_t>(scheduled.size());
  // The fit errors stay beside the jobs (no copy of every tried job to record them); the
  // outcomes and close_memo_ are sorted by job uid, as `jobs` is, so they are found by walking
  // them beside it.
  size_t next_outcome = 0;
  size_t next_memo = 0;
  current_jobs();
  std::map<std::string, Resource> queue_allocated;
  std::vector<CloseMemo> memo;  // becomes close_memo_: the jobs of this session
  memo.reserve(close_memo_.size());
  const TaskFitErrors no_fit_errors;
  for (size_t position = 0; position < jobs.size(); ++position) {
    const JobInfo* job = jobs[position];
    const JobOutcome* outcome = nullptr;
    if (next_outcome < plan.jobs.size() && outcome_positions[next_outcome] == position) {
      outcome = &plan.jobs[next_outcome++];
    }
    if (!job->pod_group()) continue;
    const std::string_view phase = NextPhase(*job);
    const bool was_tried =
        (outcome != nullptr && !deferred.contains(job->uid())) || enqueued_now.contains(job->uid());
    const bool unschedulable = was_tried && !job->IsReady();
    const bool write_status = was_tried || phase != job->pod_group_phase();
    const TaskFitErrors& fit_errors = outcome != nullptr ? outcome->task_fit_errors : no_fit_errors;
    if (unschedulable) ++st.jobs_unschedulable;
    while (next_memo < close_memo_.size() && close_memo_[next_memo].job < job->uid()) ++next_memo;
    CloseMemo* last = nullptr;
    if (next_memo < close_memo_.size() && close_memo_[next_memo].job == job->uid()) {
      last = &close_memo_[next_memo++];
    }
    // Only the cache's own version of a job (not a copy this session changed) can repeat.
    const bool cache_version = !snap.ChangedBySession(job->uid());
    if (cache_version && last != nullptr && last->generation == job->generation() && last->phase == phase &&
        last->write_status == write_status && last->unschedulable == unschedulable &&
        last->fit_errors == fit_errors) {
      if (unschedulable) runtime_->RepeatJobStatusEvent(*job, last->fit_error);
      memo.push_back(std::move(*last));
    } else {
      std::string fit_error =
          runtime_->CloseJob(*job, std::string(phase), write_status, unschedulable, &fit_errors);
      if (cache_version && (write_status || unschedulable)) {
        memo.push_back(CloseMemo{job->uid(), job->generation(), std::string(phase), fit_errors, write_status,
                                 unschedulable, std::move(fit_error)});
      }
    }
    const std::string& q = snap.queues.count(job->queue()) ? job->queue() : options_.session.default_queue;
    queue_allocated[q].Add(job->allocated());
  }
  close_memo_ = std::move(memo);
  // Jobs the snapshot left out (no PodGroup, or its queue missing) are never tried: say why.
  runtime_->RecordLeftOutJobEvents();
  std::vector<std::string> queue_names;
  for (const auto& [name, q] : snap.queues) queue_names.push_back(name);
  std::sort(queue_names.begin(), queue_names.end());
  for (const std::string& name : queue_names) {
    QueueInfo q = snap.queues.at(name);
    auto it = queue_allocated.find(name);
    q.allocated = it == queue_allocated.end() ? Resource() : it->second;
    q.allocated.RemoveScalar(ResourceNames::kPods);
    runtime_->UpdateQueueStatus(q);
  }
  st.close_ms = MsSince(t);

  last_plan_ = std::move(plan);
  last_evictions_ = std::move(evictions);
  st.total_ms = MsSince(cycle_start);
  last_stats_ = st;
  if (observer_) observer_(st);
  return st;
}

std::string ActionsName(const SchedulerOptions& o) {
  std::string out = o.enqueue ? "enqueue, allocate" : "allocate";
  if (o.reclaim) out += ", reclaim";
  if (o.preempt) out += ", preempt";
  return out;
}

Status ApplyActions(std::string_view actions, SchedulerOptions* options) {
  bool enqueue = false, allocate = false, reclaim = false, preempt = false;
  if (actions.find_first_not_of(" \t") == std::string_view::npos)
    return Status::InvalidArgument("actions: must list \"allocate\"");
  size_t pos = 0;
  while (pos <= actions.size()) {
    size_t comma = actions.find(',', pos);
    if (comma == std::string_view::npos) comma = actions.size();
    std::string_view a = actions.substr(pos, comma - pos);
    while (!a.empty() && (a.front() == ' ' || a.front() == '\t')) a.remove_prefix(1);
    while (!a.empty() && (a.back() == ' ' || a.back() == '\t')) a.remove_suffix(1);
    pos = comma + 1;
    bool* flag = a == "enqueue"    ? &enqueue
                 : a == "allocate" ? &allocate
                 : a == "reclaim"  ? &reclaim
                 : a == "preempt"  ? &preempt
                                   : nullptr;
    if (a.empty()) return Status::InvalidArgument("actions: empty action in the list");
    if (flag == nullptr) {
      if (a == "backfill")
        return Status::InvalidArgument(
            "actions: action \"backfill\" is not implemented by the reference session (best-effort pods are "
            "not placed by a separate pass)");
      if (a == "shuffle")
        return Status::InvalidArgument(
            "actions: action \"shuffle\" is not implemented by the reference session");
      return Status::InvalidArgument(
          fmt::format("actions: unknown action \"{}\" (supported: enqueue, allocate, reclaim, preempt)", a));
    }
    if (*flag) return Status::InvalidArgument(fmt::format("actions: action \"{}\" given twice", a));
    *flag = true;
  }
  if (!allocate) return Status::InvalidArgument("actions: must list \"allocate\"");
  options->enqueue = enqueue;
  options->reclaim = reclaim;
  options->preempt = preempt;
  options->session.pipeline = reclaim || preempt;
  return Status::Ok();
}

void Scheduler::Start(std::shared_ptr<Clock> clock) {
  MutexLock lock(&mu_);
  if (running_) return;
  running_ = true;
  clock_ = std::move(clock);
  timer_state_ = std::make_shared<TimerState>(this);
  next_due_ = SaturatingAdd(clock_->Now(), options_.first_cycle_delay.value_or(options_.period));
  ScheduleLocked();
}

void Scheduler::ScheduleLocked() {
  timer_ = clock_->AfterFunc(next_due_ - clock_->Now(), [state = timer_state_] {
    MutexLock lock(&state->mu);
    if (state->self != nullptr) state->self->Tick();
  });
}

void Scheduler::Tick() {
  MutexLock lock(&mu_);
  if (!running_) return;
  RunOnceLocked();
  next_due_ = std::max(SaturatingAdd(next_due_, options_.period), clock_->Now());
  ScheduleLocked();
}

void Scheduler::Stop() {
  std::shared_ptr<TimerState> state;
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    running_ = false;
    clock_->Cancel(timer_);
    state = std::move(timer_state_);
  }
  // Waits for a callback in progress; later ones find `self` cleared.
  MutexLock lock(&state->mu);
  state->self = nullptr;
}

void Scheduler::SetCycleObserver(std::function<void(const CycleStats&)> observer) {
  MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

CycleStats Scheduler::last_stats() const {
  MutexLock lock(&mu_);
  return last_stats_;
}

AllocationPlan Scheduler::last_plan() const {
  MutexLock lock(&mu_);
  return last_plan_;
}

EvictionPlan Scheduler::last_evictions() const {
  MutexLock lock(&mu_);
  return last_evictions_;
}

std::vector<QueueOutcome> Scheduler::last_queues() const {
  MutexLock lock(&mu_);
  return last_plan_.queues;
}

}  // namespace volcache
