// volcache: the command-line entry point. Every subcommand lives in cmd/<name>_cmd.cc and
// registers itself (cmd/command.h): replay, bench, and whatever else is linked in.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cmd/command.h"
#include "cmd/yaml_config.h"

namespace volcache::cmd {
namespace {

std::vector<CommandSpec>& Registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

}  // namespace

bool RegisterCommand(CommandSpec spec) {
  Registry().push_back(std::move(spec));
  return true;
}

std::vector<CommandSpec> RegisteredCommands() {
  std::vector<CommandSpec> out = Registry();
  std::sort(out.begin(), out.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  return out;
}

// CLI11's message on one line; it already names the flag ("--jobs: Value x not in range ...",
// "The following argument was not expected: --bogus").
std::string UsageLine(const CLI::ParseError& e) {
  std::string msg = e.what();
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  return msg.empty() ? e.get_name() : msg;
}

}  // namespace volcache::cmd

int main(int argc, char** argv) {
  // A peer that closes a connection mid-write must be an error on that request, not the end
  // of the process (SIGPIPE's default action): OpenSSL writes with write(2), not MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);
  using volcache::cmd::UsageLine;
  CLI::App app{"volcache: the cluster-state cache of a Volcano-style batch scheduler"};
  app.require_subcommand(1);
  int verbosity = 0;
  app.add_option("-v,--v", verbosity, "log verbosity (klog-style: 0 warnings, 2 info, 4 debug)");

  std::map<const CLI::App*, volcache::cmd::CommandRunner> runners;
  for (const auto& spec : volcache::cmd::RegisteredCommands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    runners[sub] = spec.factory(*sub);
  }

  // "volcache 0.1.0 (commit <sha>)": scripts/build.sh compiles in the checkout's commit
  // (VOLCACHE_COMMIT, "-dirty" when the tree had changes); a bare cmake build has none.
  std::string version = std::string("volcache ") + VOLCACHE_VERSION;
  if (std::string_view commit = VOLCACHE_COMMIT; !commit.empty())
    version += " (commit " + std::string(commit) + ")";
  app.set_version_flag("--version", version);
  // `--config FILE` (cmd/yaml_config.h) ranks between the command line and the environment.
  std::vector<std::unique_ptr<volcache::cmd::ConfigLayer>> config_layers;
  for (const auto& [sub, run] : runners) {
    CLI::App* mutable_sub = app.get_subcommand(sub->get_name());
    if (mutable_sub->get_option_no_throw("--config") != nullptr)
      config_layers.push_back(std::make_unique<volcache::cmd::ConfigLayer>(mutable_sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version: printed on stdout, exit 0
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors: one line naming the flag, exit 2 (not CLI11's own codes 105-109).
    std::cerr << "volcache: " << UsageLine(e) << " (see volcache --help)\n";
    return 2;
  }
  for (const auto& layer : config_layers) {
    if (volcache::Status s = layer->Apply(); !s.ok()) {
      std::cerr << "volcache: " << s.message() << "\n";
      return 2;
    }
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("volcache"));
  spdlog::set_level(verbosity >= 4   ? spdlog::level::debug
                    : verbosity >= 2 ? spdlog::level::info
                                     : spdlog::level::warn);
  for (const auto& [sub, run] : runners) {
    if (sub->parsed()) return run();
  }
  return 2;
}
