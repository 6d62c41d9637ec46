#include "workers/bind_flow.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache {

Status ValidateBindFlowOptions(const BindFlowOptions& options) {
  if (options.channel_capacity < 1) return Status::InvalidArgument("bind-flow channel_capacity must be >= 1");
  if (options.batch_size < 1) return Status::InvalidArgument("bind-flow batch_size must be >= 1");
  if (options.tick <= Duration::zero()) return Status::InvalidArgument("bind-flow tick must be > 0");
  if (options.max_concurrent_binds < 1) {
    return Status::InvalidArgument("bind-flow max_concurrent_binds must be >= 1");
  }
  return Status::Ok();
}

namespace {

using ContextList = std::vector<std::unique_ptr<BindContext>>;

// For messages: the task's key without assuming the context was filled in.
std::string Describe(const BindContext& ctx) {
  return (ctx.task.meta != nullptr ? std::string(ctx.task.key()) : std::string("<task without meta>")) +
         " to node " + (ctx.node_name.empty() ? std::string("<none>") : ctx.node_name);
}

}  // namespace

class BindFlow::Core : public std::enable_shared_from_this<Core> {
 public:
  Core(BindFlowOptions options, std::shared_ptr<Clock> clock, Binder* binder,
       const PreBinderRegistry* pre_binders, BindOutcomeHandler* handler, Executor* dispatch)
      : options_(options),
        clock_(std::move(clock)),
        binder_(binder),
        pre_binders_(pre_binders),
        handler_(handler),
        dispatch_(dispatch) {}

  Status Push(std::unique_ptr<BindContext> ctx) EXCLUDES(mu_);
  bool TryPush(std::unique_ptr<BindContext>& ctx) EXCLUDES(mu_);
  void Start() EXCLUDES(mu_);
  size_t FlushOnce() EXCLUDES(mu_);
  void Stop(bool drain) EXCLUDES(mu_);
  bool stopping() const EXCLUDES(mu_);
  Stats stats() const EXCLUDES(mu_);
  void SetObserver(std::function<void(size_t, Duration)> observer) EXCLUDES(mu_);

 private:
  // One batch handed to the dispatch executor. If the executor destroys the work without
  // running it (stopped pool), the destructor hands the contexts back as Cancelled, so even
  // then nothing is lost.
  struct Batch {
    std::shared_ptr<Core> core;
    ContextList contexts;
    bool ran = false;
    ~Batch() {
      if (!ran) core->HandBack(contexts, Status::Cancelled("bind dispatch executor dropped the batch"));
    }
  };
  enum class State { kRunning, kStopping, kStopped };

  // Marks the calling thread as running this flow's callbacks (for Stop's VC_CHECK).
  class CallbackScope {
   public:
    explicit CallbackScope(const Core* core) : previous_(current_) { current_ = core; }
    ~CallbackScope() { current_ = previous_; }
    static const Core* current() { return current_; }

   private:
    const Core* previous_;
    static thread_local const Core* current_;
  };

  std::vector<std::shared_ptr<Batch>> TakeBatchesLocked(size_t limit) REQUIRES(mu_);
  // After a batch completed: dispatches backlog into the freed room (never nested, so an
  // inline executor does not recurse).
  void Refill() EXCLUDES(mu_);
  void Dispatch(std::vector<std::shared_ptr<Batch>> batches) EXCLUDES(mu_);
  void RunBatch(Batch& batch) EXCLUDES(mu_);
  // Outcome calls for contexts counted in flight: OnBindFailed(ctx, why) for each.
  void HandBack(ContextList& contexts, const Status& why) EXCLUDES(mu_);
  void ScheduleTickLocked() REQUIRES(mu_);
  void OnTick() EXCLUDES(mu_);

  const BindFlowOptions options_;
  const std::shared_ptr<Clock> clock_;
  Binder* const binder_;
  const PreBinderRegistry* const pre_binders_;  // may be null
  BindOutcomeHandler* const handler_;
  Executor* const dispatch_;

  mutable Mutex mu_;
  CondVar not_full_;  // the channel has room, or Stop began
  CondVar progress_;  // in_flight_ or ticks_running_ went down, or Stop ended
  std::deque<std::unique_ptr<BindContext>> channel_ GUARDED_BY(mu_);  // size <= capacity
  State state_ GUARDED_BY(mu_) = State::kRunning;                     // only moves forward
  // Set by Stop(drain=false): batches that have not started hand their contexts back.
  bool abort_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  uint64_t timer_id_ GUARDED_BY(mu_) = 0;  // the pending tick, 0 if none
  int ticks_running_ GUARDED_BY(mu_) = 0;  // OnTick calls between their start and reschedule
  // Contexts taken from the channel whose outcome call has not returned yet (batches on the
  // executor, and hand-backs in progress). Dispatch keeps it <= max_concurrent_binds.
  size_t in_flight_ GUARDED_BY(mu_) = 0;
  // Contexts that were queued at the last tick but found the in-flight bound full: they go
  // out as soon as batches complete, not one tick later.
  size_t backlog_ GUARDED_BY(mu_) = 0;
  Stats counters_ GUARDED_BY(mu_);  // queued/in_flight filled in by stats()
  std::shared_ptr<const std::function<void(size_t, Duration)>> observer_ GUARDED_BY(mu_);
};

thread_local const BindFlow::Core* BindFlow::Core::CallbackScope::current_ = nullptr;

Status BindFlow::Core::Push(std::unique_ptr<BindContext> ctx) {
  if (ctx == nullptr) return Status::InvalidArgument("bind-flow Push of a null BindContext");
  MutexLock lock(&mu_);
  while (state_ == State::kRunning && channel_.size() >= options_.channel_capacity) not_full_.Wait(&mu_);
  if (state_ != State::kRunning) {
    return Status::Cancelled("bind-flow stopped; bind of " + Describe(*ctx) + " not queued");
  }
  channel_.push_back(std::move(ctx));
  ++counters_.pushed;
  return Status::Ok();
}

bool BindFlow::Core::TryPush(std::unique_ptr<BindContext>& ctx) {
  if (ctx == nullptr) return false;
  MutexLock lock(&mu_);
  if (state_ != State::kRunning || channel_.size() >= options_.channel_capacity) return false;
  channel_.push_back(std::move(ctx));
  ++counters_.pushed;
  return true;
}

void BindFlow::Core::Start() {
  MutexLock lock(&mu_);
  if (started_ || state_ != State::kRunning) return;
  started_ = true;
  ScheduleTickLocked();
}

void BindFlow::Core::ScheduleTickLocked() {
  // Weak: a pending tick must not keep the flow alive, and a tick that fires while the
  // BindFlow is being destroyed finds nothing (or a stopped flow) and returns.
  timer_id_ = clock_->AfterFunc(options_.tick, [weak = weak_from_this()] {
    if (std::shared_ptr<Core> core = weak.lock()) core->OnTick();
  });
}

void BindFlow::Core::OnTick() {
  {
    MutexLock lock(&mu_);
    timer_id_ = 0;
    if (state_ != State::kRunning) return;
    ++ticks_running_;
  }
  FlushOnce();
  {
    MutexLock lock(&mu_);
    --ticks_running_;
    if (state_ == State::kRunning) ScheduleTickLocked();
  }
  progress_.SignalAll();
}

std::vector<std::shared_ptr<BindFlow::Core::Batch>> BindFlow::Core::TakeBatchesLocked(size_t limit) {
  const size_t room =
      in_flight_ >= options_.max_concurrent_binds ? 0 : options_.max_concurrent_binds - in_flight_;
  const size_t n = std::min({room, channel_.size(), limit});
  std::vector<std::shared_ptr<Batch>> batches;
  if (n == 0) return batches;
  batches.reserve((n + options_.batch_size - 1) / options_.batch_size);
  for (size_t taken = 0; taken < n;) {
    auto batch = std::make_shared<Batch>();
    batch->core = shared_from_this();
    const size_t size = std::min(options_.batch_size, n - taken);
    batch->contexts.reserve(size);
    for (size_t i = 0; i < size; ++i) {
      batch->contexts.push_back(std::move(channel_.front()));
      channel_.pop_front();
    }
    taken += size;
    batches.push_back(std::move(batch));
  }
  in_flight_ += n;
  counters_.dispatched += n;
  counters_.batches += batches.size();
  not_full_.SignalAll();
  return batches;
}

void BindFlow::Core::Dispatch(std::vector<std::shared_ptr<Batch>> batches) {
  for (std::shared_ptr<Batch>& batch : batches) {
    dispatch_->Post([batch = std::move(batch)] { batch->core->RunBatch(*batch); });
  }
}

size_t BindFlow::Core::FlushOnce() {
  std::vector<std::shared_ptr<Batch>> batches;
  {
    MutexLock lock(&mu_);
    batches = TakeBatchesLocked(channel_.size());
    backlog_ = channel_.size();
  }
  size_t n = 0;
  for (const auto& batch : batches) n += batch->contexts.size();
  Dispatch(std::move(batches));
  return n;
}

void BindFlow::Core::RunBatch(Batch& batch) {
  batch.ran = true;
  CallbackScope scope(this);
  ContextList& contexts = batch.contexts;
  const size_t n = contexts.size();
  bool aborted;
  std::shared_ptr<const std::function<void(size_t, Duration)>> observer;
  {
    MutexLock lock(&mu_);
    aborted = abort_;
    observer = observer_;
  }
  if (aborted) {
    HandBack(contexts, Status::Cancelled("bind-flow stopped before the bind batch ran"));
    return;
  }

  const TimePoint start = clock_->Now();
  std::vector<Status> results(n);
  std::vector<bool> pre_bound(n, false);  // every pre-binder ran and succeeded
  std::vector<BindContext*> to_bind;
  std::vector<size_t> to_bind_index;
  to_bind.reserve(n);
  to_bind_index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // On failure the registry has already rolled back the pre-binders it ran.
    results[i] = pre_binders_ != nullptr ? pre_binders_->RunPreBind(*contexts[i]) : Status::Ok();
    if (!results[i].ok()) continue;
    pre_bound[i] = true;
    to_bind.push_back(contexts[i].get());
    to_bind_index.push_back(i);
  }
  if (!to_bind.empty()) {
    std::vector<Status> bound = binder_->Bind(to_bind);
    if (bound.size() != to_bind.size()) {
      const Status broken =
          Status::Internal("binder returned " + std::to_string(bound.size()) + " results for a batch of " +
                           std::to_string(to_bind.size()) + " tasks");
      for (size_t i : to_bind_index) results[i] = broken;
    } else {
      for (size_t j = 0; j < to_bind_index.size(); ++j) results[to_bind_index[j]] = std::move(bound[j]);
    }
  }

  uint64_t succeeded = 0;
  for (size_t i = 0; i < n; ++i) {
    BindContext& ctx = *contexts[i];
    if (results[i].ok()) {
      handler_->OnBindSucceeded(ctx);
      ++succeeded;
      continue;
    }
    if (pre_bound[i] && pre_binders_ != nullptr) pre_binders_->RollBackAll(ctx);
    handler_->OnBindFailed(ctx, results[i]);
  }
  const Duration latency = clock_->Now() - start;
  // Observer and context destruction happen before the batch leaves in_flight_, so once
  // Stop() has returned no callback of this flow is running or will run.
  if (observer != nullptr && *observer) (*observer)(n, latency);
  contexts.clear();
  {
    MutexLock lock(&mu_);
    in_flight_ -= n;
    counters_.succeeded += succeeded;
    counters_.failed += n - succeeded;
  }
  progress_.SignalAll();
  Refill();
}

void BindFlow::Core::Refill() {
  thread_local bool refilling = false;
  if (refilling) return;
  refilling = true;
  std::vector<std::shared_ptr<Batch>> batches;
  {
    MutexLock lock(&mu_);
    if (state_ == State::kRunning && !abort_ && backlog_ > 0) {
      batches = TakeBatchesLocked(backlog_);
      size_t taken = 0;
      for (const auto& b : batches) taken += b->contexts.size();
      backlog_ -= std::min(backlog_, taken);
    }
  }
  Dispatch(std::move(batches));
  refilling = false;
}

void BindFlow::Core::HandBack(ContextList& contexts, const Status& why) {
  CallbackScope scope(this);
  const size_t n = contexts.size();
  for (const auto& ctx : contexts) handler_->OnBindFailed(*ctx, why);
  contexts.clear();
  {
    MutexLock lock(&mu_);
    in_flight_ -= n;
    counters_.failed += n;
    counters_.cancelled += n;
  }
  progress_.SignalAll();
}

void BindFlow::Core::Stop(bool drain) {
  VC_CHECK(CallbackScope::current() != this,
           "BindFlow::Stop called from its own handler, binder, pre-binder or observer");
  {
    MutexLock lock(&mu_);
    if (state_ != State::kRunning) {
      while (state_ != State::kStopped) progress_.Wait(&mu_);
      return;
    }
    state_ = State::kStopping;
    if (timer_id_ != 0) {
      clock_->Cancel(timer_id_);  // a tick already firing sees kStopping and returns
      timer_id_ = 0;
    }
    not_full_.SignalAll();  // blocked Push callers return Cancelled
    // A tick that started before kStopping finishes its flush (it will not reschedule).
    while (ticks_running_ != 0) progress_.Wait(&mu_);

    if (!drain) {
      abort_ = true;
      ContextList queued;
      queued.reserve(channel_.size());
      for (auto& ctx : channel_) queued.push_back(std::move(ctx));
      channel_.clear();
      in_flight_ += queued.size();  // in flight until handed back: keeps stats() consistent
      MutexUnlock unlock(&mu_);
      HandBack(queued, Status::Cancelled("bind-flow stopped before the task was bound"));
    } else {
      while (!channel_.empty()) {
        if (in_flight_ < options_.max_concurrent_binds) {
          std::vector<std::shared_ptr<Batch>> batches = TakeBatchesLocked(channel_.size());
          MutexUnlock unlock(&mu_);
          Dispatch(std::move(batches));
        } else {
          while (in_flight_ >= options_.max_concurrent_binds) progress_.Wait(&mu_);
        }
      }
    }
    while (in_flight_ != 0) progress_.Wait(&mu_);
    state_ = State::kStopped;
  }
  progress_.SignalAll();
}

bool BindFlow::Core::stopping() const {
  MutexLock lock(&mu_);
  return state_ != State::kRunning;
}

BindFlow::Stats BindFlow::Core::stats() const {
  MutexLock lock(&mu_);
  Stats s = counters_;
  s.queued = channel_.size();
  s.in_flight = in_flight_;
  return s;
}

void BindFlow::Core::SetObserver(std::function<void(size_t, Duration)> observer) {
  auto shared =
      observer ? std::make_shared<const std::function<void(size_t, Duration)>>(std::move(observer)) : nullptr;
  MutexLock lock(&mu_);
  observer_ = std::move(shared);
}

BindFlow::BindFlow(BindFlowOptions options, std::shared_ptr<Clock> clock, Binder* binder,
                   const PreBinderRegistry* pre_binders, BindOutcomeHandler* handler, Executor* dispatch) {
  const Status valid = ValidateBindFlowOptions(options);
  VC_CHECK(valid.ok(), valid.ToString());
  VC_CHECK(clock != nullptr, "BindFlow needs a clock");
  VC_CHECK(binder != nullptr, "BindFlow needs a binder");
  VC_CHECK(handler != nullptr, "BindFlow needs an outcome handler");
  VC_CHECK(dispatch != nullptr, "BindFlow needs a dispatch executor");
  core_ = std::make_shared<Core>(options, std::move(clock), binder, pre_binders, handler, dispatch);
}

BindFlow::~BindFlow() { core_->Stop(/*drain=*/false); }

Status BindFlow::Push(std::unique_ptr<BindContext> ctx) { return core_->Push(std::move(ctx)); }
bool BindFlow::TryPush(std::unique_ptr<BindContext>& ctx) { return core_->TryPush(ctx); }
void BindFlow::Start() { core_->Start(); }
size_t BindFlow::FlushOnce() { return core_->FlushOnce(); }
void BindFlow::Stop(bool drain) { core_->Stop(drain); }
bool BindFlow::stopping() const { return core_->stopping(); }
BindFlow::Stats BindFlow::stats() const { return core_->stats(); }
void BindFlow::SetObserver(std::function<void(size_t batch_size, Duration latency)> observer) {
  core_->SetObserver(std::move(observer));
}

}  // namespace volcache
