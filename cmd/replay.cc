#include "cmd/replay.h"

#include <deque>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "api/k8s/decode.h"
#include "api/k8s/json_fwd.h"
#include "api/node_info.h"
#include "binder/binder.h"
#include "cache/cluster_source.h"
#include "cache/runtime.h"
#include "cache/scheduler_cache.h"
#include "evictor/evictor.h"
#include "workers/clock.h"

namespace volcache {

namespace {

constexpr Duration kBindTick = std::chrono::milliseconds(20);

// Thrown only inside this file to stop on a line that is not one of the forms (exit 2).
struct FormError {
  std::string reason;
};

const nlohmann::json& Field(const nlohmann::json& j, const char* name, nlohmann::json::value_t type) {
  auto it = j.find(name);
  if (it == j.end()) throw FormError{std::string("missing \"") + name + "\""};
  bool ok =
      it->type() == type || (type == nlohmann::json::value_t::number_integer && it->is_number_unsigned());
  if (!ok) throw FormError{std::string("\"") + name + "\" has the wrong type"};
  return *it;
}

std::string StringField(const nlohmann::json& j, const char* name) {
  return Field(j, name, nlohmann::json::value_t::string).get<std::string>();
}

// The script's binder: answers from `bindResult` lines (oldest first), success otherwise.
// The cluster's fate of a bound pod is delivered by the script's own watch events.
class ScriptedBinder final : public Binder {
 public:
  explicit ScriptedBinder(std::ostream& err) : err_(err) {}
  void Script(const std::string& task, bool ok, std::string why) {
    scripted_[task].emplace_back(ok, std::move(why));
  }
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override {
    std::vector<Status> out;
    out.reserve(batch.size());
    for (const BindContext* ctx : batch) {
      const std::string key(ctx->task.key());
      bool ok = true;
      std::string why;
      if (auto it = scripted_.find(key); it != scripted_.end() && !it->second.empty()) {
        std::tie(ok, why) = it->second.front();
        it->second.pop_front();
      }
      if (ok) {
        out.push_back(Status::Ok());
      } else {
        if (why.empty()) why = "scripted failure";
        err_ << "bind " << key << " to " << ctx->node_name << " failed: " << why << "\n";
        out.push_back(Status::Unavailable(why));
      }
    }
    return out;
  }

 private:
  std::ostream& err_;
  std::map<std::string, std::deque<std::pair<bool, std::string>>> scripted_;
};

// The script's evictor, status writer and event sink: every call succeeds and is counted;
// what the cluster then does with the pod is the script's business.
class CountingSinks final : public Evictor, public StatusUpdater, public EventRecorder {
 public:
  Status Evict(const k8s::Pod&, const std::string&) override { return Status::Ok(); }
  Status UpdatePodCondition(const k8s::Pod&, const k8s::PodCondition&) override {
    ++status_writes;
    return Status::Ok();
  }
  Status UpdatePodGroup(const k8s::PodGroup&) override {
    ++status_writes;
    return Status::Ok();
  }
  Status UpdateQueueStatus(const k8s::Queue&) override {
    ++status_writes;
    return Status::Ok();
  }
  void Event(const EventRef&, const std::string&, const std::string&, const std::string&) override {
    ++events;
  }
  int64_t status_writes = 0;
  int64_t events = 0;
};

}  // namespace

struct ReplayEngine::State {
  ReplayOptions options;
  std::ostream& out;
  std::ostream& err;
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ObjectStoreSource source;
  ScriptedBinder binder;
  CountingSinks sinks;
  std::unique_ptr<CacheRuntime> runtime;
  SchedulerCache* cache = nullptr;
  EventSink* events = nullptr;  // where the script's watch events go: *cache
  ReplayStats stats;
  int64_t line = 0;

  State(ReplayOptions o, std::ostream& out_, std::ostream& err_)
      : options(std::move(o)), out(out_), err(err_), binder(err_) {
    RuntimeOptions ro;
    ro.cache.scheduler_name = options.scheduler_name;
    ro.cache.assumed_ttl = std::chrono::milliseconds(options.assumed_ttl_ms);
    ro.bind_flow = options.bind_flow;
    ro.bind_flow.tick = kBindTick;
    ro.inline_execution = true;
    runtime = std::make_unique<CacheRuntime>(ro, clock, &source, &binder, &sinks, &sinks, &sinks);
    cache = &runtime->cache();
    events = cache;
    runtime->Run();
  }

  void RunDueWork() {
    // Assumed binds expire exactly at their TTL here (the runtime's own timer checks every
    // second), so that a script sees the expiry at the tick it is due.
    cache->CleanupExpiredAssumed();
    runtime->RunDueWorkInline();
    auto c = runtime->counters();
    stats.binds_ok = static_cast<int64_t>(c.binds_succeeded);
    stats.binds_failed = static_cast<int64_t>(c.binds_failed);
    stats.evictions = static_cast<int64_t>(c.evictions_ok + c.evictions_failed);
  }

  void Refused(const Status& s) {
    ++stats.refused;
    nlohmann::json j;
    j["line"] = line;
    j["error"] = s.message();
    out << j.dump() << "\n";
  }

  Status ApplyObject(EventType type, const k8s::Object& obj) {
    ++stats.events;
    if (const auto* pod = std::get_if<k8s::Pod>(&obj)) {
      if (type == EventType::kDelete) {
        source.DeletePod(pod->metadata.namespace_, pod->metadata.name);
      } else {
        source.PutPod(std::make_shared<const k8s::Pod>(*pod));
      }
    } else if (const auto* node = std::get_if<k8s::Node>(&obj)) {
      if (type == EventType::kDelete) {
        source.DeleteNode(node->metadata.name);
      } else {
        auto ptr = std::make_shared<const k8s::Node>(*node);
        // The cache checks a Node only later, in the node-sync worker, where a refusal
        // becomes a silent retry; check it here so that the line gets its error and the
        // store never holds a Node the cache cannot take.
        if (auto info = NodeInfo::FromNode(ptr); !info.ok()) return info.status();
        source.PutNode(std::move(ptr));
      }
    }
    return events->Apply(type, obj);
  }

  void Event(EventType type, const nlohmann::json& object) {
    if (!object.is_object()) throw FormError{"\"object\" must be an object"};
    auto obj = k8s::DecodeObjectJson(object);
    if (!obj.ok()) {
      ++stats.events;
      Refused(obj.status());
      return;
    }
    Status s = ApplyObject(type, *obj);
    if (!s.ok()) Refused(s);
  }

  int Apply(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw FormError{"not valid JSON"};
    if (!j.is_object()) throw FormError{"not a JSON object"};
    if (j.contains("type")) {
      const std::string type = StringField(j, "type");
      if (type == "BOOKMARK") return 0;
      EventType t;
      if (type == "ADDED") {
        t = EventType::kAdd;
      } else if (type == "MODIFIED") {
        t = EventType::kUpdate;
      } else if (type == "DELETED") {
        t = EventType::kDelete;
      } else {
        throw FormError{"unknown watch event type \"" + type + "\""};
      }
      Event(t, Field(j, "object", nlohmann::json::value_t::object));
      RunDueWork();  // like every other line: e.g. the node sync a Node event queued
      return 0;
    }
    if (!j.contains("op")) throw FormError{"neither a watch event (\"type\") nor an operation (\"op\")"};
    const std::string op = StringField(j, "op");
    if (op == "add" || op == "update" || op == "delete") {
      auto t = op == "add" ? EventType::kAdd : op == "update" ? EventType::kUpdate : EventType::kDelete;
      Event(t, Field(j, "object", nlohmann::json::value_t::object));
    } else if (op == "bind") {
      const std::string task = StringField(j, "task");
      const std::string node = StringField(j, "node");
      Status s = runtime->Bind(task, node);
      if (!s.ok()) Refused(s);
    } else if (op == "bindResult") {
      const std::string task = StringField(j, "task");
      bool ok = Field(j, "ok", nlohmann::json::value_t::boolean).get<bool>();
      std::string why = j.contains("error") ? StringField(j, "error") : "";
      binder.Script(task, ok, why);
    } else if (op == "evict") {
      const std::string task = StringField(j, "task");
      std::string reason = j.contains("reason") ? StringField(j, "reason") : "";
      Status s = runtime->Evict(task, reason);
      if (!s.ok()) Refused(s);
    } else if (op == "tick") {
      const auto& ms = Field(j, "ms", nlohmann::json::value_t::number_integer);
      int64_t v = ms.get<int64_t>();
      if (v < 0) throw FormError{"\"ms\" must not be negative"};
      // Advance bind tick by bind tick so that work due in between (binds, their results,
      // retries) runs in order and at its own time.
      TimePoint end = clock->Now() + std::chrono::milliseconds(v);
      while (clock->Now() < end) {
        auto since_epoch = clock->Now().time_since_epoch();
        TimePoint next_tick = TimePoint(since_epoch - since_epoch % kBindTick + kBindTick);
        clock->SetTime(std::min(end, next_tick));
        RunDueWork();
      }
    } else if (op == "snapshot") {
      RunDueWork();
      out << DumpClusterInfo(*cache->Snapshot()) << "\n";
    } else if (op == "dump") {
      RunDueWork();
      out << cache->Dump() << "\n";
    } else {
      throw FormError{"unknown op \"" + op + "\""};
    }
    RunDueWork();
    return 0;
  }
};

ReplayEngine::ReplayEngine(ReplayOptions options, std::ostream& out, std::ostream& err)
    : s_(std::make_unique<State>(std::move(options), out, err)) {}

ReplayEngine::~ReplayEngine() = default;

int ReplayEngine::ApplyLine(int64_t number, const std::string& line) {
  s_->line = number;
  ++s_->stats.lines;
  if (line.find_first_not_of(" \t\r") == std::string::npos) return 0;
  try {
    s_->Apply(line);
  } catch (const FormError& e) {
    s_->err << "line " << number << ": " << e.reason << "\n";
    return 2;
  } catch (const std::exception& e) {
    s_->err << "line " << number << ": " << e.what() << "\n";
    return 2;
  }
  if (s_->options.check_invariants) {
    Status s = s_->cache->CheckInvariants();
    if (!s.ok()) {
      s_->err << "line " << number << ": " << s.message() << "\n";
      return 3;
    }
  }
  return 0;
}

int ReplayEngine::Run(std::istream& in) {
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    int rc = ApplyLine(++n, line);
    if (rc != 0) return rc;
  }
  if (s_->options.summary) {
    const ReplayStats& st = s_->stats;
    auto& e = s_->err;
    Status inv = s_->cache->CheckInvariants();
    std::string cmp = s_->cache->Compare();
    e << "replayed " << st.lines << " lines at t=" << s_->clock->Now().time_since_epoch().count() / 1000000
      << "ms: " << st.events << " object events, " << st.binds_ok << " binds ok, " << st.binds_failed
      << " binds failed, " << st.evictions << " evictions, " << st.refused << " refused, "
      << s_->sinks.status_writes << " status writes, " << s_->sinks.events << " events\n";
    e << "cache: " << s_->cache->num_nodes() << " nodes, " << s_->cache->num_jobs() << " jobs, "
      << s_->cache->num_tasks() << " tasks\n";
    e << "invariants: " << (inv.ok() ? "OK" : inv.message()) << "\n";
    e << "compare with cluster: " << (cmp.empty() ? "consistent\n" : "\n" + cmp);
  }
  return 0;
}

const ReplayStats& ReplayEngine::stats() const { return s_->stats; }

std::string ReplayEngine::Dump() const { return s_->cache->Dump(); }

}  // namespace volcache
