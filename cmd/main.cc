// volcache: the command-line entry point.
//   volcache replay FILE   apply a JSON Lines event/operation script (SPEC §8)
//   volcache bench WHAT    snapshot / ingest / memory on the BENCHMARKS.md shapes
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>

#include "bench/runner.h"
#include "cmd/replay.h"

int main(int argc, char** argv) {
  CLI::App app{"volcache: the cluster-state cache of a Volcano-style batch scheduler"};
  app.require_subcommand(1);
  int verbosity = 0;
  app.add_option("-v,--v", verbosity, "log verbosity (klog-style: 0 warnings, 2 info, 4 debug)");

  auto* replay = app.add_subcommand("replay", "apply a JSON Lines script of watch events and operations");
  std::string file;
  volcache::ReplayOptions ropts;
  bool quiet = false;
  replay->add_option("FILE", file, "script to replay ('-' for stdin)")->required();
  replay->add_option("--scheduler-name", ropts.scheduler_name, "pods of other schedulers count only when bound");
  replay->add_option("--assumed-ttl-ms", ropts.assumed_ttl_ms, "assumed-task TTL after finish-binding (0 = never)");
  replay->add_flag("--check-invariants", ropts.check_invariants, "check the accounting invariants after every line");
  replay->add_flag("-q,--quiet", quiet, "no summary on stderr");

  auto* bench = app.add_subcommand("bench", "measure snapshot, ingest and memory on the standard shapes");
  volcache::bench::BenchOptions bopts;
  bench->add_option("WHAT", bopts.what, "snapshot | ingest | bind | memory")->required();
  bench->add_option("--shape", bopts.shape, "S | M | L | XL | XXL");
  bench->add_option("--threads", bopts.threads, "threads for deep copies (0 = all cores)");
  bench->add_option("--runs", bopts.runs, "measured runs (after a warm-up)");
  bench->add_option("--churn", bopts.churn, "share of tasks and nodes changed between incremental snapshots");
  bool json_flag = true;
  bench->add_flag("--json", json_flag, "JSON lines output (the only format)");

  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("volcache"));
  spdlog::set_level(verbosity >= 4 ? spdlog::level::debug
                    : verbosity >= 2 ? spdlog::level::info
                                     : spdlog::level::warn);

  if (*bench) return volcache::bench::RunBench(bopts, std::cout, std::cerr);
  if (*replay) {
    ropts.summary = !quiet;
    volcache::ReplayEngine engine(ropts, std::cout, std::cerr);
    if (file == "-") return engine.Run(std::cin);
    std::ifstream in(file);
    if (!in) {
      std::cerr << "cannot open " << file << "\n";
      return 1;
    }
    return engine.Run(in);
  }
  return 0;
}
