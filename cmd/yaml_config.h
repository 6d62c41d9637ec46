#pragma once
// A CLI11 config-file reader for YAML: `volcache run --config FILE` (and any subcommand that
// installs it) may set every flag from a YAML mapping whose keys are the long flag names
// without dashes, e.g.
//   workload: trace:philly
//   jobs: 500
//   speed: 0
//   bind-error-rate: 0.01
// Nested mappings name subcommands' sections; sequences give multi-value flags. Unknown keys
// are errors (CLI11 reports them with the key), as are malformed YAML documents (with line).
// Thread-safety: immutable after construction.

#include <memory>

namespace CLI {
class Config;
}

namespace volcache::cmd {

std::shared_ptr<CLI::Config> MakeYamlConfig();

}  // namespace volcache::cmd
