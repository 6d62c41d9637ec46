#pragma once
// Evictor and StatusUpdater: how eviction decisions and status writes reach the cluster.
// Implementations are called from workers without any cache lock held and must be safe to
// call concurrently.

#include <string>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"
#include "api/task_info.h"

namespace volcache {

class Evictor {
 public:
  virtual ~Evictor() = default;
  // Marks the pod (Ready=False reason Evict, DisruptionTarget=True) and deletes or evicts it.
  virtual Status Evict(const k8s::Pod& pod, const std::string& reason) = 0;
};

class StatusUpdater {
 public:
  virtual ~StatusUpdater() = default;
  virtual Status UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) = 0;
  virtual Status UpdatePodGroup(const k8s::PodGroup& pg) = 0;
  virtual Status UpdateQueueStatus(const k8s::Queue& queue) = 0;
};

// Kubernetes Events (core/v1) about an object: type "Normal" or "Warning".
struct EventRef {
  std::string kind;  // Pod, PodGroup, Queue
  std::string namespace_;
  std::string name;
  std::string uid;
};

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  virtual void Event(const EventRef& object, const std::string& type, const std::string& reason,
                     const std::string& message) = 0;
};

// Builds the conditions an eviction writes on the pod (Ready=False/Evict and
// DisruptionTarget=True/PreemptionByScheduler), stamped with `now_ms`.
std::vector<k8s::PodCondition> EvictionConditions(const std::string& reason, k8s::TimeMs now_ms);

}  // namespace volcache
