#pragma once
// Reclaimer: frees superseded immutable versions (NodeInfo, JobInfo) on a background thread.
//
// An incremental snapshot replaces the versions that changed; the old ones are usually held
// by nothing else, so dropping them destroys every TaskInfo they carry — most of the cost of
// UpdateSnapshot after churn (9.9 ms of 11 on shape L at 1 % churn). UpdateSnapshot hands
// them here instead, after releasing the cache lock, and a single background thread drops
// them. The versions are immutable and reference counted, so the thread that drops the last
// reference may be any thread.
//
// Retire only queues: the thread looks for work every `poll` while work keeps coming, so the
// caller does not pay for waking it (a futex wake and the other core's wake-up, 6-25 us here,
// were a third of UpdateSnapshot after 1 % churn on L). Retire wakes the thread itself only
// when the queue reaches `wake_at` versions (memory held stays bounded however often snapshots
// refresh) or when the thread sleeps: until the first batch, and after `idle_after` without
// work (an idle process does not poll).
//
// Ownership: injected, not process-wide — SchedulerCacheOptions::reclaimer names the one a
// cache uses (shared by several caches if the caller wishes); a cache given none creates its
// own. The thread starts with the Reclaimer and is joined by its destructor after freeing what
// is left, so it must outlive every cache that uses it.
//
// Thread-safety: Retire and Drain may be called from any thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace volcache {

struct ReclaimerOptions {
  // How long a retired batch may wait for the thread.
  std::chrono::milliseconds poll{10};
  // Versions queued at which Retire wakes the thread at once.
  size_t wake_at = size_t{1} << 16;
  // Without work for this long, the thread stops polling until Retire wakes it.
  std::chrono::milliseconds idle_after{2000};
};

class Reclaimer {
 public:
  explicit Reclaimer(ReclaimerOptions options = {});  // starts the thread
  void Retire(std::vector<std::shared_ptr<const void>> batch);
  // Blocks until everything retired so far has been freed (tests, benchmarks): wakes the
  // thread rather than waiting for its next poll.
  void Drain();
  // How many times Retire woke the thread (each cost its caller a futex wake).
  uint64_t wakeups() const;

  ~Reclaimer();
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache
