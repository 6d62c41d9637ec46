#include "kube/connector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/fmt.h"
#include "workers/backoff.h"
#include "workers/timer_wake.h"

namespace volcache::kube {

namespace {

template <typename T>
std::shared_ptr<const T> As(const ObjectPtr& obj) {
  return std::shared_ptr<const T>(obj, &std::get<T>(*obj));
}

}  // namespace

// Delivers one reflector's changes to the event sink (the cache), pods through the filter.
class Connector::Feeder final : public ReflectorHandler {
 public:
  Feeder(Connector* conn, ResourceKind kind) : conn_(conn), kind_(kind) {}
  void Bind(volcache::EventSink* sink) { sink_ = sink; }

  void OnAdd(const ObjectPtr& obj) override {
    if (!Responsible(*obj)) return Filtered();  // pods, nodes and PodGroups outside the shard
    Report(obj, "add", sink_->Add(obj));
  }

  void OnUpdate(const ObjectPtr& old_obj, const ObjectPtr& new_obj) override {
    if (kind_ == ResourceKind::kPods || kind_ == ResourceKind::kPodGroups) {
      // Ours may change (a pod bound onto one of our nodes; a PodGroup's first owner
      // reference): enter or leave the cache accordingly.
      bool was = Responsible(*old_obj), is = Responsible(*new_obj);
      if (was && is) {
        Report(new_obj, "update", sink_->Update(old_obj, new_obj));
      } else if (is) {
        Report(new_obj, "add", sink_->Add(new_obj));
      } else if (was) {
        Report(old_obj, "delete", sink_->Apply(EventType::kDelete, *old_obj));
      } else {
        Filtered();
      }
      return;
    }
    // A node's name never changes: its shard neither.
    if (!Responsible(*new_obj)) return Filtered();
    Report(new_obj, "update", sink_->Update(old_obj, new_obj));
  }

  void OnDelete(const ObjectPtr& obj, bool final_state_unknown) override {
    if (kind_ == ResourceKind::kPods && !Responsible(*obj)) {
      // A tombstone's last version may predate the bind that made it ours: let the cache
      // decide (it removes the task it holds, or does nothing).
      if (!final_state_unknown) return Filtered();
    } else if (!Responsible(*obj)) {
      return Filtered();  // nodes and PodGroups outside the shard were never added
    }
    Report(obj, final_state_unknown ? "delete (tombstone)" : "delete",
           sink_->Apply(EventType::kDelete, *obj));
  }

  void OnDecodeError(const Status& error) override { ++conn_->decode_errors_; }

 private:
  bool Responsible(const k8s::Object& obj) const {
    switch (kind_) {
      case ResourceKind::kPods:
        return conn_->PodIsOurs(std::get<k8s::Pod>(obj));
      case ResourceKind::kNodes:
        return conn_->NodeIsOurs(std::get<k8s::Node>(obj).metadata.name);
      case ResourceKind::kPodGroups:
        return conn_->PodGroupIsOurs(std::get<k8s::PodGroup>(obj));
      default:
        return true;  // queues, priority classes, quotas, HyperNodes, storage: shared by every shard
    }
  }
  void Filtered() {
    switch (kind_) {
      case ResourceKind::kNodes:
        ++conn_->filtered_nodes_;
        return;
      case ResourceKind::kPodGroups:
        ++conn_->filtered_podgroups_;
        return;
      default:
        ++conn_->filtered_pods_;
    }
  }
  void Report(const ObjectPtr& obj, std::string_view op, const Status& s) {
    if (s.ok()) return;
    ++conn_->cache_errors_;
    spdlog::warn("cache refused {} of {}: {}", op, k8s::DescribeObject(*obj), s);
  }

  Connector* conn_;
  const ResourceKind kind_;
  volcache::EventSink* sink_ = nullptr;  // not kube::EventSink (Kubernetes Event objects)
};

// The ClusterSource over the node and pod reflectors' stores.
class Connector::Source final : public ClusterSource {
 public:
  explicit Source(Connector* conn) : conn_(conn) {}
  Result<k8s::NodePtr> GetNode(const std::string& name) const override {
    ObjectPtr obj = conn_->reflector(ResourceKind::kNodes).Get(name);
    if (!obj || !conn_->NodeIsOurs(name)) return Status::NotFound("node " + name + " not found");
    return As<k8s::Node>(obj);
  }
  Result<k8s::PodPtr> GetPod(const std::string& ns, const std::string& name) const override {
    ObjectPtr obj = conn_->reflector(ResourceKind::kPods).Get(ns + "/" + name);
    if (!obj || (conn_->options_.shard && !conn_->PodIsOurs(std::get<k8s::Pod>(*obj)))) {
      return Status::NotFound("pod " + ns + "/" + name + " not found");
    }
    return As<k8s::Pod>(obj);
  }
  std::vector<k8s::NodePtr> ListNodes() const override {
    std::vector<k8s::NodePtr> out;
    for (const auto& o : conn_->reflector(ResourceKind::kNodes).List()) {
      auto node = As<k8s::Node>(o);
      if (conn_->NodeIsOurs(node->metadata.name)) out.push_back(std::move(node));
    }
    return out;
  }
  // Without sharding every pod (the cache compares against what it holds); with sharding
  // the shard's view, so that Compare() does not report the other shards' pods as missing.
  std::vector<k8s::PodPtr> ListPods() const override {
    std::vector<k8s::PodPtr> out;
    for (const auto& o : conn_->reflector(ResourceKind::kPods).List()) {
      auto pod = As<k8s::Pod>(o);
      if (!conn_->options_.shard || conn_->PodIsOurs(*pod)) out.push_back(std::move(pod));
    }
    return out;
  }

 private:
  Connector* conn_;
};

Connector::Connector(std::unique_ptr<RestClient> client, ConnectorOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : RealClock::Instance()),
      source_(std::make_unique<Source>(this)),
      binder_(client_.get(), options_.binder),
      evictor_(client_.get(), options_.use_eviction_api),
      status_(client_.get()),
      event_sink_(client_.get()),
      recorder_(&event_sink_, clock_,
                {.component = options_.event_component, .capacity = 4096, .correlator = {}}) {
  ReflectorOptions ro = options_.reflector;
  if (!ro.clock) ro.clock = clock_;
  for (ResourceKind kind : kAllResourceKinds) {
    feeders_.push_back(std::make_unique<Feeder>(this, kind));
    reflectors_.push_back(std::make_unique<Reflector>(kind, client_.get(), feeders_.back().get(), ro));
  }
}

Connector::~Connector() { Stop(); }

const ClusterSource* Connector::source() const { return source_.get(); }
Binder* Connector::binder() { return &binder_; }
Evictor* Connector::evictor() { return &evictor_; }
StatusUpdater* Connector::status_updater() { return &status_; }
EventRecorder* Connector::event_recorder() { return &recorder_; }
Reflector& Connector::reflector(ResourceKind kind) { return *reflectors_[static_cast<size_t>(kind)]; }
const Reflector& Connector::reflector(ResourceKind kind) const {
  return *reflectors_[static_cast<size_t>(kind)];
}

bool Connector::PodIsOurs(const k8s::Pod& pod) const {
  const Shard* shard = options_.shard.get();
  if (pod.spec.scheduler_name == options_.scheduler_name && (!shard || shard->OwnsObject(pod.metadata))) {
    return true;
  }
  // Bound pods count on their node: every bound pod without sharding, those on our nodes with.
  return !pod.spec.node_name.empty() && (!shard || shard->OwnsNode(pod.spec.node_name));
}

bool Connector::NodeIsOurs(const std::string& name) const {
  return !options_.shard || options_.shard->OwnsNode(name);
}

bool Connector::PodGroupIsOurs(const k8s::PodGroup& pg) const {
  return !options_.shard || options_.shard->OwnsObject(pg.metadata);
}

std::string Connector::ShardJson() const {
  std::vector<std::string> nodes, jobs;
  for (const auto& o : reflector(ResourceKind::kNodes).List()) {
    const auto& node = std::get<k8s::Node>(*o);
    if (NodeIsOurs(node.metadata.name)) nodes.push_back(node.metadata.name);
  }
  for (const auto& o : reflector(ResourceKind::kPodGroups).List()) {
    const auto& pg = std::get<k8s::PodGroup>(*o);
    if (PodGroupIsOurs(pg)) jobs.push_back(pg.metadata.namespace_ + "/" + pg.metadata.name);
  }
  std::sort(nodes.begin(), nodes.end());
  std::sort(jobs.begin(), jobs.end());
  const Shard* shard = options_.shard.get();
  nlohmann::ordered_json j;
  j["enabled"] = shard != nullptr;
  j["identity"] = shard ? shard->identity() : "";
  j["base"] = shard ? shard->config().base : "";
  j["members"] = shard ? shard->members() : std::vector<std::string>{};
  j["nodes"] = {{"count", nodes.size()}, {"names", nodes}};
  j["jobs"] = {{"count", jobs.size()}, {"names", jobs}};
  j["filtered"] = {{"pods", filtered_pods_.load()},
                   {"nodes", filtered_nodes_.load()},
                   {"podGroups", filtered_podgroups_.load()}};
  return j.dump();
}

void Connector::Start(CacheRuntime* runtime) {
  Start(&runtime->cache(), [runtime] { runtime->MarkInitialListsApplied(); });
}

void Connector::Start(volcache::EventSink* sink, std::function<void()> initial_lists_applied) {
  {
    MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  for (auto& f : feeders_) f->Bind(sink);
  // Queues and priority classes before pods and pod groups is not required (the cache
  // handles any order), but it makes the first snapshot complete sooner; so do the storage
  // objects the pods' volumes refer to.
  for (ResourceKind kind : {ResourceKind::kQueues, ResourceKind::kPriorityClasses, ResourceKind::kNodes,
                            ResourceKind::kHyperNodes, ResourceKind::kStorageClasses,
                            ResourceKind::kPersistentVolumes, ResourceKind::kPersistentVolumeClaims,
                            ResourceKind::kPodGroups, ResourceKind::kResourceQuotas, ResourceKind::kPods}) {
    reflector(kind).Start();
  }
  starter_ = std::thread([this, done = std::move(initial_lists_applied)] { Starter(done); });
}

void Connector::Starter(const std::function<void()>& initial_lists_applied) {
  auto stopping = [&] {
    MutexLock lock(&mu_);
    return stopping_;
  };
  bool root = !options_.create_default_queues, dflt = !options_.create_default_queues;
  bool marked = false;
  // Volcano's pacing for the default queues: constant steps with jitter.
  Backoff backoff({.initial = options_.queue_retry,
                   .factor = 1.0,
                   .max = options_.queue_retry,
                   .jitter = options_.queue_retry_jitter});
  LogThrottle log(clock_);
  bool said_steps = false;
  TimePoint next_attempt = clock_->Now();
  // One queue; false when it failed (and was logged, throttled).
  auto create = [&](const std::string& name, bool reclaimable) {
    ++queue_create_attempts_;
    Status s = CreateQueueIfMissing(client_.get(), name, reclaimable);
    if (s.ok()) return true;
    if (s.code() == StatusCode::kFailedPrecondition && s.message().find("HTTP 403") != std::string::npos) {
      return false;  // CreateQueueIfMissing named the missing permission (once)
    }
    uint64_t suppressed = 0;
    const std::string msg = fmt::format("{}; retrying", s);
    if (log.ShouldLog("create-queue/" + name, msg, &suppressed)) {
      spdlog::warn("{}", LogThrottle::WithRepeats(msg, suppressed));
    }
    return false;
  };
  while (!stopping()) {
    const TimePoint now = clock_->Now();
    if ((!root || !dflt) && now >= next_attempt && options_.may_write && !options_.may_write()) {
      next_attempt = now + options_.queue_retry;  // a standby: try again once leading
    } else if ((!root || !dflt) && now >= next_attempt) {
      if (!root) root = create("root", /*reclaimable=*/false);
      // The same cause would fail the second POST too: it waits for the first.
      if (root && !dflt) dflt = create(options_.default_queue, /*reclaimable=*/true);
      if (!root || !dflt) {
        next_attempt = clock_->Now() + backoff.Next();
        if (!said_steps && backoff.steps() >= static_cast<uint64_t>(options_.queue_retry_steps)) {
          said_steps = true;
          spdlog::error("the root/default queues could not be created after {} attempts; still retrying",
                        backoff.steps());
        }
      }
    }
    if (root && dflt) queues_created_ = true;
    if (!marked && HasSynced()) {
      if (initial_lists_applied) initial_lists_applied();
      marked = true;
      spdlog::info("initial lists applied");
    }
    if (marked && root && dflt) return;
    // Poll for the initial lists every 10 ms (real time); otherwise sleep until the next
    // queue attempt (on the clock).
    if (root && dflt) next_attempt = clock_->Now() + std::chrono::milliseconds(10);
    WaitUntil(next_attempt, marked ? Duration::max() : Duration(std::chrono::milliseconds(10)));
  }
}

void Connector::WaitUntil(TimePoint until, Duration poll) {
  const Duration d = until - clock_->Now();
  if (d <= Duration::zero()) return;
  uint64_t seen = 0;
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    seen = wakes_;
  }
  TimerWake wake(clock_.get(), d, &mu_, &cv_, &wakes_);
  MutexLock lock(&mu_);
  const auto real_deadline = poll == Duration::max() ? std::chrono::steady_clock::time_point::max()
                                                     : std::chrono::steady_clock::now() + poll;
  while (!stopping_ && wakes_ == seen) {
    if (real_deadline == std::chrono::steady_clock::time_point::max()) {
      cv_.Wait(&mu_);
    } else if (!cv_.WaitUntil(&mu_, real_deadline)) {
      break;
    }
  }
}

bool Connector::HasSynced() const {
  for (const auto& r : reflectors_) {
    if (!r->HasSynced()) return false;
  }
  return true;
}

Status Connector::WaitForInitialLists(Duration timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& r : reflectors_) {
    auto left = deadline - std::chrono::steady_clock::now();
    VC_RETURN_IF_ERROR(r->WaitForSync(std::max<Duration>(Duration::zero(), left)));
  }
  return Status::Ok();
}

void Connector::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (starter_.joinable()) starter_.join();
  for (auto& r : reflectors_) r->Stop();
  recorder_.Stop();
}

ConnectorStats Connector::stats() const {
  ConnectorStats s;
  s.cache_errors = cache_errors_;
  s.decode_errors = decode_errors_;
  s.filtered_pods = filtered_pods_;
  s.filtered_nodes = filtered_nodes_;
  s.filtered_podgroups = filtered_podgroups_;
  s.queues_created = queues_created_;
  s.queue_create_attempts = queue_create_attempts_;
  return s;
}

}  // namespace volcache::kube
