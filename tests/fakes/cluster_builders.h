#pragma once
// Test helpers: building Kubernetes objects programmatically (Pods, Nodes, PodGroups,
// Queues, PriorityClasses, ResourceQuotas) and a harness holding a FakeClock, an
// ObjectStoreSource and a SchedulerCache wired together.
//
// Builders are fluent value types: every setter returns *this, Build() returns the object,
// Ptr() a fresh shared immutable copy. Defaults are chosen so that the shortest form is the
// common case: PodBuilder("ns", "p") is a Pending pod of scheduler "volcano" with uid
// "uid-ns-p" and no containers; NodeBuilder("n1") is a Ready node with nothing allocatable;
// PodGroupBuilder("ns", "pg") has uid "uid-pg-ns-pg" and resourceVersion "1".
//
// Quantities are parsed with Quantity::Parse; an unparsable literal aborts the test binary
// with a message (it is a bug in the test, not a case under test). Negative quantities are
// accepted on purpose, so tests can feed the cache invalid requests.
//
// Thread-safety: builders are values; CacheHarness is meant for one test thread (the cache
// itself is safe for concurrent use).

#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "api/k8s/objects.h"
#include "api/quantity.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"
#include "workers/clock.h"

namespace volcache::testing {

// Parses a quantity literal or aborts.
Quantity Q(std::string_view text);
// {{"cpu", "2"}, {"memory", "4Gi"}} → a ResourceList in that order.
k8s::ResourceList Resources(std::initializer_list<std::pair<std::string_view, std::string_view>> items);

class PodBuilder {
 public:
  PodBuilder(std::string ns, std::string name);

  PodBuilder& Uid(std::string uid);
  PodBuilder& ResourceVersion(std::string rv);
  // Sets the scheduling.k8s.io/group-name annotation (the pod's job is ns/<group>).
  PodBuilder& Group(std::string group);
  PodBuilder& SchedulerName(std::string name);
  PodBuilder& NodeName(std::string node);
  PodBuilder& Phase(std::string phase);
  PodBuilder& Deleting(k8s::TimeMs at = 1);
  PodBuilder& Priority(int32_t p);
  PodBuilder& PriorityClassName(std::string name);
  PodBuilder& Annotation(std::string key, std::string value);
  PodBuilder& Label(std::string key, std::string value);
  // Appends a container requesting `requests`.
  PodBuilder& Container(k8s::ResourceList requests);
  // Shorthand: a container requesting cpu and memory (quantity literals; "" omits one).
  PodBuilder& Request(std::string_view cpu, std::string_view memory);
  PodBuilder& CreationTimestamp(k8s::TimeMs t);

  const k8s::Pod& Build() const { return pod_; }
  k8s::PodPtr Ptr() const { return std::make_shared<const k8s::Pod>(pod_); }

 private:
  k8s::Pod pod_;
};

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name);

  NodeBuilder& Uid(std::string uid);
  // status.allocatable (and capacity, unless Capacity() is called).
  NodeBuilder& Allocatable(k8s::ResourceList list);
  // Shorthand: cpu, memory and pods quantity literals ("" omits one).
  NodeBuilder& Allocatable(std::string_view cpu, std::string_view memory, std::string_view pods = "110");
  NodeBuilder& Capacity(k8s::ResourceList list);
  // Sets the Ready condition to "True"/"False" (a node built without calling it is Ready).
  NodeBuilder& Ready(bool ready);
  // Removes every condition (the node is then NotReady).
  NodeBuilder& NoConditions();
  NodeBuilder& Label(std::string key, std::string value);
  // topology.kubernetes.io/{region,zone} ("" omits one).
  NodeBuilder& Zone(std::string region, std::string zone);
  // failure-domain.beta.kubernetes.io/{region,zone} ("" omits one).
  NodeBuilder& BetaZone(std::string region, std::string zone);
  // volcano.sh/revocable-zone.
  NodeBuilder& RevocableZone(std::string zone);
  NodeBuilder& Unschedulable(bool u = true);
  NodeBuilder& Taint(std::string key, std::string value, std::string effect);

  k8s::Node Build() const;
  k8s::NodePtr Ptr() const { return std::make_shared<const k8s::Node>(Build()); }

 private:
  k8s::Node node_;
  bool capacity_set_ = false;
};

class PodGroupBuilder {
 public:
  PodGroupBuilder(std::string ns, std::string name);

  PodGroupBuilder& Uid(std::string uid);
  PodGroupBuilder& ResourceVersion(std::string rv);
  PodGroupBuilder& MinMember(int32_t n);
  PodGroupBuilder& MinTaskMember(std::string role, int32_t n);
  PodGroupBuilder& Queue(std::string queue);
  PodGroupBuilder& PriorityClassName(std::string name);
  PodGroupBuilder& MinResources(k8s::ResourceList list);
  PodGroupBuilder& Phase(std::string phase);
  PodGroupBuilder& CreationTimestamp(k8s::TimeMs t);

  const k8s::PodGroup& Build() const { return pg_; }
  std::shared_ptr<const k8s::PodGroup> Ptr() const { return std::make_shared<const k8s::PodGroup>(pg_); }

 private:
  k8s::PodGroup pg_;
};

class QueueBuilder {
 public:
  explicit QueueBuilder(std::string name);

  QueueBuilder& Uid(std::string uid);
  QueueBuilder& ResourceVersion(std::string rv);
  QueueBuilder& Weight(int32_t w);
  QueueBuilder& Capability(k8s::ResourceList list);
  QueueBuilder& Reclaimable(bool r);
  QueueBuilder& Parent(std::string parent);
  QueueBuilder& State(std::string state);

  const k8s::Queue& Build() const { return q_; }
  std::shared_ptr<const k8s::Queue> Ptr() const { return std::make_shared<const k8s::Queue>(q_); }

 private:
  k8s::Queue q_;
};

k8s::PriorityClass MakePriorityClass(std::string name, int32_t value, bool global_default = false);
k8s::ResourceQuota MakeResourceQuota(std::string ns, std::string name, k8s::ResourceList hard,
                                     k8s::ResourceList used = {});

// A FakeClock, an ObjectStoreSource and a SchedulerCache reading from it. Members are
// public: tests drive the cache directly and use the helpers for the multi-step chores.
struct CacheHarness {
  explicit CacheHarness(SchedulerCacheOptions options = {});
  ~CacheHarness();

  std::shared_ptr<FakeClock> clock;
  ObjectStoreSource source;
  std::unique_ptr<SchedulerCache> cache;

  // Puts the node in the source, calls AddNode and drains the queues (SyncNode runs).
  void PutNode(const k8s::NodePtr& node);
  void PutNode(const NodeBuilder& node) { PutNode(node.Ptr()); }
  // Removes the node from the source, calls DeleteNode and drains the queues.
  void RemoveNode(const std::string& name);
  // Puts the pod in the source and calls AddPod (the watch delivering it); returns its status.
  Status PutPod(const k8s::PodPtr& pod);
  Status PutPod(const PodBuilder& pod) { return PutPod(pod.Ptr()); }
  // Advances the fake clock and drains the queues; returns the items processed.
  size_t AdvanceAndDrain(Duration d);

  // Dump() parsed.
  nlohmann::json DumpJson() const;
};

// Finders in a parsed Dump()/DumpClusterInfo(): the element of "nodes"/"jobs"/"queues"
// whose "name" (jobs: "uid") equals `key`, or a null json when absent.
nlohmann::json FindNodeJson(const nlohmann::json& dump, std::string_view name);
nlohmann::json FindJobJson(const nlohmann::json& dump, std::string_view uid);
nlohmann::json FindQueueJson(const nlohmann::json& dump, std::string_view name);
// The task object named `name` of a job json, or null json.
nlohmann::json FindTaskJson(const nlohmann::json& job, std::string_view name);

}  // namespace volcache::testing
