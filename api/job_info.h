#pragma once
// JobInfo: a PodGroup and its tasks, with Volcano's counters and readiness predicates.
//
// Job id = "<namespace>/<group name>". Allocated = sum of requests of tasks in an allocated
// status, maintained incrementally: it equals what the tasks imply after every operation.
// TotalRequest = sum of all tasks' requests, computed when asked. Mutations are all-or-nothing.
// Thread-safety: value type, externally synchronized.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/k8s/objects.h"
#include "api/k8s/shared.h"
#include "api/k8s/shared_string.h"
#include "api/resource.h"
#include "api/status.h"
#include "api/task_info.h"
#include "api/task_status.h"
#include "api/task_table.h"
#include "api/version_string.h"

namespace volcache {

using JobId = std::string;

// A set of job ids that a JobInfo's uid() (a k8s::SharedString) or any string view looks up
// without a std::string made for the lookup.
struct JobIdHash {
  using is_transparent = void;
  size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
};
using JobIdSet = std::unordered_set<JobId, JobIdHash, std::equal_to<>>;

// Task uid → why it fits no node, as a session records them.
using TaskFitErrors = std::vector<std::pair<std::string, std::string>>;

// "pod group is not ready" (Volcano's PodGroupNotReady).
inline constexpr std::string_view kPodGroupNotReady = "pod group is not ready";

// What a job keeps of its PodGroup (JobInfo::SetPodGroup copies it in): the fields the cache,
// sessions, plugins and status writers read, under the PodGroup's own names, in one block that
// copies of the job share (counted in place: one pointer in the job). Not kept: the name (the
// job id's, JobInfo::name()), the generation, the deletion timestamp and grace period, and the
// owner references, which nothing on the cache's paths reads. ToPodGroup() rebuilds the object.
// The block is 96 bytes, tcmalloc's 96-byte class (112 with the resourceVersion a ShortString);
// the PodGroup's make_shared block the job held until session 26 was the 160-byte class (and
// the job's pointer 16 bytes, not 8).
class JobPodGroup : public boost::intrusive_ref_counter<JobPodGroup, boost::thread_safe_counter> {
 public:
  JobPodGroup() = default;
  explicit JobPodGroup(const k8s::PodGroup& pg);
  // The PodGroup object, named `name` (the job's): for status writes, dumps and plugins.
  k8s::PodGroup ToPodGroup(std::string_view name) const;

  // Beside the count (4 bytes each): in Meta it would cost 8 bytes of padding, a class.
  k8s::Interned namespace_;
  struct Meta {
    UidString uid;
    VersionString resource_version;  // 8 bytes, not a ShortString's 16
    k8s::TimeMs creation_timestamp = 0;
    k8s::StringMap labels;
    k8s::StringMap annotations;
  };
  Meta metadata;
  k8s::PodGroupSpec spec;
  k8s::PodGroupStatus status;
};

class JobInfo {
 public:
  explicit JobInfo(JobId uid);              // interns the id (k8s::InternShared)
  explicit JobInfo(k8s::SharedString uid);  // holds the id's block as given

  // Keeps the PodGroup's fields (a new JobPodGroup, which namespace_(), min_available(),
  // creation_timestamp() and pod_group_phase() read) and sets the queue, minTaskMember and
  // minResources from them; an empty spec.queue means `default_queue`. The name stays the id's.
  // Fails (unchanged) on invalid minResources.
  Status SetPodGroup(const k8s::PodGroup& pg, std::string_view default_queue = "default");
  Status SetPodGroup(const std::shared_ptr<const k8s::PodGroup>& pg,
                     std::string_view default_queue = "default");
  void UnsetPodGroup();
  // What the job keeps of its PodGroup (JobPodGroup), null without one. The pointer holds as long
  // as this version of the job is unchanged; copies of the job share the block.
  const JobPodGroup* pod_group() const { return pod_group_.get(); }
  // The PodGroup object rebuilt (JobPodGroup::ToPodGroup, named name()). Precondition: pod_group().
  k8s::PodGroup PodGroupObject() const;
  // Sets the PodGroup's status.phase (a session moving a job to Inqueue): the job's next version,
  // as SetPodGroup with that phase would be. Precondition: pod_group().
  void SetPodGroupPhase(std::string_view phase);

  // AlreadyExists if a task with the same uid is held.
  Status AddTask(const TaskInfo& task);
  // NotFound if absent. Removes using the stored task's status and request.
  Status DeleteTask(std::string_view uid);
  // Moves the stored task to `status` (indexes and Allocated follow).
  Status UpdateTaskStatus(std::string_view uid, TaskStatus status);

  // The id's one block, shared with the job's tasks (api/k8s/shared_string.h): reads as a
  // std::string_view and converts to a JobId.
  const k8s::SharedString& uid() const { return uid_; }
  // The name part of the id ("<namespace>/<name>"): the PodGroup's name.
  std::string_view name() const;
  // The PodGroup's namespace, "" without one (as for a job whose PodGroup was deleted).
  const std::string& namespace_() const;
  const std::string& queue() const { return queue_; }
  int32_t priority() const { return priority_; }
  void set_priority(int32_t p) { priority_ = p; }
  // The PodGroup's minMember, 0 without one.
  int32_t min_available() const { return pod_group_ != nullptr ? pod_group_->spec.min_member : 0; }
  const std::map<std::string, int32_t, std::less<>>& task_min_available() const;
  const Resource& min_resources() const { return rare_ != nullptr ? rare_->min_resources : Resource::Zero(); }
  // The PodGroup's creation time, 0 without one.
  k8s::TimeMs creation_timestamp() const {
    return pod_group_ != nullptr ? pod_group_->metadata.creation_timestamp : 0;
  }
  // PodGroup status.phase, "" when no PodGroup.
  const std::string& pod_group_phase() const;

  // Tasks by uid (the key views the task's own TaskMeta::uid), flat (api/task_table.h): the
  // pointers FindTask and TasksWithStatus return hold until the next AddTask or DeleteTask, or
  // until the job is moved (a table of one task holds it in place).
  const TaskTable& tasks() const { return tasks_; }
  const TaskInfo* FindTask(std::string_view uid) const;
  // The tasks in `status` (a scan of tasks(); jobs keep counts per status, not per-status
  // sets of uids, which cost more memory than the tasks' own entries).
  std::vector<const TaskInfo*> TasksWithStatus(TaskStatus status) const;
  size_t CountWithStatus(TaskStatus status) const;

  const Resource& allocated() const { return allocated_; }
  // The sum of every task's request, computed (a scan of tasks()): nothing on the cache's or a
  // session's paths reads it (the dumps do), and kept it cost 48 bytes a job (NodeInfo's
  // capacity() is computed likewise).
  Resource total_request() const;

  // Volcano's counters and predicates.
  int32_t ReadyTaskNum() const;    // Bound + Binding + Running + Allocated + Succeeded
  int32_t WaitingTaskNum() const;  // Pipelined
  int32_t ValidTaskNum() const;    // allocated statuses + Succeeded + Pipelined + Pending
  int32_t PendingBestEffortTaskNum() const;
  bool IsReady() const;      // Ready + PendingBestEffort >= minAvailable
  bool IsPipelined() const;  // Waiting + Ready + PendingBestEffort >= minAvailable
  bool IsStarving() const;   // Waiting + Ready < minAvailable
  bool IsPending() const;    // no PodGroup, or phase Pending or ""

  // Records why a pending task did not fit (session plugins); used by FitError.
  void SetTaskFitError(std::string_view uid, std::string reason);
  // The task's own fit error, or null when the session recorded none for it. `session`: fit
  // errors a session kept beside the job (task uid → reason, e.g. JobOutcome's), consulted
  // before the job's own, so that a session need not copy the job to record them.
  const std::string* TaskFitError(std::string_view uid, const TaskFitErrors* session = nullptr) const;
  // Volcano's text: "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Undetermined"
  // (histograms as "<count> <reason>" sorted lexicographically).
  std::string FitError(const TaskFitErrors* session = nullptr) const;

  uint64_t generation() const { return generation_; }
  void set_generation(uint64_t g) { generation_ = g; }

 private:
  // First, beside the reference count in front of the object: see NodeInfo's.
  uint64_t generation_ = 0;
  // Shared, not copied, by the job's versions and snapshot copies (a deep copy made one
  // heap string per job: ids are longer than the inline 15 characters), and interned
  // (k8s::InternShared): the job's tasks and its cache slot hold the same block, whose
  // characters are in it (api/k8s/shared_string.h: one 32-byte block for an id of up to 19
  // characters, where a k8s::Shared<std::string> took 48 and 32 bytes). The name is not kept
  // beside it: it is the PodGroup's, or the id's own.
  k8s::SharedString uid_;
  // The queue repeats from job to job: interned (api/k8s/interned.h), one pointer instead of
  // a 32-byte std::string. The namespace, the creation time, minMember and the phase are read
  // from the PodGroup block, which copies share (the last two are one pointer further for the
  // session, which reads them of every job it closes; as fields they cost 16 bytes a job).
  k8s::Interned queue_;
  int32_t priority_ = 0;
  // What few jobs have: the PodGroup's minTaskMember and minResources, and the fit errors a
  // session recorded. One pointer, null when the job has none of them, that copies of the job
  // share (copied before a write while shared). A JobInfo was then 224 bytes and its
  // make_shared block tcmalloc's 240-byte class (264 bytes and the 288-byte class with the fit
  // errors, the namespace, the creation time, minMember and the phase as fields of their own);
  // see status_count_ for today's.
  struct Rare : boost::intrusive_ref_counter<Rare, boost::thread_safe_counter> {
    k8s::Shared<std::map<std::string, int32_t, std::less<>>> task_min_available;
    Resource min_resources;
    std::map<std::string, std::string, std::less<>> fit_errors;  // task uid → reason
  };
  boost::intrusive_ptr<Rare> rare_;
  // The block to write: this job's own (made, or copied when shared).
  Rare& MutableRare();
  boost::intrusive_ptr<const JobPodGroup> pod_group_;
  TaskTable tasks_{TaskInfo::kByUid};
  // Tasks per status, but for the last (Unknown): that one is the rest of the tasks (CountAt),
  // so that a JobInfo is 160 bytes and its make_shared block tcmalloc's 176-byte class (224
  // with total_request() kept, 240 with it and ten counts).
  std::array<int32_t, kTaskStatusCount - 1> status_count_{};
  int32_t CountAt(int index) const;
  void AddToCount(int index, int32_t d) {
    if (index < kTaskStatusCount - 1) status_count_[static_cast<size_t>(index)] += d;
  }
  // Tasks Pending and best-effort (IsReady asks it of every job a session closes: counted as
  // the tasks come, go and change status, not by a scan). Beside the nine counts' 36 bytes.
  int32_t pending_best_effort_ = 0;
  Resource allocated_;
};

}  // namespace volcache
