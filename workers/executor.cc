#include "workers/executor.h"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <string>
#include <utility>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache {

void InlineExecutor::Post(std::function<void()> fn) {
  if (fn) fn();
}

struct ThreadPoolExecutor::State {
  explicit State(int threads) : pool(static_cast<std::size_t>(threads)) {}

  boost::asio::thread_pool pool;
  // Shared by posters, exclusive for Stop: once `stopped` is set no new work reaches the
  // pool, so the join in Stop() waits for a finite amount of work.
  SharedMutex mu;
  bool stopped GUARDED_BY(mu) = false;
  Mutex join_mu;  // serializes pool.join() (asio's join is not re-entrant); never held with mu

  // Posts `fn` to `ex` unless stopped. A dropped `fn` is destroyed after the lock is
  // released, so its destructor may post again (it will be dropped too).
  template <typename Ex>
  bool PostTo(const Ex& ex, std::function<void()>& fn) EXCLUDES(mu) {
    {
      ReaderMutexLock lock(&mu);
      if (!stopped) {
        boost::asio::post(ex, std::move(fn));
        return true;
      }
    }
    fn = nullptr;
    return false;
  }
};

ThreadPoolExecutor::ThreadPoolExecutor(int threads) : threads_(threads) {
  VC_CHECK(threads >= 1, "ThreadPoolExecutor needs at least one thread, got " + std::to_string(threads));
  state_ = std::make_shared<State>(threads);
}

ThreadPoolExecutor::~ThreadPoolExecutor() { Stop(); }

void ThreadPoolExecutor::Post(std::function<void()> fn) { TryPost(std::move(fn)); }

bool ThreadPoolExecutor::TryPost(std::function<void()> fn) {
  if (!fn) return true;  // nothing to run; nothing lost
  return state_->PostTo(state_->pool.get_executor(), fn);
}

void ThreadPoolExecutor::Stop() {
  VC_CHECK(!state_->pool.get_executor().running_in_this_thread(),
           "ThreadPoolExecutor::Stop called from one of its own threads");
  {
    WriterMutexLock lock(&state_->mu);
    state_->stopped = true;
  }
  // join() without stop(): the threads exit once the accepted work has run.
  MutexLock join_lock(&state_->join_mu);
  state_->pool.join();
}

bool ThreadPoolExecutor::stopped() const {
  ReaderMutexLock lock(&state_->mu);
  return state_->stopped;
}

std::unique_ptr<Executor> ThreadPoolExecutor::MakeStrand() {
  // A local class has the member function's access to State.
  class StrandExecutor final : public Executor {
   public:
    explicit StrandExecutor(std::shared_ptr<State> state)
        : state_(std::move(state)), strand_(boost::asio::make_strand(state_->pool.get_executor())) {}
    void Post(std::function<void()> fn) override {
      if (fn) state_->PostTo(strand_, fn);
    }

   private:
    std::shared_ptr<State> state_;  // keeps the pool the strand refers to alive
    boost::asio::strand<boost::asio::thread_pool::executor_type> strand_;
  };
  return std::make_unique<StrandExecutor>(state_);
}

}  // namespace volcache
