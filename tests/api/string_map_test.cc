// k8s::StringMap and k8s::FlatStringMap, the maps of labels, annotations and selectors: they
// must read and write as the std::map they replaced (compared here, operation by operation, on
// random keys), keep their keys interned, and come out of JSON and the decoders in key order. A
// StringMap is one block that copies share, written after a copy of its own when shared.
#include "api/k8s/string_map.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api/k8s/compact.h"
#include "api/k8s/decode.h"
#include "api/k8s/decode_fast.h"
#include "api/k8s/objects.h"

namespace volcache::k8s {
namespace {

// Its entries in one array: the key a 4-byte number, the value a 16-byte ShortString (14
// characters inline, byte-aligned).
static_assert(sizeof(FlatStringMap::value_type) == 20);

std::vector<std::pair<std::string, std::string>> Entries(const FlatStringMap& m) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : m) out.emplace_back(k.str(), v);
  return out;
}
std::vector<std::pair<std::string, std::string>> Entries(const std::map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

std::vector<std::pair<std::string, std::string>> Entries(const StringMap& m) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : m) out.emplace_back(k.str(), v);
  return out;
}

// The random operations of ReadsAndWritesAsStdMap on map type M. For a StringMap, a copy is
// taken now and then (it shares the block) and must keep its entries through the writes after.
template <class M>
void ReadsAndWritesAsStdMap() {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    M flat;
    std::map<std::string, std::string> ref;
    std::vector<std::pair<M, std::vector<std::pair<std::string, std::string>>>> copies;
    for (int op = 0; op < 40; ++op) {
      if (rng() % 8 == 0) copies.emplace_back(flat, Entries(ref));
      const std::string key = "k" + std::to_string(rng() % 12);
      const std::string value = "v" + std::to_string(rng() % 100);
      switch (rng() % 6) {
        case 0: {
          auto [it, added] = flat.emplace(key, value);
          auto [rit, radded] = ref.emplace(key, value);
          ASSERT_EQ(added, radded);
          ASSERT_EQ(it->second, rit->second);
          break;
        }
        case 1: {
          auto [it, added] = flat.insert_or_assign(key, value);
          ASSERT_EQ(added, ref.insert_or_assign(key, value).second);
          ASSERT_EQ(it->first, key);
          break;
        }
        case 2:
          flat[key] = flat[key] + value;
          ref[key] += value;
          break;
        case 3:
          ASSERT_EQ(flat.erase(key), ref.erase(key));
          break;
        case 4:
          ASSERT_EQ(flat.try_emplace(key, value).second, ref.try_emplace(key, value).second);
          break;
        default:
          ASSERT_EQ(flat.count(key), ref.count(key));
          ASSERT_EQ(flat.contains(key), ref.contains(key));
          if (ref.contains(key)) {
            ASSERT_EQ(flat.at(key), ref.at(key));
          } else {
            ASSERT_EQ(flat.find(key), flat.end());
            ASSERT_THROW((void)flat.at(key), std::out_of_range);
          }
      }
      ASSERT_EQ(Entries(flat), Entries(ref)) << "round " << round << " op " << op;
    }
    for (const auto& [copy, entries] : copies) ASSERT_EQ(Entries(copy), entries) << "round " << round;
  }
}

TEST(FlatStringMapTest, ReadsAndWritesAsStdMap) { ReadsAndWritesAsStdMap<FlatStringMap>(); }
TEST(StringMapTest, ReadsAndWritesAsStdMap) { ReadsAndWritesAsStdMap<StringMap>(); }

// The map is one pointer to a block of its count and entries: copies, moves and assignments
// own their blocks, and an insertion whose value is one of the map's own entries survives the
// block moving as it grows.
TEST(FlatStringMapTest, IsOnePointerAndCopiesOwnTheirEntries) {
  static_assert(sizeof(FlatStringMap) == 8);
  FlatStringMap m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.begin(), m.end());
  m.emplace("b", std::string(40, 'b'));  // a value longer than std::string's inline 15
  for (int i = 0; i < 9; ++i) m.emplace("a" + std::to_string(i), m.at("b"));  // grows 1, 2, 4, 8, 16
  ASSERT_EQ(m.size(), 10u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(m.at("a" + std::to_string(i)), std::string(40, 'b'));
  EXPECT_EQ(std::prev(m.end())->first.str(), "b");

  FlatStringMap copy = m;
  copy["b"] = "changed";
  EXPECT_EQ(m.at("b"), std::string(40, 'b'));
  EXPECT_FALSE(copy == m);
  copy = m;
  EXPECT_TRUE(copy == m);
  const FlatStringMap& self = copy;
  copy = self;
  EXPECT_TRUE(copy == m);

  FlatStringMap moved = std::move(copy);
  EXPECT_TRUE(moved == m);
  FlatStringMap other{{"x", "1"}};
  other = std::move(moved);
  EXPECT_TRUE(other == m);

  other.erase(other.find("a0"));
  EXPECT_EQ(other.size(), 9u);
  EXPECT_EQ(other.begin()->first.str(), "a1");
  other.clear();
  EXPECT_TRUE(other.empty());
  other.emplace("z", "1");  // the block is kept through clear() and used again
  EXPECT_EQ(Entries(other), (std::vector<std::pair<std::string, std::string>>{{"z", "1"}}));
  EXPECT_FALSE(m.empty());
}

TEST(FlatStringMapTest, KeysAreInternedAndARepeatedKeyKeepsItsFirstValue) {
  FlatStringMap a = {{"zone", "a"}, {"app", "x"}, {"app", "y"}};
  EXPECT_EQ(Entries(a), (std::vector<std::pair<std::string, std::string>>{{"app", "x"}, {"zone", "a"}}));
  FlatStringMap b;
  b["app"] = "other";
  // One copy of the key for both maps.
  EXPECT_EQ(&a.begin()->first.str(), &b.begin()->first.str());
  EXPECT_NE(a, b);
  b["app"] = "x";
  b["zone"] = "a";
  EXPECT_EQ(a, b);
}

TEST(FlatStringMapTest, HintedInsertsAppendInOrderAndSortOutOfOrder) {
  FlatStringMap m;
  m.insert_or_assign(m.end(), "b", "1");
  m.insert_or_assign(m.end(), "d", "2");
  m.insert_or_assign(m.end(), "a", "3");  // out of order: still sorted
  m.emplace_hint(m.end(), "c", "4");
  m.emplace_hint(m.end(), "c", "5");  // present: kept
  m.insert_or_assign(m.end(), "d", "6");
  EXPECT_EQ(Entries(m), (std::vector<std::pair<std::string, std::string>>{
                            {"a", "3"}, {"b", "1"}, {"c", "4"}, {"d", "6"}}));
}

TEST(FlatStringMapTest, JsonIsAnObjectBothWays) {
  const FlatStringMap m = {{"b", "2"}, {"a", "1"}};
  const nlohmann::json j = m;
  EXPECT_EQ(j.dump(), R"({"a":"1","b":"2"})");
  EXPECT_EQ(j.get<FlatStringMap>(), m);
  StringMap shared = m;
  EXPECT_EQ(nlohmann::json(shared).dump(), R"({"a":"1","b":"2"})");
  EXPECT_EQ(j.get<StringMap>(), shared);
}

// One block: {holders, frozen, interned, size} in 8 bytes, then the 20-byte entries. A map of
// one entry is 28 bytes (tcmalloc's 32-byte class).
static_assert(sizeof(StringMap) == 8);
static_assert(sizeof(StringMapBlock) + sizeof(StringMap::value_type) == 28);

const char* BlockOf(const StringMap& m) {
  return m.empty() ? nullptr : reinterpret_cast<const char*>(m.begin()) - sizeof(StringMapBlock);
}

TEST(StringMapTest, CopiesShareOneBlockAndAWriteCopiesItFirst) {
  StringMap m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.begin(), m.end());
  EXPECT_EQ(m.begin(), nullptr);  // no block
  m["zone"] = "a";
  m.emplace("app", std::string(40, 'x'));  // a value longer than a ShortString's 14 inline
  m.try_emplace("tier", "gpu");
  m.insert_or_assign("app", "train");
  m.insert({"aa", "first"});
  // Ordered by key, whatever the order of the writes.
  EXPECT_EQ(Entries(m), (std::vector<std::pair<std::string, std::string>>{
                            {"aa", "first"}, {"app", "train"}, {"tier", "gpu"}, {"zone", "a"}}));
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.at("tier"), "gpu");
  EXPECT_THROW((void)m.at("absent"), std::out_of_range);
  const std::string value = m.at("zone");  // a value converts to a std::string
  EXPECT_EQ(value, "a");

  // A block held once is written in place (a value's change, an erase).
  const char* own = BlockOf(m);
  m["zone"] = "b";
  EXPECT_EQ(m.erase("aa"), 1u);
  EXPECT_EQ(m.erase("aa"), 0u);
  EXPECT_EQ(BlockOf(m), own);

  // A copy shares the block: equal without comparing, and one block for both.
  StringMap copy = m;
  EXPECT_TRUE(copy.SameBlock(m));
  EXPECT_EQ(BlockOf(copy), BlockOf(m));
  EXPECT_EQ(&copy.get(), &copy);
  // A write to either copies the block first: the other keeps its entries.
  copy["zone"] = "c";
  EXPECT_FALSE(copy.SameBlock(m));
  EXPECT_EQ(m.at("zone"), "b");
  EXPECT_EQ(copy.at("zone"), "c");
  // The first holder's block stays frozen (it was shared): its next write copies too.
  StringMap again = m;
  again.erase("tier");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(again.size(), 2u);
  m.mut()["app"] = "changed";
  EXPECT_EQ(copy.at("app"), "train");
  EXPECT_EQ(again.at("app"), "train");

  // Emptied, a map holds no block; clear() lets go of a shared one.
  StringMap one = {{"k", "v"}};
  one.erase("k");
  EXPECT_TRUE(one.empty());
  EXPECT_EQ(BlockOf(one), nullptr);
  EXPECT_EQ(one, StringMap());
  StringMap shared = copy;
  shared.clear();
  EXPECT_TRUE(shared.empty());
  EXPECT_EQ(copy.size(), 3u);
}

TEST(StringMapTest, GrowsOneEntryAtATimeFromItsOwnEntries) {
  StringMap m;
  m.emplace("b", std::string(40, 'b'));
  // Each insertion makes a new block one entry larger; an argument that is one of the map's
  // own entries is read before the old block goes.
  for (int i = 0; i < 20; ++i) m.emplace("a" + std::to_string(i % 10) + std::to_string(i), m.at("b"));
  for (int i = 0; i < 5; ++i) m.insert_or_assign("c" + std::to_string(i), m.at("b"));
  m.insert_or_assign("b", m.at("c0"));
  ASSERT_EQ(m.size(), 26u);
  for (const auto& [k, v] : m) EXPECT_EQ(v, std::string(40, 'b')) << k.str();
  EXPECT_TRUE(std::is_sorted(m.begin(), m.end(), [](const auto& x, const auto& y) {
    return std::string_view(x.first) < std::string_view(y.first);
  }));
  EXPECT_EQ(m.begin()->first.str(), "a00");
  EXPECT_EQ(std::prev(m.end())->first.str(), "c4");
}

TEST(StringMapTest, FromAPlainMapAndJson) {
  FlatStringMap plain = {{"b", "2"}, {"a", "1"}};
  const StringMap copied = plain;
  EXPECT_EQ(copied, plain);
  EXPECT_EQ(plain.size(), 2u);
  StringMap moved = std::move(plain);
  EXPECT_EQ(moved, copied);
  EXPECT_FALSE(moved.SameBlock(copied));
  EXPECT_EQ(nlohmann::json(moved).dump(), R"({"a":"1","b":"2"})");
  EXPECT_EQ(nlohmann::json::parse(R"({"b":"2","a":"1"})").get<StringMap>(), moved);
  EXPECT_TRUE(nlohmann::json::parse("{}").get<StringMap>().empty());
}

// Compact (api/k8s/compact.h) makes equal maps of different objects one block; the interned
// block is frozen, so a write to one object's map copies it.
TEST(StringMapTest, CompactMakesEqualMapsOneBlock) {
  Pod a, b;
  a.metadata.annotations["scheduling.k8s.io/group-name"] = "job-strmap";
  b.metadata.annotations = {{"scheduling.k8s.io/group-name", "job-strmap"}};
  a.metadata.labels["app"] = "x";
  EXPECT_FALSE(a.metadata.annotations.SameBlock(b.metadata.annotations));
  Compact(&a);
  Compact(&b);
  EXPECT_TRUE(a.metadata.annotations.SameBlock(b.metadata.annotations));
  EXPECT_FALSE(a.metadata.labels.SameBlock(b.metadata.labels));
  b.metadata.annotations["extra"] = "1";
  EXPECT_FALSE(a.metadata.annotations.SameBlock(b.metadata.annotations));
  EXPECT_EQ(a.metadata.annotations.size(), 1u);
  EXPECT_EQ(b.metadata.annotations.size(), 2u);
  // b's own block now, written in place: a's interned one is untouched.
  b.metadata.annotations.erase("scheduling.k8s.io/group-name");
  EXPECT_EQ(a.metadata.annotations.at("scheduling.k8s.io/group-name"), "job-strmap");
}

// A map holds at most 65,535 entries: a write beyond throws, and both decoders refuse a larger
// map naming the object and the field (the fast path leaves it to the reference decoder).
TEST(StringMapTest, MoreThan65535EntriesAreRefused) {
  FlatStringMap plain;
  plain.reserve(StringMap::kMaxSize + 1);
  for (size_t i = 0; i < StringMap::kMaxSize; ++i) {
    plain.insert_or_assign(plain.end(), Interned(fmt::format("k{:06}", i)), "v");
  }
  StringMap full = plain;
  EXPECT_EQ(full.size(), StringMap::kMaxSize);
  EXPECT_THROW(full["k999999"] = "v", std::length_error);
  EXPECT_EQ(full.size(), StringMap::kMaxSize);
  full["k000000"] = "w";  // no insertion: allowed
  plain.insert_or_assign(plain.end(), Interned("k999999"), "v");
  EXPECT_THROW(StringMap{plain}, std::length_error);

  std::string labels;
  for (size_t i = 0; i <= StringMap::kMaxSize; ++i) {
    labels += fmt::format(R"({}"k{:06}":"v")", i == 0 ? "" : ",", i);
  }
  const std::string doc =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"big","namespace":"d","uid":"u",
    "labels":{)" +
      labels + R"(}},"spec":{"containers":[{"name":"c"}]}})";
  Object fast;
  EXPECT_FALSE(FastDecodeObject(doc, &fast));
  auto slow = DecodeObjectReference(doc);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().message(),
            "Pod d/big: metadata.labels: 65536 entries: a map of labels, annotations or selectors holds at "
            "most 65535");
  auto decoded = DecodeObject(doc);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().message(), slow.status().message());
}

// Both decoders give the same map, in key order, whatever the document's order.
TEST(FlatStringMapTest, DecodersReadLabelsAndAnnotationsInKeyOrder) {
  const std::string doc = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d","uid":"u",
    "labels":{"zone":"a","app":"x","tier":"t"},"annotations":{"scheduling.k8s.io/group-name":"g","a":null}},
    "spec":{"containers":[{"name":"c"}]}})";
  auto slow = DecodeObjectReference(doc);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  Object fast;
  ASSERT_TRUE(FastDecodeObject(doc, &fast));
  for (const Pod* p : {&std::get<Pod>(*slow), &std::get<Pod>(fast)}) {
    EXPECT_EQ(Entries(p->metadata.labels),
              (std::vector<std::pair<std::string, std::string>>{{"app", "x"}, {"tier", "t"}, {"zone", "a"}}));
    EXPECT_EQ(Entries(p->metadata.annotations), (std::vector<std::pair<std::string, std::string>>{
                                                    {"a", ""}, {"scheduling.k8s.io/group-name", "g"}}));
  }
}

}  // namespace
}  // namespace volcache::k8s
