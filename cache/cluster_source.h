#pragma once
// ClusterSource: what the cache reads from the cluster besides the event stream — the
// current objects, for SyncNode, errTasks resync and the comparer. Implementations: the
// Kubernetes reflectors' listers (kube/), the simulator (sim/), replay's object store.
// Thread-safety: implementations must be safe for concurrent use.

#include <memory>
#include <string>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache {

class ClusterSource {
 public:
  virtual ~ClusterSource() = default;
  // NotFound when the node does not exist.
  virtual Result<k8s::NodePtr> GetNode(const std::string& name) const = 0;
  virtual Result<k8s::PodPtr> GetPod(const std::string& ns, const std::string& name) const = 0;
  virtual std::vector<k8s::NodePtr> ListNodes() const = 0;
  virtual std::vector<k8s::PodPtr> ListPods() const = 0;
};

// An in-memory ClusterSource: the latest version of every object put into it.
class ObjectStoreSource final : public ClusterSource {
 public:
  ObjectStoreSource();
  ~ObjectStoreSource() override;
  void PutNode(k8s::NodePtr node);
  void DeleteNode(const std::string& name);
  void PutPod(k8s::PodPtr pod);
  void DeletePod(const std::string& ns, const std::string& name);

  Result<k8s::NodePtr> GetNode(const std::string& name) const override;
  Result<k8s::PodPtr> GetPod(const std::string& ns, const std::string& name) const override;
  std::vector<k8s::NodePtr> ListNodes() const override;
  std::vector<k8s::PodPtr> ListPods() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace volcache
