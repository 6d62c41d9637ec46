#include "tests/fakes/cluster_builders.h"

#include <cstdio>
#include <cstdlib>

#include "api/task_info.h"

namespace volcache::testing {

Quantity Q(std::string_view text) {
  auto q = Quantity::Parse(text);
  if (!q.ok()) {
    std::fprintf(stderr, "test bug: quantity literal \"%.*s\": %s\n", static_cast<int>(text.size()),
                 text.data(), q.status().ToString().c_str());
    std::abort();
  }
  return *q;
}

k8s::ResourceList Resources(std::initializer_list<std::pair<std::string_view, std::string_view>> items) {
  k8s::ResourceList out;
  out.reserve(items.size());
  for (const auto& [name, value] : items) out.emplace_back(std::string(name), Q(value));
  return out;
}

// ------------------------------------------------------------------------ Pod

PodBuilder::PodBuilder(std::string ns, std::string name) {
  pod_.metadata.uid = "uid-" + ns + "-" + name;
  pod_.metadata.namespace_ = std::move(ns);
  pod_.metadata.name = std::move(name);
  pod_.metadata.resource_version = "1";
  pod_.spec.scheduler_name = "volcano";
  pod_.status.phase = "Pending";
}

PodBuilder& PodBuilder::Uid(std::string uid) {
  pod_.metadata.uid = std::move(uid);
  return *this;
}
PodBuilder& PodBuilder::ResourceVersion(std::string rv) {
  pod_.metadata.resource_version = std::move(rv);
  return *this;
}
PodBuilder& PodBuilder::Group(std::string group) {
  pod_.metadata.annotations[std::string(kGroupNameAnnotation)] = std::move(group);
  return *this;
}
PodBuilder& PodBuilder::SchedulerName(std::string name) {
  pod_.spec.scheduler_name = std::move(name);
  return *this;
}
PodBuilder& PodBuilder::NodeName(std::string node) {
  pod_.spec.node_name = std::move(node);
  return *this;
}
PodBuilder& PodBuilder::Phase(std::string phase) {
  pod_.status.phase = std::move(phase);
  return *this;
}
PodBuilder& PodBuilder::Deleting(k8s::TimeMs at) {
  pod_.metadata.deletion_timestamp = at;
  return *this;
}
PodBuilder& PodBuilder::Priority(int32_t p) {
  pod_.spec.priority = p;
  return *this;
}
PodBuilder& PodBuilder::PriorityClassName(std::string name) {
  pod_.spec.priority_class_name = std::move(name);
  return *this;
}
PodBuilder& PodBuilder::Annotation(std::string key, std::string value) {
  pod_.metadata.annotations[std::move(key)] = std::move(value);
  return *this;
}
PodBuilder& PodBuilder::Label(std::string key, std::string value) {
  pod_.metadata.labels[std::move(key)] = std::move(value);
  return *this;
}
PodBuilder& PodBuilder::Container(k8s::ResourceList requests) {
  k8s::Container c;
  c.name = "c" + std::to_string(pod_.spec.containers.size());
  c.image = "busybox";
  c.requests = std::move(requests);
  pod_.spec.containers.push_back(std::move(c));
  return *this;
}
PodBuilder& PodBuilder::Request(std::string_view cpu, std::string_view memory) {
  k8s::ResourceList list;
  if (!cpu.empty()) list.emplace_back("cpu", Q(cpu));
  if (!memory.empty()) list.emplace_back("memory", Q(memory));
  return Container(std::move(list));
}
PodBuilder& PodBuilder::CreationTimestamp(k8s::TimeMs t) {
  pod_.metadata.creation_timestamp = t;
  return *this;
}

// ----------------------------------------------------------------------- Node

NodeBuilder::NodeBuilder(std::string name) {
  node_.metadata.uid = "uid-node-" + name;
  node_.metadata.name = std::move(name);
  node_.metadata.resource_version = "1";
  node_.status.conditions.push_back(k8s::NodeCondition{"Ready", "True", "KubeletReady", ""});
}

NodeBuilder& NodeBuilder::Uid(std::string uid) {
  node_.metadata.uid = std::move(uid);
  return *this;
}
NodeBuilder& NodeBuilder::Allocatable(k8s::ResourceList list) {
  node_.status.allocatable = std::move(list);
  return *this;
}
NodeBuilder& NodeBuilder::Allocatable(std::string_view cpu, std::string_view memory, std::string_view pods) {
  k8s::ResourceList list;
  if (!cpu.empty()) list.emplace_back("cpu", Q(cpu));
  if (!memory.empty()) list.emplace_back("memory", Q(memory));
  if (!pods.empty()) list.emplace_back("pods", Q(pods));
  return Allocatable(std::move(list));
}
NodeBuilder& NodeBuilder::Capacity(k8s::ResourceList list) {
  node_.status.capacity = std::move(list);
  capacity_set_ = true;
  return *this;
}
NodeBuilder& NodeBuilder::Ready(bool ready) {
  for (auto& c : node_.status.conditions.mut()) {
    if (c.type == "Ready") {
      c.status = ready ? "True" : "False";
      c.reason = ready ? "KubeletReady" : "KubeletNotReady";
      return *this;
    }
  }
  node_.status.conditions.push_back(
      k8s::NodeCondition{"Ready", ready ? "True" : "False", ready ? "KubeletReady" : "KubeletNotReady", ""});
  return *this;
}
NodeBuilder& NodeBuilder::NoConditions() {
  node_.status.conditions.clear();
  return *this;
}
NodeBuilder& NodeBuilder::Label(std::string key, std::string value) {
  node_.metadata.labels[std::move(key)] = std::move(value);
  return *this;
}
NodeBuilder& NodeBuilder::Zone(std::string region, std::string zone) {
  if (!region.empty()) Label("topology.kubernetes.io/region", std::move(region));
  if (!zone.empty()) Label("topology.kubernetes.io/zone", std::move(zone));
  return *this;
}
NodeBuilder& NodeBuilder::BetaZone(std::string region, std::string zone) {
  if (!region.empty()) Label("failure-domain.beta.kubernetes.io/region", std::move(region));
  if (!zone.empty()) Label("failure-domain.beta.kubernetes.io/zone", std::move(zone));
  return *this;
}
NodeBuilder& NodeBuilder::RevocableZone(std::string zone) {
  return Label(std::string(kRevocableZoneLabel), std::move(zone));
}
NodeBuilder& NodeBuilder::Unschedulable(bool u) {
  node_.spec.unschedulable = u;
  return *this;
}
NodeBuilder& NodeBuilder::Taint(std::string key, std::string value, std::string effect) {
  node_.spec.taints.push_back(k8s::Taint{std::move(key), std::move(value), std::move(effect)});
  return *this;
}

k8s::Node NodeBuilder::Build() const {
  k8s::Node n = node_;
  if (!capacity_set_) n.status.capacity = n.status.allocatable;
  return n;
}

// ------------------------------------------------------------------- PodGroup

PodGroupBuilder::PodGroupBuilder(std::string ns, std::string name) {
  pg_.metadata.uid = "uid-pg-" + ns + "-" + name;
  pg_.metadata.namespace_ = std::move(ns);
  pg_.metadata.name = std::move(name);
  pg_.metadata.resource_version = "1";
  pg_.status.phase = "Pending";
}

PodGroupBuilder& PodGroupBuilder::Uid(std::string uid) {
  pg_.metadata.uid = std::move(uid);
  return *this;
}
PodGroupBuilder& PodGroupBuilder::ResourceVersion(std::string rv) {
  pg_.metadata.resource_version = std::move(rv);
  return *this;
}
PodGroupBuilder& PodGroupBuilder::MinMember(int32_t n) {
  pg_.spec.min_member = n;
  return *this;
}
PodGroupBuilder& PodGroupBuilder::MinTaskMember(std::string role, int32_t n) {
  pg_.spec.mutable_rare().min_task_member[std::move(role)] = n;
  return *this;
}
PodGroupBuilder& PodGroupBuilder::Queue(std::string queue) {
  pg_.spec.queue = std::move(queue);
  return *this;
}
PodGroupBuilder& PodGroupBuilder::PriorityClassName(std::string name) {
  pg_.spec.priority_class_name = std::move(name);
  return *this;
}
PodGroupBuilder& PodGroupBuilder::MinResources(k8s::ResourceList list) {
  pg_.spec.mutable_rare().min_resources = std::move(list);
  return *this;
}
PodGroupBuilder& PodGroupBuilder::Phase(std::string phase) {
  pg_.status.phase = std::move(phase);
  return *this;
}
PodGroupBuilder& PodGroupBuilder::CreationTimestamp(k8s::TimeMs t) {
  pg_.metadata.creation_timestamp = t;
  return *this;
}

// ---------------------------------------------------------------------- Queue

QueueBuilder::QueueBuilder(std::string name) {
  q_.metadata.uid = "uid-queue-" + name;
  q_.metadata.name = std::move(name);
  q_.metadata.resource_version = "1";
}

QueueBuilder& QueueBuilder::Uid(std::string uid) {
  q_.metadata.uid = std::move(uid);
  return *this;
}
QueueBuilder& QueueBuilder::ResourceVersion(std::string rv) {
  q_.metadata.resource_version = std::move(rv);
  return *this;
}
QueueBuilder& QueueBuilder::Weight(int32_t w) {
  q_.spec.weight = w;
  return *this;
}
QueueBuilder& QueueBuilder::Capability(k8s::ResourceList list) {
  q_.spec.capability = std::move(list);
  return *this;
}
QueueBuilder& QueueBuilder::Reclaimable(bool r) {
  q_.spec.reclaimable = r;
  return *this;
}
QueueBuilder& QueueBuilder::Parent(std::string parent) {
  q_.spec.parent = std::move(parent);
  return *this;
}
QueueBuilder& QueueBuilder::State(std::string state) {
  q_.status.state = std::move(state);
  return *this;
}

// ------------------------------------------------ PriorityClass, ResourceQuota

k8s::PriorityClass MakePriorityClass(std::string name, int32_t value, bool global_default) {
  k8s::PriorityClass pc;
  pc.metadata.uid = "uid-pc-" + name;
  pc.metadata.name = std::move(name);
  pc.value = value;
  pc.global_default = global_default;
  return pc;
}

k8s::ResourceQuota MakeResourceQuota(std::string ns, std::string name, k8s::ResourceList hard,
                                     k8s::ResourceList used) {
  k8s::ResourceQuota q;
  q.metadata.uid = "uid-quota-" + ns + "-" + name;
  q.metadata.namespace_ = std::move(ns);
  q.metadata.name = std::move(name);
  q.spec_hard = hard;
  q.status_hard = std::move(hard);
  q.status_used = std::move(used);
  return q;
}

// -------------------------------------------------------------- CacheHarness

CacheHarness::CacheHarness(SchedulerCacheOptions options)
    : clock(std::make_shared<FakeClock>()),
      cache(std::make_unique<SchedulerCache>(std::move(options), clock, &source)) {}

CacheHarness::~CacheHarness() = default;

void CacheHarness::PutNode(const k8s::NodePtr& node) {
  source.PutNode(node);
  cache->AddNode(*node);
  cache->DrainQueuesOnce();
}

void CacheHarness::RemoveNode(const std::string& name) {
  auto node = source.GetNode(name);
  source.DeleteNode(name);
  if (node.ok()) {
    cache->DeleteNode(**node);
  } else {
    k8s::Node n;
    n.metadata.name = name;
    cache->DeleteNode(n);
  }
  cache->DrainQueuesOnce();
}

Status CacheHarness::PutPod(const k8s::PodPtr& pod) {
  source.PutPod(pod);
  return cache->AddPod(pod);
}

size_t CacheHarness::AdvanceAndDrain(Duration d) {
  clock->Advance(d);
  return cache->DrainQueuesOnce();
}

nlohmann::json CacheHarness::DumpJson() const { return nlohmann::json::parse(cache->Dump()); }

namespace {
nlohmann::json FindBy(const nlohmann::json& arr, std::string_view field, std::string_view value) {
  if (!arr.is_array()) return nullptr;
  for (const auto& e : arr) {
    const std::string key(field);
    if (e.contains(key) && e[key] == value) return e;
  }
  return nullptr;
}
}  // namespace

nlohmann::json FindNodeJson(const nlohmann::json& dump, std::string_view name) {
  return dump.contains("nodes") ? FindBy(dump["nodes"], "name", name) : nullptr;
}
nlohmann::json FindJobJson(const nlohmann::json& dump, std::string_view uid) {
  return dump.contains("jobs") ? FindBy(dump["jobs"], "uid", uid) : nullptr;
}
nlohmann::json FindQueueJson(const nlohmann::json& dump, std::string_view name) {
  return dump.contains("queues") ? FindBy(dump["queues"], "name", name) : nullptr;
}
nlohmann::json FindTaskJson(const nlohmann::json& job, std::string_view name) {
  return job.is_object() && job.contains("tasks") ? FindBy(job["tasks"], "name", name) : nullptr;
}

}  // namespace volcache::testing
