#include "api/queue_info.h"

#include <fmt/format.h>

#include <utility>

#include "api/resource_list.h"

namespace volcache {

std::string_view QueueStateName(QueueState s) {
  switch (s) {
    case QueueState::kOpen:
      return "Open";
    case QueueState::kClosed:
      return "Closed";
    case QueueState::kClosing:
      return "Closing";
    case QueueState::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

namespace {

QueueState ParseQueueState(std::string_view s) {
  // No controller has written the status yet: the queue is usable.
  if (s.empty() || s == "Open") return QueueState::kOpen;
  if (s == "Closed") return QueueState::kClosed;
  if (s == "Closing") return QueueState::kClosing;
  return QueueState::kUnknown;
}

std::string Annotation(const k8s::ObjectMeta& meta, std::string_view key) {
  auto it = meta.annotations.find(key);
  return it == meta.annotations.end() ? std::string() : it->second.str();
}

}  // namespace

Result<QueueInfo> QueueInfo::FromQueue(std::shared_ptr<const k8s::Queue> q) {
  if (q == nullptr) return Status::InvalidArgument("QueueInfo::FromQueue: null queue");
  const std::string prefix = fmt::format("Queue {}", q->metadata.name);
  QueueInfo info;
  struct Field {
    const k8s::ResourceList* list;
    std::string_view path;
    Resource* out;
  };
  for (const Field& f : {Field{&q->spec.capability, "spec.capability", &info.capability},
                         Field{&q->spec.deserved, "spec.deserved", &info.deserved},
                         Field{&q->spec.guarantee, "spec.guarantee.resource", &info.guarantee},
                         Field{&q->status.allocated, "status.allocated", &info.allocated}}) {
    Result<Resource> r = ResourceFromList(*f.list, f.path);
    if (!r.ok()) return r.status().WithPrefix(prefix);
    *f.out = std::move(r).value();
  }
  info.name = q->metadata.name;
  info.weight = q->spec.weight;
  info.has_capability = !q->spec.capability.empty();
  if (!q->spec.parent.empty()) {
    info.parent = q->spec.parent;
  } else if (info.name != kRootQueue) {
    info.parent = std::string(kRootQueue);
  }
  info.reclaimable = q->spec.reclaimable.value_or(true);
  info.state = ParseQueueState(q->status.state);
  info.hierarchy = Annotation(q->metadata, kHierarchyAnnotation);
  info.hierarchy_weights = Annotation(q->metadata, kHierarchyWeightsAnnotation);
  info.queue = std::move(q);
  return info;
}

}  // namespace volcache
