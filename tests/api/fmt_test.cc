#include "api/fmt.h"

#include <gtest/gtest.h>

#include <memory>

namespace volcache {
namespace {

TEST(FmtTest, FormatsStatusResourceAndStates) {
  EXPECT_EQ(fmt::format("{}", Status::NotFound("pod a/b")), "NotFound: pod a/b");
  EXPECT_EQ(fmt::format("{}", Status::Ok()), "OK");
  EXPECT_EQ(fmt::format("{}", TaskStatus::kBinding), "Binding");
  EXPECT_EQ(fmt::format("{}", QueueState::kClosing), "Closing");
  EXPECT_EQ(fmt::format("{}", NodeState{NodePhase::kNotReady, "UnInitialized"}), "NotReady(UnInitialized)");
  EXPECT_EQ(fmt::format("{}", NodeState{NodePhase::kReady, ""}), "Ready");
  EXPECT_EQ(fmt::format("{}", k8s::WatchEventType::kDeleted), "DELETED");
  Resource r(1500, 1024);
  EXPECT_EQ(fmt::format("{}", r), r.ToString());
}

TEST(FmtTest, FormatsTaskAsKeyNodeStatus) {
  auto pod = std::make_shared<k8s::Pod>();
  pod->metadata.name = "web-0";
  pod->metadata.namespace_ = "default";
  pod->metadata.uid = "u1";
  pod->spec.node_name = "n1";
  pod->status.phase = "Running";
  auto task = TaskInfo::FromPod(pod);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(fmt::format("{}", *task), "default/web-0@n1:Running");
  task->node_name.clear();
  task->status = TaskStatus::kPending;
  EXPECT_EQ(fmt::format("{}", *task), "default/web-0@-:Pending");
}

}  // namespace
}  // namespace volcache
