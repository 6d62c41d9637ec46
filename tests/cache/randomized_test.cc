// Randomized event sequences against SchedulerCache through its public API (SPEC §10:
// "tests check them after every step of randomized event sequences").
//
// Every step is one random operation from tests/fakes/random_cluster.h: pods (ours and
// foreign, bound and unbound, every phase, deleting, with GPU requests, naming unknown
// nodes, uid collisions, invalid quantities), nodes through the object store + node queue,
// PodGroups, Queues, PriorityClasses, ResourceQuotas, the assume/bind state machine (bind,
// finish, forget, confirm, expire), evictions, resync and queue draining. After EVERY step
// the cache's invariants must hold, and a refused single call must leave Dump() unchanged.
//
// Reproduce a failure with VOLCACHE_RANDOM_SEED=<seed> (and VOLCACHE_RANDOM_STEPS=<n>).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/scheduler_cache.h"
#include "tests/fakes/random_cluster.h"

namespace volcache {
namespace {

using testing::RandomCluster;
using testing::RandomClusterOptions;
using testing::RandomStep;

// 4 seeds x 2,500 steps = 10,000 checked steps per run.
constexpr uint64_t kSeeds[] = {0x5eed0001, 0x5eed0002, 0x5eed0003, 0x5eed0004};
constexpr int kStepsPerSeed = 2500;

std::vector<uint64_t> Seeds() {
  if (const char* env = std::getenv("VOLCACHE_RANDOM_SEED"); env && *env) {
    return {std::strtoull(env, nullptr, 0)};
  }
  return std::vector<uint64_t>(std::begin(kSeeds), std::end(kSeeds));
}

int Steps() {
  if (const char* env = std::getenv("VOLCACHE_RANDOM_STEPS"); env && *env) return std::atoi(env);
  return kStepsPerSeed;
}

// "bind ns-a/p01 to node-2" → "bind"; "add pod ..." → "add pod".
std::string OpKind(const std::string& what) {
  size_t first = what.find(' ');
  if (first == std::string::npos) return what;
  size_t second = what.find(' ', first + 1);
  std::string two = what.substr(0, second);
  static const std::set<std::string> kTwoWords = {
      "add pod",      "re-add pod",     "update pod",     "confirm pod",     "delete pod",      "add node",
      "update node",  "delete node",    "add podgroup",   "update podgroup", "delete podgroup", "put queue",
      "delete queue", "finish binding", "delete unknown", "sync node",       "resync"};
  if (kTwoWords.count(two)) return two;
  return what.substr(0, first);
}

struct Tally {
  int ok = 0;
  int refused = 0;
};

class RandomizedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { spdlog::set_level(spdlog::level::off); }
  void TearDown() override { spdlog::set_level(spdlog::level::info); }
};

// Share of steps whose Dump() is taken beforehand, so that a refused call can be compared:
// every step normally; a sample in Debug/sanitizer builds, where a dump costs milliseconds.
constexpr double kDumpSample = testing::kInstrumentedBuild ? 0.3 : 1.0;

// Runs `steps` random steps with the invariant and all-or-nothing checks; returns per-kind
// tallies of single calls.
std::map<std::string, Tally> RunSequence(RandomCluster& rc, int steps) {
  std::map<std::string, Tally> tally;
  // Its own generator: sampling must not change the sequence of steps a seed produces.
  std::mt19937_64 sampler(rc.options().seed ^ 0x9e3779b97f4a7c15ull);
  std::bernoulli_distribution sample(kDumpSample);
  for (int i = 0; i < steps; ++i) {
    const bool compare = sample(sampler);
    const std::string before = compare ? rc.cache().Dump() : std::string();
    RandomStep step = rc.Step();
    SCOPED_TRACE("step " + std::to_string(i) + ": " + step.what);
    Status inv = rc.cache().CheckInvariants();
    EXPECT_TRUE(inv.ok()) << inv.message() << "\nstatus of the step: " << step.status.ToString();
    if (!inv.ok()) return tally;
    if (!step.single_call) continue;
    Tally& t = tally[OpKind(step.what)];
    if (step.status.ok()) {
      ++t.ok;
      continue;
    }
    ++t.refused;
    if (!compare) continue;
    // All-or-nothing: a refused call changes nothing the dump shows.
    const std::string after = rc.cache().Dump();
    EXPECT_EQ(before, after) << "refused with: " << step.status.ToString();
    if (before != after) return tally;
  }
  return tally;
}

// Jobs that have neither tasks nor a PodGroup must be cleaned up once the queues ran.
void ExpectNoOrphanJobs(RandomCluster& rc) {
  rc.Quiesce();
  ASSERT_TRUE(rc.cache().CheckInvariants().ok()) << rc.cache().CheckInvariants().message();
  const std::set<std::string> pod_groups = rc.PodGroupIds();
  auto dump = nlohmann::json::parse(rc.cache().Dump());
  for (const auto& job : dump["jobs"]) {
    const std::string id = job["uid"].get<std::string>();
    if (job["tasks"].empty()) {
      EXPECT_TRUE(pod_groups.count(id))
          << "job " << id << " has no tasks and no PodGroup but is still cached";
    }
  }
}

TEST_F(RandomizedCacheTest, InvariantsHoldAndRefusalsChangeNothing) {
  std::map<std::string, Tally> total;
  for (uint64_t seed : Seeds()) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (rerun with VOLCACHE_RANDOM_SEED=" + std::to_string(seed) + ")");
    RandomClusterOptions opts;
    opts.seed = seed;
    RandomCluster rc(opts);
    auto tally = RunSequence(rc, Steps());
    if (HasFailure()) return;
    ExpectNoOrphanJobs(rc);
    for (const auto& [kind, t] : tally) {
      total[kind].ok += t.ok;
      total[kind].refused += t.refused;
    }
    // Small cluster: the cache never holds more than the generator's name pools.
    EXPECT_LE(rc.cache().num_nodes(), 8u);
    EXPECT_LE(rc.cache().num_jobs(), 6u + 2u);  // 6 job ids (+ stale ones awaiting cleanup)
    EXPECT_LE(rc.cache().num_tasks(), 40u);
  }
  if (std::getenv("VOLCACHE_RANDOM_VERBOSE")) {
    for (const auto& [kind, t] : total)
      std::printf("%-16s ok %5d refused %5d\n", kind.c_str(), t.ok, t.refused);
  }
  if (Seeds().size() == 1 || Steps() < kStepsPerSeed) return;
  // The generator must actually exercise the state machine: each of these happened and was
  // also refused at some point.
  for (const char* kind :
       {"bind", "forget", "evict", "add pod", "update pod", "delete pod", "finish binding"}) {
    SCOPED_TRACE(kind);
    EXPECT_GT(total[kind].ok, 10);
    EXPECT_GT(total[kind].refused, 10);
  }
  EXPECT_GT(total["confirm pod"].ok, 50);
  EXPECT_GT(total["update podgroup"].ok, 20);
}

// Without a TTL assumed tasks never expire; the same checks hold.
TEST_F(RandomizedCacheTest, InvariantsHoldWithoutAssumedTtl) {
  RandomClusterOptions opts;
  opts.seed = 0xa55e;
  opts.assumed_ttl = Duration::zero();
  RandomCluster rc(opts);
  RunSequence(rc, 600);
  if (HasFailure()) return;
  ExpectNoOrphanJobs(rc);
}

// Foreign-scheduler view: the cache runs as "default-scheduler" while the generator's pods
// use both names.
TEST_F(RandomizedCacheTest, InvariantsHoldForAnotherSchedulerName) {
  RandomClusterOptions opts;
  opts.seed = 0xd5;
  opts.scheduler_name = "default-scheduler";
  RandomCluster rc(opts);
  RunSequence(rc, 600);
  if (HasFailure()) return;
  ExpectNoOrphanJobs(rc);
}

}  // namespace
}  // namespace volcache
