#include "kube/rest_writers.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "api/fmt.h"
#include "kube/reflector.h"

namespace volcache::kube {

namespace {

using json = nlohmann::json;

constexpr char kStrategicMerge[] = "application/strategic-merge-patch+json";
constexpr char kMergePatch[] = "application/merge-patch+json";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json ConditionJson(const k8s::PodCondition& c) {
  json j = {{"type", c.type}, {"status", c.status}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.message.empty()) j["message"] = c.message;
  j["lastTransitionTime"] = FormatTimestamp(c.last_transition_time ? c.last_transition_time : NowMs());
  return j;
}

json ResourceListJson(const k8s::ResourceList& list) {
  json j = json::object();
  for (const auto& [name, q] : list) j[name] = q.ToDecimalString();
  return j;
}

// 2xx → OK; 404 → OK when `gone_ok` (the object left: nothing to write).
Status Check(const Result<HttpResponse>& resp, std::string_view what, bool gone_ok) {
  if (!resp.ok()) return resp.status().WithPrefix(what);
  if (gone_ok && resp->status == 404) return Status::Ok();
  return ApiError(resp->status, resp->body, what);
}

std::string PodDesc(const k8s::Pod& pod) { return pod.metadata.namespace_ + "/" + pod.metadata.name; }

}  // namespace

std::string FormatTimestamp(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// --------------------------------------------------------------------------- binder

Status RestBinder::BindOne(const TaskInfo& task, const std::string& node) {
  json meta = {{"name", task.name()}, {"namespace", task.namespace_()}};
  if (!task.uid().empty()) meta["uid"] = task.uid();
  if (task.meta && task.meta->pod && !task.annotations().empty()) {
    json ann = json::object();
    for (const auto& [k, v] : task.annotations()) ann[k] = v;
    meta["annotations"] = std::move(ann);
  }
  json body = {{"apiVersion", "v1"},
               {"kind", "Binding"},
               {"metadata", std::move(meta)},
               {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  const std::string path = ObjectPath(ResourceKind::kPods, task.namespace_(), task.name()) + "/binding";
  auto resp = client_->Do("POST", path, body.dump());
  return Check(resp, fmt::format("bind {} to {}", task.key(), node), /*gone_ok=*/false);
}

std::vector<Status> RestBinder::Bind(const std::vector<BindContext*>& batch) {
  std::vector<Status> out;
  out.reserve(batch.size());
  for (BindContext* ctx : batch) out.push_back(BindOne(ctx->task, ctx->node_name));
  return out;
}

// -------------------------------------------------------------------------- evictor

Status RestEvictor::Evict(const k8s::Pod& pod, const std::string& reason) {
  const std::string desc = PodDesc(pod);
  const std::string path = ObjectPath(ResourceKind::kPods, pod.metadata.namespace_, pod.metadata.name);
  json conds = json::array();
  for (const auto& c : EvictionConditions(reason, NowMs())) conds.push_back(ConditionJson(c));
  json patch = {{"status", {{"conditions", std::move(conds)}}}};
  auto resp = client_->Do("PATCH", path + "/status", patch.dump(), kStrategicMerge);
  if (resp.ok() && resp->status == 404) return Status::Ok();  // already gone
  VC_RETURN_IF_ERROR(Check(resp, "evict " + desc + ": set conditions", false));
  if (use_eviction_api_) {
    json ev = {{"apiVersion", "policy/v1"},
               {"kind", "Eviction"},
               {"metadata", {{"name", pod.metadata.name}, {"namespace", pod.metadata.namespace_}}}};
    return Check(client_->Do("POST", path + "/eviction", ev.dump()), "evict " + desc + ": eviction", true);
  }
  json opts = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!pod.metadata.uid.empty()) opts["preconditions"] = {{"uid", pod.metadata.uid}};
  return Check(client_->Do("DELETE", path, opts.dump()), "evict " + desc + ": delete", true);
}

// ------------------------------------------------------------------- status updater

Status RestStatusUpdater::UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) {
  json patch = {{"status", {{"conditions", json::array({ConditionJson(condition)})}}}};
  const std::string path = ObjectPath(ResourceKind::kPods, pod.metadata.namespace_, pod.metadata.name) + "/status";
  return Check(client_->Do("PATCH", path, patch.dump(), kStrategicMerge),
               fmt::format("update pod {} condition {}", PodDesc(pod), condition.type), true);
}

Status RestStatusUpdater::UpdatePodGroup(const k8s::PodGroup& pg) {
  json conds = json::array();
  for (const auto& c : pg.status.conditions) {
    json j = {{"type", c.type}, {"status", c.status}};
    if (!c.transition_id.empty()) j["transitionID"] = c.transition_id;
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    j["lastTransitionTime"] = FormatTimestamp(c.last_transition_time ? c.last_transition_time : NowMs());
    conds.push_back(std::move(j));
  }
  json status = {{"phase", pg.status.phase},
                 {"conditions", std::move(conds)},
                 {"running", pg.status.running},
                 {"succeeded", pg.status.succeeded},
                 {"failed", pg.status.failed}};
  json patch = {{"status", std::move(status)}};
  const std::string path =
      ObjectPath(ResourceKind::kPodGroups, pg.metadata.namespace_, pg.metadata.name) + "/status";
  return Check(client_->Do("PATCH", path, patch.dump(), kMergePatch),
               fmt::format("update PodGroup {}/{} status", pg.metadata.namespace_, pg.metadata.name), true);
}

Status RestStatusUpdater::UpdateQueueStatus(const k8s::Queue& queue) {
  json patch = {{"status", {{"allocated", ResourceListJson(queue.status.allocated)}}}};
  const std::string path = ObjectPath(ResourceKind::kQueues, "", queue.metadata.name) + "/status";
  return Check(client_->Do("PATCH", path, patch.dump(), kMergePatch),
               fmt::format("update Queue {} status", queue.metadata.name), true);
}

// ------------------------------------------------------------------- event recorder

RestEventRecorder::RestEventRecorder(RestClient* client, std::string component, size_t capacity)
    : client_(client), component_(std::move(component)), capacity_(capacity) {
  thread_ = std::thread([this] { Run(); });
}

RestEventRecorder::~RestEventRecorder() { Stop(); }

void RestEventRecorder::Event(const EventRef& object, const std::string& type, const std::string& reason,
                              const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= capacity_) {
      ++stats_.dropped;
      return;
    }
    queue_.push_back({object, type, reason, message, NowMs()});
  }
  cv_.notify_one();
}

void RestEventRecorder::Stop(Duration timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      // fallthrough to join below (another caller may have joined already)
    } else {
      stopping_ = true;
      drain_deadline_ = std::chrono::steady_clock::now() + timeout;
    }
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

RestEventRecorder::Stats RestEventRecorder::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void RestEventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    if (stopping_ && std::chrono::steady_clock::now() > drain_deadline_) {
      stats_.dropped += queue_.size();
      queue_.clear();
      return;
    }
    Pending e = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status s = Post(e);
    lock.lock();
    if (s.ok()) {
      ++stats_.posted;
    } else {
      ++stats_.failed;
      spdlog::debug("event {} on {} {}: {}", e.reason, e.object.kind, e.object.name, s);
    }
  }
}

Status RestEventRecorder::Post(const Pending& e) {
  const std::string ns = e.object.namespace_.empty() ? "default" : e.object.namespace_;
  static std::atomic<uint64_t> seq{0};
  const std::string name = fmt::format("{}.{:x}{:04x}", e.object.name, e.time_ms * 1000, seq++ & 0xffff);
  json involved = {{"kind", e.object.kind}, {"name", e.object.name}};
  if (!e.object.namespace_.empty()) involved["namespace"] = e.object.namespace_;
  if (!e.object.uid.empty()) involved["uid"] = e.object.uid;
  involved["apiVersion"] = e.object.kind == "Pod" ? "v1" : "scheduling.volcano.sh/v1beta1";
  const std::string ts = FormatTimestamp(e.time_ms);
  json body = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"name", name}, {"namespace", ns}}},
               {"involvedObject", std::move(involved)},
               {"reason", e.reason},
               {"message", e.message},
               {"type", e.type},
               {"source", {{"component", component_}}},
               {"reportingComponent", component_},
               {"firstTimestamp", ts},
               {"lastTimestamp", ts},
               {"count", 1}};
  auto resp = client_->Do("POST", fmt::format("/api/v1/namespaces/{}/events", ns), body.dump());
  return Check(resp, fmt::format("event {} on {} {}", e.reason, e.object.kind, e.object.name), false);
}

// ---------------------------------------------------------------------------- queues

Status CreateQueueIfMissing(RestClient* client, const std::string& name, bool reclaimable) {
  json body = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
               {"kind", "Queue"},
               {"metadata", {{"name", name}}},
               {"spec", {{"weight", 1}, {"reclaimable", reclaimable}}}};
  auto resp = client->Do("POST", CollectionPath(ResourceKind::kQueues), body.dump());
  if (!resp.ok()) return resp.status().WithPrefix("create Queue " + name);
  if (resp->status == 409) return Status::Ok();
  return ApiError(resp->status, resp->body, "create Queue " + name);
}

}  // namespace volcache::kube
