#include "tests/kube/fake_apiserver.h"

#include <httplib.h>
#include <sys/socket.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "tests/testdata.h"

// ThreadSanitizer: libcpp-httplib.so (Debian) is not instrumented, so TSan sees its memory
// accesses through the memcpy/memcmp interceptors but not all of the synchronization
// around them; it reports races between the fake server's worker threads entirely inside
// the library. Likewise httplib::ClientImpl::stop() (called by WatchHandle::Cancel) locks
// and unlocks the client's socket mutex inside the library, and TSan sees only the unlock.
// Suppress only reports that come from that library.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libcpp-httplib.so\n"
         "race:libcpp-httplib.so\n"
         "mutex:volcache::kube::WatchHandle::Cancel\n";
}

namespace volcache::testing {

using json = nlohmann::json;

namespace {

// A watch event line as the API server writes it: "type" before "object".
std::string WatchLine(const std::string& type, const nlohmann::json& object) {
  return "{\"type\":" + nlohmann::json(type).dump() + ",\"object\":" + object.dump() + "}\n";
}

struct KindInfo {
  const char* resource;
  const char* kind;
  const char* api_version;
  bool namespaced;
};
const KindInfo kKinds[] = {
    {"pods", "Pod", "v1", true},
    {"nodes", "Node", "v1", false},
    {"resourcequotas", "ResourceQuota", "v1", true},
    {"events", "Event", "v1", true},
    {"priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", false},
    {"podgroups", "PodGroup", "scheduling.volcano.sh/v1beta1", true},
    {"queues", "Queue", "scheduling.volcano.sh/v1beta1", false},
    {"leases", "Lease", "coordination.k8s.io/v1", true},
    {"hypernodes", "HyperNode", "topology.volcano.sh/v1alpha1", false},
    {"persistentvolumeclaims", "PersistentVolumeClaim", "v1", true},
    {"persistentvolumes", "PersistentVolume", "v1", false},
    {"storageclasses", "StorageClass", "storage.k8s.io/v1", false},
};

const KindInfo* ByResource(const std::string& r) {
  for (const auto& k : kKinds) {
    if (r == k.resource) return &k;
  }
  return nullptr;
}
const KindInfo* ByKind(const std::string& kind) {
  for (const auto& k : kKinds) {
    if (kind == k.kind) return &k;
  }
  return nullptr;
}

std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

std::string MetaStr(const json& obj, const char* field) {
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  auto it = obj["metadata"].find(field);
  return it != obj["metadata"].end() && it->is_string() ? it->get<std::string>() : "";
}

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"reason", reason},   {"code", code}};
}

json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json j = json::object();
      for (const auto& kv : n) j[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      json j = json::array();
      for (const auto& e : n) j.push_back(YamlToJson(e));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      static const std::regex kInt(R"(^-?[0-9]+$)");
      static const std::regex kFloat(R"(^-?[0-9]*\.[0-9]+$)");
      if (std::regex_match(s, kInt) && s.size() < 18) return std::stoll(s);
      if (std::regex_match(s, kFloat)) return std::stod(s);
      return s;
    }
    default:
      return nullptr;
  }
}

struct Event {
  int64_t rv;
  std::string type;
  json object;
};

struct Snapshot {
  int64_t rv;
  std::vector<json> items;
};

}  // namespace

struct FakeApiServer::State {
  mutable std::mutex mu;
  std::condition_variable cv;
  int64_t rv = 100;
  int64_t compacted = 0;                                       // watches from rv < compacted get 410
  std::map<std::string, std::map<std::string, json>> objects;  // resource -> key -> object
  std::map<std::string, std::deque<Event>> history;            // resource -> events
  std::map<int64_t, Snapshot> snapshots;                       // list snapshots by id
  int64_t next_snapshot = 1;
  int64_t page_limit_cap = 0;
  std::vector<FaultRule> rules;
  RandomFaults random;
  std::set<std::string> unserved;  // resources answered 404 (their CRD "not installed")
  std::mt19937_64 rng{1};
  uint64_t drop_generation = 0;
  uint64_t bookmark_generation = 0;
  uint64_t end_generation = 0;  // EndWatches
  int truncate_next = 0;
  int malform_next = 0;
  bool stopping = false;
  Counters counters;
  std::vector<json> events;
  uint64_t uid_seq = 0;
  // HoldRequests: the barrier's match, group size and timeout, the requests waiting in the
  // current group, and the group's generation (bumped when a group is released).
  std::string hold_path;
  int hold_count = 0;
  std::chrono::milliseconds hold_timeout{0};
  int held = 0;
  uint64_t hold_generation = 0;
  std::condition_variable hold_cv;

  // Waits at the HoldRequests barrier if `path` matches it (mu held by `lock`).
  void Hold(std::unique_lock<std::mutex>& lock, const std::string& path) {
    if (hold_count <= 0 || path.find(hold_path) == std::string::npos) return;
    const uint64_t gen = hold_generation;
    if (++held >= hold_count) {
      held = 0;
      ++hold_generation;
      hold_cv.notify_all();
      return;
    }
    if (!hold_cv.wait_for(lock, hold_timeout, [&] { return hold_generation != gen || stopping; })) {
      --held;
      ++counters.hold_timeouts;
    }
  }

  bool Roll(double p) {
    if (p <= 0) return false;
    return std::uniform_real_distribution<double>(0, 1)(rng) < p;
  }

  // Stores `obj` (under mu), bumping the resourceVersion, and records the event.
  std::string Put(const KindInfo& k, json obj, const char* type) {
    obj["kind"] = k.kind;
    obj["apiVersion"] = k.api_version;
    if (!obj["metadata"].contains("uid")) obj["metadata"]["uid"] = "uid-" + std::to_string(++uid_seq);
    if (!obj["metadata"].contains("creationTimestamp"))
      obj["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z";
    const std::string rvs = std::to_string(++rv);
    obj["metadata"]["resourceVersion"] = rvs;
    const std::string key = Key(MetaStr(obj, "namespace"), MetaStr(obj, "name"));
    objects[k.resource][key] = obj;
    history[k.resource].push_back({rv, type, obj});
    cv.notify_all();
    return rvs;
  }

  void Remove(const KindInfo& k, const std::string& key) {
    auto& m = objects[k.resource];
    auto it = m.find(key);
    if (it == m.end()) return;
    json obj = it->second;
    m.erase(it);
    obj["metadata"]["resourceVersion"] = std::to_string(++rv);
    history[k.resource].push_back({rv, "DELETED", obj});
    cv.notify_all();
  }

  std::optional<FaultRule> PickFault(const std::string& method, const std::string& path, bool is_write) {
    for (auto it = rules.begin(); it != rules.end(); ++it) {
      if (!it->method.empty() && it->method != method) continue;
      if (!it->path_contains.empty() && path.find(it->path_contains) == std::string::npos) continue;
      FaultRule r = *it;
      if (it->times > 0 && --it->times == 0) rules.erase(it);
      ++counters.faults;
      return r;
    }
    if (method == "WATCH") return std::nullopt;
    if (Roll(random.throttle_rate)) {
      ++counters.faults;
      return FaultRule{"", "", 429, "TooManyRequests", 0};
    }
    if (Roll(random.error_rate)) {
      ++counters.faults;
      return FaultRule{"", "", 500, "InternalError"};
    }
    if (is_write && Roll(random.conflict_rate)) {
      ++counters.faults;
      return FaultRule{"", "", 409, "Conflict"};
    }
    if (is_write && Roll(random.lost_response_rate)) {
      ++counters.faults;
      FaultRule r{"", "", 500, "InternalError"};
      r.after_apply = true;
      return r;
    }
    return std::nullopt;
  }
};

namespace {

struct Route {
  const KindInfo* kind = nullptr;
  std::string ns, name, sub;
};

// /api/v1[/namespaces/{ns}]/{resource}[/{name}[/{sub}]], /apis/{g}/{v}/...
std::optional<Route> ParseRoute(const std::string& path) {
  static const std::regex kRe(
      R"(^/(?:api/v1|apis/[^/]+/[^/]+)(?:/namespaces/([^/]+))?/([a-z]+)(?:/([^/]+))?(?:/([a-z]+))?$)");
  std::smatch m;
  if (!std::regex_match(path, m, kRe)) return std::nullopt;
  Route r;
  r.kind = ByResource(m[2]);
  if (!r.kind) return std::nullopt;
  r.ns = m[1];
  r.name = m[3];
  r.sub = m[4];
  return r;
}

void Reply(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

void ReplyError(httplib::Response& res, int code, const std::string& reason, const std::string& msg) {
  Reply(res, code, StatusBody(code, reason, msg));
}

void StrategicMergeConditions(json& target_status, const json& patch_status) {
  for (auto it = patch_status.begin(); it != patch_status.end(); ++it) {
    if (it.key() != "conditions") {
      target_status[it.key()] = it.value();
      continue;
    }
    json& conds = target_status["conditions"];
    if (!conds.is_array()) conds = json::array();
    for (const auto& c : it.value()) {
      bool found = false;
      for (auto& e : conds) {
        if (e.value("type", "") == c.value("type", "")) {
          e.update(c);
          found = true;
        }
      }
      if (!found) conds.push_back(c);
    }
  }
}

}  // namespace

namespace {

void HandleWatch(const std::shared_ptr<FakeApiServer::State>& st, const httplib::Request& req,
                 httplib::Response& res, const KindInfo& k) {
  std::string rv_param = req.get_param_value("resourceVersion");
  const bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
  int timeout = 1800;
  if (req.has_param("timeoutSeconds"))
    timeout = std::max(1, std::stoi(req.get_param_value("timeoutSeconds")));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);

  std::unique_lock<std::mutex> lock(st->mu);
  ++st->counters.watches;
  if (auto f = st->PickFault("WATCH", req.path, false)) {
    lock.unlock();
    std::this_thread::sleep_for(f->delay);
    if (f->status != 0) {
      if (f->retry_after >= 0) res.set_header("Retry-After", std::to_string(f->retry_after));
      return ReplyError(res, f->status, f->reason, "injected fault");
    }
    lock.lock();
  }
  int64_t cursor = 0;
  std::vector<std::string> initial;  // synthetic ADDED for rv "" / "0"
  bool gone = false;
  if (rv_param.empty() || rv_param == "0") {
    for (const auto& [key, obj] : st->objects[k.resource]) initial.push_back(WatchLine("ADDED", obj));
    cursor = st->rv;
  } else {
    cursor = std::stoll(rv_param);
    if (cursor < st->compacted) gone = true;
  }
  if (gone) {
    lock.unlock();
    json ev = {{"type", "ERROR"},
               {"object", StatusBody(410, "Expired",
                                     "too old resource version: " + rv_param + " (" +
                                         std::to_string(st->compacted) + ")")}};
    res.status = 200;
    res.set_content(ev.dump() + "\n", "application/json");
    return;
  }
  ++st->counters.open_watches;
  const uint64_t drop_gen = st->drop_generation;
  const uint64_t end_gen = st->end_generation;
  uint64_t bookmark_gen = st->bookmark_generation;
  lock.unlock();

  struct Cursor {
    int64_t rv;
    uint64_t bookmark_gen;
    std::vector<std::string> initial;
    bool ended = false;
  };
  auto cur = std::make_shared<Cursor>(Cursor{cursor, bookmark_gen, std::move(initial)});
  const std::string resource = k.resource, kind = k.kind, api_version = k.api_version;
  res.set_chunked_content_provider(
      "application/json",
      [st, cur, drop_gen, end_gen, bookmarks, deadline, resource, kind, api_version](
          size_t, httplib::DataSink& sink) {
        if (!cur->initial.empty()) {
          for (const auto& line : cur->initial) {
            if (!sink.write(line.data(), line.size())) return false;
          }
          cur->initial.clear();
          return true;
        }
        std::vector<std::string> lines;
        bool drop = false, truncate = false, finish = false;
        {
          std::unique_lock<std::mutex> lock(st->mu);
          auto has_new = [&] {
            const auto& h = st->history[resource];
            return !h.empty() && h.back().rv > cur->rv;
          };
          st->cv.wait_until(lock, deadline, [&] {
            return st->stopping || st->drop_generation != drop_gen || st->end_generation != end_gen ||
                   has_new() || (bookmarks && st->bookmark_generation != cur->bookmark_gen);
          });
          if (st->stopping || st->drop_generation != drop_gen) {
            drop = true;
          } else {
            for (const Event& e : st->history[resource]) {
              if (e.rv <= cur->rv) continue;
              if (st->Roll(st->random.watch_drop_rate)) {
                drop = true;
                break;
              }
              std::string line = WatchLine(e.type, e.object);
              if (st->malform_next > 0 || st->Roll(st->random.watch_malformed_rate)) {
                if (st->malform_next > 0) --st->malform_next;
                lines.push_back("{\"type\":\"MODIFIED\",\"object\":{\"kind\":\n");
              }
              if (st->truncate_next > 0 || st->Roll(st->random.watch_truncate_rate)) {
                if (st->truncate_next > 0) --st->truncate_next;
                lines.push_back(line.substr(0, line.size() / 2));
                truncate = true;
                break;
              }
              lines.push_back(std::move(line));
              cur->rv = e.rv;
            }
            if (!drop && !truncate && bookmarks && st->bookmark_generation != cur->bookmark_gen) {
              cur->bookmark_gen = st->bookmark_generation;
              cur->rv = std::max(cur->rv, st->rv);
              lines.push_back(json{{"type", "BOOKMARK"},
                                   {"object",
                                    {{"kind", kind},
                                     {"apiVersion", api_version},
                                     {"metadata", {{"resourceVersion", std::to_string(cur->rv)}}}}}}
                                  .dump() +
                              "\n");
            }
            if (lines.empty() &&
                (st->end_generation != end_gen || std::chrono::steady_clock::now() >= deadline))
              finish = true;
          }
        }
        for (const auto& line : lines) {
          if (!sink.write(line.data(), line.size())) return false;
        }
        if (drop || truncate) return false;  // abort: no terminating chunk
        if (finish) {
          sink.done();
          return true;
        }
        return true;
      },
      [st](bool) {
        std::lock_guard<std::mutex> lock(st->mu);
        --st->counters.open_watches;
      });
}

void HandleList(const std::shared_ptr<FakeApiServer::State>& st, const httplib::Request& req,
                httplib::Response& res, const Route& r) {
  std::lock_guard<std::mutex> lock(st->mu);
  const KindInfo& k = *r.kind;
  int64_t limit = req.has_param("limit") ? std::stoll(req.get_param_value("limit")) : 0;
  if (st->page_limit_cap > 0 && (limit <= 0 || limit > st->page_limit_cap)) limit = st->page_limit_cap;
  // resourceVersion=0 (no continue token): the real server answers from its watch cache, the
  // whole list in one response, `limit` ignored.
  if (!req.has_param("continue") && req.get_param_value("resourceVersion") == "0") {
    ++st->counters.cache_lists;
    limit = 0;
  }
  int64_t snap_id = 0;
  size_t offset = 0;
  if (req.has_param("continue")) {
    std::string tok = req.get_param_value("continue");
    auto colon = tok.find(':');
    snap_id = std::stoll(tok.substr(0, colon));
    offset = std::stoull(tok.substr(colon + 1));
    if (!st->snapshots.count(snap_id)) {
      return ReplyError(res, 410, "Expired", "The provided continue parameter is too old");
    }
  } else {
    ++st->counters.lists;
    Snapshot snap{st->rv, {}};
    for (const auto& [key, obj] : st->objects[k.resource]) {
      if (!r.ns.empty() && MetaStr(obj, "namespace") != r.ns) continue;
      json item = obj;
      item.erase("kind");
      item.erase("apiVersion");
      snap.items.push_back(std::move(item));
    }
    snap_id = st->next_snapshot++;
    st->snapshots[snap_id] = std::move(snap);
  }
  ++st->counters.list_pages;
  Snapshot& snap = st->snapshots[snap_id];
  size_t end =
      limit > 0 ? std::min(snap.items.size(), offset + static_cast<size_t>(limit)) : snap.items.size();
  json body = {{"kind", std::string(k.kind) + "List"},
               {"apiVersion", k.api_version},
               {"metadata", {{"resourceVersion", std::to_string(snap.rv)}}},
               {"items", json::array()}};
  for (size_t i = offset; i < end; ++i) body["items"].push_back(snap.items[i]);
  if (end < snap.items.size()) {
    body["metadata"]["continue"] = std::to_string(snap_id) + ":" + std::to_string(end);
  } else {
    st->snapshots.erase(snap_id);
  }
  // Members in the API server's order (kind, apiVersion, metadata, items), not nlohmann's
  // sorted one: the reflector's streaming decoder relies on it, as with a real server.
  res.status = 200;
  res.set_content("{\"kind\":" + body["kind"].dump() + ",\"apiVersion\":" + body["apiVersion"].dump() +
                      ",\"metadata\":" + body["metadata"].dump() + ",\"items\":" + body["items"].dump() + "}",
                  "application/json");
}

// Writes; `fault` is applied by the caller.
void HandleWrite(const std::shared_ptr<FakeApiServer::State>& st, const std::string& method,
                 const httplib::Request& req, httplib::Response& res, const Route& r) {
  const KindInfo& k = *r.kind;
  json body;
  if (!req.body.empty()) {
    body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) return ReplyError(res, 400, "BadRequest", "request body is not JSON");
  }
  std::lock_guard<std::mutex> lock(st->mu);
  auto& objs = st->objects[k.resource];
  const std::string key = Key(r.ns, r.name);
  if (method == "POST" && r.name.empty()) {  // create
    if (!body.is_object() || MetaStr(body, "name").empty()) {
      return ReplyError(res, 422, "Invalid", "metadata.name: Required value");
    }
    if (k.namespaced) body["metadata"]["namespace"] = r.ns;
    const std::string okey = Key(k.namespaced ? r.ns : "", MetaStr(body, "name"));
    if (objs.count(okey)) {
      return ReplyError(res, 409, "AlreadyExists",
                        std::string(k.resource) + " \"" + MetaStr(body, "name") + "\" already exists");
    }
    ++st->counters.creates;
    if (std::string(k.resource) == "events") {
      ++st->counters.events;
      st->events.push_back(body);
    }
    st->Put(k, body, "ADDED");
    return Reply(res, 201, objs[okey]);
  }
  auto it = objs.find(key);
  if (it == objs.end()) {
    return ReplyError(res, 404, "NotFound", std::string(k.resource) + " \"" + r.name + "\" not found");
  }
  json obj = it->second;
  if (method == "POST" && r.sub == "binding" && std::string(k.resource) == "pods") {
    std::string node = body.contains("target") ? body["target"].value("name", "") : "";
    if (node.empty()) return ReplyError(res, 422, "Invalid", "target.name: Required value");
    std::string current = obj["spec"].value("nodeName", "");
    if (!current.empty()) {
      ++st->counters.bind_conflicts;
      return ReplyError(res, 409, "Conflict",
                        "Operation cannot be fulfilled on pods/binding \"" + r.name + "\": pod " + r.name +
                            " is already assigned to node \"" + current + "\"");
    }
    obj["spec"]["nodeName"] = node;
    if (body["metadata"].contains("annotations")) {
      obj["metadata"]["annotations"].update(body["metadata"]["annotations"]);
    }
    ++st->counters.binds;
    ++st->counters.binds_per_pod[key];
    st->Put(k, obj, "MODIFIED");
    return Reply(res, 201, StatusBody(201, "", "") /* Status Success */);
  }
  if (method == "PUT" && r.sub.empty()) {
    // Update (replace): metadata.resourceVersion, when given, must be the current one, else
    // 409 Conflict, as kube-apiserver's optimistic concurrency answers (leases).
    if (!body.is_object()) return ReplyError(res, 400, "BadRequest", "request body is not JSON");
    const std::string want = MetaStr(body, "resourceVersion");
    if (!want.empty() && want != obj["metadata"].value("resourceVersion", "")) {
      ++st->counters.update_conflicts;
      return ReplyError(res, 409, "Conflict",
                        "Operation cannot be fulfilled on " + std::string(k.resource) + " \"" + r.name +
                            "\": the object has been modified; please apply your changes to the latest "
                            "version and try again");
    }
    if (!body.contains("metadata") || !body["metadata"].is_object()) body["metadata"] = json::object();
    if (MetaStr(body, "name") != r.name)
      return ReplyError(res, 400, "BadRequest", "the name of the object does not match the name on the URL");
    body["metadata"]["namespace"] = r.ns;
    body["metadata"]["uid"] = obj["metadata"].value("uid", "");
    body["metadata"]["creationTimestamp"] = obj["metadata"].value("creationTimestamp", "");
    ++st->counters.updates;
    st->Put(k, body, "MODIFIED");
    return Reply(res, 200, st->objects[k.resource][key]);
  }
  if (method == "POST" && r.sub == "eviction") {
    ++st->counters.evictions;
    st->Remove(k, key);
    return Reply(res, 201, json{{"kind", "Status"}, {"status", "Success"}});
  }
  if (method == "DELETE") {
    if (body.is_object() && body.contains("preconditions") && body["preconditions"].contains("uid") &&
        body["preconditions"]["uid"] != obj["metadata"].value("uid", "")) {
      return ReplyError(res, 409, "Conflict", "Precondition failed: UID in precondition does not match");
    }
    ++st->counters.deletes;
    st->Remove(k, key);
    return Reply(res, 200, obj);
  }
  if (method == "PATCH" && r.sub.empty() && std::string(k.resource) == "events") {
    // As kube-apiserver takes client-go's recorder updates: a patch of the Event itself
    // (count, lastTimestamp, message); strategic merge equals merge for these scalar fields.
    if (!body.is_object()) return ReplyError(res, 400, "BadRequest", "patch is not a JSON object");
    obj.merge_patch(body);
    st->Put(k, obj, "MODIFIED");
    return Reply(res, 200, st->objects[k.resource][key]);
  }
  if (method == "PATCH" && r.sub == "status" && std::string(k.resource) == "podgroups") {
    // Volcano's PodGroup CRD declares no status subresource: the real server answers 404.
    return ReplyError(res, 404, "NotFound", "podgroups.scheduling.volcano.sh \"" + r.name + "\" not found");
  }
  if (method == "PATCH" && r.sub.empty() &&
      req.get_header_value("Content-Type") == "application/merge-patch+json") {
    // JSON merge patch of the object; a metadata.resourceVersion in the patch is a precondition.
    if (!body.is_object()) return ReplyError(res, 400, "BadRequest", "patch is not a JSON object");
    if (body.contains("metadata") && body["metadata"].contains("resourceVersion") &&
        body["metadata"]["resourceVersion"] != obj["metadata"].value("resourceVersion", "")) {
      return ReplyError(res, 409, "Conflict",
                        "Operation cannot be fulfilled on " + std::string(k.resource) + " \"" + r.name +
                            "\": the object has been modified; please apply your changes to the latest "
                            "version and try again");
    }
    if (body.contains("metadata") && body["metadata"].is_object() && body["metadata"].contains("uid") &&
        body["metadata"]["uid"] != obj["metadata"].value("uid", "")) {
      // A uid in the patch is a precondition: the pod under this name may be another one.
      return ReplyError(res, 409, "Conflict",
                        "Precondition failed: UID in precondition: " + body["metadata"].value("uid", "") +
                            ", UID in object meta: " + obj["metadata"].value("uid", ""));
    }
    if (body.contains("metadata")) body["metadata"].erase("resourceVersion");
    obj.merge_patch(body);  // null removes a key (RFC 7386), as for annotations and labels
    ++st->counters.object_patches;
    st->Put(k, obj, "MODIFIED");
    return Reply(res, 200, st->objects[k.resource][key]);
  }
  if (method == "PATCH" && r.sub == "status") {
    if (!body.is_object() || !body.contains("status"))
      return ReplyError(res, 422, "Invalid", "patch has no status");
    if (req.get_header_value("Content-Type") == "application/strategic-merge-patch+json") {
      if (!obj["status"].is_object()) obj["status"] = json::object();
      StrategicMergeConditions(obj["status"], body["status"]);
    } else {
      obj.merge_patch(json{{"status", body["status"]}});
    }
    ++st->counters.status_patches;
    st->Put(k, obj, "MODIFIED");
    return Reply(res, 200, st->objects[k.resource][key]);
  }
  ReplyError(res, 405, "MethodNotAllowed", method + " " + req.path + " is not supported");
}

}  // namespace

// The httplib server of each FakeApiServer, kept out of the header.
struct ServerBox {
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

static std::mutex g_box_mu;
static std::map<const FakeApiServer::State*, std::unique_ptr<ServerBox>> g_boxes;

static ServerBox& Box(const FakeApiServer::State* st) {
  std::lock_guard<std::mutex> lock(g_box_mu);
  return *g_boxes.at(st);
}

static void StartServer(const std::shared_ptr<FakeApiServer::State>& st) {
  auto box = std::make_unique<ServerBox>();
  httplib::Server& srv = box->server;
  srv.new_task_queue = [] { return new httplib::ThreadPool(48); };
  srv.set_keep_alive_max_count(100000);
  srv.set_tcp_nodelay(true);
  srv.set_read_timeout(60, 0);
  srv.set_payload_max_length(8u << 20);
  auto handler = [st](const std::string& method) {
    return [st, method](const httplib::Request& req, httplib::Response& res) {
      auto route = ParseRoute(req.path);
      if (!route) return ReplyError(res, 404, "NotFound", "the server could not find the requested resource");
      {
        std::unique_lock<std::mutex> lock(st->mu);
        if (st->unserved.count(route->kind->resource)) {
          ++st->counters.not_served;
          lock.unlock();
          return ReplyError(res, 404, "NotFound", "the server could not find the requested resource");
        }
      }
      const bool watch = method == "GET" && req.get_param_value("watch") == "true";
      if (watch) return HandleWatch(st, req, res, *route->kind);
      // Counted in flight until the handler returns (the answer is written after that, so
      // a client never has fewer requests outstanding than counted here).
      struct InFlight {
        FakeApiServer::State* st;
        explicit InFlight(FakeApiServer::State* s) : st(s) {
          std::unique_lock<std::mutex> lock(st->mu);
          st->counters.max_in_flight = std::max(st->counters.max_in_flight, ++st->counters.in_flight);
        }
        ~InFlight() {
          std::lock_guard<std::mutex> lock(st->mu);
          --st->counters.in_flight;
        }
      } in_flight(st.get());
      {
        std::unique_lock<std::mutex> lock(st->mu);
        ++st->counters.authorizations[req.get_header_value("Authorization")];
        st->Hold(lock, req.path);
      }
      std::optional<FaultRule> fault;
      {
        std::lock_guard<std::mutex> lock(st->mu);
        std::string target = req.path;
        char sep = '?';
        for (const auto& [k, v] : req.params) {
          target += sep + k + "=" + v;
          sep = '&';
        }
        fault = st->PickFault(method, target, method != "GET");
      }
      if (fault) {
        std::this_thread::sleep_for(fault->delay);
        if (fault->status != 0 && !fault->after_apply) {
          if (fault->retry_after >= 0) res.set_header("Retry-After", std::to_string(fault->retry_after));
          return ReplyError(res, fault->status, fault->reason, "injected fault");
        }
      }
      if (method == "GET") {
        if (route->name.empty()) {
          HandleList(st, req, res, *route);
        } else {
          std::lock_guard<std::mutex> lock(st->mu);
          auto& objs = st->objects[route->kind->resource];
          auto it = objs.find(Key(route->ns, route->name));
          if (it == objs.end()) {
            ReplyError(res, 404, "NotFound",
                       std::string(route->kind->resource) + " \"" + route->name + "\" not found");
          } else {
            Reply(res, 200, it->second);
          }
        }
      } else {
        HandleWrite(st, method, req, res, *route);
      }
      if (fault && fault->after_apply && fault->status != 0) {
        ReplyError(res, fault->status, fault->reason, "injected fault after the request was applied");
      }
    };
  };
  srv.Get(".*", handler("GET"));
  srv.Post(".*", handler("POST"));
  srv.Patch(".*", handler("PATCH"));
  srv.Delete(".*", handler("DELETE"));
  srv.Put(".*", handler("PUT"));
  auto listen_fd = std::make_shared<int>(-1);
  srv.set_socket_options([listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    if (*listen_fd < 0) *listen_fd = sock;  // the first socket is the listener
  });
  box->port = srv.bind_to_any_port("127.0.0.1");
  // cpp-httplib 0.11 listens with a backlog of 5: a client opening several connections at
  // once overflows it and the dropped handshakes return a second later (SYN retransmit).
  // Listening again on the same socket raises the backlog (Linux).
  if (*listen_fd >= 0) ::listen(*listen_fd, SOMAXCONN);
  ServerBox* raw = box.get();
  box->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  // One request before any test's concurrent ones: cpp-httplib (Debian's shared library, not
  // built with TSan) initialises a function-local static on a server thread's first request,
  // and two threads racing to it look like a data race to ThreadSanitizer (the guard's fast
  // path is invisible to it). Once per process is enough; it costs a millisecond.
  {
    httplib::Client warm("127.0.0.1", raw->port);
    warm.set_connection_timeout(10, 0);
    warm.Get("/warm-up");  // 404, counted nowhere
  }
  std::lock_guard<std::mutex> lock(g_box_mu);
  g_boxes[st.get()] = std::move(box);
}

FakeApiServer::FakeApiServer() : state_(std::make_shared<State>()) { StartServer(state_); }

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  state_->hold_cv.notify_all();
  std::unique_ptr<ServerBox> box;
  {
    std::lock_guard<std::mutex> lock(g_box_mu);
    box = std::move(g_boxes[state_.get()]);
    g_boxes.erase(state_.get());
  }
  box->server.stop();
  box->thread.join();
}

std::string FakeApiServer::url() const {
  return "http://127.0.0.1:" + std::to_string(Box(state_.get()).port);
}

kube::KubeConfig FakeApiServer::Config() const {
  kube::KubeConfig c;
  c.server = url();
  c.context = "fake";
  c.namespace_ = "default";
  return c;
}

std::string FakeApiServer::Create(json obj) {
  const KindInfo* k = ByKind(obj.value("kind", ""));
  if (!k) return "";
  std::lock_guard<std::mutex> lock(state_->mu);
  const std::string key = Key(k->namespaced ? MetaStr(obj, "namespace") : "", MetaStr(obj, "name"));
  if (state_->objects[k->resource].count(key)) return "";
  return state_->Put(*k, std::move(obj), "ADDED");
}

std::string FakeApiServer::Upsert(json obj) {
  const KindInfo* k = ByKind(obj.value("kind", ""));
  if (!k) return "";
  if (k->namespaced && MetaStr(obj, "namespace").empty()) obj["metadata"]["namespace"] = "default";
  if (!k->namespaced) obj["metadata"].erase("namespace");
  std::lock_guard<std::mutex> lock(state_->mu);
  const std::string key = Key(MetaStr(obj, "namespace"), MetaStr(obj, "name"));
  const bool exists = state_->objects[k->resource].count(key) > 0;
  return state_->Put(*k, std::move(obj), exists ? "MODIFIED" : "ADDED");
}

bool FakeApiServer::Delete(const std::string& resource, const std::string& ns, const std::string& name) {
  const KindInfo* k = ByResource(resource);
  if (!k) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  const std::string key = Key(ns, name);
  if (!state_->objects[resource].count(key)) return false;
  state_->Remove(*k, key);
  return true;
}

std::optional<json> FakeApiServer::Get(const std::string& resource, const std::string& ns,
                                       const std::string& name) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto& m = state_->objects[resource];
  auto it = m.find(Key(ns, name));
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::vector<json> FakeApiServer::List(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<json> out;
  for (const auto& [k, v] : state_->objects[resource]) out.push_back(v);
  return out;
}

int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->rv;
}

void FakeApiServer::AddFault(FaultRule rule) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->rules.push_back(std::move(rule));
}

void FakeApiServer::ClearFaults() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->rules.clear();
  state_->random = RandomFaults{};
  state_->truncate_next = state_->malform_next = 0;
}

void FakeApiServer::SetRandomFaults(RandomFaults faults) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->random = faults;
  state_->rng.seed(faults.seed);
}

void FakeApiServer::DropWatches() {
  std::lock_guard<std::mutex> lock(state_->mu);
  ++state_->drop_generation;
  state_->cv.notify_all();
}

void FakeApiServer::EndWatches() {
  std::lock_guard<std::mutex> lock(state_->mu);
  ++state_->end_generation;
  state_->cv.notify_all();
}

void FakeApiServer::TruncateNextWatchEvents(int n) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->truncate_next = n;
}

void FakeApiServer::MalformNextWatchEvents(int n) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->malform_next = n;
}

void FakeApiServer::SendBookmarks() {
  std::lock_guard<std::mutex> lock(state_->mu);
  ++state_->bookmark_generation;
  state_->cv.notify_all();
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->compacted = state_->rv;
  for (auto& [r, h] : state_->history) h.clear();
  state_->snapshots.clear();
}

void FakeApiServer::HoldRequests(std::string path_contains, int count, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->hold_path = std::move(path_contains);
  state_->hold_count = count;
  state_->hold_timeout = timeout;
  state_->held = 0;
  ++state_->hold_generation;  // releases a group waiting under the previous barrier
  state_->hold_cv.notify_all();
}

void FakeApiServer::SetServed(const std::string& resource, bool served) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (served) {
    state_->unserved.erase(resource);
  } else {
    state_->unserved.insert(resource);
  }
}

void FakeApiServer::SetListPageLimit(int64_t max) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->page_limit_cap = max;
}

FakeApiServer::Counters FakeApiServer::counters() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->counters;
}

std::vector<json> FakeApiServer::Events() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->events;
}

size_t FakeApiServer::SeedFromSharedData() {
  namespace fs = std::filesystem;
  const std::string root = SharedDataDir() + "/k8s";
  size_t n = 0;
  auto store = [&](json obj) {
    std::string kind = obj.value("kind", "");
    if (kind.size() > 4 && kind.substr(kind.size() - 4) == "List" && obj.contains("items")) {
      std::string item_kind = kind.substr(0, kind.size() - 4);
      for (json item : obj["items"]) {
        if (!item.contains("kind")) item["kind"] = item_kind;
        if (ByKind(item.value("kind", "")) && !Upsert(item).empty()) ++n;
      }
      return;
    }
    if (!ByKind(kind)) return;  // vcjobs, Deployments, CRDs
    if (!Upsert(std::move(obj)).empty()) ++n;
  };
  std::vector<fs::path> files;
  for (const char* dir : {"core", "volcano-with-status", "volcano-examples"}) {
    for (const auto& e : fs::directory_iterator(root + "/" + dir)) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    const std::string text = ReadFileOrDie(p.string());
    if (p.extension() == ".json") {
      store(json::parse(text));
    } else {
      for (const auto& doc : YAML::LoadAll(text)) {
        if (doc.IsMap()) store(YamlToJson(doc));
      }
    }
  }
  return n;
}

// ------------------------------------------------------------------------- builders

json PodJson(const std::string& ns, const std::string& name, const std::string& cpu,
             const std::string& memory, const std::string& group, const std::string& scheduler,
             const std::string& node) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", ns + "-" + name + "-uid"}}},
      {"spec",
       {{"schedulerName", scheduler},
        {"containers", json::array({{{"name", "main"},
                                     {"image", "busybox"},
                                     {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}}}}})}}},
      {"status", {{"phase", "Pending"}}}};
  if (!group.empty()) pod["metadata"]["annotations"] = {{"scheduling.k8s.io/group-name", group}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

json NodeJson(const std::string& name, const std::string& cpu, const std::string& memory, int pods) {
  json res = {{"cpu", cpu}, {"memory", memory}, {"pods", std::to_string(pods)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"uid", "node-" + name}}},
          {"status",
           {{"allocatable", res},
            {"capacity", res},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json PodGroupJson(const std::string& ns, const std::string& name, int min_member, const std::string& queue) {
  return {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "pg-" + ns + "-" + name}}},
          {"spec", {{"minMember", min_member}, {"queue", queue}}},
          {"status", {{"phase", "Pending"}}}};
}

json QueueJson(const std::string& name, int weight) {
  return {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}}},
          {"spec", {{"weight", weight}, {"reclaimable", true}}}};
}

json HyperNodeJson(const std::string& name, int tier, const std::string& member_type,
                   const std::vector<std::string>& members) {
  json j = {{"apiVersion", "topology.volcano.sh/v1alpha1"},
            {"kind", "HyperNode"},
            {"metadata", {{"name", name}}},
            {"spec", {{"tier", tier}, {"members", json::array()}}}};
  for (const auto& m : members) {
    j["spec"]["members"].push_back({{"type", member_type}, {"selector", {{"exactMatch", {{"name", m}}}}}});
  }
  return j;
}

}  // namespace volcache::testing
