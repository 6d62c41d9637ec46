#include "api/task_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "api/k8s/objects.h"

namespace volcache {
namespace {

struct StatusRow {
  std::string phase;
  bool deleting;
  std::string node_name;
  TaskStatus want;
};

class TaskStatusFromPodTest : public ::testing::TestWithParam<StatusRow> {};

TEST_P(TaskStatusFromPodTest, FollowsTheSpecTable) {
  const StatusRow& row = GetParam();
  k8s::Pod pod;
  pod.metadata.namespace_ = "default";
  pod.metadata.name = "p";
  pod.status.phase = row.phase;
  if (row.deleting) pod.metadata.deletion_timestamp = 1700000000000;
  pod.spec.node_name = row.node_name;
  EXPECT_EQ(TaskStatusFromPod(pod), row.want) << "got " << TaskStatusName(TaskStatusFromPod(pod));
}

INSTANTIATE_TEST_SUITE_P(AllRows, TaskStatusFromPodTest,
                         ::testing::Values(
                             // Running
                             StatusRow{"Running", true, "n1", TaskStatus::kReleasing},
                             StatusRow{"Running", true, "", TaskStatus::kReleasing},
                             StatusRow{"Running", false, "n1", TaskStatus::kRunning},
                             StatusRow{"Running", false, "", TaskStatus::kRunning},
                             // Pending
                             StatusRow{"Pending", true, "", TaskStatus::kReleasing},
                             StatusRow{"Pending", true, "n1", TaskStatus::kReleasing},
                             StatusRow{"Pending", false, "", TaskStatus::kPending},
                             StatusRow{"Pending", false, "n1", TaskStatus::kBound},
                             // Terminal and unknown phases keep their name, deletion or not.
                             StatusRow{"Succeeded", false, "n1", TaskStatus::kSucceeded},
                             StatusRow{"Succeeded", true, "n1", TaskStatus::kSucceeded},
                             StatusRow{"Failed", false, "n1", TaskStatus::kFailed},
                             StatusRow{"Failed", true, "", TaskStatus::kFailed},
                             StatusRow{"Unknown", false, "n1", TaskStatus::kUnknown},
                             StatusRow{"Unknown", true, "", TaskStatus::kUnknown},
                             // Anything else.
                             StatusRow{"", false, "", TaskStatus::kUnknown},
                             StatusRow{"", false, "n1", TaskStatus::kUnknown},
                             StatusRow{"running", false, "n1", TaskStatus::kUnknown},
                             StatusRow{"Terminating", true, "n1", TaskStatus::kUnknown}));

TEST(TaskStatusTest, NamesIndicesAndValuesMatchVolcano) {
  struct Row {
    TaskStatus status;
    uint16_t value;
    int index;
    std::string_view name;
  };
  const Row rows[] = {
      {TaskStatus::kPending, 1, 0, "Pending"},      {TaskStatus::kAllocated, 2, 1, "Allocated"},
      {TaskStatus::kPipelined, 4, 2, "Pipelined"},  {TaskStatus::kBinding, 8, 3, "Binding"},
      {TaskStatus::kBound, 16, 4, "Bound"},         {TaskStatus::kRunning, 32, 5, "Running"},
      {TaskStatus::kReleasing, 64, 6, "Releasing"}, {TaskStatus::kSucceeded, 128, 7, "Succeeded"},
      {TaskStatus::kFailed, 256, 8, "Failed"},      {TaskStatus::kUnknown, 512, 9, "Unknown"},
  };
  ASSERT_EQ(std::size(rows), static_cast<size_t>(kTaskStatusCount));
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.name));
    EXPECT_EQ(static_cast<uint16_t>(r.status), r.value);
    EXPECT_EQ(TaskStatusIndex(r.status), r.index);
    EXPECT_EQ(TaskStatusFromIndex(r.index), r.status);
    EXPECT_EQ(TaskStatusName(r.status), r.name);
    TaskStatus parsed = TaskStatus::kUnknown;
    ASSERT_TRUE(ParseTaskStatus(r.name, &parsed));
    EXPECT_EQ(parsed, r.status);
  }
}

TEST(TaskStatusTest, ParseRejectsUnknownNames) {
  TaskStatus out = TaskStatus::kRunning;
  EXPECT_FALSE(ParseTaskStatus("", &out));
  EXPECT_FALSE(ParseTaskStatus("pending", &out));
  EXPECT_FALSE(ParseTaskStatus("Terminating", &out));
  EXPECT_EQ(out, TaskStatus::kRunning);
}

TEST(TaskStatusTest, AllocatedAndTerminatedSets) {
  for (int i = 0; i < kTaskStatusCount; ++i) {
    const TaskStatus s = TaskStatusFromIndex(i);
    SCOPED_TRACE(std::string(TaskStatusName(s)));
    const bool allocated = s == TaskStatus::kAllocated || s == TaskStatus::kBinding ||
                           s == TaskStatus::kBound || s == TaskStatus::kRunning;
    EXPECT_EQ(IsAllocatedStatus(s), allocated);
    EXPECT_EQ(IsTerminatedStatus(s), s == TaskStatus::kSucceeded || s == TaskStatus::kFailed);
  }
}

TEST(TaskStatusDeathTest, IndexOfACombinationIsABug) {
  EXPECT_DEATH(TaskStatusIndex(static_cast<TaskStatus>(3)), "single known flag");
  EXPECT_DEATH(TaskStatusFromIndex(kTaskStatusCount), "out of range");
}

}  // namespace
}  // namespace volcache
