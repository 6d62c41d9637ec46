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
#include <string_view>
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

// A key or name in double quotes; a quote or backslash inside is escaped, so the line stays
// well-formed whatever the file holds.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "line N: " for a node read from the file (yaml-cpp counts from 0); "" for one made here.
std::string At(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? std::string() : "line " + std::to_string(mark.line + 1) + ": ";
}

// Every error about a key has this one shape: `line N: key "K": what` (the caller adds
// "--config PATH: "). `key` may be a path into a nested value ("tiers[1].plugins[0]").
Status KeyError(const YAML::Node& at, const std::string& key, const std::string& what) {
  return Status::InvalidArgument(At(at) + "key " + Quote(key) + ": " + what);
}

// The session's actions and plugins (session/, docs/SESSION.md "Left out").
constexpr const char* kAlwaysOnPlugins[] = {"priority", "gang", "predicates", "proportion"};

std::string RefusedPluginReason(const std::string& p) {
  if (p == "drf") return "DRF between jobs is not implemented (queues share through proportion)";
  if (p == "conformance") return "system-critical pods are not protected from reclaim and preempt";
  return "not implemented by the reference session";
}

Status ParseActions(const YAML::Node& key, const YAML::Node& node) {
  if (!node.IsScalar()) return KeyError(key, "actions", "want a string, e.g. \"enqueue, allocate\"");
  SchedulerOptions check;
  Status s = ApplyActions(node.as<std::string>(), &check);
  if (s.ok()) return s;
  // ApplyActions names the flag ("actions: action ..."), as the command line shows it.
  std::string what = s.message();
  if (constexpr std::string_view kFlag = "actions: "; what.rfind(kFlag, 0) == 0) what.erase(0, kFlag.size());
  return KeyError(key, "actions", what);
}

// The score the tiers choose (binpack | least-allocated).
Result<std::string> ParseTiers(const YAML::Node& key, const YAML::Node& node) {
  if (!node.IsSequence())
    return KeyError(key, "tiers", "want a list of tiers, e.g. [{plugins: [{name: gang}]}]");
  std::set<std::string> plugins;
  for (size_t t = 0; t < node.size(); ++t) {
    const std::string where = "tiers[" + std::to_string(t) + "]";
    const YAML::Node& tier = node[t];
    if (!tier.IsMap()) return KeyError(tier, where, "want a mapping with \"plugins\"");
    for (const auto& kv : tier) {
      const std::string k = kv.first.IsScalar() ? kv.first.as<std::string>() : "?";
      if (k != "plugins")
        return KeyError(kv.first, where, "unknown key " + Quote(k) + " (a tier has \"plugins\" only)");
    }
    const YAML::Node list = tier["plugins"];
    if (!list || !list.IsSequence())
      return KeyError(list ? list : tier, where + ".plugins", "want a list of {name: ...}");
    for (size_t p = 0; p < list.size(); ++p) {
      const std::string pwhere = where + ".plugins[" + std::to_string(p) + "]";
      const YAML::Node& plugin = list[p];
      if (!plugin.IsMap() || !plugin["name"] || !plugin["name"].IsScalar())
        return KeyError(plugin, pwhere, "want a mapping with \"name\"");
      const std::string name = plugin["name"].as<std::string>();
      for (const auto& kv : plugin) {
        const std::string k = kv.first.IsScalar() ? kv.first.as<std::string>() : "?";
        if (k != "name")
          return KeyError(kv.first, pwhere,
                          "plugin " + Quote(name) + ": option " + Quote(k) +
                              " is not supported (the reference session's plugins take no options)");
      }
      const bool known = std::find(std::begin(kAlwaysOnPlugins), std::end(kAlwaysOnPlugins), name) !=
                             std::end(kAlwaysOnPlugins) ||
                         name == "binpack" || name == "nodeorder" || name == "overcommit";
      if (!known)
        return KeyError(plugin, pwhere,
                        "plugin " + Quote(name) + " is refused: " + RefusedPluginReason(name) +
                            " (supported: priority, gang, predicates, proportion, binpack | nodeorder, "
                            "overcommit)");
      if (!plugins.insert(name).second)
        return KeyError(plugin, pwhere, "plugin " + Quote(name) + " listed twice");
    }
  }
  for (const char* required : kAlwaysOnPlugins) {
    if (plugins.count(required) == 0)
      return KeyError(
          key, "tiers",
          std::string("plugin \"") + required +
              "\" is missing, but the reference session always applies priority, gang, predicates "
              "and proportion; list them all");
  }
  const bool binpack = plugins.count("binpack") > 0, nodeorder = plugins.count("nodeorder") > 0;
  if (binpack && nodeorder)
    return KeyError(key, "tiers",
                    "plugins \"binpack\" and \"nodeorder\" together are not supported (the session scores "
                    "with one of them)");
  if (!binpack && !nodeorder)
    return KeyError(key, "tiers", "list \"binpack\" or \"nodeorder\" (the session always scores nodes)");
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

// The command-line words a YAML value stands for; `at` is the key's node (for its line).
Result<std::vector<std::string>> Inputs(const YAML::Node& at, const std::string& key, const CLI::Option* op,
                                        const YAML::Node& v) {
  if (v.IsNull()) return KeyError(at, key, "no value");
  if (v.IsMap()) return KeyError(at, key, "want a value, not a mapping");
  if (op->get_expected_min() == 0) {  // a switch
    bool b = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b)) return KeyError(at, key, "want true or false");
    return std::vector<std::string>{b ? "true" : "false"};
  }
  if (v.IsSequence()) {
    if (op->get_items_expected_max() <= 1) return KeyError(at, key, "want one value, not a list");
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.IsScalar()) return KeyError(at, key, "list entries must be plain values");
      out.push_back(e.as<std::string>());
    }
    return out;
  }
  return std::vector<std::string>{v.as<std::string>()};
}

// The flag's own message on one line. CLI11's PositiveNumber and NonNegativeNumber print their
// bounds as DBL_MIN and DBL_MAX ("Value 0 not in range 0.000000 to 179769313...000000"):
// said plainly instead. (CLI11 2.1 keeps their names as the validators' descriptions.)
std::string FlagMessage(CLI::Option* op, const CLI::Error& e) {
  std::string msg = OneLine(e.what());
  const size_t value = msg.find("Value "), range = msg.find(" not in range ");
  if (value == std::string::npos || range == std::string::npos || range < value) return msg;
  for (int i = 0;; ++i) {
    std::string description;
    try {
      description = op->get_validator(i)->get_description();
    } catch (const CLI::OptionNotFound&) {
      return msg;
    }
    const char* want = description == "POSITIVE"      ? "is not a positive number"
                       : description == "NONNEGATIVE" ? "is negative (want a number >= 0)"
                                                      : nullptr;
    if (want != nullptr) return msg.substr(0, value) + msg.substr(value + 6, range - value - 6) + " " + want;
  }
}

// `what` names the source in an error ("line 3: key \"jobs\"", "VOLCACHE_ADMIN_TOKEN_FILE").
Status SetOption(const std::string& what, CLI::Option* op, std::vector<std::string> inputs) {
  try {
    op->add_result(std::move(inputs));
    op->run_callback();
  } catch (const CLI::Error& e) {
    return Status::InvalidArgument(what + ": " + FlagMessage(op, e));
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
    // yaml-cpp's what() is "yaml-cpp: error at line 3, column 1: ..."; its parts are said our way.
    const std::string at = e.mark.is_null() ? std::string()
                                            : "line " + std::to_string(e.mark.line + 1) + ", column " +
                                                  std::to_string(e.mark.column + 1) + ": ";
    return Status::InvalidArgument(at + "malformed YAML: " + OneLine(e.msg));
  }
  if (docs.size() > 1)
    return Status::InvalidArgument("holds " + std::to_string(docs.size()) + " YAML documents; want one");
  if (docs.empty() || docs[0].IsNull()) return Status::Ok();  // an empty file sets nothing
  const YAML::Node& root = docs[0];
  if (!root.IsMap())
    return Status::InvalidArgument(At(root) + "want a mapping of flag: value at the top level");

  struct Item {
    std::string key;
    YAML::Node key_node;  // for the line in errors
    YAML::Node value;
  };
  std::vector<Item> items;
  std::set<std::string> seen;
  std::optional<std::string> plugin_score;
  YAML::Node tiers_key;
  const bool has_score = sub->get_option_no_throw("--score") != nullptr;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar())
      return Status::InvalidArgument(At(kv.first) + "a key must be a flag name, not a list or mapping");
    const std::string key = kv.first.as<std::string>();
    if (!seen.insert(key).second) return KeyError(kv.first, key, "given twice");
    if (has_score && key == "actions") {
      if (Status s = ParseActions(kv.first, kv.second); !s.ok()) return s;
      items.push_back({key, kv.first, kv.second});  // the subcommand's --actions
    } else if (has_score && key == "tiers") {
      auto score = ParseTiers(kv.first, kv.second);
      if (!score.ok()) return score.status();
      plugin_score = *score;
      tiers_key = kv.first;
    } else if (has_score && key == "configurations") {
      return KeyError(kv.first, key, "not supported (the reference session's actions take no arguments)");
    } else {
      items.push_back({key, kv.first, kv.second});
    }
  }
  if (plugin_score) {
    auto it = std::find_if(items.begin(), items.end(), [](const Item& i) { return i.key == "score"; });
    if (it == items.end()) {
      items.push_back({"score", tiers_key, YAML::Node(*plugin_score)});
    } else if (!it->value.IsScalar() || it->value.as<std::string>() != *plugin_score) {
      return KeyError(it->key_node, "score",
                      "contradicts the tiers' " +
                          Quote(*plugin_score == "binpack" ? "binpack" : "nodeorder") + " plugin");
    }
  }
  // Every key is checked before any is applied: an unknown key anywhere changes nothing.
  std::vector<std::pair<CLI::Option*, std::vector<std::string>>> sets;
  std::vector<std::string> whats;
  for (const Item& item : items) {
    CLI::Option* op = FindOption(sub, item.key);
    if (op == nullptr)
      return KeyError(item.key_node, item.key,
                      "unknown (volcache " + sub->get_name() + " has no flag --" + item.key + ")");
    if (!Settable(sub, op)) return KeyError(item.key_node, item.key, "cannot be set from a config file");
    auto inputs = Inputs(item.key_node, item.key, op, item.value);
    if (!inputs.ok()) return inputs.status();
    if (op->count() > 0) continue;  // the command line wins
    sets.emplace_back(op, std::move(inputs).value());
    whats.push_back(At(item.key_node) + "key " + Quote(item.key));
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    if (Status s = SetOption(whats[i], sets[i].first, std::move(sets[i].second)); !s.ok()) return s;
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
