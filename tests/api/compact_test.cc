// k8s::Shared (copies share a pod's repeated parts, writes copy first) and k8s::Compact
// (equal parts of different pods become one block), through the decoders that compact.
#include "api/k8s/compact.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/k8s/decode.h"
#include "api/k8s/decode_fast.h"

namespace volcache::k8s {
namespace {

// A Shared field is one pointer (the block counts its holders): a decoded pod holds eight.
static_assert(sizeof(StringMap) == sizeof(void*));
static_assert(sizeof(Shared<std::vector<Container>>) == sizeof(void*));
// 192 bytes plus make_shared's 16-byte control block: tcmalloc's 208-byte class.
static_assert(sizeof(Pod) <= 192);
// 144 bytes plus the control block: tcmalloc's 160-byte class.
static_assert(sizeof(PodGroup) <= 144);
// An Interned field is a 32-bit number.
static_assert(sizeof(Interned) == 4);
static_assert(sizeof(Boxed<NetworkTopologySpec>) == sizeof(void*));

Pod MakePod(const std::string& name, const std::string& image, const std::string& group) {
  Pod p;
  p.metadata.name = name;
  p.metadata.namespace_ = "default";
  p.metadata.uid = "uid-" + name;
  p.metadata.annotations["scheduling.k8s.io/group-name"] = group;
  p.metadata.labels["app"] = "train";
  Container c;
  c.name = "main";
  c.image = image;
  c.requests = {{"cpu", *Quantity::Parse("1")}, {"memory", *Quantity::Parse("2Gi")}};
  c.limits = c.requests;
  p.spec.containers.push_back(std::move(c));
  p.spec.tolerations.push_back({"dedicated", "Equal", "gpu", "NoSchedule", std::nullopt});
  return p;
}

// The spec's flags live in the padding of its priority ([[no_unique_address]]): writing one
// never changes the other.
// metadata.generation and deletionGracePeriodSeconds share 8 bytes: in the word while the
// object is not being deleted, in a heap block while it is (or for a negative generation).
// Copies and moves keep both.
TEST(ObjectMetaLayoutTest, GenerationAndGracePeriodShareEightBytes) {
  static_assert(sizeof(ObjectMeta) == 88);
  static_assert(sizeof(Pod) == 176);   // with the control block, tcmalloc's 192-byte class
  static_assert(sizeof(Node) == 136);  // with the control block, tcmalloc's 160-byte class
  ObjectMeta m;
  EXPECT_EQ(m.generation(), 0);
  EXPECT_FALSE(m.deletion_grace_period_seconds().has_value());
  m.set_generation(7);
  EXPECT_EQ(m.generation(), 7);
  EXPECT_FALSE(m.generation_and_grace.boxed());
  m.set_deletion_grace_period_seconds(30);
  EXPECT_TRUE(m.generation_and_grace.boxed());
  EXPECT_EQ(m.generation(), 7);
  EXPECT_EQ(m.deletion_grace_period_seconds(), 30);
  ObjectMeta copy = m;
  m.set_generation(8);
  EXPECT_EQ(copy.generation(), 7);
  EXPECT_EQ(copy.deletion_grace_period_seconds(), 30);
  EXPECT_EQ(m.deletion_grace_period_seconds(), 30);
  m.set_deletion_grace_period_seconds(std::nullopt);
  EXPECT_FALSE(m.generation_and_grace.boxed());
  EXPECT_EQ(m.generation(), 8);
  m.set_deletion_grace_period_seconds(0);  // a forced deletion: zero is a value
  EXPECT_EQ(m.deletion_grace_period_seconds(), 0);
  EXPECT_EQ(m.generation(), 8);
  const ObjectMeta moved = std::move(copy);
  EXPECT_EQ(moved.generation(), 7);
  EXPECT_EQ(moved.deletion_grace_period_seconds(), 30);
  // The whole int64 range: the largest in the word, a negative one in the block.
  ObjectMeta e;
  e.set_generation(INT64_MAX);
  EXPECT_FALSE(e.generation_and_grace.boxed());
  EXPECT_EQ(e.generation(), INT64_MAX);
  e.set_generation(-5);
  EXPECT_TRUE(e.generation_and_grace.boxed());
  EXPECT_EQ(e.generation(), -5);
  EXPECT_FALSE(e.deletion_grace_period_seconds().has_value());
  e = m;
  EXPECT_EQ(e.generation(), 8);
  EXPECT_EQ(e.deletion_grace_period_seconds(), 0);
}

TEST(PodSpecLayoutTest, PriorityAndFlagsAreIndependent) {
  Pod pod;
  pod.spec.has_node_affinity = true;
  pod.spec.has_pod_anti_affinity = true;
  pod.spec.host_network = true;
  pod.spec.priority = -7;
  pod.spec.priority = std::optional<int32_t>(2000000000);
  EXPECT_TRUE(pod.spec.has_node_affinity);
  EXPECT_FALSE(pod.spec.has_pod_affinity);
  EXPECT_TRUE(pod.spec.has_pod_anti_affinity);
  EXPECT_TRUE(pod.spec.host_network);
  EXPECT_EQ(pod.spec.priority, 2000000000);
  Pod copy = pod;
  copy.spec.priority.reset();
  EXPECT_FALSE(copy.spec.priority.has_value());
  EXPECT_EQ(copy.spec.priority.value_or(3), 3);
  EXPECT_TRUE(copy.spec.has_node_affinity && copy.spec.has_pod_anti_affinity && copy.spec.host_network);
  copy.spec.has_node_affinity = false;
  copy.spec.host_network = false;
  EXPECT_EQ(pod.spec.priority, 2000000000);  // the original is untouched
  EXPECT_FALSE(copy.spec.priority.has_value());
  EXPECT_TRUE(copy.spec.has_pod_anti_affinity);
  // Zero is a value, not absence.
  copy.spec.priority = 0;
  EXPECT_TRUE(copy.spec.priority.has_value());
  EXPECT_EQ(copy.spec.priority, 0);
  EXPECT_FALSE(copy.spec.priority == OptionalInt32());
  EXPECT_TRUE(OptionalInt32() == std::nullopt);
}

TEST(SharedTest, CopiesShareAndWritesCopyFirst) {
  Pod a = MakePod("a-0", "img:1", "a");
  Pod b = a;
  EXPECT_TRUE(b.spec.containers.SameBlock(a.spec.containers));
  EXPECT_TRUE(b.metadata.labels.SameBlock(a.metadata.labels));
  // A write to the copy leaves the original as it was, in every way the API reads it.
  b.metadata.labels["app"] = "serve";
  b.spec.containers.mut()[0].image = "img:2";
  EXPECT_FALSE(b.spec.containers.SameBlock(a.spec.containers));
  EXPECT_EQ(a.metadata.labels.at("app"), "train");
  EXPECT_EQ(b.metadata.labels.at("app"), "serve");
  EXPECT_EQ(a.spec.containers[0].image, "img:1");
  EXPECT_EQ(b.spec.containers[0].image, "img:2");
  // Writing to the original after the copy is gone still copies: a shared block is never
  // written in place again.
  const Shared<std::vector<Container>> kept = a.spec.containers;
  a.spec.containers.mut()[0].name = "renamed";
  EXPECT_EQ(kept[0].name, "main");
}

// A Boxed field reads as the std::optional it replaces, and its copies are deep.
TEST(BoxedTest, ReadsAsAnOptionalAndCopiesDeep) {
  Boxed<NetworkTopologySpec> a;
  EXPECT_FALSE(a.has_value());
  EXPECT_FALSE(a);
  EXPECT_EQ(a.get(), nullptr);
  a = NetworkTopologySpec{"soft", 2, ""};
  ASSERT_TRUE(a);
  EXPECT_EQ(a->mode, "soft");
  EXPECT_EQ(a->highest_tier_allowed, 2);

  Boxed<NetworkTopologySpec> b = a;
  ASSERT_TRUE(b);
  EXPECT_NE(b.get(), a.get());  // its own block
  b->mode = "hard";
  EXPECT_EQ(a->mode, "soft");  // the copy's write leaves the original alone

  std::optional<NetworkTopologySpec> none;
  b = none;
  EXPECT_FALSE(b);
  b = std::optional<NetworkTopologySpec>(NetworkTopologySpec{"hard", std::nullopt, "rack"});
  EXPECT_EQ(b->highest_tier_name, "rack");
  b = std::nullopt;
  EXPECT_FALSE(b);
  b.emplace().highest_tier_name = "zone";
  EXPECT_EQ(b->mode, "hard");  // the spec's default
  b.reset();
  EXPECT_FALSE(b);

  Boxed<std::string> x = std::string("v"), y = std::string("v"), z;
  EXPECT_TRUE(x == y);
  EXPECT_FALSE(x == z);
  EXPECT_TRUE(z == Boxed<std::string>());
  y = x;
  const Boxed<std::string>& self = y;
  y = self;  // self-assignment keeps the value (through a reference: clang warns on `y = y`)
  EXPECT_EQ(*y, "v");
}

// A PodGroup's copies share their conditions and their rare spec fields until one is written.
TEST(SharedTest, PodGroupCopiesShareConditionsUntilWritten) {
  PodGroup a;
  EXPECT_EQ(a.spec.rare, nullptr);  // nothing rare set: no block
  EXPECT_TRUE(a.spec.sub_group_policy().empty());
  EXPECT_FALSE(a.spec.network_topology().has_value());
  a.status.conditions.push_back({"Unschedulable", "True", "", 1, "NotEnoughResources", "0/1"});
  a.spec.mutable_rare().sub_group_policy.push_back(
      SubGroupPolicy{"workers", 4, std::nullopt, std::nullopt, {}});
  PodGroup b = a;
  EXPECT_TRUE(b.status.conditions.SameBlock(a.status.conditions));
  EXPECT_EQ(b.spec.rare, a.spec.rare);
  b.status.conditions.mut().back().status = "False";
  EXPECT_EQ(a.status.conditions[0].status, "True");
  EXPECT_EQ(b.status.conditions[0].status, "False");
  // Writing b's rare fields copies the shared block first: a keeps its own.
  b.spec.mutable_rare().sub_group_policy[0].sub_group_size = 8;
  EXPECT_NE(b.spec.rare, a.spec.rare);
  EXPECT_EQ(a.spec.sub_group_policy()[0].sub_group_size, 4);
  EXPECT_EQ(b.spec.sub_group_policy()[0].sub_group_size, 8);
  // A block held once is written in place.
  const PodGroupSpec::Rare* own = b.spec.rare.get();
  b.spec.mutable_rare().min_resources.emplace_back("cpu", Quantity::FromMilli(2000));
  EXPECT_EQ(b.spec.rare.get(), own);
  EXPECT_TRUE(a.spec.min_resources().empty());
}

TEST(SharedTest, EmptyHoldsNothingAndComparesByValue) {
  StringMap empty;
  StringMap cleared = {{"k", "v"}};
  cleared.erase("k");
  EXPECT_TRUE(empty.empty());
  EXPECT_TRUE(cleared.empty());
  EXPECT_EQ(empty, cleared);
  StringMap x = {{"k", "v"}}, y = {{"k", "v"}};
  EXPECT_FALSE(x.SameBlock(y));
  EXPECT_EQ(x, y);
  y["k"] = "w";
  EXPECT_FALSE(x == y);
  EXPECT_TRUE(x.contains("k"));
  EXPECT_FALSE(x.contains("absent"));
  EXPECT_EQ(x.count("k"), 1u);
}

TEST(CompactTest, EqualPartsOfDifferentPodsBecomeOneBlock) {
  Pod a = MakePod("job-1-0", "img:1", "job-1");
  Pod b = MakePod("job-1-1", "img:1", "job-1");
  Pod c = MakePod("job-2-0", "img:2", "job-2");
  const Pod a_before = a;  // shares a's blocks until Compact replaces them
  EXPECT_FALSE(a.spec.containers.SameBlock(b.spec.containers));
  Compact(&a);
  Compact(&b);
  Compact(&c);
  EXPECT_TRUE(a.spec.containers.SameBlock(b.spec.containers));
  EXPECT_TRUE(a.metadata.annotations.SameBlock(b.metadata.annotations));
  EXPECT_TRUE(a.metadata.labels.SameBlock(b.metadata.labels));
  EXPECT_TRUE(a.spec.tolerations.SameBlock(b.spec.tolerations));
  EXPECT_TRUE(a.metadata.labels.SameBlock(c.metadata.labels));  // same labels, other job
  EXPECT_FALSE(a.spec.containers.SameBlock(c.spec.containers));
  EXPECT_FALSE(a.metadata.annotations.SameBlock(c.metadata.annotations));
  // No value changed.
  EXPECT_EQ(a.spec.containers, a_before.spec.containers.get());
  EXPECT_EQ(a.metadata.annotations, a_before.metadata.annotations.get());
  EXPECT_EQ(a.spec.tolerations, a_before.spec.tolerations.get());
  // A compacted part is frozen: changing one pod's copy leaves the others alone.
  b.metadata.annotations["extra"] = "1";
  EXPECT_FALSE(a.metadata.annotations.contains("extra"));
  EXPECT_EQ(a.metadata.annotations.size(), 1u);
}

TEST(CompactTest, DecodersCompact) {
  auto json = [](const std::string& name) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
           R"(","namespace":"default","uid":"u-)" + name +
           R"(","annotations":{"scheduling.k8s.io/group-name":"pg"}},"spec":{"containers":[{"name":"main","image":"i",)"
           R"("resources":{"requests":{"cpu":"1"}}}]}})";
  };
  auto a = DecodePod(json("p-0"));
  auto b = DecodePod(json("p-1"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(a->spec.containers.SameBlock(b->spec.containers));
  EXPECT_TRUE(a->metadata.annotations.SameBlock(b->metadata.annotations));
  Object fast;
  ASSERT_TRUE(FastDecodeObject(json("p-2"), &fast));
  const Pod& f = std::get<Pod>(fast);
  EXPECT_TRUE(f.spec.containers.SameBlock(a->spec.containers));
  EXPECT_EQ(f.spec.containers[0].requests.at(0).second, *Quantity::Parse("1"));
}

// A node pool's nodes have equal capacity, allocatable and conditions: both decoders make
// them one block each, and a node that differs keeps its own.
TEST(CompactTest, DecodersCompactAlikeNodes) {
  auto json = [](const std::string& name, const std::string& cpu, const std::string& ready) {
    return R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
           R"("},"status":{"capacity":{"cpu":")" + cpu + R"(","memory":"256Gi","pods":"110"},)" +
           R"("allocatable":{"cpu":")" + cpu + R"(","memory":"250Gi","pods":"110"},)" +
           R"("conditions":[{"type":"Ready","status":")" + ready +
           R"(","reason":"KubeletReady","message":"kubelet is posting ready status"}]}})";
  };
  auto a = DecodeNode(json("n-0", "64", "True"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Object fast_b, fast_c;
  ASSERT_TRUE(FastDecodeObject(json("n-1", "64", "True"), &fast_b));
  ASSERT_TRUE(FastDecodeObject(json("n-2", "32", "False"), &fast_c));
  const Node& b = std::get<Node>(fast_b);
  const Node& c = std::get<Node>(fast_c);
  EXPECT_TRUE(a->status.capacity.SameBlock(b.status.capacity));
  EXPECT_TRUE(a->status.allocatable.SameBlock(b.status.allocatable));
  EXPECT_TRUE(a->status.conditions.SameBlock(b.status.conditions));
  EXPECT_FALSE(a->status.capacity.SameBlock(a->status.allocatable));  // memory differs
  EXPECT_FALSE(a->status.allocatable.SameBlock(c.status.allocatable));
  EXPECT_FALSE(a->status.conditions.SameBlock(c.status.conditions));
  // No value changed.
  ASSERT_EQ(b.status.allocatable.size(), 3u);
  EXPECT_EQ(b.status.allocatable[1].first, "memory");
  EXPECT_EQ(b.status.allocatable[1].second, *Quantity::Parse("250Gi"));
  EXPECT_EQ(c.status.conditions[0].status, "False");
  EXPECT_EQ(a->status.conditions[0].message, "kubelet is posting ready status");
  // A node without a status holds no block.
  auto bare = DecodeNode(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"bare"}})");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_TRUE(bare->status.allocatable.empty());
  EXPECT_TRUE(bare->status.allocatable.SameBlock(Shared<ResourceList>()));
}

// Blocks no pod holds any more leave the table with their last holder: a long-running
// daemon that sees ever new jobs does not keep their parts.
TEST(CompactTest, TableForgetsPartsNoPodHolds) {
  const size_t before = CompactTableEntries();
  {
    Pod kept = MakePod("p", "img", "group-kept");
    Compact(&kept);
    const size_t with_kept = CompactTableEntries();
    EXPECT_GT(with_kept, before);
    for (int i = 0; i < 20000; ++i) {
      Pod p = MakePod("p", "img", "group-" + std::to_string(i));
      Compact(&p);
      // A copy shares the pod's blocks and keeps them in the table after the pod is gone.
      Pod copy = p;
      p = Pod();
      Pod again = MakePod("p", "img", "group-" + std::to_string(i));
      Compact(&again);
      ASSERT_TRUE(again.metadata.annotations.SameBlock(copy.metadata.annotations));
    }
    // Each pod put its parts through (labels, annotations, containers, tolerations), all gone
    // with the pod and its copy: the tables hold what `kept` holds.
    EXPECT_EQ(CompactTableEntries(), with_kept);
  }
  EXPECT_EQ(CompactTableEntries(), before);
}

TEST(CompactTest, ConcurrentCompactionSharesOneBlock) {
  std::vector<Pod> left(200), right(200);
  auto run = [](std::vector<Pod>* out, int offset) {
    for (size_t i = 0; i < out->size(); ++i) {
      (*out)[i] = MakePod("t-" + std::to_string(offset + i), "img:c", "concurrent");
      Compact(&(*out)[i]);
    }
  };
  std::thread t1(run, &left, 0);
  std::thread t2(run, &right, 1000);
  t1.join();
  t2.join();
  for (size_t i = 0; i < left.size(); ++i) {
    EXPECT_TRUE(left[i].spec.containers.SameBlock(right[i].spec.containers));
    EXPECT_TRUE(left[i].metadata.annotations.SameBlock(left[0].metadata.annotations));
  }
}

// Two threads make, compact and drop pods with equal parts, so that one thread's last
// release races the other's lookup of the same block in the table: a lookup either takes a
// block that still has a holder or makes its own; no block is freed while held, none stays
// behind (ThreadSanitizer and AddressSanitizer builds check the first).
TEST(CompactTest, ReleaseRacesLookupOfTheSameBlock) {
  const size_t before = CompactTableEntries();
  auto run = [](int offset) {
    for (int i = 0; i < 3000; ++i) {
      Pod p = MakePod("r-" + std::to_string(offset + i), "img:race", "race-" + std::to_string(i % 7));
      Compact(&p);
      ASSERT_EQ(p.spec.containers[0].image, "img:race");
      Pod copy = p;  // a second holder, released in the other order
      p = Pod();
    }
  };
  std::thread t1(run, 0);
  std::thread t2(run, 100000);
  t1.join();
  t2.join();
  EXPECT_EQ(CompactTableEntries(), before);
}

TEST(CompactTest, SharedKeysOfOneJobAreOneBlock) {
  SharedString a = InternSharedKey("ns-a", "job-1");
  SharedString b = InternSharedKey("ns-a", "job-1");  // the thread's last key
  SharedString c = InternSharedKey("ns-a", "job-2");
  SharedString d = InternSharedKey("ns-a", "job-1");  // not the last one: the table's
  EXPECT_EQ(a.view(), "ns-a/job-1");
  EXPECT_EQ(c.view(), "ns-a/job-2");
  EXPECT_TRUE(a.SameBlock(b));
  EXPECT_TRUE(a.SameBlock(d));
  EXPECT_FALSE(a.SameBlock(c));
  // Keys that differ only in where the separator falls are different keys.
  SharedString e = InternSharedKey("ns", "a/job-1");
  SharedString f = InternSharedKey("ns-a", "job-1x");
  EXPECT_EQ(e.view(), "ns/a/job-1");
  EXPECT_FALSE(e.SameBlock(a));
  EXPECT_EQ(f.view(), "ns-a/job-1x");
  // Another thread gets the same block from the table.
  SharedString g;
  std::thread t([&g] { g = InternSharedKey("ns-a", "job-1"); });
  t.join();
  EXPECT_TRUE(g.SameBlock(a));
}

// A job id: one pointer to one block (count, length, characters), which copies share.
TEST(SharedStringTest, OneBlockThatCopiesShareAndReadsAsAString) {
  static_assert(sizeof(SharedString) == 8);
  const SharedString empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.view(), "");
  EXPECT_STREQ(empty.c_str(), "");
  EXPECT_TRUE(SharedString("").SameBlock(empty));  // an empty string holds no block

  const std::string id = "a-namespace/a-pod-group-with-a-long-name";
  SharedString a(id);
  EXPECT_EQ(a, id);
  EXPECT_EQ(a.size(), id.size());
  EXPECT_EQ(a.c_str()[id.size()], '\0');
  const std::string copy = a;  // converts to a std::string
  EXPECT_EQ(copy, id);
  EXPECT_EQ(fmt::format("{}", a), id);
  EXPECT_EQ(a + "/x", id + "/x");

  SharedString b = a;
  EXPECT_TRUE(b.SameBlock(a));
  EXPECT_EQ(b.data(), a.data());
  SharedString c(id);  // equal, not interned: a block of its own
  EXPECT_FALSE(c.SameBlock(a));
  EXPECT_EQ(c, a);
  c = b;  // assignment shares
  EXPECT_TRUE(c.SameBlock(a));
  SharedString d = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): a moved-from one is empty
  EXPECT_TRUE(d.SameBlock(a));
  a = SharedString();
  EXPECT_EQ(d, id);  // the block lives while any copy holds it
  const SharedString& self = d;
  d = self;  // self-assignment keeps it
  EXPECT_EQ(d, id);
}

// The table under churn: many entries at once (it grows), released in a random order (each
// erase moves later entries of its probe run back), every survivor still found by value.
TEST(CompactTest, TableFindsEverySurvivorAfterRandomReleases) {
  const size_t before = CompactTableEntries();
  std::mt19937 rng(11);
  std::vector<SharedString> held;
  std::vector<std::string> values;
  for (int i = 0; i < 6000; ++i) {
    values.push_back("churn/" + std::to_string(i));
    held.push_back(InternShared(values.back()));
  }
  EXPECT_EQ(CompactTableEntries(), before + held.size());
  for (int round = 0; round < 4; ++round) {
    std::vector<size_t> order(held.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    size_t alive = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k % 3 != 0) held[order[k]] = SharedString();  // two thirds released
    }
    for (size_t i = 0; i < held.size(); ++i) {
      SharedString again = InternShared(values[i]);
      if (held[i].empty()) {
        held[i] = again;  // a new entry, for the next round
      } else {
        ASSERT_TRUE(again.SameBlock(held[i])) << values[i] << " round " << round;
        ++alive;
      }
    }
    EXPECT_GT(alive, 0u);
    EXPECT_EQ(CompactTableEntries(), before + held.size());
  }
  held.clear();
  EXPECT_EQ(CompactTableEntries(), before);
}

// A table gives its room back as its entries leave, and finds every survivor after each
// halving. 80,000 entries take the strings' table past 2^16 slots, where an entry's tag no
// longer holds its home slot (erase and rehash hash the block again), and back below.
TEST(CompactTest, TableShrinksAsEntriesLeave) {
  const size_t slots_before = CompactTableSlots();
  std::vector<SharedString> held;
  for (int i = 0; i < 80000; ++i) held.push_back(InternShared("shrink/" + std::to_string(i)));
  const size_t slots_full = CompactTableSlots();
  // 80,000 entries at most 7/8 full: the strings' table holds 2^17 slots, and grew past 2^16
  // from however many slots the tests before left it.
  EXPECT_GE(slots_full, size_t{1} << 17);
  EXPECT_GE(slots_full - slots_before, size_t{1} << 16);
  // Release from the back, keeping every 100th key; check the survivors as the table halves.
  for (size_t i = held.size(); i-- > 0;) {
    if (i % 100 != 0) held[i] = SharedString();
    if (i % 4000 == 0) {
      for (size_t k = 0; k < held.size(); k += 100) {
        ASSERT_TRUE(InternShared("shrink/" + std::to_string(k)).SameBlock(held[k])) << k << " at " << i;
      }
    }
  }
  // 800 entries left: the strings' table is back to a few thousand slots, not 131,072.
  EXPECT_LT(CompactTableSlots(), slots_before + 8192);
  held.clear();
  EXPECT_LT(CompactTableSlots(), slots_before + 8192);
}

TEST(InternedTest, EqualValuesAreOneCopy) {
  Interned a = std::string("node-") + "17";
  Interned b = std::string_view("node-17");
  Interned other = "node-18";
  EXPECT_EQ(a.data(), b.data());  // one copy of the value
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == other);
  EXPECT_EQ(a, "node-17");
  EXPECT_EQ(a, std::string("node-17"));
  EXPECT_LT(a, other);
  const std::string& as_string = a;
  EXPECT_EQ(as_string, "node-17");
  EXPECT_EQ("ns/" + a, "ns/node-17");
  EXPECT_EQ(a + "/x", "node-17/x");
  EXPECT_EQ(fmt::format("[{}]", a), "[node-17]");
  EXPECT_EQ(nlohmann::json(a), nlohmann::json("node-17"));
  EXPECT_EQ(nlohmann::json("node-18").get<Interned>(), other);
}

TEST(InternedTest, EmptyByDefaultAndAfterClear) {
  Interned e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e, "");
  EXPECT_EQ(e, Interned(""));
  Interned x = "Running";
  x.clear();
  EXPECT_TRUE(x.empty());
  EXPECT_EQ(x.size(), 0u);
}

TEST(InternedTest, ConcurrentInterningAgrees) {
  std::vector<Interned> left(500), right(500);
  auto run = [](std::vector<Interned>* out) {
    for (size_t i = 0; i < out->size(); ++i) (*out)[i] = "concurrent-node-" + std::to_string(i);
  };
  std::thread t1(run, &left);
  std::thread t2(run, &right);
  t1.join();
  t2.join();
  for (size_t i = 0; i < left.size(); ++i) EXPECT_EQ(left[i].data(), right[i].data()) << i;
}

// Values live in chunks of growing size (64, 128, ...) that are never moved: many values,
// past several chunk boundaries, each read back as given, also while another thread adds
// values (reads take no lock).
TEST(InternedTest, ManyValuesReadBackWhileOthersAreAdded) {
  const size_t before = Interned::TableSize();
  std::vector<Interned> first;
  for (int i = 0; i < 3000; ++i) first.emplace_back("many-first-" + std::to_string(i));
  std::vector<Interned> added(20000);
  std::thread adder([&added] {
    for (size_t i = 0; i < added.size(); ++i) added[i] = "many-added-" + std::to_string(i);
  });
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(first[i].str(), "many-first-" + std::to_string(i));
  }
  adder.join();
  for (size_t i = 0; i < added.size(); ++i) ASSERT_EQ(added[i], "many-added-" + std::to_string(i));
  EXPECT_EQ(Interned::TableSize(), before + first.size() + added.size());
  EXPECT_EQ(Interned("many-first-7"), first[7]);  // found again, not added
  EXPECT_EQ(Interned::TableSize(), before + first.size() + added.size());
}

}  // namespace
}  // namespace volcache::k8s
