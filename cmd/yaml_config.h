#pragma once
// `--config FILE` for `volcache run` and `volcache serve`: a YAML mapping whose keys are the
// subcommand's long flag names without the dashes sets those flags, e.g.
//   schedule-period: 500ms
//   kube-api-qps: 100
//   leader-elect: false
//   listen: 0.0.0.0:8080
// Precedence, highest first: the command line, the config file, the environment (the options
// that read a variable, e.g. VOLCACHE_ADMIN_TOKEN_FILE), the defaults. The global `v`
// (verbosity) may be set too. Values are what the flag would take on the command line: a
// scalar for an option, true/false for a switch (`no-admin: true`), a list for a
// multi-value option. Relative paths in values are relative to the working directory, as on
// the command line.
//
// Volcano's scheduler configuration shape is accepted where the reference session
// (session/, docs/SESSION.md) does what it says, and refused where it does not:
//   actions: "allocate"          — the only action the session has (enqueue, backfill,
//                                   preempt, reclaim, shuffle are refused by name)
//   tiers:
//   - plugins: [{name: priority}, {name: gang}]
//   - plugins: [{name: predicates}, {name: proportion}, {name: binpack}]
// priority, gang, predicates and proportion are always on in the session and must all be
// listed; exactly one of binpack / nodeorder chooses the score (it sets `score`:
// binpack | least-allocated). Any other plugin (drf, conformance, overcommit, ...), plugin
// options (arguments, enabledJobOrder, ...) and `configurations` are refused by name. The
// tier structure is accepted but does not change the session's fixed order (priority, then
// gang readiness, then creation time).
//
// Errors (exit 2) are one line naming the file, the line and the key, in one shape:
//   volcache: --config PATH: line N: key "K": what is wrong
// for an unknown key, a key given twice, a value of the wrong shape (a list or mapping for a
// single-value flag, a non-boolean for a switch), a value the flag refuses (the flag's own
// message), an action or plugin the session lacks (K is then the path into the value, e.g.
// "tiers[1].plugins[0]"); and `--config PATH: line N, column C: malformed YAML: ...`,
// `--config PATH: no such file` (unreadable, a directory, several documents, not a mapping).
//
// Thread-safety: for main() only, before any thread starts.

#include <map>
#include <string>

#include "api/status.h"

namespace CLI {
class App;
}

namespace volcache::cmd {

// Adds `--config FILE` to `sub`. Call after every other option of `sub` was added.
void AddConfigFlag(CLI::App& sub);

// The config-file layer of one subcommand: construct before App::parse (it takes over the
// environment variables of `sub`'s options so that they rank below the file), Apply() after.
class ConfigLayer {
 public:
  explicit ConfigLayer(CLI::App* sub);
  // When `sub` was parsed: the file named by --config (if given), then the environment, for
  // every option the command line did not set. InvalidArgument with a one-line message
  // starting with "--config PATH: " (or naming the variable) otherwise; OK when `sub` was not
  // the subcommand chosen.
  Status Apply();

 private:
  CLI::App* sub_;
  std::map<std::string, std::string> env_;  // long option name → variable
};

}  // namespace volcache::cmd
