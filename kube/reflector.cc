#include "kube/reflector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <unordered_set>

#include "api/fmt.h"
#include "api/k8s/json_fwd.h"
#include "kube/line_splitter.h"

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
};

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
    return Status::InvalidArgument(
        fmt::format("{}: kind: expected {}, got {}", k8s::DescribeObject(*obj), info.kind, k8s::KindOf(*obj)));
  }
  return ObjectPtr(std::make_shared<const k8s::Object>(std::move(obj).value()));
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

std::string StoreKey(const k8s::ObjectMeta& meta) {
  return meta.namespace_.empty() ? meta.name : meta.namespace_ + "/" + meta.name;
}

Reflector::Reflector(ResourceKind kind, RestClient* client, ReflectorHandler* handler, ReflectorOptions options)
    : kind_(kind), client_(client), handler_(handler), options_(std::move(options)) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  // spdlog builds its registry on first use, inside the (uninstrumented) shared library; do it
  // on this thread, before the reflector's thread and its siblings can race to it (TSan saw
  // one thread reading the default logger while another was creating it).
  spdlog::default_logger_raw();
  thread_ = std::thread([this] { Loop(); });
}

void Reflector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  // A stream may be opening its connection right now, after a Cancel found nothing to
  // close: cancel again until the loop has left.
  for (;;) {
    watch_.Cancel();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return finished_; })) break;
  }
  thread_.join();
}

bool Reflector::HasSynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

Status Reflector::WaitForSync(Duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, timeout, [&] { return synced_ || stopping_; }) && synced_) return Status::Ok();
  return Status::DeadlineExceeded(fmt::format("{}: initial list not complete", Info(kind_).name));
}

ObjectPtr Reflector::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = store_.find(key);
  return it == store_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Reflector::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(store_.size());
  for (const auto& [k, v] : store_) out.push_back(v);
  return out;
}

size_t Reflector::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_.size();
}

ReflectorStats Reflector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string Reflector::Selectors() const {
  std::string q;
  if (!options_.label_selector.empty()) q += "&labelSelector=" + UrlEncode(options_.label_selector);
  if (!options_.field_selector.empty()) q += "&fieldSelector=" + UrlEncode(options_.field_selector);
  return q;
}

void Reflector::SleepBackoff(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopping_; });
}

void Reflector::Loop() {
  const std::string_view name = Info(kind_).name;
  Duration backoff = options_.initial_backoff;
  bool need_list = true;
  auto stopping = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  };
  while (!stopping()) {
    if (need_list) {
      Status s = ListAndReplace();
      if (!s.ok()) {
        if (stopping()) break;
        spdlog::warn("reflector {}: list failed: {}; retrying in {} ms", name, s,
                     std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
        SleepBackoff(backoff);
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      need_list = false;
      backoff = options_.initial_backoff;
    }
    bool clean_end = false;
    const auto started = std::chrono::steady_clock::now();
    need_list = WatchOnce(&clean_end);
    if (need_list || clean_end) {
      // A watch that ran normally resets the backoff.
      backoff = options_.initial_backoff;
      continue;
    }
    if (stopping()) break;
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(10)) backoff = options_.initial_backoff;
    SleepBackoff(backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

Status Reflector::ListAndReplace() {
  const ResourceInfo& info = Info(kind_);
  const std::string base = CollectionPath(kind_);
  std::string list_rv;
  std::string token;
  std::vector<ObjectPtr> items;
  std::unordered_set<std::string> undecodable;  // keys of invalid items: not deleted
  std::vector<Status> errors;
  for (int page = 0;; ++page) {
    std::string path = fmt::format("{}?limit={}{}", base, options_.page_size, Selectors());
    if (!token.empty()) path += "&continue=" + UrlEncode(token);
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
    VC_RETURN_IF_ERROR(ApiError(resp->status, resp->body, fmt::format("list {}", info.name)));
    json j = json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return Status::Unavailable(fmt::format("list {}: the answer is not a JSON object", info.name));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.list_pages;
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
  // Replace: adds and updates in list order, then tombstones for what vanished.
  std::unordered_set<std::string> seen;
  seen.reserve(items.size());
  for (ObjectPtr& obj : items) {
    seen.insert(StoreKey(k8s::MetaOf(*obj)));
    ApplyUpsert(std::move(obj));
  }
  std::vector<ObjectPtr> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = store_.begin(); it != store_.end();) {
      if (!seen.count(it->first) && !undecodable.count(it->first)) {
        gone.push_back(it->second);
        it = store_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.tombstones += gone.size();
    stats_.decode_errors += errors.size();
    if (stats_.lists > 0) ++stats_.relists;
    ++stats_.lists;
    stats_.resource_version = list_rv;
  }
  for (const ObjectPtr& obj : gone) handler_->OnDelete(obj, /*final_state_unknown=*/true);
  rv_ = list_rv;
  {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = true;
  }
  cv_.notify_all();
  return Status::Ok();
}

void Reflector::ApplyUpsert(ObjectPtr obj) {
  const std::string key = StoreKey(k8s::MetaOf(*obj));
  ObjectPtr old;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
  const std::string key = StoreKey(k8s::MetaOf(*obj));
  {
    std::lock_guard<std::mutex> lock(mu_);
    store_.erase(key);
  }
  handler_->OnDelete(obj, /*final_state_unknown=*/false);
}

Status Reflector::HandleLine(std::string_view line, bool* relist, bool* stop_stream) {
  const ResourceInfo& info = Info(kind_);
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *stop_stream = true;
    return Status::Unavailable(fmt::format("watch {}: a line is not a JSON object ({} bytes): the stream is corrupt",
                                           info.name, line.size()));
  }
  auto t = j.find("type");
  auto o = j.find("object");
  if (t == j.end() || !t->is_string() || o == j.end() || !o->is_object()) {
    *stop_stream = true;
    return Status::Unavailable(fmt::format("watch {}: a line is not a watch event (type/object missing)", info.name));
  }
  const std::string& type = t->get_ref<const std::string&>();
  json& object = *o;
  if (type == "BOOKMARK") {
    std::string rv = PeekMeta(object, "resourceVersion");
    if (!rv.empty()) rv_ = rv;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.bookmarks;
    stats_.resource_version = rv_;
    return Status::Ok();
  }
  if (type == "ERROR") {
    int code = object.contains("code") && object["code"].is_number_integer() ? object["code"].get<int>() : 0;
    std::string msg = object.contains("message") && object["message"].is_string() ? object["message"].get<std::string>() : "";
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
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.decode_errors;
    return Status::Ok();
  }
  if (type == "DELETED") {
    ApplyDelete(std::move(obj).value());
  } else {
    ApplyUpsert(std::move(obj).value());
  }
  if (!new_rv.empty()) rv_ = new_rv;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.events;
  stats_.resource_version = rv_;
  return Status::Ok();
}

bool Reflector::WatchOnce(bool* clean_end) {
  const ResourceInfo& info = Info(kind_);
  const std::string path =
      fmt::format("{}?watch=true&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}{}", CollectionPath(kind_),
                  UrlEncode(rv_), options_.watch_timeout_seconds, Selectors());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
  }
  LineSplitter splitter;
  bool relist = false;
  Status line_error;
  auto res = client_->Stream(
      path, std::chrono::seconds(options_.watch_timeout_seconds) + options_.read_timeout_margin,
      [&](std::string_view chunk) {
        bool stop = false;
        Status s = splitter.Feed(chunk, [&](std::string_view line) { return HandleLine(line, &relist, &stop); });
        if (!s.ok()) {
          line_error = s;
          return false;
        }
        return !stop;
      },
      watch_);
  if (relist) return true;
  auto stream_error = [&](const Status& s) {
    spdlog::warn("watch {} from resourceVersion {}: {}", info.name, rv_, s);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.stream_errors;
  };
  if (!line_error.ok()) {
    stream_error(line_error);
    return false;
  }
  if (res.transport.code() == StatusCode::kCancelled) return false;
  if (res.status == 410) {
    spdlog::info("watch {}: resourceVersion {} is gone (410); relisting", info.name, rv_);
    return true;
  }
  if (res.status != 200 && res.status != 0) {
    stream_error(ApiError(res.status, res.error_body, fmt::format("watch {}", info.name)));
    return false;
  }
  if (!res.transport.ok()) {
    stream_error(res.transport);
    return false;
  }
  Status tail = splitter.Finish();
  if (!tail.ok()) {
    stream_error(tail);
    return false;
  }
  *clean_end = true;
  return false;
}

}  // namespace volcache::kube
