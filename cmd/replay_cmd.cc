// `volcache replay FILE`: a JSON Lines script of watch events and operations (cmd/replay.h).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include "cmd/command.h"
#include "cmd/replay.h"

namespace volcache::cmd {
namespace {

struct ReplayFlags {
  std::string file;
  ReplayOptions options;
  bool quiet = false;
  int batch_bind_num = 0;
  int max_concurrent_binds = 0;
  int channel_capacity = 0;
};

CommandRunner AddReplay(CLI::App& sub) {
  auto f = std::make_shared<ReplayFlags>();
  sub.add_option("FILE", f->file, "script to replay ('-' for stdin)")->required();
  sub.add_option("--scheduler-name", f->options.scheduler_name, "pods of other schedulers count only when bound");
  sub.add_option("--assumed-ttl-ms", f->options.assumed_ttl_ms, "assumed-task TTL after finish-binding (0 = never)");
  sub.add_flag("--check-invariants", f->options.check_invariants, "check the accounting invariants after every line");
  sub.add_flag("-q,--quiet", f->quiet, "no summary on stderr");
  sub.add_option("--batch-bind-num", f->batch_bind_num, "tasks per Binder::Bind call (default: $BATCH_BIND_NUM, else 1)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--max-concurrent-binds", f->max_concurrent_binds, "binds in flight at once (default 256)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--bind-channel-capacity", f->channel_capacity, "BindFlowChannel capacity (default 5000)")
      ->check(CLI::PositiveNumber);
  return [f]() -> int {
    Status env;
    f->options.bind_flow = BindFlowOptionsFromEnv(f->options.bind_flow, &env);
    if (!env.ok()) {
      std::cerr << env.message() << "\n";
      return 2;
    }
    if (f->batch_bind_num > 0) f->options.bind_flow.batch_size = static_cast<size_t>(f->batch_bind_num);
    if (f->max_concurrent_binds > 0) f->options.bind_flow.max_concurrent_binds = static_cast<size_t>(f->max_concurrent_binds);
    if (f->channel_capacity > 0) f->options.bind_flow.channel_capacity = static_cast<size_t>(f->channel_capacity);
    f->options.summary = !f->quiet;
    ReplayEngine engine(f->options, std::cout, std::cerr);
    if (f->file == "-") return engine.Run(std::cin);
    std::ifstream in(f->file);
    if (!in) {
      std::cerr << "cannot open " << f->file << "\n";
      return 1;
    }
    return engine.Run(in);
  };
}

VOLCACHE_COMMAND("replay", "apply a JSON Lines script of watch events and operations", AddReplay);

}  // namespace
}  // namespace volcache::cmd
