#pragma once
// TaskStatus: a task's lifecycle state as bit flags (Volcano's values), and the rule that
// derives it from a pod.
//
// Thread-safety: pure functions over values.

#include <cstdint>
#include <string_view>

namespace volcache {

namespace k8s {
struct Pod;
}

enum class TaskStatus : uint16_t {
  kPending = 1,
  kAllocated = 2,
  kPipelined = 4,
  kBinding = 8,
  kBound = 16,
  kRunning = 32,
  kReleasing = 64,
  kSucceeded = 128,
  kFailed = 256,
  kUnknown = 512,
};
inline constexpr int kTaskStatusCount = 10;

// The bit position (0..9) of a status, for arrays indexed by status.
int TaskStatusIndex(TaskStatus s);
TaskStatus TaskStatusFromIndex(int index);

// "Pending", "Allocated", ... (Volcano's names).
std::string_view TaskStatusName(TaskStatus s);
// Parses a name produced by TaskStatusName; false when unknown.
bool ParseTaskStatus(std::string_view name, TaskStatus* out);

// Allocated set = {Allocated, Binding, Bound, Running} (Volcano AllocatedStatus).
constexpr bool IsAllocatedStatus(TaskStatus s) {
  constexpr uint16_t kMask = 2 | 8 | 16 | 32;
  return (static_cast<uint16_t>(s) & kMask) != 0;
}

// Tasks in these statuses do not occupy a node (Succeeded, Failed).
constexpr bool IsTerminatedStatus(TaskStatus s) {
  return s == TaskStatus::kSucceeded || s == TaskStatus::kFailed;
}

// The pod → status table of SPEC §2:
//   Running  + deletionTimestamp → Releasing;  Running → Running
//   Pending  + deletionTimestamp → Releasing;  Pending, no nodeName → Pending;
//   Pending, nodeName → Bound;  Succeeded/Failed/Unknown → same;  anything else → Unknown.
TaskStatus TaskStatusFromPod(const k8s::Pod& pod);

}  // namespace volcache
