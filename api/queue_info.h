#pragma once
// QueueInfo: a Volcano Queue as the scheduler sees it.
// Thread-safety: value type.

#include <cstdint>
#include <memory>
#include <string>

#include "api/k8s/objects.h"
#include "api/resource.h"
#include "api/status.h"

namespace volcache {

enum class QueueState : uint8_t { kOpen, kClosed, kClosing, kUnknown };
std::string_view QueueStateName(QueueState s);

inline constexpr std::string_view kDefaultQueue = "default";
inline constexpr std::string_view kRootQueue = "root";
inline constexpr std::string_view kHierarchyAnnotation = "volcano.sh/hierarchy";
inline constexpr std::string_view kHierarchyWeightsAnnotation = "volcano.sh/hierarchy-weights";

struct QueueInfo {
  std::string name;
  int32_t weight = 1;
  Resource capability;  // empty = unlimited
  bool has_capability = false;
  Resource deserved;
  Resource guarantee;
  std::string parent;  // spec.parent, else "root" for non-root queues
  bool reclaimable = true;
  QueueState state = QueueState::kOpen;  // status.state; "" (never written) counts as Open
  Resource allocated;                    // status.allocated
  std::string hierarchy;                 // volcano.sh/hierarchy annotation
  std::string hierarchy_weights;
  std::shared_ptr<const k8s::Queue> queue;  // null for queues created by volcache itself

  // InvalidArgument naming the queue and field on invalid quantities.
  static Result<QueueInfo> FromQueue(std::shared_ptr<const k8s::Queue> q);
};

}  // namespace volcache
