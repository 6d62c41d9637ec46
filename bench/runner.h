#pragma once
// `volcache bench snapshot|ingest|memory`: the BENCHMARKS.md measurements on the standard
// shapes, printed as one JSON object per line and measurement.
// Thread-safety: runs on the calling thread (snapshot deep copies use `threads`).

#include <iosfwd>
#include <string>

#include "workers/bind_flow.h"

namespace volcache::bench {

struct BenchOptions {
  std::string what;  // snapshot | ingest | bind | e2e | memory | watch | backlog | constraints
  std::string shape = "S";
  int threads = 0;  // 0 = hardware concurrency
  int runs = 11;
  double churn = 0.01;
  // bind: only this measurement (add_bind_task | pipeline_instant | rest_loopback); "" = all.
  std::string mode;
  // bind, rest_loopback: the REST binder's bound on binds in flight (0 = its default).
  int bind_concurrency = 0;
  // watch: pods in the LIST / pod watch events (0 = 100,000), and the reflector's decoder
  // ("fast": the streaming decoder with the DOM as fall-back, as serve runs; "dom": the DOM
  // decoder only, the baseline).
  int pods = 0;
  std::string decoder = "fast";
  // constraints: only this kind (anti-affinity | pod-affinity | node-affinity | spread | mixed); "" = all.
  std::string kind;
  // bind, e2e: the bind flow (BATCH_BIND_NUM, binds in flight), as the command layer read it
  // from --batch-bind-num / $BATCH_BIND_NUM.
  BindFlowOptions bind_flow;
};

// Returns a process exit code; errors go to `err`.
int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace volcache::bench
