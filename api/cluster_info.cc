#include "api/cluster_info.h"

namespace volcache {

const NodeInfo* ClusterInfo::FindNode(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second.get();
}

NodeInfo* ClusterInfo::MutableNode(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return nullptr;
  // The first write takes a private copy; later writes reuse it. The const_cast is sound:
  // a dirty entry was created here, non-const, and is owned by this snapshot alone.
  if (dirty_nodes_.insert(name).second) it->second = std::make_shared<NodeInfo>(*it->second);
  return const_cast<NodeInfo*>(it->second.get());
}

const JobInfo* ClusterInfo::FindJob(const JobId& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

JobInfo* ClusterInfo::MutableJob(const JobId& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return nullptr;
  if (dirty_jobs_.insert(id).second) it->second = std::make_shared<JobInfo>(*it->second);
  return const_cast<JobInfo*>(it->second.get());
}

void ClusterInfo::EraseJob(const JobId& id) {
  if (jobs_.erase(id) > 0) dirty_jobs_.insert(id);
}

}  // namespace volcache
