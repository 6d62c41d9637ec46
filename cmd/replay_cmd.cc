// `volcache replay FILE`: a JSON Lines script of watch events and operations (cmd/replay.h).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include "cmd/bind_flow_flags.h"
#include "cmd/command.h"
#include "cmd/replay.h"

namespace volcache::cmd {
namespace {

struct ReplayFlags {
  std::string file;
  ReplayOptions options;
  bool quiet = false;
  BindFlowFlags bind_flow;
};

CommandRunner AddReplay(CLI::App& sub) {
  auto f = std::make_shared<ReplayFlags>();
  sub.add_option("FILE", f->file, "script to replay ('-' for stdin)")->required();
  sub.add_option("--scheduler-name", f->options.scheduler_name,
                 "pods of other schedulers count only when bound");
  sub.add_option("--assumed-ttl-ms", f->options.assumed_ttl_ms,
                 "assumed-task TTL after finish-binding (0 = never)");
  sub.add_flag("--check-invariants", f->options.check_invariants,
               "check the accounting invariants after every line");
  sub.add_flag("-q,--quiet", f->quiet, "no summary on stderr");
  AddBindFlowFlags(sub, &f->bind_flow, /*with_channel_capacity=*/true);
  return [f]() -> int {
    if (Status s = ApplyBindFlowFlags(f->bind_flow, &f->options.bind_flow); !s.ok()) {
      std::cerr << s.message() << "\n";
      return 2;
    }
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
