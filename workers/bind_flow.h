#pragma once
// BindFlow: the BindFlowChannel and the bind-flow worker (SPEC §4, §5).
//
// AddBindTask pushes one BindContext per task into a bounded channel (default capacity
// 5000; a full channel blocks Push — backpressure, never a silent drop). Every `tick`
// (20 ms, on the injected Clock) the worker drains what is queued — up to the bound on
// binds in flight — into batches of `batch_size` (BATCH_BIND_NUM) and posts each batch to
// the dispatch Executor, which runs it:
//   1. PreBinderRegistry::RunPreBind per context. A context whose pre-bind fails fails
//      alone (the registry has already rolled back the pre-binders it ran).
//   2. Binder::Bind(the contexts whose pre-bind passed) -> one Status per context, in order.
//      A binder answering with the wrong number of results fails all of them (Internal).
//   3. Per context: OK -> handler->OnBindSucceeded(ctx); error ->
//      registry->RollBackAll(ctx) (only for contexts whose pre-bind ran to completion),
//      then handler->OnBindFailed(ctx, error). One failure never hides another's success.
// Every context pushed successfully gets exactly one outcome call; nothing is lost, also
// not on Stop (see there). The context is destroyed after its outcome call returns, so the
// handler may move data out of it.
//
// Owns: the queued contexts and the batches in flight. Borrows the clock, binder, registry,
// handler and dispatch executor: they must outlive the BindFlow (or its Stop()).
// Thread-safety: every method is safe for concurrent use. Internally one mutex guards the
// channel and counters; the binder, pre-binders, handler and observer are never called with
// it held. Outcome calls for different batches may run concurrently when `dispatch` is a
// thread pool (pass a strand to serialize them). The handler, binder, pre-binders and
// observer may Push/TryPush, but must not call Stop() or destroy the BindFlow (VC_CHECK for
// Stop: it would wait for its own batch).
// Lock order: BindFlow -> Clock (AfterFunc/Cancel under the BindFlow lock; the clock never
// calls back with its own lock held).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "api/status.h"
#include "binder/binder.h"
#include "workers/clock.h"
#include "workers/executor.h"

namespace volcache {

// Implemented by the cache runtime: turns bind outcomes into cache transitions
// (FinishBinding / resync). Called on the dispatch executor, without any BindFlow lock held.
class BindOutcomeHandler {
 public:
  virtual ~BindOutcomeHandler() = default;
  virtual void OnBindSucceeded(BindContext& ctx) = 0;
  // `error` is the pre-bind error, the binder's per-task error, Internal for a binder that
  // broke its contract, or Cancelled for a context handed back by Stop(drain=false).
  virtual void OnBindFailed(BindContext& ctx, const Status& error) = 0;
};

struct BindFlowOptions {
  size_t channel_capacity = 5000;                 // >= 1
  size_t batch_size = 1;                          // BATCH_BIND_NUM, >= 1 (Volcano's default 1)
  Duration tick = std::chrono::milliseconds(20);  // > 0
  size_t max_concurrent_binds = 256;              // contexts in flight, >= 1
};

// InvalidArgument naming the offending field when an option is out of range.
Status ValidateBindFlowOptions(const BindFlowOptions& options);

class BindFlow {
 public:
  struct Stats {
    uint64_t pushed = 0;      // contexts accepted by Push/TryPush
    uint64_t dispatched = 0;  // contexts handed to `dispatch` in a batch
    uint64_t succeeded = 0;   // OnBindSucceeded calls
    uint64_t failed = 0;      // OnBindFailed calls (including cancelled)
    uint64_t cancelled = 0;   // of which handed back with Cancelled by Stop(drain=false)
    uint64_t batches = 0;     // batches handed to `dispatch`
    size_t queued = 0;        // in the channel now
    size_t in_flight = 0;     // dispatched, outcome not yet handled
  };
  // Invariant: pushed == succeeded + failed + queued + in_flight.

  // `options` must validate (VC_CHECK); `clock`, `binder`, `handler` and `dispatch` must be
  // non-null; `pre_binders` may be null (no pre-bind hooks).
  BindFlow(BindFlowOptions options, std::shared_ptr<Clock> clock, Binder* binder,
           const PreBinderRegistry* pre_binders, BindOutcomeHandler* handler, Executor* dispatch);
  // Stop(/*drain=*/false) unless stopped already.
  ~BindFlow();
  BindFlow(const BindFlow&) = delete;
  BindFlow& operator=(const BindFlow&) = delete;

  // Queues `ctx`, blocking while the channel is full. OK once queued. Cancelled if Stop()
  // has begun (also for a caller blocked here when Stop begins); InvalidArgument for a null
  // ctx. On a non-OK return the context was not queued, the handler is never called for it,
  // and the caller must undo whatever it did for the task (e.g. forget the assumed task).
  Status Push(std::unique_ptr<BindContext> ctx);
  // Non-blocking Push: true iff queued (ctx is then null). False when the channel is full or
  // Stop() has begun (see stopping()), or ctx is null; ctx is left untouched.
  bool TryPush(std::unique_ptr<BindContext>& ctx);

  // Schedules the tick: FlushOnce every `tick` on the clock, the next tick `tick` after the
  // previous one finished dispatching (Volcano's wait.Until). Only the first call does
  // anything; a no-op after Stop().
  void Start();

  // One tick, synchronously: takes the queued contexts (at most max_concurrent_binds minus
  // those in flight, oldest first), cuts them into batches of batch_size and posts each batch
  // to `dispatch`. Returns the number of contexts dispatched now. What was queued at the tick
  // but found the bound full goes out as soon as batches complete (not a tick later), so the
  // bound limits concurrency, not throughput. With an InlineExecutor the batches — and all
  // outcome calls — have run when it returns.
  size_t FlushOnce();

  // Stops the tick and refuses new contexts (blocked Push callers get Cancelled), then:
  //  - drain=true: dispatches everything queued (tick after tick as the in-flight bound
  //    allows, without waiting for the clock) and waits until no bind is in flight;
  //  - drain=false: hands every queued context back through OnBindFailed(ctx, Cancelled) on
  //    the calling thread; batches posted but not yet started are handed back the same way
  //    when they run; binds already started finish normally. Waits until none is in flight.
  // Either way every context pushed has had its outcome call when Stop returns. Idempotent;
  // a second (or concurrent) call waits for the first to finish. Must not be called from
  // the handler, binder, pre-binders or observer (VC_CHECK).
  void Stop(bool drain);

  // True once Stop() has begun.
  bool stopping() const;
  Stats stats() const;

  // Called once per batch that reached the pre-bind step, after its outcome calls: the
  // batch size and the bind latency (pre-bind start -> results handled) on the injected
  // clock. nullptr removes it. Called without the BindFlow lock, on the dispatch executor.
  void SetObserver(std::function<void(size_t batch_size, Duration latency)> observer);

 private:
  class Core;  // shared with the tick timer (weakly) and batches in flight
  std::shared_ptr<Core> core_;
};

}  // namespace volcache
