#pragma once
// Subcommands of the `volcache` executable. Each cmd/<name>_cmd.cc registers itself with
// VOLCACHE_COMMAND; main() adds every registered subcommand to the CLI and runs the one
// chosen. A subcommand's factory declares its flags on `sub` and returns what runs after
// parsing (the process exit code).
// Thread-safety: registration happens during static initialization, before main().

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace volcache::cmd {

using CommandRunner = std::function<int()>;
using CommandFactory = std::function<CommandRunner(CLI::App& sub)>;

struct CommandSpec {
  std::string name;
  std::string description;
  CommandFactory factory;
};

// Returns true (for use in a static initializer).
bool RegisterCommand(CommandSpec spec);
// Every registered command, sorted by name.
std::vector<CommandSpec> RegisteredCommands();

}  // namespace volcache::cmd

#define VOLCACHE_CMD_CONCAT2(a, b) a##b
#define VOLCACHE_CMD_CONCAT(a, b) VOLCACHE_CMD_CONCAT2(a, b)
#define VOLCACHE_COMMAND(name, description, factory)                              \
  static const bool VOLCACHE_CMD_CONCAT(volcache_command_registered_, __LINE__) = \
      ::volcache::cmd::RegisterCommand({name, description, factory})
