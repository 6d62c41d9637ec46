#include "cache/cluster_source.h"

#include <map>
#include <string_view>

#include "api/mutex.h"

namespace volcache {

struct ObjectStoreSource::State {
  mutable Mutex mu;
  // Keyed by a view of the node's own name, which the value keeps alive (a std::string key
  // made each entry 80 bytes, 64 now).
  std::map<std::string_view, k8s::NodePtr, std::less<>> nodes GUARDED_BY(mu);
  std::map<std::string, k8s::PodPtr> pods GUARDED_BY(mu);  // by namespace/name
};

ObjectStoreSource::ObjectStoreSource() : state_(std::make_unique<State>()) {}
ObjectStoreSource::~ObjectStoreSource() = default;

void ObjectStoreSource::PutNode(k8s::NodePtr node) {
  MutexLock lock(&state_->mu);
  const std::string_view name = node->metadata.name;
  // Not assigned in place: the entry's key views the node it replaces.
  if (auto it = state_->nodes.find(name); it != state_->nodes.end()) state_->nodes.erase(it);
  state_->nodes.emplace(name, std::move(node));
}

void ObjectStoreSource::DeleteNode(const std::string& name) {
  MutexLock lock(&state_->mu);
  if (auto it = state_->nodes.find(name); it != state_->nodes.end()) state_->nodes.erase(it);
}

void ObjectStoreSource::PutPod(k8s::PodPtr pod) {
  MutexLock lock(&state_->mu);
  std::string key = pod->metadata.namespace_ + "/" + pod->metadata.name;
  state_->pods[key] = std::move(pod);
}

void ObjectStoreSource::DeletePod(const std::string& ns, const std::string& name) {
  MutexLock lock(&state_->mu);
  state_->pods.erase(ns + "/" + name);
}

Result<k8s::NodePtr> ObjectStoreSource::GetNode(const std::string& name) const {
  MutexLock lock(&state_->mu);
  auto it = state_->nodes.find(name);
  if (it == state_->nodes.end()) return Status::NotFound("node " + name + " not found");
  return it->second;
}

Result<k8s::PodPtr> ObjectStoreSource::GetPod(const std::string& ns, const std::string& name) const {
  MutexLock lock(&state_->mu);
  auto it = state_->pods.find(ns + "/" + name);
  if (it == state_->pods.end()) return Status::NotFound("pod " + ns + "/" + name + " not found");
  return it->second;
}

std::vector<k8s::NodePtr> ObjectStoreSource::ListNodes() const {
  MutexLock lock(&state_->mu);
  std::vector<k8s::NodePtr> out;
  for (const auto& [_, n] : state_->nodes) out.push_back(n);
  return out;
}

std::vector<k8s::PodPtr> ObjectStoreSource::ListPods() const {
  MutexLock lock(&state_->mu);
  std::vector<k8s::PodPtr> out;
  for (const auto& [_, p] : state_->pods) out.push_back(p);
  return out;
}

}  // namespace volcache
