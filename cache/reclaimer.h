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
// Thread-safety: Retire and Drain may be called from any thread. One process-wide instance,
// started on first use; its thread is joined at exit after freeing what is left.

#include <memory>
#include <vector>

namespace volcache {

class Reclaimer {
 public:
  static Reclaimer& Instance();
  void Retire(std::vector<std::shared_ptr<const void>> batch);
  // Blocks until everything retired so far has been freed (tests, benchmarks).
  void Drain();

  ~Reclaimer();
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;

 private:
  Reclaimer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache
