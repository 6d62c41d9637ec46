#pragma once
// The replay engine behind `volcache replay FILE` (SPEC §8): applies a JSON Lines script of
// watch events and operations to a CacheRuntime (the cache with its real decision pipelines,
// run inline) on a fake clock that starts at 0: the queues are drained as work becomes due,
// the BindFlow's 20 ms tick dispatches binds to a binder scripted by `bindResult` lines,
// evictions go through the evictor pipeline, and an object store is the cluster source.
//
// Output contract: `snapshot`/`dump` lines and refused operations (`{"line":N,"error":...}`)
// go to `out`; a line that is not JSON or not one of the forms stops the replay with
// `line N: <reason>` on `err` and exit code 2.
// Thread-safety: single-threaded; one engine per replay.

#include <iosfwd>
#include <memory>
#include <string>

#include "workers/bind_flow.h"

namespace volcache {

struct ReplayOptions {
  std::string scheduler_name = "volcano";
  // Run the invariant checker after every line; a violation stops with exit code 3.
  bool check_invariants = false;
  // Print a human-readable summary to `err` at the end.
  bool summary = false;
  int64_t assumed_ttl_ms = 0;
  // BATCH_BIND_NUM, channel capacity, concurrency bound (the tick is always 20 ms).
  BindFlowOptions bind_flow;
};

struct ReplayStats {
  int64_t lines = 0;
  int64_t events = 0;
  int64_t refused = 0;
  int64_t binds_ok = 0;
  int64_t binds_failed = 0;
  int64_t evictions = 0;
};

class ReplayEngine {
 public:
  ReplayEngine(ReplayOptions options, std::ostream& out, std::ostream& err);
  ~ReplayEngine();
  // Applies one line (1-based number for messages). Returns 0 to continue, or the exit code
  // to stop with (2: unparsable line, 3: invariant violation).
  int ApplyLine(int64_t number, const std::string& line);
  // Applies a whole stream; returns the exit code.
  int Run(std::istream& in);
  const ReplayStats& stats() const;
  // The cache's dump right now.
  std::string Dump() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace volcache
