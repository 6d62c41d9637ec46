// k8s::FlatStringMap, the map of labels, annotations and selectors: it must read and write as
// the std::map it replaced (compared here, operation by operation, on random keys), keep its
// keys interned, and come out of JSON and the decoders in key order.
#include "api/k8s/string_map.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

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

TEST(FlatStringMapTest, ReadsAndWritesAsStdMap) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    FlatStringMap flat;
    std::map<std::string, std::string> ref;
    for (int op = 0; op < 40; ++op) {
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
  }
}

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
