#include "cache/node_tree.h"

#include <algorithm>

namespace volcache {

namespace {
std::string LabelOr(const k8s::StringMap& labels, const char* primary, const char* fallback) {
  if (auto it = labels.find(primary); it != labels.end()) return it->second;
  if (auto it = labels.find(fallback); it != labels.end()) return it->second;
  return "";
}
}  // namespace

std::string ZoneKey(const k8s::StringMap& labels) {
  std::string zone = LabelOr(labels, "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone");
  std::string region =
      LabelOr(labels, "failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region");
  if (region.empty() && zone.empty()) return "";
  std::string key = region;
  key.append(":\0:", 3);
  key += zone;
  return key;
}

void NodeTree::Add(const std::string& name, const std::string& zone) {
  const k8s::Interned node(name), key(zone);
  if (auto it = zone_of_.find(node); it != zone_of_.end()) {
    if (it->second == key) return;
    Remove(name);
  }
  auto z = std::find_if(zones_.begin(), zones_.end(), [&](const Zone& x) { return x.key == key; });
  if (z == zones_.end()) {
    zones_.push_back(Zone{key, {}});
    z = zones_.end() - 1;
  }
  z->nodes.push_back(node);
  zone_of_[node] = key;
  ++version_;
}

void NodeTree::Remove(const std::string& name) {
  auto it = zone_of_.find(k8s::Interned(name));
  if (it == zone_of_.end()) return;
  auto z = std::find_if(zones_.begin(), zones_.end(), [&](const Zone& x) { return x.key == it->second; });
  if (z != zones_.end()) {
    z->nodes.erase(std::find(z->nodes.begin(), z->nodes.end(), it->first));
    if (z->nodes.empty()) zones_.erase(z);
  }
  zone_of_.erase(it);
  ++version_;
}

std::vector<std::string> NodeTree::List() const {
  std::vector<std::string> out;
  out.reserve(zone_of_.size());
  for (size_t i = 0; out.size() < zone_of_.size(); ++i) {
    for (const Zone& z : zones_) {
      if (i < z.nodes.size()) out.push_back(z.nodes[i].str());
    }
  }
  return out;
}

}  // namespace volcache
