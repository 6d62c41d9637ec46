#pragma once
// NodeTree: kube-scheduler's node ordering. Nodes are grouped by zone key (region and zone
// from the failure-domain.beta.kubernetes.io/* labels when present, else
// topology.kubernetes.io/*; no labels → one unnamed zone); zones keep the order in which
// they first appeared, nodes keep insertion order within their zone, and List() walks the
// zones round-robin (first node of every zone, then the second of every zone, ...).
// Thread-safety: externally synchronized (owned by SchedulerCache under its lock).

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/k8s/objects.h"

namespace volcache {

// "" when the node has no region/zone labels; otherwise "<region>:\0:<zone>".
std::string ZoneKey(const k8s::StringMap& labels);

class NodeTree {
 public:
  // Adds the node, or moves it to its new zone if its zone changed. No-op when unchanged.
  void Add(const std::string& name, const std::string& zone);
  void Remove(const std::string& name);
  bool Contains(const std::string& name) const { return zone_of_.count(name) > 0; }
  size_t size() const { return zone_of_.size(); }
  // Round-robin order across zones.
  std::vector<std::string> List() const;
  // Bumped on every change of membership or order.
  uint64_t version() const { return version_; }

 private:
  struct Zone {
    std::string key;
    std::vector<std::string> nodes;
  };
  std::vector<Zone> zones_;  // in order of first appearance; empty zones are dropped
  // node → its zone's key; interned, so a node costs no copy of a long "region:\0:zone".
  std::unordered_map<std::string, k8s::Interned> zone_of_;
  uint64_t version_ = 0;
};

}  // namespace volcache
