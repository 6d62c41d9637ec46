#include "cmd/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <sstream>

namespace volcache::cmd {

namespace {

class YamlConfig final : public CLI::Config {
 public:
  std::string to_config(const CLI::App*, bool, bool, std::string) const override {
    return "";  // writing config files is not offered
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    std::stringstream text;
    text << in.rdbuf();
    YAML::Node root;
    try {
      root = YAML::Load(text.str());
    } catch (const YAML::Exception& e) {
      throw CLI::ConversionError("config", std::string("malformed YAML: ") + e.what());
    }
    std::vector<CLI::ConfigItem> items;
    if (root.IsNull()) return items;
    if (!root.IsMap())
      throw CLI::ConversionError("config", "the config file must be a YAML mapping of flag: value");
    Walk(root, {}, items);
    return items;
  }

 private:
  static void Walk(const YAML::Node& map, const std::vector<std::string>& parents,
                   std::vector<CLI::ConfigItem>& out) {
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (v.IsMap()) {
        auto p = parents;
        p.push_back(key);
        Walk(v, p, out);
        continue;
      }
      CLI::ConfigItem item;
      item.parents = parents;
      item.name = key;
      if (v.IsSequence()) {
        for (const auto& e : v) {
          if (!e.IsScalar()) throw CLI::ConversionError(key, "sequence entries must be scalars");
          item.inputs.push_back(e.as<std::string>());
        }
      } else if (v.IsScalar()) {
        item.inputs.push_back(v.as<std::string>());
      } else {
        item.inputs.push_back("");  // key with no value: a flag set to its default
      }
      out.push_back(std::move(item));
    }
  }
};

}  // namespace

std::shared_ptr<CLI::Config> MakeYamlConfig() { return std::make_shared<YamlConfig>(); }

}  // namespace volcache::cmd
