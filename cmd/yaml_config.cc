#include "cmd/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "session/scheduler.h"

namespace volcache::cmd {

namespace {

namespace fs = std::filesystem;

std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// The session's actions and plugins (session/, docs/SESSION.md "Left out").
constexpr const char* kAlwaysOnPlugins[] = {"priority", "gang", "predicates", "proportion"};

std::string RefusedPluginReason(const std::string& p) {
  if (p == "drf") return "DRF between jobs is not implemented (queues share through proportion)";
  if (p == "conformance") return "system-critical pods are not protected from reclaim and preempt";
  return "not implemented by the reference session";
}

Status ParseActions(const YAML::Node& node) {
  if (!node.IsScalar())
    return Status::InvalidArgument("key \"actions\": want a string, e.g. \"enqueue, allocate\"");
  SchedulerOptions check;
  Status s = ApplyActions(node.as<std::string>(), &check);
  return s.ok() ? s : Status::InvalidArgument("key \"" + s.message());
}

// The score the tiers choose (binpack | least-allocated).
Result<std::string> ParseTiers(const YAML::Node& node) {
  if (!node.IsSequence())
    return Status::InvalidArgument("key \"tiers\": want a list of tiers, e.g. [{plugins: [{name: gang}]}]");
  std::set<std::string> plugins;
  for (size_t t = 0; t < node.size(); ++t) {
    const std::string where = "tiers[" + std::to_string(t) + "]";
    const YAML::Node& tier = node[t];
    if (!tier.IsMap()) return Status::InvalidArgument(where + ": want a mapping with \"plugins\"");
    for (const auto& kv : tier) {
      const std::string key = kv.first.as<std::string>();
      if (key != "plugins")
        return Status::InvalidArgument(where + ": unknown key " + Quote(key) +
                                       " (a tier has \"plugins\" only)");
    }
    const YAML::Node list = tier["plugins"];
    if (!list || !list.IsSequence())
      return Status::InvalidArgument(where + ".plugins: want a list of {name: ...}");
    for (size_t p = 0; p < list.size(); ++p) {
      const std::string pwhere = where + ".plugins[" + std::to_string(p) + "]";
      const YAML::Node& plugin = list[p];
      if (!plugin.IsMap() || !plugin["name"] || !plugin["name"].IsScalar())
        return Status::InvalidArgument(pwhere + ": want a mapping with \"name\"");
      const std::string name = plugin["name"].as<std::string>();
      for (const auto& kv : plugin) {
        const std::string key = kv.first.as<std::string>();
        if (key != "name")
          return Status::InvalidArgument(
              "plugin " + Quote(name) + ": option " + Quote(key) +
              " is not supported (the reference session's plugins take no options)");
      }
      const bool known = std::find(std::begin(kAlwaysOnPlugins), std::end(kAlwaysOnPlugins), name) !=
                             std::end(kAlwaysOnPlugins) ||
                         name == "binpack" || name == "nodeorder" || name == "overcommit";
      if (!known)
        return Status::InvalidArgument(
            "plugin " + Quote(name) + " is refused: " + RefusedPluginReason(name) +
            " (supported: priority, gang, predicates, proportion, binpack | nodeorder, overcommit)");
      if (!plugins.insert(name).second)
        return Status::InvalidArgument("plugin " + Quote(name) + " listed twice");
    }
  }
  for (const char* required : kAlwaysOnPlugins) {
    if (plugins.count(required) == 0)
      return Status::InvalidArgument(std::string("key \"tiers\": plugin \"") + required +
                                     "\" is missing, but the reference session always applies priority, "
                                     "gang, predicates and proportion; "
                                     "list them all");
  }
  const bool binpack = plugins.count("binpack") > 0, nodeorder = plugins.count("nodeorder") > 0;
  if (binpack && nodeorder)
    return Status::InvalidArgument(
        "key \"tiers\": plugins \"binpack\" and \"nodeorder\" together are not supported (the session scores "
        "with one of them)");
  if (!binpack && !nodeorder)
    return Status::InvalidArgument(
        "key \"tiers\": list \"binpack\" or \"nodeorder\" (the session always scores nodes)");
  return std::string(binpack ? "binpack" : "least-allocated");
}

// The option a key sets: the subcommand's `--key` (or `-k`), else the top level's (`v`).
CLI::Option* FindOption(CLI::App* sub, const std::string& key) {
  for (CLI::App* app : {sub, sub->get_parent()}) {
    if (app == nullptr) continue;
    CLI::Option* op = app->get_option_no_throw("--" + key);
    if (op == nullptr && key.size() == 1) op = app->get_option_no_throw("-" + key);
    if (op != nullptr) return op;
  }
  return nullptr;
}

bool Settable(CLI::App* sub, const CLI::Option* op) {
  for (CLI::App* app : {sub, sub->get_parent()}) {
    if (app == nullptr) continue;
    if (op == app->get_help_ptr() || op == app->get_help_all_ptr() || op == app->get_version_ptr())
      return false;
  }
  return op->get_configurable() && op->get_lnames() != std::vector<std::string>{"config"};
}

// The command-line words a YAML value stands for.
Result<std::vector<std::string>> Inputs(const std::string& key, const CLI::Option* op, const YAML::Node& v) {
  const std::string where = "key " + Quote(key) + ": ";
  if (v.IsNull()) return Status::InvalidArgument(where + "no value");
  if (v.IsMap()) return Status::InvalidArgument(where + "want a value, not a mapping");
  if (op->get_expected_min() == 0) {  // a switch
    bool b = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b))
      return Status::InvalidArgument(where + "want true or false");
    return std::vector<std::string>{b ? "true" : "false"};
  }
  if (v.IsSequence()) {
    if (op->get_items_expected_max() <= 1)
      return Status::InvalidArgument(where + "want one value, not a list");
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.IsScalar()) return Status::InvalidArgument(where + "list entries must be plain values");
      out.push_back(e.as<std::string>());
    }
    return out;
  }
  return std::vector<std::string>{v.as<std::string>()};
}

// `what` names the source in an error ("key \"jobs\"", "VOLCACHE_ADMIN_TOKEN_FILE").
Status SetOption(const std::string& what, CLI::Option* op, std::vector<std::string> inputs) {
  try {
    op->add_result(std::move(inputs));
    op->run_callback();
  } catch (const CLI::Error& e) {
    return Status::InvalidArgument(what + ": " + OneLine(e.what()));
  }
  return Status::Ok();
}

Status ApplyFile(CLI::App* sub, const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Status::InvalidArgument("no such file");
  if (fs::is_directory(st)) return Status::InvalidArgument("is a directory, not a file");
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(std::string("cannot read: ") + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(std::string("cannot read: ") + std::strerror(errno));
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text.str());
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("malformed YAML: " + OneLine(e.what()));
  }
  if (docs.size() > 1)
    return Status::InvalidArgument("holds " + std::to_string(docs.size()) + " YAML documents; want one");
  if (docs.empty() || docs[0].IsNull()) return Status::Ok();  // an empty file sets nothing
  const YAML::Node& root = docs[0];
  if (!root.IsMap()) return Status::InvalidArgument("want a mapping of flag: value at the top level");

  std::vector<std::pair<std::string, YAML::Node>> items;
  std::set<std::string> seen;
  std::optional<std::string> plugin_score;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) return Status::InvalidArgument("keys must be flag names");
    const std::string key = kv.first.as<std::string>();
    if (!seen.insert(key).second) return Status::InvalidArgument("key " + Quote(key) + " given twice");
    const bool has_score = sub->get_option_no_throw("--score") != nullptr;
    if (has_score && key == "actions") {
      if (Status s = ParseActions(kv.second); !s.ok()) return s;
      items.emplace_back(key, kv.second);  // the subcommand's --actions
    } else if (has_score && key == "tiers") {
      auto score = ParseTiers(kv.second);
      if (!score.ok()) return score.status();
      plugin_score = *score;
    } else if (has_score && key == "configurations") {
      return Status::InvalidArgument(
          "key \"configurations\" is not supported (the reference session's actions take no arguments)");
    } else {
      items.emplace_back(key, kv.second);
    }
  }
  if (plugin_score) {
    auto it = std::find_if(items.begin(), items.end(), [](const auto& i) { return i.first == "score"; });
    if (it == items.end()) {
      items.emplace_back("score", YAML::Node(*plugin_score));
    } else if (!it->second.IsScalar() || it->second.as<std::string>() != *plugin_score) {
      return Status::InvalidArgument("key \"score\" contradicts the tiers' " +
                                     Quote(*plugin_score == "binpack" ? "binpack" : "nodeorder") + " plugin");
    }
  }
  // Every key is checked before any is applied: an unknown key anywhere changes nothing.
  std::vector<std::pair<CLI::Option*, std::vector<std::string>>> sets;
  std::vector<std::string> keys;
  for (const auto& [key, value] : items) {
    CLI::Option* op = FindOption(sub, key);
    if (op == nullptr)
      return Status::InvalidArgument("unknown key " + Quote(key) + " (volcache " + sub->get_name() +
                                     " has no flag --" + key + ")");
    if (!Settable(sub, op))
      return Status::InvalidArgument("key " + Quote(key) + " cannot be set from a config file");
    auto inputs = Inputs(key, op, value);
    if (!inputs.ok()) return inputs.status();
    if (op->count() > 0) continue;  // the command line wins
    sets.emplace_back(op, std::move(inputs).value());
    keys.push_back(key);
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    if (Status s = SetOption("key " + Quote(keys[i]), sets[i].first, std::move(sets[i].second)); !s.ok())
      return s;
  }
  return Status::Ok();
}

}  // namespace

void AddConfigFlag(CLI::App& sub) {
  sub.add_option("--config",
                 "YAML file setting any of these flags (keys: the flag names without dashes; "
                 "the command line wins; see docs/ADMIN.md)")
      ->configurable(false);
}

ConfigLayer::ConfigLayer(CLI::App* sub) : sub_(sub) {
  for (CLI::Option* op : sub_->get_options()) {
    const std::string var = op->get_envname();
    if (var.empty() || op->get_lnames().empty()) continue;
    env_[op->get_lnames().front()] = var;
    op->envname("");
    op->description(op->get_description() + " (env " + var + ")");
  }
}

Status ConfigLayer::Apply() {
  if (!sub_->parsed()) return Status::Ok();
  CLI::Option* config = sub_->get_option_no_throw("--config");
  if (config != nullptr && config->count() > 0) {
    const std::string path = config->as<std::string>();
    if (Status s = ApplyFile(sub_, path); !s.ok())
      return Status::InvalidArgument("--config " + path + ": " + s.message());
  }
  for (const auto& [name, var] : env_) {
    CLI::Option* op = sub_->get_option_no_throw("--" + name);
    const char* value = std::getenv(var.c_str());
    if (op == nullptr || op->count() > 0 || value == nullptr || *value == '\0') continue;
    if (Status s = SetOption(var, op, {value}); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace volcache::cmd
