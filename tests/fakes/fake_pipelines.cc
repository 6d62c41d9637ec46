#include "tests/fakes/fake_pipelines.h"

#include <memory>

namespace volcache::testing {

void FakeBinder::Script(const std::string& task_key, BindFault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  script_[task_key].push_back(fault);
}

BindFault FakeBinder::NextFault(const std::string& key) {
  if (auto it = script_.find(key); it != script_.end() && !it->second.empty()) {
    BindFault f = it->second.front();
    it->second.pop_front();
    return f;
  }
  if (random_fault_p_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < random_fault_p_) {
    return static_cast<BindFault>(1 + rng_() % 4);
  }
  return BindFault::kNone;
}

std::vector<Status> FakeBinder::Bind(const std::vector<BindContext*>& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_;
  batch_sizes_.push_back(batch.size());
  std::vector<Status> out;
  for (BindContext* ctx : batch) {
    const std::string key(ctx->task.key());
    // The API server refuses to bind a pod twice, whatever the fault script says.
    k8s::PodPtr current;
    if (store_) {
      auto p = store_->GetPod(ctx->task.namespace_(), ctx->task.name());
      if (p.ok()) current = *p;
    }
    if (current && !current->spec.node_name.empty()) {
      out.push_back(
          Status::Conflict("pod " + key + " is already assigned to node " + current->spec.node_name));
      continue;
    }
    BindFault f = NextFault(key);
    auto apply = [&] {
      ++effective_[key];
      if (store_ && current) {
        auto bound = std::make_shared<k8s::Pod>(*current);
        bound->spec.node_name = ctx->node_name;
        ApplyPodPatch(ctx->pod_patch, bound->metadata);
        int rv = bound->metadata.resource_version.empty() ? 0 : std::stoi(bound->metadata.resource_version);
        bound->metadata.resource_version = std::to_string(rv + 1);
        store_->PutPod(bound);
      }
    };
    switch (f) {
      case BindFault::kNone:
        apply();
        out.push_back(Status::Ok());
        break;
      case BindFault::kError:
        out.push_back(Status::Unavailable("injected: binding " + key + " failed"));
        break;
      case BindFault::kTimeout:
        // The request may or may not have reached the server: here it did.
        apply();
        out.push_back(Status::DeadlineExceeded("injected: binding " + key + " timed out"));
        break;
      case BindFault::kConflict:
        out.push_back(Status::Conflict("injected: conflict binding " + key));
        break;
      case BindFault::kAlreadyBound:
        apply();
        out.push_back(Status::Conflict("injected: pod " + key + " is already bound"));
        break;
    }
  }
  return out;
}

std::map<std::string, int> FakeBinder::effective_binds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return effective_;
}

std::vector<size_t> FakeBinder::batch_sizes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batch_sizes_;
}

int64_t FakeBinder::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

Status FakeEvictor::Evict(const k8s::Pod& pod, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_next_ > 0 ||
      (random_fault_p_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < random_fault_p_)) {
    if (fail_next_ > 0) --fail_next_;
    return Status::Unavailable("injected: evicting " + pod.metadata.name + " failed");
  }
  evicted_.push_back(pod.metadata.namespace_ + "/" + pod.metadata.name);
  return Status::Ok();
}

std::vector<std::string> FakeEvictor::evicted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evicted_;
}

Status FakeStatusUpdater::MaybeFail() {
  if (fail_next_ > 0 ||
      (random_fault_p_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < random_fault_p_)) {
    if (fail_next_ > 0) --fail_next_;
    return Status::Unavailable("injected: status write failed");
  }
  return Status::Ok();
}

Status FakeStatusUpdater::UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) {
  std::lock_guard<std::mutex> lock(mu_);
  VC_RETURN_IF_ERROR(MaybeFail());
  pod_conditions_.emplace_back(pod.metadata.namespace_ + "/" + pod.metadata.name, condition);
  return Status::Ok();
}

Status FakeStatusUpdater::UpdatePodGroup(const k8s::PodGroup& pg) {
  std::lock_guard<std::mutex> lock(mu_);
  VC_RETURN_IF_ERROR(MaybeFail());
  pod_groups_.push_back(pg);
  return Status::Ok();
}

Status FakeStatusUpdater::UpdateQueueStatus(const k8s::Queue& queue) {
  std::lock_guard<std::mutex> lock(mu_);
  VC_RETURN_IF_ERROR(MaybeFail());
  queues_.push_back(queue);
  return Status::Ok();
}

std::vector<std::pair<std::string, k8s::PodCondition>> FakeStatusUpdater::pod_conditions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pod_conditions_;
}

std::vector<k8s::PodGroup> FakeStatusUpdater::pod_groups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pod_groups_;
}

std::vector<k8s::Queue> FakeStatusUpdater::queues() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queues_;
}

void FakeEventRecorder::Event(const EventRef& object, const std::string& type, const std::string& reason,
                              const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back({object, type, reason, message});
}

std::vector<RecordedEvent> FakeEventRecorder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

}  // namespace volcache::testing
