#include "api/job_info.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/check.h"
#include "api/k8s/compact.h"
#include "api/resource_list.h"

namespace volcache {

namespace {

// "<count> <reason>" entries sorted lexicographically (Go's sort.Strings), joined ", ".
// Counted reasons, each once (the views point into the job, the session's fit errors or
// static names).
using Histogram = std::vector<std::pair<std::string_view, int64_t>>;

void Count(Histogram& h, std::string_view reason, int64_t n) {
  for (auto& [r, c] : h) {
    if (r == reason) {
      c += n;
      return;
    }
  }
  h.emplace_back(reason, n);
}

// Appends "<count> <reason>" entries sorted as strings (Volcano sorts the formatted entries),
// joined by ", ".
void AppendSortedHistogram(std::string& out, const Histogram& h) {
  std::vector<std::string> parts;
  parts.reserve(h.size());
  for (const auto& [reason, count] : h) {
    std::string part = std::to_string(count);
    part += ' ';
    part += reason;
    parts.push_back(std::move(part));
  }
  std::sort(parts.begin(), parts.end());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += ", ";
    out += parts[i];
  }
}

constexpr std::string_view kUndetermined = "Undetermined";  // Volcano PodReasonUndetermined
// A job reserves room for at most this many tasks ahead of their arrival (SetPodGroup).
constexpr size_t kTasksReservedAtMost = 4096;

}  // namespace

JobInfo::JobInfo(JobId uid) : uid_(k8s::InternShared(uid)) {}

JobInfo::JobInfo(k8s::SharedString uid) : uid_(std::move(uid)) {}

JobPodGroup::JobPodGroup(const k8s::PodGroup& pg) : spec(pg.spec), status(pg.status) {
  namespace_ = pg.metadata.namespace_;
  metadata.uid = pg.metadata.uid;
  metadata.resource_version = pg.metadata.resource_version;
  metadata.creation_timestamp = pg.metadata.creation_timestamp;
  metadata.labels = pg.metadata.labels;
  metadata.annotations = pg.metadata.annotations;
}

k8s::PodGroup JobPodGroup::ToPodGroup(std::string_view name) const {
  k8s::PodGroup pg;
  pg.metadata.name = name;
  pg.metadata.namespace_ = namespace_;
  pg.metadata.uid = metadata.uid;
  pg.metadata.resource_version = metadata.resource_version;
  pg.metadata.creation_timestamp = metadata.creation_timestamp;
  pg.metadata.labels = metadata.labels;
  pg.metadata.annotations = metadata.annotations;
  pg.spec = spec;
  pg.status = status;
  return pg;
}

Status JobInfo::SetPodGroup(const std::shared_ptr<const k8s::PodGroup>& pg, std::string_view default_queue) {
  if (pg == nullptr)
    return Status::InvalidArgument(fmt::format("job {}: SetPodGroup with a null PodGroup", uid()));
  return SetPodGroup(*pg, default_queue);
}

Status JobInfo::SetPodGroup(const k8s::PodGroup& pg, std::string_view default_queue) {
  Result<Resource> min_resources = ResourceFromList(pg.spec.min_resources(), "spec.minResources");
  if (!min_resources.ok()) {
    return min_resources.status().WithPrefix(
        fmt::format("PodGroup {}/{}", pg.metadata.namespace_, pg.metadata.name));
  }
  queue_ = pg.spec.queue.empty() ? k8s::Interned(default_queue) : pg.spec.queue;
  if (!pg.spec.min_task_member().empty() || !pg.spec.min_resources().empty()) {
    Rare& rare = MutableRare();
    rare.task_min_available = pg.spec.min_task_member();
    rare.min_resources = std::move(min_resources).value();
  } else if (rare_ != nullptr && rare_->fit_errors.empty()) {
    rare_.reset();
  } else if (rare_ != nullptr) {
    Rare& rare = MutableRare();
    rare.task_min_available = {};
    rare.min_resources = Resource();
  }
  pod_group_ = new JobPodGroup(pg);
  // The gang's tasks arrive one by one, and a table grown a quarter at a time would copy
  // itself about eight times on the way to ten: room for minMember of them at once (bounded,
  // so that a wrong minMember cannot make it large).
  if (const int32_t min = pod_group_->spec.min_member; min > 0)
    tasks_.reserve(std::min<size_t>(static_cast<size_t>(min), kTasksReservedAtMost));
  ++generation_;
  return Status::Ok();
}

k8s::PodGroup JobInfo::PodGroupObject() const {
  VC_CHECK(pod_group_ != nullptr, "job " + uid() + ": PodGroupObject without a PodGroup");
  return pod_group_->ToPodGroup(name());
}

void JobInfo::SetPodGroupPhase(std::string_view phase) {
  VC_CHECK(pod_group_ != nullptr, "job " + uid() + ": SetPodGroupPhase without a PodGroup");
  auto pg = boost::intrusive_ptr<JobPodGroup>(new JobPodGroup(*pod_group_));  // a fresh count
  pg->status.phase = phase;
  pod_group_ = std::move(pg);
  ++generation_;
}

int32_t JobInfo::CountAt(int index) const {
  if (index < kTaskStatusCount - 1) return status_count_[static_cast<size_t>(index)];
  int32_t rest = static_cast<int32_t>(tasks_.size());
  for (const int32_t n : status_count_) rest -= n;
  return rest;
}

const std::map<std::string, int32_t, std::less<>>& JobInfo::task_min_available() const {
  static const std::map<std::string, int32_t, std::less<>> kNone;
  return rare_ != nullptr ? rare_->task_min_available.get() : kNone;
}

const std::string& JobInfo::pod_group_phase() const {
  static const std::string kNone;
  if (pod_group_ == nullptr) return kNone;
  return pod_group_->status.phase;
}

const std::string& JobInfo::namespace_() const {
  static const std::string kNone;
  if (pod_group_ == nullptr) return kNone;
  return pod_group_->namespace_;
}

JobInfo::Rare& JobInfo::MutableRare() {
  if (rare_ == nullptr) {
    rare_ = new Rare();
  } else if (rare_->use_count() > 1) {
    rare_ = new Rare(*rare_);  // a fresh count: intrusive_ref_counter's copy starts at 0
  }
  return *rare_;
}

std::string_view JobInfo::name() const {
  std::string_view id = uid();
  const size_t slash = id.find('/');
  return slash == std::string_view::npos ? id : id.substr(slash + 1);
}

void JobInfo::UnsetPodGroup() {
  pod_group_ = nullptr;
  ++generation_;
}

Status JobInfo::AddTask(const TaskInfo& task) {
  // The key views the stored copy's uid (the same shared TaskMeta as `task`'s).
  auto [stored, inserted] = tasks_.try_emplace(task);
  if (!inserted) {
    return Status::AlreadyExists(
        fmt::format("task {} ({}) is already in job {}", task.key(), task.uid(), uid()));
  }
  const TaskInfo& t = *stored;
  AddToCount(TaskStatusIndex(t.status), 1);
  if (t.status == TaskStatus::kPending && t.best_effort) ++pending_best_effort_;
  if (IsAllocatedStatus(t.status)) allocated_.Add(t.resreq());
  ++generation_;
  return Status::Ok();
}

Status JobInfo::DeleteTask(std::string_view uid) {
  auto it = tasks_.find(uid);
  if (it == tasks_.end()) return Status::NotFound(fmt::format("task {} is not in job {}", uid, this->uid()));
  const TaskInfo& t = it->second;
  AddToCount(TaskStatusIndex(t.status), -1);
  if (t.status == TaskStatus::kPending && t.best_effort) --pending_best_effort_;
  if (IsAllocatedStatus(t.status)) allocated_.SubUnchecked(t.resreq());
  if (rare_ != nullptr && rare_->fit_errors.find(uid) != rare_->fit_errors.end()) {
    auto& errors = MutableRare().fit_errors;
    errors.erase(errors.find(uid));
  }
  tasks_.erase(it);
  ++generation_;
  return Status::Ok();
}

Status JobInfo::UpdateTaskStatus(std::string_view uid, TaskStatus status) {
  TaskInfo* found = tasks_.find_mutable(uid);
  if (found == nullptr) return Status::NotFound(fmt::format("task {} is not in job {}", uid, this->uid()));
  TaskInfo& t = *found;
  const bool was_allocated = IsAllocatedStatus(t.status);
  const bool now_allocated = IsAllocatedStatus(status);
  AddToCount(TaskStatusIndex(t.status), -1);
  AddToCount(TaskStatusIndex(status), 1);
  if (t.best_effort) {
    pending_best_effort_ +=
        (status == TaskStatus::kPending ? 1 : 0) - (t.status == TaskStatus::kPending ? 1 : 0);
  }
  if (was_allocated && !now_allocated) allocated_.SubUnchecked(t.resreq());
  if (!was_allocated && now_allocated) allocated_.Add(t.resreq());
  t.status = status;
  ++generation_;
  return Status::Ok();
}

const TaskInfo* JobInfo::FindTask(std::string_view uid) const {
  auto it = tasks_.find(uid);
  return it == tasks_.end() ? nullptr : &it->second;
}

std::vector<const TaskInfo*> JobInfo::TasksWithStatus(TaskStatus status) const {
  std::vector<const TaskInfo*> out;
  const int32_t n = CountAt(TaskStatusIndex(status));
  if (n == 0) return out;
  out.reserve(static_cast<size_t>(n));
  for (const auto& [_, t] : tasks_) {
    if (t.status == status) out.push_back(&t);
  }
  return out;
}

size_t JobInfo::CountWithStatus(TaskStatus status) const {
  return static_cast<size_t>(CountAt(TaskStatusIndex(status)));
}

Resource JobInfo::total_request() const {
  Resource total;
  for (const auto& [_, t] : tasks_) total.Add(t.resreq());
  return total;
}

int32_t JobInfo::ReadyTaskNum() const {
  size_t n = 0;
  for (TaskStatus s : {TaskStatus::kBound, TaskStatus::kBinding, TaskStatus::kRunning, TaskStatus::kAllocated,
                       TaskStatus::kSucceeded}) {
    n += CountWithStatus(s);
  }
  return static_cast<int32_t>(n);
}

int32_t JobInfo::WaitingTaskNum() const {
  return static_cast<int32_t>(CountWithStatus(TaskStatus::kPipelined));
}

int32_t JobInfo::ValidTaskNum() const {
  size_t n = 0;
  for (int i = 0; i < kTaskStatusCount; ++i) {
    const TaskStatus s = TaskStatusFromIndex(i);
    if (IsAllocatedStatus(s) || s == TaskStatus::kSucceeded || s == TaskStatus::kPipelined ||
        s == TaskStatus::kPending) {
      n += static_cast<size_t>(CountAt(i));
    }
  }
  return static_cast<int32_t>(n);
}

int32_t JobInfo::PendingBestEffortTaskNum() const { return pending_best_effort_; }

bool JobInfo::IsReady() const { return ReadyTaskNum() + PendingBestEffortTaskNum() >= min_available(); }

bool JobInfo::IsPipelined() const {
  return WaitingTaskNum() + ReadyTaskNum() + PendingBestEffortTaskNum() >= min_available();
}

bool JobInfo::IsStarving() const { return WaitingTaskNum() + ReadyTaskNum() < min_available(); }

bool JobInfo::IsPending() const {
  const std::string& phase = pod_group_phase();
  return phase.empty() || phase == "Pending";
}

void JobInfo::SetTaskFitError(std::string_view uid, std::string reason) {
  if (tasks_.find(uid) == tasks_.end()) return;
  auto& errors = MutableRare().fit_errors;
  if (auto it = errors.find(uid); it != errors.end()) {
    it->second = std::move(reason);
  } else {
    errors.emplace(std::string(uid), std::move(reason));
  }
  ++generation_;
}

const std::string* JobInfo::TaskFitError(std::string_view uid, const TaskFitErrors* session) const {
  if (session != nullptr) {
    // A session records few (the tasks that fit no node): a scan beats building an index.
    for (const auto& [task, reason] : *session) {
      if (task == uid) return &reason;
    }
  }
  if (rare_ == nullptr) return nullptr;
  auto it = rare_->fit_errors.find(uid);
  return it == rare_->fit_errors.end() ? nullptr : &it->second;
}

std::string JobInfo::FitError(const TaskFitErrors* session) const {
  // Like Volcano, the histogram has an entry for every status that holds tasks, plus
  // minAvailable.
  Histogram reasons;
  for (int i = 0; i < kTaskStatusCount; ++i) {
    if (const int32_t n = CountAt(i); n != 0) Count(reasons, TaskStatusName(TaskStatusFromIndex(i)), n);
  }
  reasons.emplace_back("minAvailable", min_available());
  std::string msg(kPodGroupNotReady);
  msg += ", ";
  AppendSortedHistogram(msg, reasons);

  reasons.clear();
  for (const TaskInfo* t : TasksWithStatus(TaskStatus::kPending)) {
    const std::string* reason = TaskFitError(t->uid(), session);
    Count(reasons, reason == nullptr ? kUndetermined : std::string_view(*reason), 1);
  }
  if (!reasons.empty()) {
    msg += "; ";
    msg += TaskStatusName(TaskStatus::kPending);
    msg += ": ";
    AppendSortedHistogram(msg, reasons);
  }
  return msg;
}

}  // namespace volcache
