#pragma once
// The SchedulerCache test fixture shared by tests/cache/scheduler_cache_*_test.cc (one file
// per topic): a cache with the default queues, builders for nodes, jobs and pods, the
// refusal check (all-or-nothing, proven by comparing Dump() before and after), and a text
// form of everything a snapshot holds. Every test checks CheckInvariants() when it ends.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/cluster_info.h"
#include "api/k8s/objects.h"
#include "api/resource.h"
#include "cache/scheduler_cache.h"
#include "tests/fakes/cluster_builders.h"
#include "workers/work_queue.h"

namespace volcache {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::CacheHarness;
using testing::FindJobJson;
using testing::FindNodeJson;
using testing::FindQueueJson;
using testing::FindTaskJson;
using testing::MakePriorityClass;
using testing::MakeResourceQuota;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupBuilder;
using testing::QueueBuilder;
using testing::Resources;

#define ASSERT_OK(expr)                                     \
  do {                                                      \
    const ::volcache::Status s_ = (expr);                   \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                     \
  do {                                                      \
    const ::volcache::Status s_ = (expr);                   \
    EXPECT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)

constexpr int64_t kGi = 1024ll * 1024 * 1024;
constexpr int64_t kMi = 1024ll * 1024;

// A resource object as Dump() writes it: zero dimensions omitted.
inline json R(int64_t cpu, int64_t memory, int64_t pods) {
  json j = json::object();
  if (cpu != 0) j["cpu"] = cpu;
  if (memory != 0) j["memory"] = memory;
  if (pods != 0) j["pods"] = pods;
  return j;
}

inline std::vector<std::string> Names(const json& arr) {
  std::vector<std::string> out;
  for (const auto& e : arr)
    out.push_back(e.is_string() ? e.get<std::string>() : e["name"].get<std::string>());
  return out;
}

// A resource with zero dimensions omitted (a scalar present at 0 and an absent one are the
// same amount), scalars sorted by name.
inline std::string Canonical(const Resource& r) {
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->value != 0) dims.emplace_back(ResourceNames::Name(s->id), s->value);
  }
  std::sort(dims.begin(), dims.end());
  std::string out = "cpu " + std::to_string(r.milli_cpu()) + ", memory " + std::to_string(r.memory());
  for (const auto& [name, v] : dims) out += ", " + name + " " + std::to_string(v);
  return out;
}

// Everything observable in a snapshot: the §8 dump plus the fields it does not carry.
inline std::string SnapshotText(const ClusterInfo& snap) {
  std::string out = DumpClusterInfo(snap);
  std::vector<std::string> revocable(snap.revocable_nodes().begin(), snap.revocable_nodes().end());
  std::sort(revocable.begin(), revocable.end());
  out += "\nrevocable:";
  for (const auto& n : revocable) out += " " + n;
  out += "\ntotal: " + Canonical(snap.total_allocatable());
  out += "\ndefault priority: " + std::to_string(snap.default_priority);
  for (const auto& [name, v] : snap.priority_classes) out += "\npc " + name + "=" + std::to_string(v);
  for (const auto& [ns, q] : snap.namespace_quotas) {
    out += "\nquota " + ns + " hard {" + Canonical(q.hard) + "} used {" + Canonical(q.used) + "}";
  }
  std::vector<std::string> names;
  for (const auto& [name, _] : snap.nodes()) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const NodeInfo& n = *snap.nodes().at(name);
    out += "\nnode " + name + " future idle {" + Canonical(n.FutureIdle()) + "} nz " +
           std::to_string(n.non_zero_requested().milli_cpu) + "/" +
           std::to_string(n.non_zero_requested().memory) + " images " + std::to_string(n.images().size()) +
           " ports " + std::to_string(n.used_ports().size());
  }
  std::vector<std::string> ids;
  for (const auto& [id, _] : snap.jobs()) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    const JobInfo& j = *snap.jobs().at(id);
    out += "\njob " + id + " ready " + std::to_string(j.ReadyTaskNum()) + " waiting " +
           std::to_string(j.WaitingTaskNum()) + " valid " + std::to_string(j.ValidTaskNum());
  }
  return out;
}

class SchedulerCacheTest : public ::testing::Test, protected CacheHarness {
 protected:
  explicit SchedulerCacheTest(SchedulerCacheOptions options = {}) : CacheHarness(std::move(options)) {}

  void SetUp() override { cache->EnsureDefaultQueues(); }
  void TearDown() override {
    Status s = cache->CheckInvariants();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  // A Ready node with 4 cpu, 8Gi, 110 pods unless told otherwise.
  void AddNode(const std::string& name, std::string_view cpu = "4", std::string_view memory = "8Gi") {
    PutNode(NodeBuilder(name).Allocatable(cpu, memory));
  }
  void AddJob(const std::string& name, const std::string& queue = "", int32_t min_member = 1) {
    ASSERT_OK(cache->AddPodGroup(PodGroupBuilder("ns", name).Queue(queue).MinMember(min_member).Ptr()));
  }
  // A pending pod of job ns/<group> requesting cpu/memory.
  static PodBuilder Pod(const std::string& name, const std::string& group = "job", std::string_view cpu = "1",
                        std::string_view memory = "1Gi") {
    PodBuilder b("ns", name);
    if (!group.empty()) b.Group(group);
    b.Request(cpu, memory);
    return b;
  }
  static PodBuilder RunningOn(PodBuilder b, const std::string& node) {
    b.NodeName(node).Phase("Running");
    return b;
  }

  // `op` must be refused with `code` and a message containing every needle, and leave the
  // cache exactly as it was.
  void ExpectRefused(const std::function<Status()>& op, StatusCode code,
                     const std::vector<std::string>& needles) {
    const std::string before = cache->Dump();
    const CacheCounters counters_before = cache->counters();
    Status s = op();
    EXPECT_EQ(s.code(), code) << s.ToString();
    for (const auto& n : needles) EXPECT_THAT(s.message(), HasSubstr(n));
    EXPECT_EQ(cache->Dump(), before);
    EXPECT_EQ(cache->counters().events_applied, counters_before.events_applied);
  }

  json Node(const std::string& name) { return FindNodeJson(DumpJson(), name); }
  json Job(const std::string& id = "ns/job") { return FindJobJson(DumpJson(), id); }
  json Task(const std::string& name, const std::string& job = "ns/job") {
    return FindTaskJson(Job(job), name);
  }
};

}  // namespace volcache
