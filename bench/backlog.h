#pragma once
// `volcache bench backlog`: issue 16's deep backlog — the Philly trace's first 20,000 jobs
// arriving at once (arrival scale 100,000) on the whole Philly cluster, simulated for two
// minutes (120 sessions) on the simulator's fake clock — and what a session costs there.
// One JSON line per action list (`--mode allocate | enqueue`; default both).
// Thread-safety: runs on the calling thread.

#include <iosfwd>

#include "bench/runner.h"

namespace volcache::bench {

int Backlog(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace volcache::bench
