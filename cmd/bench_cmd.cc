// `volcache bench WHAT`: the BENCHMARKS.md measurements (bench/runner.h).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "bench/runner.h"
#include "cmd/bind_flow_flags.h"
#include "cmd/command.h"

namespace volcache::cmd {
namespace {

CommandRunner AddBench(CLI::App& sub) {
  auto opts = std::make_shared<bench::BenchOptions>();
  sub.add_option("WHAT", opts->what,
                 "snapshot | ingest | bind | e2e | memory | watch | backlog | constraints")
      ->required();
  sub.add_option("--shape", opts->shape, "S | M | L | XL | XXL | openb | philly (the traces)");
  sub.add_option("--threads", opts->threads, "threads for deep copies and bind dispatch (0 = all cores)");
  sub.add_option("--runs", opts->runs, "measured runs (after a warm-up)");
  sub.add_option("--churn", opts->churn, "share of tasks and nodes changed between incremental snapshots");
  sub.add_option("--mode", opts->mode,
                 "bind: only add_bind_task | pipeline_instant | rest_loopback; watch: events | list; "
                 "backlog: allocate | "
                 "enqueue (default: all)");
  sub.add_option("--bind-concurrency", opts->bind_concurrency,
                 "bind, rest_loopback: REST binds in flight (0 = the binder's default)");
  sub.add_option("--pods", opts->pods, "watch: pods listed / pod watch events (default 100000)");
  sub.add_option("--decoder", opts->decoder,
                 "watch: fast (serve's path) | dom (the DOM decoder only, the baseline)");
  sub.add_option("--kind", opts->kind,
                 "constraints: anti-affinity | pod-affinity | node-affinity | spread | mixed (default: all)");
  auto bind_flow = std::make_shared<BindFlowFlags>();
  AddBindFlowFlags(sub, bind_flow.get());
  auto json_flag = std::make_shared<bool>(true);
  sub.add_flag("--json", *json_flag, "JSON lines output (the only format)");
  return [opts, bind_flow, json_flag] {
    if (Status s = ApplyBindFlowFlags(*bind_flow, &opts->bind_flow); !s.ok()) {
      std::cerr << "volcache bench: " << s.message() << "\n";
      return 2;
    }
    return bench::RunBench(*opts, std::cout, std::cerr);
  };
}

VOLCACHE_COMMAND("bench", "measure snapshot, ingest, bind and memory on the standard shapes", AddBench);

}  // namespace
}  // namespace volcache::cmd
