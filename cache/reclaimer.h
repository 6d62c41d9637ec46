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
// Ownership: injected, not process-wide — SchedulerCacheOptions::reclaimer names the one a
// cache uses (shared by several caches if the caller wishes); a cache given none creates its
// own. The thread starts with the Reclaimer and is joined by its destructor after freeing what
// is left, so it must outlive every cache that uses it.
//
// Thread-safety: Retire and Drain may be called from any thread.

#include <memory>
#include <vector>

namespace volcache {

class Reclaimer {
 public:
  Reclaimer();  // starts the thread
  void Retire(std::vector<std::shared_ptr<const void>> batch);
  // Blocks until everything retired so far has been freed (tests, benchmarks).
  void Drain();

  ~Reclaimer();
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache
