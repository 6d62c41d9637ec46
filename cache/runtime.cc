#include "cache/runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <thread>
#include <variant>

#include "api/fmt.h"
#include "api/mutex.h"
#include "workers/executor.h"
#include "workers/queue_workers.h"
#include "workers/rate_limiter.h"
#include "workers/work_queue.h"

namespace volcache {

namespace {

k8s::TimeMs WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

k8s::ResourceList ToResourceList(const Resource& r) {
  k8s::ResourceList out;
  auto integer = [](int64_t v) { return *Quantity::Parse(std::to_string(v)); };
  if (r.milli_cpu() != 0) out.emplace_back("cpu", Quantity::FromMilli(r.milli_cpu()));
  if (r.memory() != 0) out.emplace_back("memory", integer(r.memory()));
  for (const auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->value == 0) continue;
    if (s->id == ResourceNames::kPods) {
      out.emplace_back("pods", integer(s->value));
    } else {
      out.emplace_back(ResourceNames::Name(s->id), Quantity::FromMilli(s->value));
    }
  }
  return out;
}

// Same condition: type, status, reason and message (the times aside).
bool SameCondition(const k8s::PodGroupCondition& a, const k8s::PodGroupCondition& b) {
  return a.type == b.type && a.status == b.status && a.reason == b.reason && a.message == b.message;
}

// Sets (or replaces) the condition of the same type; an unchanged one keeps its times.
void SetCondition(std::vector<k8s::PodGroupCondition>& conds, k8s::PodGroupCondition c) {
  for (auto& existing : conds) {
    if (existing.type != c.type) continue;
    if (!SameCondition(existing, c)) existing = std::move(c);
    return;
  }
  conds.push_back(std::move(c));
}

struct PodConditionWrite {
  k8s::PodPtr pod;
  k8s::PodCondition condition;
};
using StatusWrite = std::variant<PodConditionWrite, k8s::PodGroup, k8s::Queue>;

}  // namespace

// --------------------------------------------------------------------------- Impl

class CacheRuntime::Outcomes final : public BindOutcomeHandler {
 public:
  explicit Outcomes(CacheRuntime* rt) : rt_(rt) {}
  void OnBindSucceeded(BindContext& ctx) override;
  void OnBindFailed(BindContext& ctx, const Status& error) override;

 private:
  CacheRuntime* rt_;
};

struct CacheRuntime::Impl {
  RuntimeOptions options;
  std::shared_ptr<Clock> clock;
  const ClusterSource* source;
  Binder* binder;
  Evictor* evictor;
  StatusUpdater* status;
  EventRecorder* recorder;

  std::unique_ptr<Executor> dispatch;
  // The bind tick's clock. With a RealClock it is a RealClock of its own (its own timer
  // thread): a session running as a timer callback may block in BindFlow::Push on a full
  // channel, and the tick that drains the channel must not wait behind it (issue 11 #10).
  std::shared_ptr<Clock> bind_clock;
  std::unique_ptr<Outcomes> outcomes;
  std::unique_ptr<BindFlow> flow;
  std::unique_ptr<WorkQueue> status_queue;  // before its workers: destroyed after them
  // The status writes' token bucket (owned by the status queue's limiter): every write takes
  // a token from it, the first of an object included, not only the retries.
  BucketRateLimiter* status_bucket = nullptr;
  std::unique_ptr<QueueWorkers> node_workers, resync_workers, cleanup_workers, status_workers;
  std::unique_ptr<QueueWorkers> hypernode_workers;  // one thread: HyperNode events are rare

  // Everything above is set by the constructor (the workers and the flow are reset only by
  // the destructor, after Stop). The runtime's own bookkeeping below is guarded by mu, a leaf
  // lock: nothing else is acquired under it but a clock's (AfterFunc/Cancel), and no binder,
  // evictor, status-updater, recorder, handler or observer call is made with it held.
  mutable Mutex mu;
  // Latest desired write per object; present while the object is queued, being written or
  // waiting for a retry (so a newer write only replaces it: coalesced, one token).
  struct PendingWrite {
    uint64_t seq;  // from next_write_seq: a newer write of the object has a larger one
    StatusWrite write;
  };
  std::map<std::string, PendingWrite> pending_writes GUARDED_BY(mu);
  uint64_t next_write_seq GUARDED_BY(mu) = 0;
  std::map<std::string, Resource> written_queue_alloc GUARDED_BY(mu);  // last written queue allocated
  // job -> why it is left out, as last logged
  std::map<std::string, std::string> left_out_logged GUARDED_BY(mu);
  // The handlers and the observer are copied out and called outside mu.
  std::vector<std::shared_ptr<BindContextHandler>> handlers GUARDED_BY(mu);
  std::shared_ptr<const std::function<void(Duration, bool)>> node_sync_observer GUARDED_BY(mu);
  RuntimeCounters counters GUARDED_BY(mu);
  bool running GUARDED_BY(mu) = false;
  bool stopped GUARDED_BY(mu) = false;
  bool stopping_now GUARDED_BY(mu) = false;  // StopNow began
  uint64_t expiry_timer GUARDED_BY(mu) = 0;

  // WaitForCacheSync waits on this (its own mutex: nothing else is taken under it).
  mutable Mutex sync_mu;
  CondVar lists_applied_cv;  // signalled when lists_applied becomes true
  bool lists_applied GUARDED_BY(sync_mu) = false;

  bool ListsApplied() const EXCLUDES(sync_mu) {
    MutexLock lock(&sync_mu);
    return lists_applied;
  }

  // The event recorder: never under mu (nor the cache's lock).
  void Record(const EventRef& ref, const std::string& type, const std::string& reason, const std::string& msg)
      EXCLUDES(mu) {
    if (recorder) recorder->Event(ref, type, reason, msg);
  }

  void EnqueueWrite(const std::string& key, StatusWrite w) EXCLUDES(mu) {
    {
      MutexLock lock(&mu);
      auto [it, inserted] =
          pending_writes.insert_or_assign(key, PendingWrite{++next_write_seq, std::move(w)});
      if (!inserted) return;  // coalesced: the pending write of this object now sends the newest
    }
    QueueWithToken(key);
  }

  // Queues `key` once the status bucket grants it a token.
  void QueueWithToken(const std::string& key) EXCLUDES(mu) {
    status_queue->AddAfter(key, status_bucket->When(key));
  }

  // One status write (the latest desired state of `key`), through the status updater (I/O:
  // never under mu). Keeps it pending on failure.
  Status ProcessWrite(const std::string& key) EXCLUDES(mu) {
    StatusWrite w;
    uint64_t seq = 0;
    {
      MutexLock lock(&mu);
      auto it = pending_writes.find(key);
      if (it == pending_writes.end()) return Status::Ok();  // written by an earlier pass
      w = it->second.write;
      seq = it->second.seq;
    }
    Status s = std::visit(
        [&](auto& v) -> Status {
          using T = std::decay_t<decltype(v)>;
          if (!status) return Status::Ok();
          if constexpr (std::is_same_v<T, PodConditionWrite>) {
            return status->UpdatePodCondition(*v.pod, v.condition);
          } else if constexpr (std::is_same_v<T, k8s::PodGroup>) {
            return status->UpdatePodGroup(v);
          } else {
            return status->UpdateQueueStatus(v);
          }
        },
        w);
    bool requeue = false;
    {
      MutexLock lock(&mu);
      if (s.ok()) {
        ++counters.status_writes;
        // Done unless a newer write arrived meanwhile: that one goes next, with a token.
        auto it = pending_writes.find(key);
        if (it != pending_writes.end() && it->second.seq == seq) {
          pending_writes.erase(it);
        } else if (it != pending_writes.end()) {
          requeue = true;
        }
      } else {
        ++counters.status_write_failures;
      }
    }
    if (requeue) QueueWithToken(key);
    return s;
  }

  void DrainStatusInline() EXCLUDES(mu) {
    std::string item;
    while (status_queue->TryGet(&item)) {
      Status s = ProcessWrite(item);
      if (s.ok()) {
        status_queue->Forget(item);
      } else {
        status_queue->AddRateLimited(item);
      }
      status_queue->Done(item);
    }
  }

  void ScheduleExpiry(SchedulerCache* cache) EXCLUDES(mu) {
    if (options.cache.assumed_ttl <= Duration::zero()) return;
    MutexLock lock(&mu);
    if (stopped) return;
    expiry_timer = clock->AfterFunc(options.expiry_period, [this, cache] {
      cache->CleanupExpiredAssumed();
      ScheduleExpiry(cache);
    });
  }
};

void CacheRuntime::Outcomes::OnBindSucceeded(BindContext& ctx) {
  const std::string key(ctx.task.key());
  Status s = rt_->cache_->FinishBinding(key);
  // Not assumed any more: the watch confirmed the pod before this outcome arrived (normal
  // with a fast API server), or it was deleted meanwhile. Either way the cache follows the
  // cluster already.
  if (!s.ok()) spdlog::debug("bind of {} succeeded; {}", key, s);
  {
    MutexLock lock(&rt_->impl_->mu);
    ++rt_->impl_->counters.binds_succeeded;
  }
  rt_->impl_->Record({"Pod", ctx.task.namespace_(), ctx.task.name(), ctx.task.uid()}, "Normal", "Scheduled",
                     "Successfully assigned " + key + " to " + ctx.node_name);
}

void CacheRuntime::Outcomes::OnBindFailed(BindContext& ctx, const Status& error) {
  const std::string key(ctx.task.key());
  bool stopping;
  {
    MutexLock lock(&rt_->impl_->mu);
    stopping = rt_->impl_->stopped || rt_->impl_->stopping_now;
  }
  if (stopping && error.code() == StatusCode::kCancelled) {
    // Handed back by the stop, never attempted: nothing failed on the cluster, so no
    // warning, pod condition or event per task (thousands on a SIGTERM during a burst);
    // the task is only forgotten and the stop logs the count once.
    if (Status s = rt_->cache_->ForgetTask(key, ctx.node_name); !s.ok()) {
      spdlog::debug("forget {} after a cancelled bind: {}", key, s);
    }
    MutexLock lock(&rt_->impl_->mu);
    ++rt_->impl_->counters.binds_cancelled;
    return;
  }
  spdlog::warn("bind {} to {} failed: {}", key, ctx.node_name, error);
  Status s = rt_->cache_->ForgetTask(key, ctx.node_name);  // queues the resync
  if (!s.ok()) {
    // The watch got there first (the pod was confirmed on a node, or deleted): the cache
    // already follows the cluster. Resync anyway, so the cluster's word is final.
    spdlog::debug("forget {} after a failed bind: {}; resyncing", key, s);
    rt_->cache_->err_tasks().Add(key);
  }
  {
    MutexLock lock(&rt_->impl_->mu);
    ++rt_->impl_->counters.binds_failed;
  }
  if (ctx.task.meta && ctx.task.meta->pod) {
    k8s::PodCondition cond{"PodScheduled", "False", "SchedulerError", error.message(), WallMs()};
    rt_->impl_->EnqueueWrite("pod/" + key, PodConditionWrite{ctx.task.meta->pod, cond});
  }
  rt_->impl_->Record({"Pod", ctx.task.namespace_(), ctx.task.name(), ctx.task.uid()}, "Warning",
                     "FailedScheduling", error.message());
}

// ------------------------------------------------------------------------ lifecycle

CacheRuntime::CacheRuntime(RuntimeOptions options, std::shared_ptr<Clock> clock, const ClusterSource* source,
                           Binder* binder, Evictor* evictor, StatusUpdater* status, EventRecorder* recorder)
    : impl_(std::make_unique<Impl>()) {
  // spdlog's registry is a function-local static inside libspdlog: build it here, on the
  // constructing thread, before the runtime's threads log. (ThreadSanitizer cannot see the
  // uninstrumented library's initialization guard and reported two bind-flow threads
  // logging their first warnings at once as a race on its construction.)
  spdlog::default_logger_raw();
  Impl& m = *impl_;
  m.options = options;
  m.clock = clock;
  m.source = source;
  m.binder = binder;
  m.evictor = evictor;
  m.status = status;
  m.recorder = recorder;
  cache_ = std::make_unique<SchedulerCache>(options.cache, clock, source);
  cache_->EnsureDefaultQueues();
  if (options.inline_execution) {
    m.dispatch = std::make_unique<InlineExecutor>();
  } else {
    m.dispatch = std::make_unique<ThreadPoolExecutor>(std::max(1, options.dispatch_threads));
  }
  m.outcomes = std::make_unique<Outcomes>(this);
  m.bind_clock = clock;
  if (!options.inline_execution && std::dynamic_pointer_cast<RealClock>(clock) != nullptr) {
    m.bind_clock = std::make_shared<RealClock>();
  }
  m.flow = std::make_unique<BindFlow>(options.bind_flow, m.bind_clock, binder, &pre_binders_,
                                      m.outcomes.get(), m.dispatch.get());
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(
      std::make_unique<ItemExponentialFailureRateLimiter>(kDefaultRetryBaseDelay, kDefaultRetryMaxDelay));
  auto bucket = std::make_unique<BucketRateLimiter>(options.status_qps, options.status_burst, clock);
  m.status_bucket = bucket.get();
  limiters.push_back(std::move(bucket));
  m.status_queue =
      std::make_unique<WorkQueue>("status", clock, std::make_unique<MaxOfRateLimiter>(std::move(limiters)));

  SchedulerCache* cache = cache_.get();
  auto always = [](const std::string&, const Status&) { return true; };
  m.node_workers = std::make_unique<QueueWorkers>(
      &cache->node_queue(), options.node_worker_threads,
      [this, cache](const std::string& n) {
        const TimePoint start = impl_->clock->Now();
        Status s = cache->SyncNode(n);
        std::shared_ptr<const std::function<void(Duration, bool)>> observer;
        {
          MutexLock lock(&impl_->mu);
          observer = impl_->node_sync_observer;
        }
        if (observer) (*observer)(impl_->clock->Now() - start, s.ok());
        return s;
      },
      always);
  m.resync_workers = std::make_unique<QueueWorkers>(
      &cache->err_tasks(), options.resync_worker_threads,
      [cache](const std::string& k) { return cache->ResyncTask(k); },
      // Dropped only once the task has left the cache.
      [cache](const std::string& k, const Status&) { return cache->HasTask(k); });
  m.hypernode_workers = std::make_unique<QueueWorkers>(
      &cache->hypernode_queue(), 1, [cache](const std::string& n) { return cache->SyncHyperNode(n); },
      always);
  m.cleanup_workers = std::make_unique<QueueWorkers>(
      &cache->deleted_jobs(), 1, [cache](const std::string& k) { return cache->CleanupJob(k); }, always);
  m.status_workers = std::make_unique<QueueWorkers>(
      m.status_queue.get(), options.status_worker_threads,
      [this](const std::string& k) { return impl_->ProcessWrite(k); }, always);
}

CacheRuntime::~CacheRuntime() {
  Stop();
  // The workers watch the cache's queues and the status queue: they go first.
  impl_->flow.reset();
  impl_->status_workers.reset();
  impl_->cleanup_workers.reset();
  impl_->hypernode_workers.reset();
  impl_->resync_workers.reset();
  impl_->node_workers.reset();
  impl_->dispatch.reset();
  impl_.reset();
}

void CacheRuntime::Run() {
  {
    MutexLock lock(&impl_->mu);
    if (impl_->running || impl_->stopped) return;
    impl_->running = true;
  }
  if (!impl_->options.inline_execution) {
    impl_->node_workers->Start();
    impl_->resync_workers->Start();
    impl_->cleanup_workers->Start();
    impl_->hypernode_workers->Start();
    impl_->status_workers->Start();
  }
  impl_->flow->Start();
  impl_->ScheduleExpiry(cache_.get());
}

void CacheRuntime::MarkInitialListsApplied() {
  {
    MutexLock lock(&impl_->sync_mu);
    impl_->lists_applied = true;
  }
  impl_->lists_applied_cv.SignalAll();
}

bool CacheRuntime::synced() const {
  if (!impl_->ListsApplied()) return false;
  WorkQueueStats st = cache_->node_queue().Stats();
  return st.depth == 0 && st.processing == 0;
}

Status CacheRuntime::WaitForCacheSync(Duration timeout) {
  // The timeout is real time (the contract): a FakeClock nobody advances must not make the
  // wait endless. The waits below are on conditions, never on a polling period.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Read before the check: a node sync finishing after it ends the wait below at once.
    const uint64_t processed = impl_->node_workers->stats().processed;
    if (impl_->options.inline_execution) cache_->DrainQueuesOnce();
    const bool lists_applied = impl_->ListsApplied();
    if (synced()) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded("cache not synced: initial lists or node syncs still pending");
    }
    if (!lists_applied) {
      // Until the feeder says the initial lists are in (MarkInitialListsApplied signals).
      MutexLock lock(&impl_->sync_mu);
      while (!impl_->lists_applied) {
        if (!impl_->lists_applied_cv.WaitUntil(&impl_->sync_mu, deadline)) break;
      }
    } else if (impl_->options.inline_execution) {
      // Node events queued by another thread since the drain above (nothing here syncs them
      // but this caller): drain again.
      std::this_thread::yield();
    } else {
      // Node syncs queued or running: the node workers signal each one they finish.
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      impl_->node_workers->WaitForProcessed(processed + 1, std::max(left, std::chrono::milliseconds(0)));
    }
  }
}

void CacheRuntime::Stop() {
  uint64_t timer = 0;
  {
    MutexLock lock(&impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
    timer = impl_->expiry_timer;
  }
  if (timer) impl_->clock->Cancel(timer);
  // Binds first: everything queued is dispatched and every bind in flight finishes, so its
  // outcome (finish or forget + resync) is applied while the workers still run.
  impl_->flow->Stop(/*drain=*/true);
  impl_->status_workers->Stop();
  impl_->cleanup_workers->Stop();
  impl_->hypernode_workers->Stop();
  impl_->resync_workers->Stop();
  impl_->node_workers->Stop();
  if (auto* pool = dynamic_cast<ThreadPoolExecutor*>(impl_->dispatch.get())) pool->Stop();
}

void CacheRuntime::StopNow() {
  {
    MutexLock lock(&impl_->mu);
    if (impl_->stopped) return;
    impl_->stopping_now = true;  // a hand-back is a quiet forget from here on
  }
  impl_->flow->Stop(/*drain=*/false);  // queued binds handed back (forgotten); in flight finish
  uint64_t cancelled;
  {
    MutexLock lock(&impl_->mu);
    cancelled = impl_->counters.binds_cancelled;
  }
  if (cancelled > 0) spdlog::info("stop: {} queued binds not attempted (tasks forgotten)", cancelled);
  Stop();
}

void CacheRuntime::FlushBinds() {
  if (impl_->options.inline_execution) return;
  impl_->flow->FlushOnce();
}

// ------------------------------------------------------------------------ decisions

Status CacheRuntime::AddBindTask(std::unique_ptr<BindContext> ctx) {
  const std::string key(ctx->task.key());
  const std::string node = ctx->node_name;
  {
    MutexLock lock(&impl_->mu);
    if (impl_->stopped) return Status::Cancelled("bind " + key + ": the cache is stopping");
  }
  VC_RETURN_IF_ERROR(cache_->AddBindTask(key, node));
  // The channel push happens without the cache lock: a full channel blocks this caller
  // (backpressure) while the bind-flow worker keeps draining it.
  Status s;
  if (impl_->options.inline_execution) {
    // Nothing but this thread drains the channel here: a full channel is flushed inline (the
    // binds run now, as an early tick would) instead of blocking forever.
    while (!impl_->flow->TryPush(ctx)) {
      if (impl_->flow->stopping()) {
        s = Status::Cancelled("bind " + key + ": the cache is stopping");
        break;
      }
      impl_->flow->FlushOnce();
    }
  } else {
    s = impl_->flow->Push(std::move(ctx));
  }
  if (!s.ok()) {
    Status f = cache_->ForgetTask(key, node);
    if (!f.ok()) spdlog::warn("forget {} after a refused push: {}", key, f);
    return s;
  }
  return Status::Ok();
}

void CacheRuntime::RegisterBindContextHandler(std::shared_ptr<BindContextHandler> handler) {
  MutexLock lock(&impl_->mu);
  impl_->handlers.push_back(std::move(handler));
}

Status CacheRuntime::Bind(const std::string& task_key, const std::string& node, const void* session_state) {
  auto task = cache_->GetTask(task_key);
  if (!task.ok()) return task.status();
  auto ctx = std::make_unique<BindContext>();
  ctx->task = std::move(*task);
  ctx->node_name = node;
  std::vector<std::shared_ptr<BindContextHandler>> handlers;
  {
    MutexLock lock(&impl_->mu);
    handlers = impl_->handlers;
  }
  for (const auto& h : handlers) {
    VC_RETURN_IF_ERROR(h->SetupBindContextExtension(session_state, *ctx)
                           .WithPrefix("bind " + task_key + ": " + std::string(h->Name())));
  }
  return AddBindTask(std::move(ctx));
}

Status CacheRuntime::Evict(const std::string& task_key, const std::string& reason) {
  VC_RETURN_IF_ERROR(cache_->Evict(task_key, reason));
  for (EvictionRequest& req : cache_->TakeEvictionRequests()) {
    auto shared = std::make_shared<EvictionRequest>(std::move(req));
    impl_->dispatch->Post([this, shared] {
      const TaskInfo& t = shared->task;
      Status s = impl_->evictor ? impl_->evictor->Evict(t.pod(), shared->reason) : Status::Ok();
      if (!s.ok()) {
        spdlog::warn("evict {}: {}; resyncing", t.key(), s);
        cache_->err_tasks().Add(std::string(t.key()));
      }
      {
        // Counted once handled: a failure's resync is queued before the count shows it, so a
        // caller that waits for the count and then for errTasks to drain sees the resync.
        MutexLock lock(&impl_->mu);
        ++(s.ok() ? impl_->counters.evictions_ok : impl_->counters.evictions_failed);
      }
      if (!s.ok()) return;
      const std::string_view job = t.job();
      auto slash = job.find('/');
      impl_->Record({"PodGroup", t.namespace_(),
                     std::string(slash == std::string::npos ? job : job.substr(slash + 1)), ""},
                    "Normal", "Evict", shared->reason);
    });
  }
  return Status::Ok();
}

void CacheRuntime::UpdateJobStatus(const JobInfo& job, const std::string& phase) {
  CloseJob(job, phase, /*write_status=*/true, /*record_event=*/false, nullptr);
}

std::string CacheRuntime::CloseJob(const JobInfo& job, const std::string& phase, bool write_status,
                                   bool record_event, const TaskFitErrors* fit_errors) {
  if (!job.pod_group() || (!write_status && !record_event)) return std::string();
  // Computed once, for a job left not ready.
  const std::string fit_error = job.IsReady() ? std::string() : job.FitError(fit_errors);
  if (write_status) WriteJobStatus(job, phase, fit_error);
  if (record_event) RecordJobStatus(job, fit_error, fit_errors, /*pods=*/true);
  return fit_error;
}

void CacheRuntime::RepeatJobStatusEvent(const JobInfo& job, const std::string& fit_error) {
  RecordJobStatus(job, fit_error, nullptr, /*pods=*/false);
}

void CacheRuntime::WriteJobStatus(const JobInfo& job, const std::string& phase,
                                  const std::string& fit_error) {
  // Compared before anything is copied: most sessions change nothing of most jobs.
  auto count = [&](TaskStatus s) { return static_cast<int32_t>(job.CountWithStatus(s)); };
  const int32_t running = count(TaskStatus::kRunning), succeeded = count(TaskStatus::kSucceeded),
                failed = count(TaskStatus::kFailed);
  k8s::PodGroupCondition cond;
  if (job.IsReady()) {
    cond = {"Scheduled", "True", "", WallMs(), "tasks in gang are ready to be scheduled", ""};
  } else {
    int32_t pending = count(TaskStatus::kPending);
    cond = {"Unschedulable",
            "True",
            "",
            WallMs(),
            "NotEnoughResources",
            std::to_string(pending) + "/" + std::to_string(job.tasks().size()) +
                " tasks in gang unschedulable: " + fit_error};
  }
  auto holds = [&](const k8s::PodGroupStatus& st) {
    return st.phase == phase && st.running == running && st.succeeded == succeeded && st.failed == failed &&
           std::any_of(st.conditions.begin(), st.conditions.end(),
                       [&](const k8s::PodGroupCondition& c) { return SameCondition(c, cond); });
  };
  if (holds(job.pod_group()->status)) return;
  std::string key = "podgroup/" + job.uid();
  {
    // Not written yet, but already on its way (the watch has not brought it back into the
    // cache): nothing to add. A deep backlog would otherwise copy and queue every PodGroup
    // every session.
    MutexLock lock(&impl_->mu);
    auto it = impl_->pending_writes.find(key);
    if (it != impl_->pending_writes.end()) {
      const auto* pending = std::get_if<k8s::PodGroup>(&it->second.write);
      if (pending != nullptr && holds(pending->status)) return;
    }
  }
  k8s::PodGroup pg = job.PodGroupObject();
  pg.status.phase = phase;
  pg.status.running = running;
  pg.status.succeeded = succeeded;
  pg.status.failed = failed;
  SetCondition(pg.status.conditions.mut(), std::move(cond));
  impl_->EnqueueWrite(key, std::move(pg));
}

void CacheRuntime::UpdateQueueStatus(const QueueInfo& queue) {
  if (!queue.queue) return;  // volcache's own default queues exist in the cluster only once created
  {
    MutexLock lock(&impl_->mu);
    auto it = impl_->written_queue_alloc.find(queue.name);
    if (it != impl_->written_queue_alloc.end() && it->second == queue.allocated) return;
    impl_->written_queue_alloc[queue.name] = queue.allocated;
  }
  k8s::Queue q = *queue.queue;
  q.status.allocated = ToResourceList(queue.allocated);
  impl_->EnqueueWrite("queue/" + queue.name, std::move(q));
}

void CacheRuntime::RecordJobStatusEvent(const JobInfo& job) {
  RecordJobStatus(job, job.IsReady() ? std::string() : job.FitError(), nullptr, /*pods=*/true);
}

void CacheRuntime::RecordJobStatus(const JobInfo& job, const std::string& fit_error,
                                   const TaskFitErrors* fit_errors, bool pods) {
  EventRef ref{"PodGroup", job.namespace_(), std::string(job.name()),
               job.pod_group() ? job.pod_group()->metadata.uid : ""};
  if (job.IsReady()) {
    impl_->Record(ref, "Normal", "Scheduled", "pod group is ready");
    return;
  }
  // Volcano's text; the recorder makes the repeats of one session after another a count.
  impl_->Record(ref, "Warning", "Unschedulable",
                fmt::format("{}/{} tasks in gang unschedulable: {}",
                            job.CountWithStatus(TaskStatus::kPending), job.tasks().size(), fit_error));
  if (!pods) return;
  // Volcano's taskUnschedulable: every task still Pending (or Allocated, not bound) gets
  // PodScheduled=False/Unschedulable with its own fit error when the session recorded one
  // (the task that fit no node: "0/N nodes are available: ..."), else the gang's message —
  // written, with a FailedScheduling event on the pod, only when the pod's own condition
  // says something else (not every session: the watch brings the written condition back
  // into the cached pod).
  for (TaskStatus status : {TaskStatus::kAllocated, TaskStatus::kPending}) {
    for (const TaskInfo* t : job.TasksWithStatus(status)) {
      if (!t->meta || !t->meta->pod) continue;
      const k8s::Pod& pod = *t->meta->pod;
      const std::string* own = job.TaskFitError(t->uid(), fit_errors);
      const std::string& message = own != nullptr ? *own : fit_error;
      auto cur = std::find_if(pod.status.conditions.begin(), pod.status.conditions.end(),
                              [](const k8s::PodCondition& c) { return c.type == "PodScheduled"; });
      // Compared before anything is built: most sessions find the condition already written.
      const bool no_transition = cur != pod.status.conditions.end() && cur->status == "False";
      if (no_transition && cur->reason == "Unschedulable" && cur->message == message) continue;
      k8s::PodCondition cond{"PodScheduled", "False", "Unschedulable", message, WallMs()};
      if (no_transition && cur->last_transition_time != 0) {
        cond.last_transition_time = cur->last_transition_time;  // no transition: reason/message only
      }
      impl_->Record({"Pod", t->namespace_(), t->name(), t->uid()}, "Warning", "FailedScheduling", message);
      impl_->EnqueueWrite("pod/" + std::string(t->key()), PodConditionWrite{t->meta->pod, std::move(cond)});
    }
  }
}

void CacheRuntime::RecordLeftOutJobEvents() {
  std::map<std::string, std::string> now_left_out;
  std::vector<std::string> to_log;
  const auto jobs = cache_->JobsLeftOutOfSnapshots();  // copied out: no cache lock held below
  for (const auto& job : jobs) {
    const std::string msg = job.has_pod_group
                                ? fmt::format("queue {} of pod group {} not found", job.queue, job.job)
                                : fmt::format("pod group {} not found", job.job);
    now_left_out[job.job] = msg;
    if (!impl_->recorder) continue;
    for (const auto& meta : job.pending) {
      impl_->Record({"Pod", meta->namespace_(), meta->name(), meta->uid()}, "Warning", "FailedScheduling",
                    msg);
    }
  }
  {
    // The log names each left-out job once (again only if the reason changes), not every session.
    MutexLock lock(&impl_->mu);
    for (const auto& [job, msg] : now_left_out) {
      auto [it, inserted] = impl_->left_out_logged.try_emplace(job, msg);
      if (inserted || it->second != msg)
        to_log.push_back(fmt::format("job {} is not scheduled: {}", job, msg));
      it->second = msg;
    }
    std::erase_if(impl_->left_out_logged, [&](const auto& e) { return !now_left_out.count(e.first); });
  }
  for (const auto& line : to_log) spdlog::warn("{}", line);
}

void CacheRuntime::RunDueWorkInline() {
  cache_->DrainQueuesOnce();
  impl_->DrainStatusInline();
  cache_->DrainQueuesOnce();
}

RuntimeCounters CacheRuntime::counters() const {
  MutexLock lock(&impl_->mu);
  return impl_->counters;
}

BindFlow::Stats CacheRuntime::bind_flow_stats() const { return impl_->flow->stats(); }

void CacheRuntime::SetBindObserver(std::function<void(size_t, Duration)> observer) {
  if (impl_ && impl_->flow) impl_->flow->SetObserver(std::move(observer));
}

void CacheRuntime::SetNodeSyncObserver(std::function<void(Duration, bool)> observer) {
  auto shared =
      observer ? std::make_shared<const std::function<void(Duration, bool)>>(std::move(observer)) : nullptr;
  MutexLock lock(&impl_->mu);
  impl_->node_sync_observer = std::move(shared);
}

WorkQueueStats CacheRuntime::status_queue_stats() const { return impl_->status_queue->Stats(); }

}  // namespace volcache
