#pragma once
// ClusterInfo: the snapshot a scheduling session works on. It is exclusively owned by its
// session, which may mutate it freely; it shares nothing mutable with the cache.
// Thread-safety: value type, externally synchronized.

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/job_info.h"
#include "api/node_info.h"
#include "api/queue_info.h"
#include "api/resource.h"

namespace volcache {

struct NamespaceQuota {
  std::string name;    // namespace
  Resource hard;       // min over the namespace's ResourceQuotas' status.hard (or spec.hard)
  Resource used;
};

struct ClusterInfo {
  std::unordered_map<JobId, JobInfo> jobs;
  std::unordered_map<std::string, NodeInfo> nodes;           // Ready nodes only
  std::unordered_map<std::string, NodeInfo*> revocable_nodes;  // subset of nodes
  std::unordered_map<std::string, QueueInfo> queues;
  std::vector<std::string> node_list;                         // nodeTree order
  std::map<std::string, int32_t, std::less<>> priority_classes;  // name → value
  std::map<std::string, NamespaceQuota, std::less<>> namespace_quotas;
  Resource total_allocatable;  // sum over `nodes`

  ClusterInfo() = default;
  ClusterInfo(const ClusterInfo&) = delete;  // revocable_nodes points into nodes
  ClusterInfo& operator=(const ClusterInfo&) = delete;
  ClusterInfo(ClusterInfo&&) = default;
  ClusterInfo& operator=(ClusterInfo&&) = default;
};

}  // namespace volcache
