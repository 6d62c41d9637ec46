#include "kube/reflector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <unordered_set>

#include "api/fmt.h"
#include "api/k8s/decode_fast.h"
#include "api/k8s/json_fwd.h"
#include "kube/apply_pipe.h"
#include "kube/line_splitter.h"
#include "kube/rest_writers.h"
#include "workers/timer_wake.h"

namespace volcache::kube {

namespace {

using json = nlohmann::json;

const ResourceInfo kInfos[] = {
    {"pods", "Pod", "v1", "/api/v1", true},
    {"nodes", "Node", "v1", "/api/v1", false},
    {"podgroups", "PodGroup", "scheduling.volcano.sh/v1beta1", "/apis/scheduling.volcano.sh/v1beta1", true},
    {"queues", "Queue", "scheduling.volcano.sh/v1beta1", "/apis/scheduling.volcano.sh/v1beta1", false},
    {"priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1", false},
    {"resourcequotas", "ResourceQuota", "v1", "/api/v1", true},
    {"hypernodes", "HyperNode", "topology.volcano.sh/v1alpha1", "/apis/topology.volcano.sh/v1alpha1", false,
     /*optional=*/true},
    {"persistentvolumeclaims", "PersistentVolumeClaim", "v1", "/api/v1", true},
    {"persistentvolumes", "PersistentVolume", "v1", "/api/v1", false},
    {"storageclasses", "StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1", false},
};
static_assert(std::size(kInfos) == std::size(kAllResourceKinds));

std::string PeekMeta(const json& obj, const char* field) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto f = m->find(field);
  return f != m->end() && f->is_string() ? f->get<std::string>() : "";
}

std::string PeekKey(const json& obj) {
  std::string ns = PeekMeta(obj, "namespace"), name = PeekMeta(obj, "name");
  if (name.empty()) return "";
  return ns.empty() ? name : ns + "/" + name;
}

// Decodes an object of our kind; list items and some servers omit kind/apiVersion.
Result<ObjectPtr> DecodeItem(json& item, const ResourceInfo& info) {
  if (!item.is_object()) return Status::InvalidArgument(fmt::format("{}: item is not an object", info.kind));
  if (!item.contains("kind")) item["kind"] = info.kind;
  if (!item.contains("apiVersion")) item["apiVersion"] = info.api_version;
  auto obj = k8s::DecodeObjectJson(item);
  if (!obj.ok()) return obj.status();
  if (k8s::KindOf(*obj) != info.kind) {
    return Status::InvalidArgument(fmt::format("{}: kind: expected {}, got {}", k8s::DescribeObject(*obj),
                                               info.kind, k8s::KindOf(*obj)));
  }
  return ObjectPtr(std::make_shared<const k8s::Object>(std::move(obj).value()));
}

// A LIST page through the streaming decoder: true when it decoded every item and all are of
// our kind (else the caller takes the DOM path).
// Counts an applied ADDED/MODIFIED/DELETED event (the caller holds the reflector's lock).
void CountEventIn(ReflectorStats& st, std::string_view type, TimePoint now, const std::string& rv) {
  ++st.events;
  if (type == "ADDED") {
    ++st.added;
  } else if (type == "MODIFIED") {
    ++st.modified;
  } else {
    ++st.deleted;
  }
  st.last_event = now;
  st.resource_version = rv;
}

bool FastPage(std::string_view body, const ResourceInfo& info, k8s::ObjectList* out) {
  if (!k8s::FastDecodeList(body, out)) return false;
  for (const k8s::Object& o : out->items) {
    if (k8s::KindOf(o) != info.kind) return false;
  }
  return true;
}

}  // namespace

const ResourceInfo& Info(ResourceKind kind) { return kInfos[static_cast<size_t>(kind)]; }

std::string CollectionPath(ResourceKind kind, std::string_view ns) {
  const ResourceInfo& i = Info(kind);
  if (ns.empty() || !i.namespaced) return fmt::format("{}/{}", i.prefix, i.name);
  return fmt::format("{}/namespaces/{}/{}", i.prefix, ns, i.name);
}

std::string ObjectPath(ResourceKind kind, std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", CollectionPath(kind, ns), name);
}

Reflector::Reflector(ResourceKind kind, RestClient* client, ReflectorHandler* handler,
                     ReflectorOptions options)
    : kind_(kind),
      client_(client),
      handler_(handler),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : RealClock::Instance()),
      log_throttle_(clock_) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  MutexLock lock(&mu_);
  if (thread_.joinable() || stopping_) return;
  // spdlog builds its registry on first use, inside the (uninstrumented) shared library; do it
  // on this thread, before the reflector's thread and its siblings can race to it (TSan saw
  // one thread reading the default logger while another was creating it).
  spdlog::default_logger_raw();
  thread_ = std::thread([this] { Loop(); });
}

void Reflector::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (!thread_.joinable()) return;
  // A stream may be opening its connection right now, after a Cancel found nothing to
  // close: cancel again until the loop has left.
  for (;;) {
    watch_.Cancel();
    MutexLock lock(&mu_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (!finished_ && cv_.WaitUntil(&mu_, deadline)) {
    }
    if (finished_) break;
  }
  thread_.join();
}

bool Reflector::HasSynced() const {
  MutexLock lock(&mu_);
  return synced_;
}

Status Reflector::WaitForSync(Duration timeout) const {
  const TimePoint deadline = SaturatingAdd(std::chrono::steady_clock::now(), timeout);
  MutexLock lock(&mu_);
  while (!synced_ && !stopping_ && cv_.WaitUntil(&mu_, deadline)) {
  }
  if (synced_) return Status::Ok();
  return Status::DeadlineExceeded(fmt::format("{}: initial list not complete", Info(kind_).name));
}

ObjectPtr Reflector::Get(const std::string& key) const {
  MutexLock lock(&mu_);
  auto it = store_.find(key);
  return it == store_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Reflector::List() const {
  MutexLock lock(&mu_);
  std::vector<ObjectPtr> out;
  out.reserve(store_.size());
  for (const auto& [k, v] : store_) out.push_back(v);
  return out;
}

size_t Reflector::size() const {
  MutexLock lock(&mu_);
  return store_.size();
}

ReflectorStats Reflector::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

std::string Reflector::Selectors() const {
  std::string q;
  if (!options_.label_selector.empty()) q += "&labelSelector=" + UrlEncode(options_.label_selector);
  if (!options_.field_selector.empty()) q += "&fieldSelector=" + UrlEncode(options_.field_selector);
  return q;
}

bool Reflector::SleepBackoff(Duration d, bool retry) {
  uint64_t gen = 0;
  {
    MutexLock lock(&mu_);
    if (stopping_) return false;
    gen = wake_generation_;
  }
  bool stop = false;
  {
    TimerWake wake(clock_.get(), d, &mu_, &cv_, &wake_generation_);
    MutexLock lock(&mu_);
    // Shown only once the timer is armed: whoever sees backing_off and moves the clock by the
    // backoff wakes this sleep (set before arming, a clock moved in between was never seen).
    if (wake_generation_ == gen) stats_.backing_off = retry;
    while (!stopping_ && wake_generation_ == gen) cv_.Wait(&mu_);
    stats_.backing_off = false;
    stop = stopping_;
  }
  return !stop;
}

void Reflector::Failure(std::string_view verb, int http_status, const Status& error, Duration next_wait) {
  const ResourceInfo& info = Info(kind_);
  {
    MutexLock lock(&mu_);
    if (stats_.consecutive_failures++ == 0) first_failure_ = clock_->Now();
    if (verb == "list") {
      ++stats_.list_failures;
    } else {
      ++stats_.stream_errors;
    }
    stats_.backoff = next_wait;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next_wait).count();
  if (http_status == 403) {
    bool& logged = forbidden_logged_[verb == "list" ? 0 : 1];
    if (!logged) {
      logged = true;
      const std::string_view av = info.api_version;
      const size_t slash = av.find('/');
      const std::string_view group =
          slash == std::string_view::npos ? std::string_view() : av.substr(0, slash);
      spdlog::error("{} {}: {} ({}); retrying in {} ms", verb, info.name,
                    ForbiddenMessage(verb, info.name, group), error, ms);
      return;
    }
    // Named once: later refusals of the same permission are only counted (stats) and debug-logged.
    spdlog::debug("reflector {}: {} still forbidden; retrying in {} ms", info.name, verb, ms);
    return;
  }
  const std::string msg = fmt::format("reflector {}: {} failed: {}", info.name, verb, error);
  uint64_t suppressed = 0;
  if (log_throttle_.ShouldLog(fmt::format("{} {}", verb, info.name), msg, &suppressed)) {
    spdlog::warn("{}; retrying in {} ms", LogThrottle::WithRepeats(msg, suppressed), ms);
  }
}

void Reflector::Success(std::string_view verb) {
  const TimePoint now = clock_->Now();
  uint64_t failures = 0;
  {
    MutexLock lock(&mu_);
    failures = stats_.consecutive_failures;
    stats_.consecutive_failures = 0;
    stats_.backoff = Duration::zero();
    if (verb == "watch") stats_.last_watch_start = now;
  }
  if (failures > 0) {
    spdlog::info("{} {}: reconnected after {} failure{} ({:.1f} s)", verb, Info(kind_).name, failures,
                 failures == 1 ? "" : "s", std::chrono::duration<double>(now - first_failure_).count());
  }
}

void Reflector::Loop() {
  Backoff backoff({.initial = options_.initial_backoff,
                   .factor = 2.0,
                   .max = options_.max_backoff,
                   .jitter = options_.backoff_jitter},
                  options_.backoff_seed != 0 ? options_.backoff_seed : std::random_device{}());
  bool need_list = true;
  auto stopping = [&] {
    MutexLock lock(&mu_);
    return stopping_;
  };
  while (!stopping()) {
    if (need_list) {
      int http_status = 0;
      bool not_served = false;
      Status s = ListAndReplace(&http_status, &not_served);
      if (!s.ok()) {
        if (stopping()) break;
        const Duration wait = backoff.Next();
        Failure("list", http_status, s, wait);
        if (!SleepBackoff(wait)) break;
        continue;
      }
      const ResourceInfo& info = Info(kind_);
      if (not_served) {
        // Synced with nothing; nothing to watch. LIST again later, with backoff.
        const Duration wait = backoff.Next();
        if (!not_served_logged_) {
          not_served_logged_ = true;
          spdlog::info(
              "reflector {}: the server does not serve {} {} (HTTP 404: the CRD is not installed); "
              "treating it as empty and checking again with backoff (up to {} ms)",
              info.name, info.api_version, info.name,
              std::chrono::duration_cast<std::chrono::milliseconds>(options_.max_backoff).count());
        }
        if (!SleepBackoff(wait, /*retry=*/false)) break;
        continue;
      }
      if (not_served_logged_) {
        not_served_logged_ = false;
        backoff.Reset();
        spdlog::info("reflector {}: {} {} is served now; watching it", info.name, info.api_version,
                     info.name);
      }
      need_list = false;
    }
    bool clean_end = false;
    int http_status = 0;
    Status error;
    const TimePoint started = clock_->Now();
    need_list = WatchOnce(&clean_end, &http_status, &error);
    if (stopping()) break;
    // A watch that ran normally resets the backoff.
    if (need_list || clean_end || clock_->Now() - started >= options_.healthy_watch) backoff.Reset();
    if (need_list || clean_end) continue;
    const Duration wait = backoff.Next();
    Failure("watch", http_status, error, wait);
    if (!SleepBackoff(wait)) break;
  }
  MutexLock lock(&mu_);
  finished_ = true;
  cv_.SignalAll();
}

Status Reflector::ListAndReplace(int* http_status, bool* not_served) {
  const ResourceInfo& info = Info(kind_);
  const std::string base = CollectionPath(kind_);
  std::string list_rv;
  std::string token;
  std::vector<ObjectPtr> items;
  std::unordered_set<std::string> undecodable;  // keys of invalid items: not deleted
  std::vector<Status> errors;
  bool first_list;
  {
    MutexLock lock(&mu_);
    first_list = stats_.lists == 0;
  }
  for (int page = 0;; ++page) {
    std::string path = fmt::format("{}?limit={}{}", base, options_.page_size, Selectors());
    if (!token.empty()) {
      path += "&continue=" + UrlEncode(token);
    } else if (first_list && options_.initial_list_from_cache) {
      path += "&resourceVersion=0";  // the server may ignore `limit` and answer from its watch cache
    }
    auto resp = client_->Do("GET", path);
    if (!resp.ok()) return resp.status();
    if (resp->status == 410 && !token.empty()) {
      // The continue token expired: start the list over.
      spdlog::info("reflector {}: continue token expired; restarting the list", info.name);
      token.clear();
      items.clear();
      undecodable.clear();
      errors.clear();
      list_rv.clear();
      continue;
    }
    if (resp->status == 404 && info.optional && token.empty()) {
      // No such resource (its CRD is not installed): the same as an empty list.
      *not_served = true;
      items.clear();
      undecodable.clear();
      errors.clear();
      list_rv.clear();
      break;
    }
    if (Status e = ApiError(resp->status, resp->body, fmt::format("list {}", info.name)); !e.ok()) {
      *http_status = resp->status;
      return e;
    }
    {
      MutexLock lock(&mu_);
      ++stats_.list_pages;
    }
    // The streaming decoder handles a page of valid Pods/Nodes by itself; anything else (an
    // invalid item, another kind, a JSON corner it leaves to the reference) goes through the
    // DOM path below, which gives the same objects and the exact per-item errors.
    if (k8s::ObjectList fast; FastKind() && FastPage(resp->body, info, &fast)) {
      if (page == 0 || list_rv.empty()) list_rv = fast.resource_version;
      token = std::move(fast.continue_token);
      {
        MutexLock lock(&mu_);
        stats_.fast_decoded += fast.items.size();
      }
      items.reserve(items.size() + fast.items.size());
      for (k8s::Object& o : fast.items) items.push_back(std::make_shared<const k8s::Object>(std::move(o)));
      if (token.empty()) break;
      continue;
    }
    json j = json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return Status::Unavailable(fmt::format("list {}: the answer is not a JSON object", info.name));
    }
    std::string page_rv = PeekMeta(j, "resourceVersion");
    if (page == 0 || list_rv.empty()) list_rv = page_rv;
    token = PeekMeta(j, "continue");
    auto it = j.find("items");
    if (it != j.end() && it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        json& item = (*it)[i];
        auto obj = DecodeItem(item, info);
        if (!obj.ok()) {
          std::string key = item.is_object() ? PeekKey(item) : "";
          if (!key.empty()) undecodable.insert(key);
          errors.push_back(obj.status().WithPrefix(fmt::format("list {} items[{}]", info.name, i)));
          continue;
        }
        items.push_back(std::move(obj).value());
      }
    } else if (it != j.end() && !it->is_null()) {
      return Status::Unavailable(fmt::format("list {}: items: expected an array", info.name));
    }
    if (token.empty()) break;
  }

  for (const Status& e : errors) {
    spdlog::error("{}", e);
    handler_->OnDecodeError(e);
  }
  // Replace: adds and updates in list order, then tombstones for what vanished. Into an
  // empty store (the first LIST) nothing can vanish: no set of the keys seen is needed.
  bool first = false;
  {
    MutexLock lock(&mu_);
    first = store_.empty();
    store_.reserve(store_.size() + items.size());
  }
  std::unordered_set<std::string> seen;
  if (!first) seen.reserve(items.size());
  for (ObjectPtr& obj : items) {
    if (!first) seen.insert(k8s::ObjectKey(k8s::MetaOf(*obj)));
    ApplyUpsert(std::move(obj));
  }
  std::vector<ObjectPtr> gone;
  {
    MutexLock lock(&mu_);
    for (auto it = store_.begin(); !first && it != store_.end();) {
      if (!seen.count(it->first) && !undecodable.count(it->first)) {
        gone.push_back(it->second);
        it = store_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.tombstones += gone.size();
    stats_.decode_errors += errors.size();
    // The re-checks of a resource not served are not relists (nothing was lost).
    if (stats_.lists > 0 && !*not_served && !stats_.not_served) ++stats_.relists;
    ++stats_.lists;
    stats_.not_served = *not_served;
    stats_.last_list = clock_->Now();
    stats_.resource_version = list_rv;
  }
  for (const ObjectPtr& obj : gone) handler_->OnDelete(obj, /*final_state_unknown=*/true);
  rv_ = list_rv;
  Success("list");  // before synced_: who waits for the sync sees the failure run closed
  {
    MutexLock lock(&mu_);
    synced_ = true;
  }
  cv_.SignalAll();
  return Status::Ok();
}

void Reflector::ApplyUpsert(ObjectPtr obj) {
  const std::string key = k8s::ObjectKey(k8s::MetaOf(*obj));
  ObjectPtr old;
  {
    MutexLock lock(&mu_);
    auto& slot = store_[key];
    old = slot;
    if (old && k8s::MetaOf(*old).resource_version == k8s::MetaOf(*obj).resource_version) return;  // no change
    slot = obj;
  }
  if (old) {
    handler_->OnUpdate(old, obj);
  } else {
    handler_->OnAdd(obj);
  }
}

void Reflector::ApplyDelete(ObjectPtr obj) {
  const std::string key = k8s::ObjectKey(k8s::MetaOf(*obj));
  {
    MutexLock lock(&mu_);
    store_.erase(key);
  }
  handler_->OnDelete(obj, /*final_state_unknown=*/false);
}

void Reflector::ApplyDecoded(DecodedEvent& ev) {
  std::string new_rv = k8s::MetaOf(*ev.obj).resource_version;
  if (ev.deleted) {
    ApplyDelete(std::move(ev.obj));
  } else {
    ApplyUpsert(std::move(ev.obj));
  }
  if (!new_rv.empty()) rv_ = std::move(new_rv);
  MutexLock lock(&mu_);
  ++stats_.fast_decoded;
  CountEventIn(stats_, ev.type, clock_->Now(), rv_);
}

Status Reflector::HandleLine(std::string_view line, ApplyPipe<DecodedEvent>* pipe, bool* relist,
                             bool* stop_stream) {
  const ResourceInfo& info = Info(kind_);
  // The hot path: an ADDED/MODIFIED/DELETED event of a valid object of our kind, decoded by
  // the streaming decoder. Everything else (bookmarks, errors, bad objects, bad lines) takes
  // the DOM path below, which decides exactly as before.
  if (FastKind()) {
    // Decoded in place into the object the store will share: no Pod is moved, and none is
    // destroyed on this thread.
    auto obj = std::make_shared<k8s::Object>();
    k8s::WatchEventType type = k8s::WatchEventType::kAdded;
    if (k8s::FastDecodeWatchEvent(line, &type, obj.get()) && k8s::KindOf(*obj) == info.kind) {
      DecodedEvent d{std::move(obj), type == k8s::WatchEventType::kDeleted,
                     type == k8s::WatchEventType::kAdded      ? "ADDED"
                     : type == k8s::WatchEventType::kModified ? "MODIFIED"
                                                              : "DELETED"};
      if (pipe != nullptr) {
        pipe->Push(std::move(d));
      } else {
        ApplyDecoded(d);
      }
      return Status::Ok();
    }
  }
  // Whatever comes next is decided here, after everything before it was applied.
  if (pipe != nullptr) pipe->Drain();
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *stop_stream = true;
    return Status::Unavailable(fmt::format(
        "watch {}: a line is not a JSON object ({} bytes): the stream is corrupt", info.name, line.size()));
  }
  auto t = j.find("type");
  auto o = j.find("object");
  if (t == j.end() || !t->is_string() || o == j.end() || !o->is_object()) {
    *stop_stream = true;
    return Status::Unavailable(
        fmt::format("watch {}: a line is not a watch event (type/object missing)", info.name));
  }
  const std::string& type = t->get_ref<const std::string&>();
  json& object = *o;
  if (type == "BOOKMARK") {
    std::string rv = PeekMeta(object, "resourceVersion");
    if (!rv.empty()) rv_ = rv;
    MutexLock lock(&mu_);
    ++stats_.bookmarks;
    stats_.last_event = clock_->Now();
    stats_.resource_version = rv_;
    return Status::Ok();
  }
  if (type == "ERROR") {
    {
      MutexLock lock(&mu_);
      ++stats_.error_events;
      stats_.last_event = clock_->Now();
    }
    int code = object.contains("code") && object["code"].is_number_integer() ? object["code"].get<int>() : 0;
    std::string msg = object.contains("message") && object["message"].is_string()
                          ? object["message"].get<std::string>()
                          : "";
    *stop_stream = true;
    if (code == 410) {
      *relist = true;
      spdlog::info("watch {}: {} (410); relisting", info.name, msg);
      return Status::Ok();
    }
    return Status::Unavailable(fmt::format("watch {}: ERROR event {}: {}", info.name, code, msg));
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
    *stop_stream = true;
    return Status::Unavailable(fmt::format("watch {}: unknown event type \"{}\"", info.name, type));
  }
  const std::string new_rv = PeekMeta(object, "resourceVersion");
  auto obj = DecodeItem(object, info);
  if (!obj.ok()) {
    // Bad input in a well-formed event: skip it (the previous version stays) and move on.
    Status e = obj.status().WithPrefix(fmt::format("watch {} {}", info.name, type));
    spdlog::error("{}", e);
    handler_->OnDecodeError(e);
    if (!new_rv.empty()) rv_ = new_rv;
    MutexLock lock(&mu_);
    ++stats_.decode_errors;
    stats_.last_event = clock_->Now();
    stats_.resource_version = rv_;
    return Status::Ok();
  }
  if (type == "DELETED") {
    ApplyDelete(std::move(obj).value());
  } else {
    ApplyUpsert(std::move(obj).value());
  }
  if (!new_rv.empty()) rv_ = new_rv;
  MutexLock lock(&mu_);
  CountEventIn(stats_, type, clock_->Now(), rv_);
  return Status::Ok();
}

bool Reflector::WatchOnce(bool* clean_end, int* http_status, Status* error) {
  const ResourceInfo& info = Info(kind_);
  const std::string path =
      fmt::format("{}?watch=true&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}{}",
                  CollectionPath(kind_), UrlEncode(rv_), options_.watch_timeout_seconds, Selectors());
  {
    MutexLock lock(&mu_);
    ++stats_.watches;
  }
  LineSplitter splitter;
  // Decode on this thread, apply on the pipe's (Pods, Nodes); gone before this returns, so
  // every decoded event is applied and rv_ is this thread's again.
  std::optional<ApplyPipe<DecodedEvent>> pipe;
  if (FastKind() && options_.watch_pipeline > 0) {
    pipe.emplace(options_.watch_pipeline, [this](DecodedEvent& ev) { ApplyDecoded(ev); });
  }
  bool relist = false;
  bool answered = false;  // the server's first chunk arrived: the watch is established
  Status line_error;
  auto res = client_->Stream(
      path, std::chrono::seconds(options_.watch_timeout_seconds) + options_.read_timeout_margin,
      [&](std::string_view chunk) {
        if (!answered) {
          answered = true;
          Success("watch");
        }
        bool stop = false;
        Status s = splitter.Feed(chunk, [&](std::string_view line) {
          return HandleLine(line, pipe ? &*pipe : nullptr, &relist, &stop);
        });
        if (!s.ok()) {
          line_error = s;
          return false;
        }
        return !stop;
      },
      watch_,
      [&](int status) {
        if (status == 200 && !answered) {
          answered = true;
          Success("watch");  // established: a restarted server answered, even if nothing changes
        }
      });
  pipe.reset();
  if (relist) return true;
  if (!line_error.ok()) {
    *error = line_error;
    return false;
  }
  if (res.transport.code() == StatusCode::kCancelled) {
    *error = res.transport;
    return false;
  }
  if (res.status == 410) {
    spdlog::info("watch {}: resourceVersion {} is gone (410); relisting", info.name, rv_);
    return true;
  }
  if (res.status == 404 && info.optional) {
    // The CRD went away: the LIST finds out (and empties the store when it is gone for good).
    spdlog::info("watch {}: the server answered 404 (the CRD was removed?); relisting", info.name);
    return true;
  }
  if (res.status != 200 && res.status != 0) {
    *http_status = res.status;
    *error = ApiError(res.status, res.error_body, fmt::format("watch {}", info.name));
    return false;
  }
  if (!res.transport.ok()) {
    *error = res.transport;
    return false;
  }
  Status tail = splitter.Finish();
  if (!tail.ok()) {
    *error = tail;
    return false;
  }
  if (!answered) Success("watch");  // a quiet watch the server ended normally
  *clean_end = true;
  return false;
}

}  // namespace volcache::kube
