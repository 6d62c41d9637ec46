#pragma once
// Executor: where background work runs. Components that hand work off (the bind-flow
// worker's batches, evictions, status updates) take an Executor* in their constructor, so
// production code passes a ThreadPoolExecutor (or a strand of one) and tests pass an
// InlineExecutor that runs everything on the caller's thread, deterministically.
//
// Contract of Post(fn): `fn` runs at most once, on a thread the executor chooses; it must
// not throw. An executor that has stopped accepting work destroys `fn` without running it
// (before Post returns); callers that must never lose work keep it in an object whose
// destructor handles the "destroyed unrun" case (as BindFlow does) or use
// ThreadPoolExecutor::TryPost, which says whether `fn` was accepted.
//
// Thread-safety: every executor here is safe for concurrent use; Post may be called from
// any thread, including from work running on the same executor.

#include <functional>
#include <memory>

namespace volcache {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Post(std::function<void()> fn) = 0;
};

// Runs `fn` immediately on the calling thread, before Post returns (nested Posts run
// nested). For tests and the replay engine: with a FakeClock this makes background work
// fully deterministic. Never stops.
class InlineExecutor final : public Executor {
 public:
  void Post(std::function<void()> fn) override;
};

// A fixed pool of threads (boost::asio::thread_pool). Work posted before Stop() always
// runs; Stop() waits for it, then joins the threads.
class ThreadPoolExecutor final : public Executor {
 public:
  // threads >= 1 (VC_CHECK).
  explicit ThreadPoolExecutor(int threads);
  // Stop().
  ~ThreadPoolExecutor() override;
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  // TryPost, ignoring the answer: after Stop() `fn` is destroyed unrun.
  void Post(std::function<void()> fn) override;
  // True iff `fn` was accepted (it will run). False after Stop() (or once Stop() has begun):
  // `fn` has been destroyed without running, on the calling thread.
  bool TryPost(std::function<void()> fn);

  // Stops accepting work, runs everything already accepted (including work that accepted
  // work posts to this pool or its strands before Stop() began), then joins the threads.
  // Idempotent; concurrent callers all return once the threads are joined. Must not be
  // called from one of the pool's own threads (VC_CHECK: it would wait for itself).
  void Stop();
  bool stopped() const;

  // An Executor that runs the work posted to it one at a time, in posting order, on this
  // pool's threads (an asio strand): work on one strand never overlaps. Independent strands
  // run concurrently. The strand follows the pool's Stop(): afterwards its Post destroys
  // `fn` unrun. It may outlive the ThreadPoolExecutor (it then only ever drops work).
  std::unique_ptr<Executor> MakeStrand();

  int threads() const { return threads_; }

 private:
  struct State;  // shared with strands so they stay valid after the pool object is gone
  const int threads_;
  std::shared_ptr<State> state_;
};

}  // namespace volcache
