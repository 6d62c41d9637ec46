#pragma once
// NodeTree: kube-scheduler's node ordering. Nodes are grouped by zone key (region and zone
// from the failure-domain.beta.kubernetes.io/* labels when present, else
// topology.kubernetes.io/*; no labels → one unnamed zone); zones keep the order in which
// they first appeared, nodes keep insertion order within their zone, and List() walks the
// zones round-robin (first node of every zone, then the second of every zone, ...).
// Thread-safety: externally synchronized (owned by SchedulerCache under its lock).

#include <cstdint>
#include <string>
#include <string_view>
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
  bool Contains(const std::string& name) const { return zone_of_.count(k8s::Interned(name)) > 0; }
  size_t size() const { return zone_of_.size(); }
  // Round-robin order across zones.
  std::vector<std::string> List() const;
  // Bumped on every change of membership or order.
  uint64_t version() const { return version_; }

 private:
  // Node names and zone keys are interned (api/k8s/interned.h; the cache's NodeInfo interns
  // every node's name already): 4 bytes each. A node costs 4 bytes in its zone's list and a
  // 16-byte map node (plus its bucket) here, about 30 bytes; with std::string names, 99.
  struct Zone {
    k8s::Interned key;
    std::vector<k8s::Interned> nodes;
  };
  std::vector<Zone> zones_;  // in order of first appearance; empty zones are dropped
  std::unordered_map<k8s::Interned, k8s::Interned> zone_of_;  // node → its zone's key
  uint64_t version_ = 0;
};

}  // namespace volcache
