#include "api/job_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/k8s/objects.h"
#include "api/quantity.h"
#include "api/task_info.h"

namespace volcache {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr int64_t kGi = 1024ll * 1024 * 1024;

k8s::ResourceList RL(std::initializer_list<std::pair<std::string, std::string>> items) {
  k8s::ResourceList out;
  for (const auto& [name, text] : items) {
    Result<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
    out.emplace_back(name, q.ok() ? *q : Quantity());
  }
  return out;
}

// A task of job ns/pg with the given status (set after building, like a session would).
TaskInfo MakeTask(std::string name, TaskStatus status, k8s::ResourceList requests) {
  k8s::Pod pod;
  pod.metadata.namespace_ = "ns";
  pod.metadata.name = name;
  pod.metadata.uid = "uid-" + name;
  pod.metadata.annotations[std::string(kGroupNameAnnotation)] = "pg";
  pod.status.phase = "Pending";
  k8s::Container c;
  c.name = "main";
  c.requests = std::move(requests);
  pod.spec.containers.push_back(std::move(c));
  Result<TaskInfo> t = TaskInfo::FromPod(std::make_shared<const k8s::Pod>(std::move(pod)));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return TaskInfo();
  TaskInfo task = std::move(t).value();
  task.status = status;
  return task;
}

TaskInfo Task(std::string name, TaskStatus status) {
  return MakeTask(std::move(name), status, RL({{"cpu", "1"}, {"memory", "1Gi"}}));
}

std::shared_ptr<const k8s::PodGroup> MakePodGroup(int32_t min_member, std::string phase = "",
                                                  std::string queue = "") {
  auto pg = std::make_shared<k8s::PodGroup>();
  pg->metadata.namespace_ = "ns";
  pg->metadata.name = "pg";
  pg->metadata.uid = "pg-uid";
  pg->metadata.creation_timestamp = 1700000000000;
  pg->spec.min_member = min_member;
  pg->spec.queue = std::move(queue);
  pg->status.phase = std::move(phase);
  return pg;
}

JobInfo MakeJob(int32_t min_member, const std::vector<TaskStatus>& statuses) {
  JobInfo job("ns/pg");
  EXPECT_TRUE(job.SetPodGroup(MakePodGroup(min_member)).ok());
  for (size_t i = 0; i < statuses.size(); ++i) {
    EXPECT_TRUE(job.AddTask(Task("t" + std::to_string(i), statuses[i])).ok());
  }
  return job;
}

// ------------------------------------------------------------------ PodGroup

TEST(JobInfoTest, SetPodGroupFillsJobFields) {
  JobInfo job("ns/pg");
  EXPECT_EQ(job.uid(), "ns/pg");
  EXPECT_TRUE(job.IsPending());
  EXPECT_EQ(job.pod_group_phase(), "");
  EXPECT_EQ(job.pod_group(), nullptr);

  auto pg = std::make_shared<k8s::PodGroup>(*MakePodGroup(3, "Inqueue", "research"));
  pg->spec.mutable_rare().min_task_member = {{"ps", 1}, {"worker", 2}};
  pg->spec.mutable_rare().min_resources = RL({{"cpu", "3"}, {"memory", "6Gi"}, {"nvidia.com/gpu", "2"}});
  ASSERT_TRUE(job.SetPodGroup(pg).ok());
  EXPECT_EQ(job.name(), "pg");
  EXPECT_EQ(job.namespace_(), "ns");
  EXPECT_EQ(job.queue(), "research");
  EXPECT_EQ(job.min_available(), 3);
  EXPECT_THAT(job.task_min_available(),
              UnorderedElementsAre(std::pair<const std::string, int32_t>("ps", 1),
                                   std::pair<const std::string, int32_t>("worker", 2)));
  EXPECT_EQ(job.min_resources().milli_cpu(), 3000);
  EXPECT_EQ(job.min_resources().memory(), 6 * kGi);
  EXPECT_EQ(job.min_resources().Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(job.creation_timestamp(), 1700000000000);
  EXPECT_EQ(job.pod_group_phase(), "Inqueue");
  EXPECT_FALSE(job.IsPending());
}

// The job keeps the PodGroup's fields, not the object: every field that a status write, a dump
// or a plugin reads survives the round trip through the job, whose copies share one block; the
// name is the id's. Setting the phase makes the job's next version and leaves copies alone.
TEST(JobInfoTest, KeepsThePodGroupsFieldsInABlockItsCopiesShare) {
  JobInfo job("ns/pg");
  auto pg = std::make_shared<k8s::PodGroup>(*MakePodGroup(3, "Inqueue", "research"));
  pg->metadata.uid = "0f3c1c4e-9d1b-4a43-8d2e-6f1f9b0c7a55";
  pg->metadata.resource_version = "812345";
  pg->metadata.labels.mut().emplace("team", "vision");
  pg->metadata.annotations.mut().emplace("volcano.sh/preemptable", "false");
  pg->metadata.set_generation(4);
  pg->spec.priority_class_name = "high";
  pg->spec.mutable_rare().network_topology =
      k8s::NetworkTopologySpec{.mode = "hard", .highest_tier_allowed = 2, .highest_tier_name = ""};
  pg->status.running = 2;
  pg->status.succeeded = 1;
  pg->status.failed = 1;
  pg->status.conditions.mut().push_back({"Scheduled", "True", "t-1", 1700000001000, "ready", "all set"});
  ASSERT_TRUE(job.SetPodGroup(pg).ok());
  ASSERT_NE(job.pod_group(), nullptr);
  EXPECT_EQ(job.pod_group()->metadata.uid, pg->metadata.uid);
  EXPECT_EQ(job.pod_group()->status.conditions.size(), 1u);

  const k8s::PodGroup back = job.PodGroupObject();
  EXPECT_EQ(back.metadata.name, "pg");
  EXPECT_EQ(back.metadata.namespace_, "ns");
  EXPECT_EQ(back.metadata.uid, pg->metadata.uid);
  EXPECT_EQ(back.metadata.resource_version, "812345");
  EXPECT_FALSE(job.pod_group()->metadata.resource_version.on_heap()) << "a number, in the block itself";
  EXPECT_EQ(back.metadata.creation_timestamp, pg->metadata.creation_timestamp);
  EXPECT_TRUE(back.metadata.labels.SameBlock(pg->metadata.labels));
  EXPECT_TRUE(back.metadata.annotations.SameBlock(pg->metadata.annotations));
  EXPECT_EQ(back.metadata.generation(), 0) << "not kept";
  EXPECT_EQ(back.spec.min_member, 3);
  EXPECT_EQ(back.spec.queue, "research");
  EXPECT_EQ(back.spec.priority_class_name, "high");
  ASSERT_TRUE(back.spec.network_topology().has_value());
  EXPECT_EQ(back.spec.network_topology()->highest_tier_allowed, 2);
  EXPECT_EQ(back.spec.rare, pg->spec.rare) << "the spec's rare block is shared";
  EXPECT_EQ(back.status.phase, "Inqueue");
  EXPECT_EQ(back.status.running, 2);
  EXPECT_EQ(back.status.succeeded, 1);
  EXPECT_EQ(back.status.failed, 1);
  EXPECT_TRUE(back.status.conditions.SameBlock(pg->status.conditions));

  JobInfo copy = job;
  EXPECT_EQ(copy.pod_group(), job.pod_group()) << "copies share the block";
  const uint64_t gen = job.generation();
  job.SetPodGroupPhase("Running");
  EXPECT_EQ(job.pod_group_phase(), "Running");
  EXPECT_GT(job.generation(), gen);
  EXPECT_EQ(job.pod_group()->metadata.uid, pg->metadata.uid);
  EXPECT_EQ(job.pod_group()->status.running, 2);
  EXPECT_EQ(copy.pod_group_phase(), "Inqueue") << "the copy keeps its version";
  EXPECT_NE(copy.pod_group(), job.pod_group());
}

// minResources and minTaskMember are kept only when the PodGroup sets them; a later PodGroup
// without them clears them, and a copy of the job keeps what it had. Copies share them (one
// block, copied before a write while shared) with each other, and the map with the PodGroup.
TEST(JobInfoTest, MinResourcesComeAndGoWithThePodGroup) {
  JobInfo job("ns/pg");
  EXPECT_TRUE(job.min_resources() == Resource());
  EXPECT_TRUE(job.task_min_available().empty());
  auto pg = std::make_shared<k8s::PodGroup>(*MakePodGroup(1));
  pg->spec.mutable_rare().min_resources = RL({{"cpu", "2"}});
  ASSERT_TRUE(job.SetPodGroup(pg).ok());
  EXPECT_TRUE(job.task_min_available().empty());
  const JobInfo copy = job;
  EXPECT_EQ(&copy.min_resources(), &job.min_resources());
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1)).ok());
  EXPECT_TRUE(job.min_resources() == Resource());
  EXPECT_EQ(copy.min_resources().milli_cpu(), 2000);

  auto roles = std::make_shared<k8s::PodGroup>(*MakePodGroup(1));
  roles->spec.mutable_rare().min_task_member = {{"worker", 2}};
  ASSERT_TRUE(job.SetPodGroup(roles).ok());
  EXPECT_TRUE(job.min_resources() == Resource());
  EXPECT_EQ(&job.task_min_available(), &roles->spec.min_task_member().get());
  const JobInfo copy2 = job;
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1)).ok());
  EXPECT_TRUE(job.task_min_available().empty());
  EXPECT_EQ(copy2.task_min_available().at("worker"), 2);
}

// The id is interned: a job and the tasks that name it hold one string.
TEST(JobInfoTest, TheIdIsTheStringItsTasksHold) {
  const TaskInfo t = Task("t0", TaskStatus::kPending);
  JobInfo job("ns/pg");
  EXPECT_TRUE(job.uid().SameBlock(t.job()));
  EXPECT_EQ(job.uid().data(), t.job().data());
  ASSERT_TRUE(job.AddTask(t).ok());
  const JobInfo copy = job;
  EXPECT_TRUE(copy.uid().SameBlock(t.job()));
  EXPECT_EQ(copy.uid(), "ns/pg");
}

// A resourceVersion in 8 bytes: a number when it is one's decimal form, else a heap block; it
// reads back and compares as the string it was made from, whichever it is.
TEST(VersionStringTest, KeepsNumbersAsNumbersAndAnythingElseAsItsCharacters) {
  static_assert(sizeof(VersionString) == 8);
  for (const std::string v : {"1", "0", "812345", "999999999999999999", "1000000000000000000", "007", "12a",
                              "-3", "a-version-the-api-calls-opaque", " 1"}) {
    SCOPED_TRACE(v);
    const VersionString s(v);
    EXPECT_FALSE(s.empty());
    EXPECT_EQ(s.str(), v);
    EXPECT_TRUE(s == std::string_view(v));
    EXPECT_FALSE(s == std::string_view(v + "0"));
    EXPECT_FALSE(s == std::string_view(""));
    const bool number = v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos &&
                        (v.size() == 1 || v[0] != '0');
    EXPECT_EQ(s.on_heap(), !number);
    VersionString copy = s;
    EXPECT_TRUE(copy == s);
    EXPECT_EQ(copy.str(), v);
    VersionString moved = std::move(copy);
    EXPECT_TRUE(moved == s);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from version is empty
    moved = moved;              // self-assignment keeps it
    EXPECT_EQ(moved.str(), v);
    moved = VersionString("2");
    EXPECT_EQ(moved.str(), "2");
    moved = s;
    EXPECT_EQ(moved.str(), v);
  }
  EXPECT_TRUE(VersionString().empty());
  EXPECT_TRUE(VersionString("") == std::string_view(""));
  EXPECT_EQ(VersionString("").str(), "");
  EXPECT_FALSE(VersionString("12") == VersionString("012"));
  EXPECT_FALSE(VersionString("12") == std::string_view("012"));
  EXPECT_FALSE(VersionString("x") == VersionString("y"));
}

// A job keeps no name of its own: its id's name part, which the cache makes from the PodGroup's
// namespace and name. A PodGroup of another name (tests make such jobs) does not rename the job,
// and the object the job rebuilds carries the job's name.
TEST(JobInfoTest, NameIsTheIds) {
  static_assert(sizeof(JobInfo) <= 160);     // with the control block, tcmalloc's 176-byte class
  static_assert(sizeof(JobPodGroup) <= 96);  // tcmalloc's 96-byte class
  JobInfo job("ns/pg");
  EXPECT_EQ(job.name(), "pg");
  auto pg = std::make_shared<k8s::PodGroup>(*MakePodGroup(1));
  pg->metadata.name = "other";
  ASSERT_TRUE(job.SetPodGroup(pg).ok());
  EXPECT_EQ(job.name(), "pg");
  EXPECT_EQ(job.PodGroupObject().metadata.name, "pg");
  job.UnsetPodGroup();
  EXPECT_EQ(job.name(), "pg");
  EXPECT_EQ(JobInfo("no-namespace").name(), "no-namespace");
  EXPECT_EQ(JobInfo("ns/a/b").name(), "a/b");
}

TEST(JobInfoTest, SetPodGroupMakesRoomForMinMemberTasks) {
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(6)).ok());
  ASSERT_TRUE(job.AddTask(Task("t0", TaskStatus::kPending)).ok());
  const TaskInfo* first = job.FindTask("uid-t0");
  ASSERT_NE(first, nullptr);
  for (int i = 1; i < 6; ++i)
    ASSERT_TRUE(job.AddTask(Task("t" + std::to_string(i), TaskStatus::kPending)).ok());
  EXPECT_EQ(job.FindTask("uid-t0"), first);  // the stored tasks never moved
  EXPECT_EQ(job.tasks().size(), 6u);
  ASSERT_TRUE(job.AddTask(Task("t6", TaskStatus::kPending)).ok());  // beyond minMember: still added
  for (int i = 0; i < 7; ++i) EXPECT_NE(job.FindTask("uid-t" + std::to_string(i)), nullptr) << i;
}

TEST(JobInfoTest, EmptyQueueMeansTheDefaultQueue) {
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1)).ok());
  EXPECT_EQ(job.queue(), "default");
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1), "batch").ok());
  EXPECT_EQ(job.queue(), "batch");
}

TEST(JobInfoTest, InvalidMinResourcesLeavesJobUnchanged) {
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(2, "Running", "q1")).ok());
  const uint64_t gen = job.generation();
  auto bad = std::make_shared<k8s::PodGroup>(*MakePodGroup(5, "Pending", "q2"));
  bad->spec.mutable_rare().min_resources = RL({{"cpu", "-1"}});
  Status st = job.SetPodGroup(bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("PodGroup ns/pg"));
  EXPECT_THAT(st.message(), HasSubstr("spec.minResources"));
  EXPECT_EQ(job.min_available(), 2);
  EXPECT_EQ(job.queue(), "q1");
  EXPECT_EQ(job.pod_group_phase(), "Running");
  EXPECT_EQ(job.generation(), gen);
}

TEST(JobInfoTest, IsPendingByPhase) {
  struct Row {
    std::string phase;
    bool want;
  };
  for (const Row& row : {Row{"", true}, Row{"Pending", true}, Row{"Inqueue", false}, Row{"Running", false},
                         Row{"Unknown", false}, Row{"Completed", false}}) {
    SCOPED_TRACE(row.phase);
    JobInfo job("ns/pg");
    ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1, row.phase)).ok());
    EXPECT_EQ(job.IsPending(), row.want);
  }
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1, "Running")).ok());
  job.UnsetPodGroup();
  EXPECT_TRUE(job.IsPending());
  EXPECT_EQ(job.pod_group(), nullptr);
}

// ------------------------------------------------------------------ counters

struct CounterRow {
  std::string name;
  std::vector<TaskStatus> statuses;
  int32_t min_available;
  int32_t ready, waiting, valid;
  bool is_ready, is_pipelined, is_starving;
};

class JobCountersTest : public ::testing::TestWithParam<CounterRow> {};

TEST_P(JobCountersTest, MatchVolcano) {
  const CounterRow& row = GetParam();
  JobInfo job = MakeJob(row.min_available, row.statuses);
  EXPECT_EQ(job.ReadyTaskNum(), row.ready);
  EXPECT_EQ(job.WaitingTaskNum(), row.waiting);
  EXPECT_EQ(job.ValidTaskNum(), row.valid);
  EXPECT_EQ(job.IsReady(), row.is_ready);
  EXPECT_EQ(job.IsPipelined(), row.is_pipelined);
  EXPECT_EQ(job.IsStarving(), row.is_starving);
}

using S = TaskStatus;
INSTANTIATE_TEST_SUITE_P(
    Table, JobCountersTest,
    ::testing::Values(
        CounterRow{"Empty_min0", {}, 0, 0, 0, 0, true, true, false},
        CounterRow{"Empty_min1", {}, 1, 0, 0, 0, false, false, true},
        CounterRow{
            "ThreePending_min3", {S::kPending, S::kPending, S::kPending}, 3, 0, 0, 3, false, false, true},
        CounterRow{"AllReadyKinds_min5",
                   {S::kAllocated, S::kBinding, S::kBound, S::kRunning, S::kSucceeded},
                   5,
                   5,
                   0,
                   5,
                   true,
                   true,
                   false},
        CounterRow{"AllReadyKinds_min6",
                   {S::kAllocated, S::kBinding, S::kBound, S::kRunning, S::kSucceeded},
                   6,
                   5,
                   0,
                   5,
                   false,
                   false,
                   true},
        CounterRow{
            "Pipelined_min2", {S::kRunning, S::kPipelined, S::kPending}, 2, 1, 1, 3, false, true, false},
        CounterRow{
            "Pipelined_min3", {S::kRunning, S::kPipelined, S::kPending}, 3, 1, 1, 3, false, false, true},
        CounterRow{
            "Pipelined_min1", {S::kRunning, S::kPipelined, S::kPending}, 1, 1, 1, 3, true, true, false},
        // Releasing, Failed and Unknown tasks are neither ready nor valid.
        CounterRow{"NotValid_min1", {S::kReleasing, S::kFailed, S::kUnknown}, 1, 0, 0, 0, false, false, true},
        CounterRow{"Mixed_min4",
                   {S::kRunning, S::kRunning, S::kReleasing, S::kFailed, S::kPipelined, S::kPending},
                   4,
                   2,
                   1,
                   4,
                   false,
                   false,
                   true},
        CounterRow{"Mixed_min3",
                   {S::kRunning, S::kRunning, S::kReleasing, S::kFailed, S::kPipelined, S::kPending},
                   3,
                   2,
                   1,
                   4,
                   false,
                   true,
                   false}),
    [](const ::testing::TestParamInfo<CounterRow>& info) { return info.param.name; });

TEST(JobInfoTest, PendingBestEffortTasksCountTowardsReadiness) {
  JobInfo job = MakeJob(3, {S::kRunning});
  ASSERT_TRUE(job.AddTask(MakeTask("be1", S::kPending, {})).ok());
  ASSERT_TRUE(job.AddTask(MakeTask("be2", S::kPending, {})).ok());
  ASSERT_TRUE(job.AddTask(Task("normal", S::kPending)).ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 2);
  EXPECT_EQ(job.ReadyTaskNum(), 1);
  EXPECT_TRUE(job.IsReady());
  EXPECT_TRUE(job.IsPipelined());
  EXPECT_TRUE(job.IsStarving());  // best-effort tasks do not stop starvation
  // A best-effort task that is no longer Pending stops counting as pending best-effort.
  ASSERT_TRUE(job.UpdateTaskStatus("uid-be1", S::kAllocated).ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 1);
  EXPECT_EQ(job.ReadyTaskNum(), 2);
  EXPECT_TRUE(job.IsReady());
}

TEST(JobInfoTest, PendingBestEffortCountFollowsStatusChangesAndDeletes) {
  // Kept as a count (not a scan): back to Pending, a normal task moving, a delete.
  JobInfo job = MakeJob(2, {});
  ASSERT_TRUE(job.AddTask(MakeTask("be1", S::kPending, {})).ok());
  ASSERT_TRUE(job.AddTask(MakeTask("be2", S::kRunning, {})).ok());
  ASSERT_TRUE(job.AddTask(Task("normal", S::kPending)).ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 1);
  ASSERT_TRUE(job.UpdateTaskStatus("uid-be2", S::kPending).ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 2);
  ASSERT_TRUE(job.UpdateTaskStatus("uid-be2", S::kPending).ok());  // no change
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 2);
  ASSERT_TRUE(job.UpdateTaskStatus("uid-normal", S::kAllocated).ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 2);
  ASSERT_TRUE(job.DeleteTask("uid-be1").ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 1);
  ASSERT_TRUE(job.UpdateTaskStatus("uid-be2", S::kBinding).ok());
  EXPECT_EQ(job.PendingBestEffortTaskNum(), 0);
  const JobInfo copy = job;
  EXPECT_EQ(copy.PendingBestEffortTaskNum(), 0);
}

TEST(JobInfoTest, PhaseFollowsSetAndUnsetPodGroup) {
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1, "Inqueue")).ok());
  EXPECT_EQ(job.pod_group_phase(), "Inqueue");
  EXPECT_FALSE(job.IsPending());
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1, "Pending")).ok());
  EXPECT_EQ(job.pod_group_phase(), "Pending");
  EXPECT_TRUE(job.IsPending());
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1, "Running")).ok());
  job.UnsetPodGroup();
  EXPECT_EQ(job.pod_group_phase(), "");
  EXPECT_TRUE(job.IsPending());
}

// The namespace and the creation time are the PodGroup's: a job without one (never set, or
// unset) has "" and 0.
TEST(JobInfoTest, NamespaceCreationTimeMinMemberAndPhaseAreThePodGroups) {
  JobInfo job("ns/pg");
  EXPECT_EQ(job.namespace_(), "");
  EXPECT_EQ(job.creation_timestamp(), 0);
  EXPECT_EQ(job.min_available(), 0);
  EXPECT_EQ(job.pod_group_phase(), "");
  EXPECT_TRUE(job.IsPending());
  auto pg = std::make_shared<k8s::PodGroup>(*MakePodGroup(3));
  pg->metadata.creation_timestamp = 1700000000555;
  pg->status.phase = "Running";
  ASSERT_TRUE(job.SetPodGroup(pg).ok());
  EXPECT_EQ(job.namespace_(), "ns");
  EXPECT_EQ(job.creation_timestamp(), 1700000000555);
  EXPECT_EQ(job.min_available(), 3);
  EXPECT_EQ(job.pod_group_phase(), "Running");
  EXPECT_FALSE(job.IsPending());
  EXPECT_TRUE(job.IsStarving());  // no task yet, three wanted
  const JobInfo copy = job;
  job.UnsetPodGroup();
  EXPECT_EQ(job.namespace_(), "");
  EXPECT_EQ(job.creation_timestamp(), 0);
  EXPECT_EQ(job.min_available(), 0);
  EXPECT_EQ(job.pod_group_phase(), "");
  EXPECT_TRUE(job.IsPending());
  EXPECT_FALSE(job.IsStarving());
  EXPECT_EQ(copy.namespace_(), "ns");
  EXPECT_EQ(copy.creation_timestamp(), 1700000000555);
  EXPECT_EQ(copy.min_available(), 3);
  EXPECT_EQ(copy.pod_group_phase(), "Running");
}

// Fit errors share one block with minResources and minTaskMember, which copies of the job share
// until one of them writes: a copy's fit errors are its own, and the gang's fields stay.
TEST(JobInfoTest, FitErrorsOfACopyAreItsOwn) {
  JobInfo job("ns/pg");
  auto pg = std::make_shared<k8s::PodGroup>(*MakePodGroup(2));
  pg->spec.mutable_rare().min_resources = RL({{"cpu", "2"}});
  ASSERT_TRUE(job.SetPodGroup(pg).ok());
  ASSERT_TRUE(job.AddTask(Task("t0", TaskStatus::kPending)).ok());
  ASSERT_TRUE(job.AddTask(Task("t1", TaskStatus::kPending)).ok());
  JobInfo copy = job;
  copy.SetTaskFitError("uid-t0", "no node");
  EXPECT_EQ(job.TaskFitError("uid-t0"), nullptr);
  ASSERT_NE(copy.TaskFitError("uid-t0"), nullptr);
  EXPECT_EQ(*copy.TaskFitError("uid-t0"), "no node");
  EXPECT_EQ(copy.min_resources().milli_cpu(), 2000);
  EXPECT_EQ(job.min_resources().milli_cpu(), 2000);

  // A PodGroup without a gang clears the gang's fields and keeps the fit errors; deleting the
  // task drops its error, in this copy only.
  JobInfo other = copy;
  ASSERT_TRUE(copy.SetPodGroup(MakePodGroup(2)).ok());
  EXPECT_TRUE(copy.min_resources() == Resource());
  EXPECT_EQ(*copy.TaskFitError("uid-t0"), "no node");
  ASSERT_TRUE(copy.DeleteTask("uid-t0").ok());
  EXPECT_EQ(copy.TaskFitError("uid-t0"), nullptr);
  ASSERT_NE(other.TaskFitError("uid-t0"), nullptr);
  EXPECT_EQ(other.min_resources().milli_cpu(), 2000);
  // A job with neither keeps no block: minResources reads as zero, no error is recorded.
  ASSERT_TRUE(copy.SetPodGroup(MakePodGroup(2)).ok());
  EXPECT_EQ(copy.TaskFitError("uid-t1"), nullptr);
}

// ------------------------------------------------------------ add / update / delete

TEST(JobInfoTest, AllocatedAndTotalRequestFollowEveryOperation) {
  JobInfo job("ns/pg");
  ASSERT_TRUE(job.AddTask(MakeTask("a", S::kPending, RL({{"cpu", "1"}, {"memory", "1Gi"}}))).ok());
  ASSERT_TRUE(job.AddTask(MakeTask("b", S::kRunning, RL({{"cpu", "2"}, {"memory", "2Gi"}}))).ok());
  ASSERT_TRUE(job.AddTask(MakeTask("c", S::kBinding,
                                   RL({{"cpu", "500m"}, {"memory", "512Mi"}, {"nvidia.com/gpu", "1"}})))
                  .ok());
  ASSERT_TRUE(job.AddTask(MakeTask("d", S::kPipelined, RL({{"cpu", "4"}}))).ok());
  EXPECT_EQ(job.total_request().milli_cpu(), 7500);
  EXPECT_EQ(job.total_request().memory(), 3 * kGi + kGi / 2);
  EXPECT_EQ(job.total_request().Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(job.total_request().Get("pods"), 4);
  EXPECT_EQ(job.allocated().milli_cpu(), 2500);
  EXPECT_EQ(job.allocated().memory(), 2 * kGi + kGi / 2);
  EXPECT_EQ(job.allocated().Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(job.allocated().Get("pods"), 2);

  auto uids = [&](S status) {
    std::vector<std::string> out;
    for (const TaskInfo* t : job.TasksWithStatus(status)) out.push_back(t->uid());
    return out;
  };
  EXPECT_THAT(uids(S::kPending), UnorderedElementsAre("uid-a"));
  EXPECT_THAT(uids(S::kRunning), UnorderedElementsAre("uid-b"));
  EXPECT_EQ(job.CountWithStatus(S::kBinding), 1u);
  EXPECT_EQ(job.CountWithStatus(S::kBound), 0u);

  // Pending → Allocated joins Allocated; Binding → Bound stays; Running → Releasing leaves.
  ASSERT_TRUE(job.UpdateTaskStatus("uid-a", S::kAllocated).ok());
  ASSERT_TRUE(job.UpdateTaskStatus("uid-c", S::kBound).ok());
  ASSERT_TRUE(job.UpdateTaskStatus("uid-b", S::kReleasing).ok());
  EXPECT_EQ(job.allocated().milli_cpu(), 1500);
  EXPECT_EQ(job.allocated().memory(), kGi + kGi / 2);
  EXPECT_EQ(job.total_request().milli_cpu(), 7500);
  EXPECT_EQ(job.FindTask("uid-a")->status, S::kAllocated);
  EXPECT_EQ(job.CountWithStatus(S::kPending), 0u);
  EXPECT_EQ(job.CountWithStatus(S::kAllocated), 1u);
  EXPECT_EQ(job.CountWithStatus(S::kRunning), 0u);
  EXPECT_EQ(job.CountWithStatus(S::kReleasing), 1u);
  EXPECT_EQ(job.CountWithStatus(S::kBound), 1u);

  // Delete uses the stored status and request.
  ASSERT_TRUE(job.DeleteTask("uid-c").ok());
  EXPECT_EQ(job.allocated().milli_cpu(), 1000);
  EXPECT_EQ(job.allocated().Get("nvidia.com/gpu"), 0);
  EXPECT_EQ(job.total_request().milli_cpu(), 7000);
  EXPECT_EQ(job.FindTask("uid-c"), nullptr);
  EXPECT_EQ(job.CountWithStatus(S::kBound), 0u);

  for (const char* uid : {"uid-a", "uid-b", "uid-d"}) ASSERT_TRUE(job.DeleteTask(uid).ok()) << uid;
  EXPECT_TRUE(job.tasks().empty());
  EXPECT_TRUE(job.allocated().Equal(Resource(), DimensionDefault::kZero)) << job.allocated().ToString();
  EXPECT_TRUE(job.total_request().Equal(Resource(), DimensionDefault::kZero))
      << job.total_request().ToString();
  for (int i = 0; i < kTaskStatusCount; ++i) EXPECT_EQ(job.CountWithStatus(TaskStatusFromIndex(i)), 0u);
}

TEST(JobInfoTest, DuplicateAddAndUnknownUidAreRefusedWithoutChange) {
  JobInfo job = MakeJob(1, {S::kRunning});
  const uint64_t gen = job.generation();
  const Resource allocated = job.allocated();
  const Resource total = job.total_request();

  Status st = job.AddTask(Task("t0", S::kPending));
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(st.message(), HasSubstr("ns/t0"));
  EXPECT_THAT(st.message(), HasSubstr("ns/pg"));
  EXPECT_EQ(job.FindTask("uid-t0")->status, S::kRunning);
  EXPECT_EQ(job.CountWithStatus(S::kPending), 0u);

  EXPECT_EQ(job.DeleteTask("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(job.UpdateTaskStatus("nope", S::kRunning).code(), StatusCode::kNotFound);

  EXPECT_EQ(job.generation(), gen);
  EXPECT_EQ(job.allocated(), allocated);
  EXPECT_EQ(job.total_request(), total);
  EXPECT_EQ(job.tasks().size(), 1u);
}

TEST(JobInfoTest, EverySuccessfulMutationBumpsGeneration) {
  JobInfo job("ns/pg");
  EXPECT_EQ(job.generation(), 0u);
  ASSERT_TRUE(job.SetPodGroup(MakePodGroup(1)).ok());
  EXPECT_EQ(job.generation(), 1u);
  ASSERT_TRUE(job.AddTask(Task("a", S::kPending)).ok());
  EXPECT_EQ(job.generation(), 2u);
  ASSERT_TRUE(job.UpdateTaskStatus("uid-a", S::kAllocated).ok());
  EXPECT_EQ(job.generation(), 3u);
  job.SetTaskFitError("uid-a", "x");
  EXPECT_EQ(job.generation(), 4u);
  job.SetTaskFitError("unknown", "x");
  EXPECT_EQ(job.generation(), 4u);
  ASSERT_TRUE(job.DeleteTask("uid-a").ok());
  EXPECT_EQ(job.generation(), 5u);
  job.UnsetPodGroup();
  EXPECT_EQ(job.generation(), 6u);
  job.set_generation(41);
  ASSERT_TRUE(job.AddTask(Task("b", S::kPending)).ok());
  EXPECT_EQ(job.generation(), 42u);
}

// ------------------------------------------------------------------ FitError

TEST(JobInfoTest, FitErrorMatchesVolcanoText) {
  EXPECT_EQ(MakeJob(3, {S::kPending, S::kPending, S::kPending}).FitError(),
            "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Undetermined");

  // No pending tasks: no "; Pending:" part, and statuses without tasks are not listed.
  EXPECT_EQ(MakeJob(2, {S::kRunning}).FitError(), "pod group is not ready, 1 Running, 2 minAvailable");
  EXPECT_EQ(MakeJob(0, {}).FitError(), "pod group is not ready, 0 minAvailable");

  // Sorted as strings, not numbers: "10 Pending" < "3 minAvailable".
  std::vector<TaskStatus> ten(10, S::kPending);
  EXPECT_EQ(MakeJob(3, ten).FitError(),
            "pod group is not ready, 10 Pending, 3 minAvailable; Pending: 10 Undetermined");

  // Recorded reasons; tasks without one are Undetermined.
  JobInfo job = MakeJob(4, {S::kRunning, S::kRunning, S::kPending, S::kPending, S::kPending, S::kPipelined});
  job.SetTaskFitError("uid-t2", "0/3 nodes are unavailable: 3 Insufficient cpu.");
  job.SetTaskFitError("uid-t3", "0/3 nodes are unavailable: 3 Insufficient cpu.");
  EXPECT_EQ(job.FitError(),
            "pod group is not ready, 1 Pipelined, 2 Running, 3 Pending, 4 minAvailable; "
            "Pending: 1 Undetermined, 2 0/3 nodes are unavailable: 3 Insufficient cpu.");

  // A fit error of a task that left Pending no longer counts; a re-recorded one replaces it.
  ASSERT_TRUE(job.UpdateTaskStatus("uid-t2", S::kAllocated).ok());
  job.SetTaskFitError("uid-t4", "node(s) had untolerated taint");
  EXPECT_EQ(job.FitError(),
            "pod group is not ready, 1 Allocated, 1 Pipelined, 2 Pending, 2 Running, 4 minAvailable; "
            "Pending: 1 0/3 nodes are unavailable: 3 Insufficient cpu., 1 node(s) had untolerated taint");

  // Deleting a task drops its reason.
  ASSERT_TRUE(job.DeleteTask("uid-t3").ok());
  ASSERT_TRUE(job.AddTask(Task("t3", S::kPending)).ok());
  EXPECT_EQ(job.FitError(),
            "pod group is not ready, 1 Allocated, 1 Pipelined, 2 Pending, 2 Running, 4 minAvailable; "
            "Pending: 1 Undetermined, 1 node(s) had untolerated taint");
}

}  // namespace
}  // namespace volcache
