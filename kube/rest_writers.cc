#include "kube/rest_writers.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>

#include "api/fmt.h"
#include "kube/reflector.h"
#include "workers/backoff.h"

namespace volcache::kube {

namespace {

using json = nlohmann::json;

constexpr char kMergePatch[] = "application/merge-patch+json";

json ConditionJson(const k8s::PodCondition& c) {
  json j = {{"type", c.type}, {"status", c.status}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.message.empty()) j["message"] = c.message;
  j["lastTransitionTime"] = FormatTimestamp(c.last_transition_time ? c.last_transition_time : WallNowMs());
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

constexpr char kVolcanoGroup[] = "scheduling.volcano.sh";

// Logs the missing permission of a 403 (once per verb and resource).
void NoteForbidden(const Result<HttpResponse>& resp, std::string_view verb, std::string_view resource,
                   std::string_view group) {
  if (resp.ok() && resp->status == 403) LogForbiddenOnce(verb, resource, group);
}

// The answer to a write of an object at `object_path`. 2xx → OK. 404 → OK only when a GET of
// the object confirms it is gone (a 404 for a subresource or a route that does not exist is
// an error, not "gone"). Any other answer → the API error.
// `resource`/`group`: the object's, named when the confirming GET is forbidden.
Status CheckWrite(RestClient* client, const Result<HttpResponse>& resp, std::string_view what,
                  const std::string& object_path, std::string_view resource, std::string_view group) {
  if (!resp.ok()) return resp.status().WithPrefix(what);
  if (resp->status != 404) return ApiError(resp->status, resp->body, what);
  auto get = client->Do("GET", object_path, {}, "application/json", RequestClass::kStatus);
  NoteForbidden(get, "get", resource, group);
  if (!get.ok()) return get.status().WithPrefix(fmt::format("{}: HTTP 404, and confirming with a GET", what));
  if (get->status == 404) return Status::Ok();  // gone: nothing left to write
  if (get->status >= 200 && get->status < 300) {
    return Status::NotFound(fmt::format("{}: HTTP 404 although GET {} finds the object: {}", what,
                                        object_path, ApiError(404, resp->body, "write").message()));
  }
  return ApiError(get->status, get->body, fmt::format("{}: HTTP 404, and confirming with a GET", what));
}

}  // namespace

std::string ForbiddenMessage(std::string_view verb, std::string_view resource, std::string_view group) {
  return fmt::format(
      "forbidden: this client's user or service account needs RBAC permission verb \"{}\" on resource \"{}\" "
      "in "
      "API group \"{}\"{} (see deploy/02-clusterrole.yaml)",
      verb, resource, group, group.empty() ? " (the core group)" : "");
}

bool LogForbiddenOnce(std::string_view verb, std::string_view resource, std::string_view group) {
  static Mutex mu;
  static std::set<std::pair<std::string, std::string>> logged;  // guarded by mu
  {
    MutexLock lock(&mu);
    if (!logged.emplace(std::string(verb), std::string(resource)).second) return false;
  }
  spdlog::error("{}", ForbiddenMessage(verb, resource, group));
  return true;
}

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string FormatTimestamp(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// --------------------------------------------------------------------------- binder

namespace {

// Appends `s` as a JSON string literal: '"', '\' and control characters escaped, valid UTF-8
// copied as is, every byte of an invalid UTF-8 sequence replaced by U+FFFD (as Go's
// encoding/json does; nlohmann's dump() would throw instead).
void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < n && p[i] >= lo && p[i] <= hi;
  };
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // The length of a well-formed sequence starting here (RFC 3629), 0 when ill-formed.
    size_t len = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = cont(i + 1) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80,
                          hi = c == 0xED ? 0x9F : 0xBF;  // no overlong, no surrogate
      len = cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned char lo = c == 0xF0 ? 0x90 : 0x80,
                          hi = c == 0xF4 ? 0x8F : 0xBF;  // no overlong, <= U+10FFFF
      len = cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  out.push_back('"');
}

}  // namespace

std::string BindingBody(const TaskInfo& task, const std::string& node, const PodPatch* patch) {
  std::string out;
  out.reserve(256);
  out += R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)";
  AppendJsonString(out, task.name());
  out += R"(,"namespace":)";
  AppendJsonString(out, task.namespace_());
  if (!task.uid().empty()) {
    out += R"(,"uid":)";
    AppendJsonString(out, task.uid());
  }
  const bool has_pod = task.meta && task.meta->pod;
  const bool patched = patch != nullptr && !patch->annotations.empty();
  if ((has_pod && !task.annotations().empty()) || patched) {
    // The server copies these onto the pod: they must agree with the pod patch just applied
    // (its values win, its removals are left out), or the Binding would undo it.
    out += R"(,"annotations":{)";
    bool first = true;
    auto put = [&](const std::string& k, const std::string& v) {
      if (!first) out.push_back(',');
      first = false;
      AppendJsonString(out, k);
      out.push_back(':');
      AppendJsonString(out, v);
    };
    if (has_pod) {
      for (const auto& [k, v] : task.annotations()) {
        if (patched && patch->annotations.count(k)) continue;
        put(k, v);
      }
    }
    if (patched) {
      for (const auto& [k, v] : patch->annotations) {
        if (v) put(k, *v);
      }
    }
    out.push_back('}');
  }
  out += R"(},"target":{"apiVersion":"v1","kind":"Node","name":)";
  AppendJsonString(out, node);
  out += "}}";
  return out;
}

Status RestBinder::BindOne(const TaskInfo& task, const std::string& node) {
  return PostBinding(task, node, nullptr);
}

Status RestBinder::PostBinding(const TaskInfo& task, const std::string& node, const PodPatch* patch) {
  const std::string path = ObjectPath(ResourceKind::kPods, task.namespace_(), task.name()) + "/binding";
  auto resp = client_->Do("POST", path, BindingBody(task, node, patch));
  if (resp.ok() && resp->status >= 200 && resp->status < 300) return Status::Ok();
  const std::string what = fmt::format("bind {} to {}", task.key(), node);
  NoteForbidden(resp, "create", "pods/binding", "");
  if (resp.ok() && resp->status == 409) {
    // A binding is idempotent for the same node: an earlier attempt (its answer lost, or a
    // retry on a fresh connection) may have bound the pod already.
    auto get = client_->Do("GET", ObjectPath(ResourceKind::kPods, task.namespace_(), task.name()));
    NoteForbidden(get, "get", "pods", "");
    if (get.ok() && get->status == 200) {
      json pod = json::parse(get->body, nullptr, false);
      if (pod.is_object() && pod.contains("spec") && pod["spec"].is_object() &&
          pod["spec"].value("nodeName", "") == node &&
          (task.uid().empty() || !pod.contains("metadata") ||
           pod["metadata"].value("uid", "") == task.uid())) {
        return Status::Ok();
      }
    }
  }
  return Check(resp, what, /*gone_ok=*/false);
}

namespace {

// JSON for the pod's metadata keys of `patch`: a value sets, nullopt becomes null (removes).
json PodPatchMetadata(const PodPatch& patch, const std::string& uid) {
  json meta = json::object();
  if (!uid.empty()) meta["uid"] = uid;  // a precondition: a pod recreated under the name differs
  auto put = [&](const char* field, const std::map<std::string, std::optional<std::string>>& keys) {
    if (keys.empty()) return;
    json j = json::object();
    for (const auto& [k, v] : keys) j[k] = v ? json(*v) : json(nullptr);
    meta[field] = std::move(j);
  };
  put("annotations", patch.annotations);
  put("labels", patch.labels);
  return meta;
}

// Invalid UTF-8 in keys or values becomes U+FFFD instead of an exception.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The patch that gives back, for each key `patch` names, its value in `before` (absent → remove).
PodPatch UndoOf(const PodPatch& patch, const k8s::StringMap& ann_before,
                const k8s::StringMap& labels_before) {
  PodPatch undo;
  auto fill = [](const auto& keys, const k8s::StringMap& before, auto& out) {
    for (const auto& [k, v] : keys) {
      auto it = before.find(k);
      out[k] = it == before.end() ? std::nullopt : std::optional<std::string>(it->second);
    }
  };
  fill(patch.annotations, ann_before, undo.annotations);
  fill(patch.labels, labels_before, undo.labels);
  return undo;
}

// The value of metadata.<field>[key] in a pod object, nullopt when absent.
std::optional<std::string> MetaValue(const json& pod, const char* field, const std::string& key) {
  if (!pod.contains("metadata") || !pod["metadata"].is_object()) return std::nullopt;
  const json& m = pod["metadata"];
  if (!m.contains(field) || !m[field].is_object() || !m[field].contains(key) || !m[field][key].is_string()) {
    return std::nullopt;
  }
  return m[field][key].get<std::string>();
}

std::string MetaString(const json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const json& m = obj["metadata"];
  return m.contains(field) && m[field].is_string() ? m[field].get<std::string>() : "";
}

}  // namespace

Status RestBinder::BindOne(const BindContext& ctx) {
  const TaskInfo& task = ctx.task;
  if (ctx.pod_patch.empty()) return BindOne(task, ctx.node_name);
  const std::string pod_path = ObjectPath(ResourceKind::kPods, task.namespace_(), task.name());
  json forward = {{"metadata", PodPatchMetadata(ctx.pod_patch, task.uid())}};
  auto resp = client_->Do("PATCH", pod_path, Dump(forward), kMergePatch);
  NoteForbidden(resp, "patch", "pods", "");
  if (!resp.ok() || resp->status < 200 || resp->status >= 300) {
    return Check(resp, fmt::format("bind {} to {}: patch the pod's metadata", task.key(), ctx.node_name),
                 /*gone_ok=*/false);
  }
  const json answer = json::parse(resp->body, nullptr, false);
  Status bound = PostBinding(task, ctx.node_name, &ctx.pod_patch);
  if (bound.ok()) return bound;
  Status undone = UndoPodPatch(ctx, MetaString(answer, "resourceVersion"));
  if (undone.ok()) return bound;
  spdlog::warn("bind {} to {} failed and its pod patch stays: {}", task.key(), ctx.node_name, undone);
  return Status(bound.code(), bound.message() + "; and undoing the pod patch failed: " + undone.ToString());
}

Status RestBinder::UndoPodPatch(const BindContext& ctx, std::string rv) {
  const TaskInfo& task = ctx.task;
  const std::string what = fmt::format("undo the pod patch of {}", task.key());
  const std::string pod_path = ObjectPath(ResourceKind::kPods, task.namespace_(), task.name());
  static const k8s::StringMap kNone;
  const bool has_pod = task.meta != nullptr && task.meta->pod != nullptr;
  PodPatch undo = UndoOf(ctx.pod_patch, has_pod ? task.pod().metadata.annotations : kNone,
                         has_pod ? task.pod().metadata.labels : kNone);
  for (int attempt = 1;; ++attempt) {
    json meta = PodPatchMetadata(undo, task.uid());
    if (!rv.empty()) meta["resourceVersion"] = rv;
    auto resp = client_->Do("PATCH", pod_path, Dump(json{{"metadata", std::move(meta)}}), kMergePatch);
    if (resp.ok() && resp->status >= 200 && resp->status < 300) return Status::Ok();
    if (resp.ok() && resp->status == 404) return Status::Ok();  // gone: nothing to undo
    if (!resp.ok() || resp->status != 409 || attempt >= kUndoPatchAttempts) {
      return Check(resp, attempt > 1 ? fmt::format("{} (attempt {})", what, attempt) : what, false);
    }
    // Changed since our PATCH (or a different pod under the name): re-read, and restore only
    // the keys that still hold what we wrote.
    auto get = client_->Do("GET", pod_path);
    if (!get.ok()) return get.status().WithPrefix(what + ": re-reading after a conflict");
    if (get->status == 404) return Status::Ok();
    if (get->status != 200) return ApiError(get->status, get->body, what + ": re-reading after a conflict");
    const json pod = json::parse(get->body, nullptr, false);
    if (!task.uid().empty() && MetaString(pod, "uid") != task.uid()) return Status::Ok();  // another pod
    rv = MetaString(pod, "resourceVersion");
    auto keep_ours = [&](const char* field, const auto& wrote, auto& out) {
      for (auto it = out.begin(); it != out.end();) {
        it = MetaValue(pod, field, it->first) == wrote.at(it->first) ? std::next(it) : out.erase(it);
      }
    };
    keep_ours("annotations", ctx.pod_patch.annotations, undo.annotations);
    keep_ours("labels", ctx.pod_patch.labels, undo.labels);
    if (undo.empty()) return Status::Ok();
  }
}

// A Bind() call in progress. Lives on the caller's stack; in waiting_ while it has unclaimed
// bindings. `results[i]` is written by the thread that ran binding i, before it takes mu_ to
// count it done; the caller reads the results after seeing done == size under mu_.
struct RestBinder::Batch {
  const std::vector<BindContext*>* contexts;
  std::vector<Status> results;
  size_t next = 0;  // guarded by RestBinder::mu_: the first unclaimed binding
  size_t done = 0;  // guarded by RestBinder::mu_: bindings answered
  CondVar done_cv;  // done == size
};

RestBinder::RestBinder(RestClient* client, RestBinderOptions options)
    : client_(client),
      max_in_flight_(std::max<size_t>(1, options.max_in_flight)),
      free_slots_(max_in_flight_) {
  workers_.reserve(max_in_flight_);
  for (size_t i = 0; i < max_in_flight_; ++i) workers_.emplace_back([this] { Work(); });
}

RestBinder::~RestBinder() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_cv_.SignalAll();
  for (auto& t : workers_) t.join();
}

size_t RestBinder::ClaimLocked(Batch* b) {
  const size_t i = b->next++;
  if (b->next == b->contexts->size()) waiting_.erase(std::find(waiting_.begin(), waiting_.end(), b));
  --free_slots_;
  return i;
}

void RestBinder::RunClaimed(Batch* b, size_t i) {
  {
    MutexUnlock unlock(&mu_);
    const BindContext& ctx = *(*b->contexts)[i];
    b->results[i] = BindOne(ctx);
  }
  ++free_slots_;
  if (++b->done == b->contexts->size()) b->done_cv.Signal();
}

void RestBinder::Work() {
  MutexLock lock(&mu_);
  for (;;) {
    while (!stopping_ && (waiting_.empty() || free_slots_ == 0)) work_cv_.Wait(&mu_);
    if (stopping_) return;  // no Bind() is running (destructor contract): nothing is waiting
    Batch* b = waiting_.front();
    RunClaimed(b, ClaimLocked(b));
  }
}

std::vector<Status> RestBinder::Bind(const std::vector<BindContext*>& batch) {
  const size_t n = batch.size();
  if (n == 0) return {};
  Batch b;
  b.contexts = &batch;
  b.results.resize(n);
  MutexLock lock(&mu_);
  waiting_.push_back(&b);
  // This thread takes a binding itself when a slot is free; workers take the others.
  const size_t helpers = std::min(n - 1, free_slots_ > 0 ? free_slots_ - 1 : 0);
  for (size_t k = 0; k < helpers; ++k) work_cv_.Signal();
  for (;;) {
    if (b.next < n && free_slots_ > 0) {
      RunClaimed(&b, ClaimLocked(&b));
      continue;
    }
    // This thread takes no further binding: the slot it freed goes to a worker (for this
    // batch's rest or another batch). A worker that frees a slot takes the next binding itself.
    if (!waiting_.empty() && free_slots_ > 0) work_cv_.Signal();
    if (b.done == n) break;
    while (b.done != n) b.done_cv.Wait(&mu_);
  }
  return std::move(b.results);
}

// -------------------------------------------------------------------------- evictor

Status RestEvictor::Evict(const k8s::Pod& pod, const std::string& reason) {
  const std::string desc = PodDesc(pod);
  const std::string path = ObjectPath(ResourceKind::kPods, pod.metadata.namespace_, pod.metadata.name);
  json conds = json::array();
  for (const auto& c : EvictionConditions(reason, WallNowMs())) conds.push_back(ConditionJson(c));
  json patch = {{"status", {{"conditions", std::move(conds)}}}};
  auto resp = client_->Do("PATCH", path + "/status", patch.dump(), kStrategicMergePatch);
  NoteForbidden(resp, "patch", "pods/status", "");
  if (resp.ok() && resp->status == 404) return Status::Ok();  // already gone
  VC_RETURN_IF_ERROR(Check(resp, "evict " + desc + ": set conditions", false));
  if (use_eviction_api_) {
    json ev = {{"apiVersion", "policy/v1"},
               {"kind", "Eviction"},
               {"metadata", {{"name", pod.metadata.name}, {"namespace", pod.metadata.namespace_}}}};
    auto evicted = client_->Do("POST", path + "/eviction", ev.dump());
    NoteForbidden(evicted, "create", "pods/eviction", "");
    return Check(evicted, "evict " + desc + ": eviction", true);
  }
  json opts = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!pod.metadata.uid.empty()) opts["preconditions"] = {{"uid", pod.metadata.uid}};
  auto deleted = client_->Do("DELETE", path, opts.dump());
  NoteForbidden(deleted, "delete", "pods", "");
  return Check(deleted, "evict " + desc + ": delete", true);
}

// ------------------------------------------------------------------- status updater

Status RestStatusUpdater::UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) {
  json patch = {{"status", {{"conditions", json::array({ConditionJson(condition)})}}}};
  const std::string object = ObjectPath(ResourceKind::kPods, pod.metadata.namespace_, pod.metadata.name);
  auto resp =
      client_->Do("PATCH", object + "/status", patch.dump(), kStrategicMergePatch, RequestClass::kStatus);
  NoteForbidden(resp, "patch", "pods/status", "");
  return CheckWrite(client_, resp, fmt::format("update pod {} condition {}", PodDesc(pod), condition.type),
                    object, "pods", "");
}

bool RestStatusUpdater::AlreadyWritten(const std::string& key, const std::string& status,
                                       const std::string& rv) {
  MutexLock lock(&mu_);
  auto it = written_.find(key);
  if (it == written_.end() || it->second.status != status) return false;
  if (rv != it->second.rv_before && rv != it->second.rv_after) return false;  // changed since: write again
  ++stats_.skipped_identical;
  return true;
}

void RestStatusUpdater::Remember(const std::string& key, Written w) {
  MutexLock lock(&mu_);
  if (written_.size() > 200000) written_.clear();  // a bound; forgetting only costs a repeat write
  written_[key] = std::move(w);
}

RestStatusUpdater::Stats RestStatusUpdater::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

Status RestStatusUpdater::UpdatePodGroup(const k8s::PodGroup& pg) {
  json conds = json::array();
  for (const auto& c : pg.status.conditions) {
    json j = {{"type", c.type}, {"status", c.status}};
    if (!c.transition_id.empty()) j["transitionID"] = c.transition_id;
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    j["lastTransitionTime"] = FormatTimestamp(c.last_transition_time ? c.last_transition_time : WallNowMs());
    conds.push_back(std::move(j));
  }
  json status = {{"phase", pg.status.phase},
                 {"conditions", std::move(conds)},
                 {"running", pg.status.running},
                 {"succeeded", pg.status.succeeded},
                 {"failed", pg.status.failed}};
  const std::string status_text = status.dump();
  const std::string what =
      fmt::format("update PodGroup {}/{} status", pg.metadata.namespace_, pg.metadata.name);
  const std::string key = "podgroup/" + pg.metadata.namespace_ + "/" + pg.metadata.name;
  if (AlreadyWritten(key, status_text, pg.metadata.resource_version)) return Status::Ok();
  // No status subresource on the CRD: a merge patch of the object itself, with the
  // resourceVersion as an optimistic-concurrency precondition.
  const std::string path = ObjectPath(ResourceKind::kPodGroups, pg.metadata.namespace_, pg.metadata.name);
  std::string rv = pg.metadata.resource_version;
  // client-go's retry.DefaultRetry pacing between conflicts: 10 ms steps, jitter 0.1.
  Backoff backoff({.initial = std::chrono::milliseconds(10),
                   .factor = 1.0,
                   .max = std::chrono::milliseconds(10),
                   .jitter = 0.1});
  for (int attempt = 1;; ++attempt) {
    json patch = {{"status", status}};
    if (!rv.empty()) patch["metadata"] = {{"resourceVersion", rv}};
    auto resp = client_->Do("PATCH", path, patch.dump(), kMergePatch, RequestClass::kStatus);
    NoteForbidden(resp, "patch", "podgroups", kVolcanoGroup);
    if (resp.ok() && resp->status >= 200 && resp->status < 300) {
      json answer = json::parse(resp->body, nullptr, false);
      std::string after;
      if (answer.is_object() && answer.contains("metadata") && answer["metadata"].is_object()) {
        after = answer["metadata"].value("resourceVersion", "");
      }
      Remember(key, {status_text, pg.metadata.resource_version, after});
      return Status::Ok();
    }
    if (!resp.ok() || resp->status != 409)
      return CheckWrite(client_, resp, what, path, "podgroups", kVolcanoGroup);
    if (attempt >= kPodGroupStatusAttempts) {
      return ApiError(resp->status, resp->body, fmt::format("{} (after {} attempts)", what, attempt));
    }
    {
      MutexLock lock(&mu_);
      ++stats_.conflicts;
    }
    // Conflict: our copy is stale. Re-read the object and retry on its resourceVersion.
    std::this_thread::sleep_for(backoff.Next());
    auto get = client_->Do("GET", path, {}, "application/json", RequestClass::kStatus);
    NoteForbidden(get, "get", "podgroups", kVolcanoGroup);
    if (!get.ok()) return get.status().WithPrefix(what + ": re-reading after a conflict");
    if (get->status == 404) return Status::Ok();  // deleted meanwhile: nothing left to write
    if (get->status != 200) return ApiError(get->status, get->body, what + ": re-reading after a conflict");
    json fresh = json::parse(get->body, nullptr, false);
    if (!fresh.is_object() || !fresh.contains("metadata") || !fresh["metadata"].is_object()) {
      return Status::InvalidArgument(what +
                                     ": re-reading after a conflict: the answer is not a PodGroup object");
    }
    rv = fresh["metadata"].value("resourceVersion", "");
  }
}

Status RestStatusUpdater::UpdateQueueStatus(const k8s::Queue& queue) {
  json patch = {{"status", {{"allocated", ResourceListJson(queue.status.allocated)}}}};
  const std::string object = ObjectPath(ResourceKind::kQueues, "", queue.metadata.name);
  auto resp = client_->Do("PATCH", object + "/status", patch.dump(), kMergePatch, RequestClass::kStatus);
  NoteForbidden(resp, "patch", "queues/status", kVolcanoGroup);
  return CheckWrite(client_, resp, fmt::format("update Queue {} status", queue.metadata.name), object,
                    "queues", kVolcanoGroup);
}

// ---------------------------------------------------------------------------- queues

Status CreateQueueIfMissing(RestClient* client, const std::string& name, bool reclaimable) {
  json body = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
               {"kind", "Queue"},
               {"metadata", {{"name", name}}},
               {"spec", {{"weight", 1}, {"reclaimable", reclaimable}}}};
  auto resp = client->Do("POST", CollectionPath(ResourceKind::kQueues), body.dump());
  if (!resp.ok()) return resp.status().WithPrefix("create Queue " + name);
  NoteForbidden(resp, "create", "queues", kVolcanoGroup);
  if (resp->status == 409) return Status::Ok();
  return ApiError(resp->status, resp->body, "create Queue " + name);
}

}  // namespace volcache::kube
