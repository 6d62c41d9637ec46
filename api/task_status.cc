#include "api/task_status.h"

#include <array>
#include <bit>
#include <string>

#include "api/check.h"
#include "api/k8s/objects.h"

namespace volcache {

namespace {

// Indexed by TaskStatusIndex; Volcano's TaskStatus.String() names.
constexpr std::array<std::string_view, kTaskStatusCount> kNames = {
    "Pending", "Allocated", "Pipelined", "Binding", "Bound",
    "Running", "Releasing", "Succeeded", "Failed",  "Unknown",
};

}  // namespace

int TaskStatusIndex(TaskStatus s) {
  const auto bits = static_cast<uint16_t>(s);
  VC_CHECK(std::has_single_bit(bits) && bits < (1u << kTaskStatusCount),
           "TaskStatus is not a single known flag: " + std::to_string(bits));
  return std::countr_zero(bits);
}

TaskStatus TaskStatusFromIndex(int index) {
  VC_CHECK(index >= 0 && index < kTaskStatusCount, "TaskStatus index out of range: " + std::to_string(index));
  return static_cast<TaskStatus>(1u << index);
}

std::string_view TaskStatusName(TaskStatus s) { return kNames[TaskStatusIndex(s)]; }

bool ParseTaskStatus(std::string_view name, TaskStatus* out) {
  for (int i = 0; i < kTaskStatusCount; ++i) {
    if (kNames[i] == name) {
      *out = TaskStatusFromIndex(i);
      return true;
    }
  }
  return false;
}

TaskStatus TaskStatusFromPod(const k8s::Pod& pod) {
  const std::string& phase = pod.status.phase;
  const bool deleting = pod.metadata.deletion_timestamp.has_value();
  if (phase == "Running") return deleting ? TaskStatus::kReleasing : TaskStatus::kRunning;
  if (phase == "Pending") {
    if (deleting) return TaskStatus::kReleasing;
    return pod.spec.node_name.empty() ? TaskStatus::kPending : TaskStatus::kBound;
  }
  if (phase == "Succeeded") return TaskStatus::kSucceeded;
  if (phase == "Failed") return TaskStatus::kFailed;
  return TaskStatus::kUnknown;  // "Unknown" and anything else
}

}  // namespace volcache
