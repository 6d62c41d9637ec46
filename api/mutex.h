#pragma once
// A mutex the compiler can reason about: clang's Thread Safety Analysis (-Wthread-safety)
// checks, at compile time, that every field marked GUARDED_BY(mu_) is touched only with mu_
// held, that every function marked REQUIRES(mu_) is called with it held, and that a function
// marked EXCLUDES(mu_) is not (e.g. "no I/O or plugin call under the cache lock"). The
// annotations compile to nothing under GCC. LevelDB's port::Mutex is the model.
//
//   class Counter {
//    public:
//     void Inc() EXCLUDES(mu_) { MutexLock l(&mu_); ++n_; }
//    private:
//     void IncLocked() REQUIRES(mu_) { ++n_; }
//     Mutex mu_;
//     int n_ GUARDED_BY(mu_) = 0;
//   };
//
// CondVar waits on a Mutex the caller holds (REQUIRES): Wait(&mu_) releases it while blocked
// and holds it again when it returns, as std::condition_variable does with a unique_lock.
// Predicates are written as loops at the call site, where the analysis can see the lock.
//
// SharedMutex is the reader/writer variant (std::shared_mutex): WriterMutexLock holds it
// exclusively, ReaderMutexLock shared; fields it guards are read under either
// (REQUIRES_SHARED) and written only under the writer lock (REQUIRES).
//
// Thread-safety: Mutex, SharedMutex and CondVar are as safe as the std:: types they wrap.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define VOLCACHE_TSA(x) __attribute__((x))
#else
#define VOLCACHE_TSA(x)
#endif

#define CAPABILITY(x) VOLCACHE_TSA(capability(x))
#define SCOPED_CAPABILITY VOLCACHE_TSA(scoped_lockable)
#define GUARDED_BY(x) VOLCACHE_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) VOLCACHE_TSA(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) VOLCACHE_TSA(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) VOLCACHE_TSA(acquired_after(__VA_ARGS__))
#define REQUIRES(...) VOLCACHE_TSA(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) VOLCACHE_TSA(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) VOLCACHE_TSA(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) VOLCACHE_TSA(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) VOLCACHE_TSA(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) VOLCACHE_TSA(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) VOLCACHE_TSA(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) VOLCACHE_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) VOLCACHE_TSA(assert_capability(x))
#define RETURN_CAPABILITY(x) VOLCACHE_TSA(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS VOLCACHE_TSA(no_thread_safety_analysis)

namespace volcache {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (where it cannot see it, e.g. a callback
  // documented to run under it). Checks nothing at run time.
  void AssertHeld() ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Releases a held Mutex for its scope (e.g. around I/O in the middle of a locked section).
class SCOPED_CAPABILITY MutexUnlock {
 public:
  explicit MutexUnlock(Mutex* mu) RELEASE(mu) : mu_(mu) { mu_->Unlock(); }
  ~MutexUnlock() RELEASE() { mu_->Lock(); }
  MutexUnlock(const MutexUnlock&) = delete;
  MutexUnlock& operator=(const MutexUnlock&) = delete;

 private:
  Mutex* const mu_;
};

class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() RELEASE() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` while blocked; holds it again on return (spurious wake-ups happen: wait in
  // a loop, `while (!ready_) cv_.Wait(&mu_);`).
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait; false when `deadline` passed first.
  template <class Clock, class Dur>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Dur>& deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace volcache
