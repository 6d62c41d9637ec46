#include "api/task_table.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "api/k8s/objects.h"
#include "api/task_info.h"

namespace volcache {
namespace {

// A task whose key ("ns/<name>") is its pod's namespace and name, as the cache's tasks' is.
TaskInfo Task(const std::string& name, int32_t priority) {
  auto pod = std::make_shared<k8s::Pod>();
  pod->metadata.namespace_ = "ns";
  pod->metadata.name = name;
  pod->metadata.uid = "uid-" + name;
  boost::intrusive_ptr<TaskMeta> meta(new TaskMeta());
  meta->pod = std::move(pod);
  TaskInfo t;
  t.meta = std::move(meta);
  t.priority = priority;
  return t;
}

std::optional<int32_t> PriorityOf(const TaskTable& table, const std::string& key) {
  auto it = table.find(key);
  if (it == table.end()) return std::nullopt;
  EXPECT_EQ(it->first, key);
  EXPECT_EQ(it->second.key(), key);
  return it->second.priority;
}

void ExpectSame(const TaskTable& table, const std::map<std::string, int32_t>& want) {
  ASSERT_EQ(table.size(), want.size());
  EXPECT_EQ(table.empty(), want.empty());
  std::map<std::string, int32_t> seen;
  for (const auto& [key, task] : table) {
    EXPECT_EQ(key, task.key());
    EXPECT_TRUE(seen.emplace(std::string(key), task.priority).second) << "twice: " << key;
  }
  EXPECT_EQ(seen, want);
  for (const auto& [key, priority] : want) EXPECT_EQ(PriorityOf(table, key), priority) << key;
}

TEST(KeyViewTest, AKeyInPartsComparesHashesAndOrdersAsItsCharacters) {
  const KeyView parts("ns", "pod-1");
  const KeyView whole("ns/pod-1");
  EXPECT_TRUE(parts.joined());
  EXPECT_FALSE(whole.joined());
  EXPECT_EQ(parts.size(), 8u);
  EXPECT_EQ(parts.str(), "ns/pod-1");
  EXPECT_EQ(std::string(parts), "ns/pod-1");
  EXPECT_EQ(fmt::format("[{}]", parts), "[ns/pod-1]");
  EXPECT_EQ(parts, whole);
  EXPECT_EQ(whole, parts);
  EXPECT_EQ(parts, std::string("ns/pod-1"));
  EXPECT_EQ(parts.Hash(), whole.Hash());
  EXPECT_EQ(parts.Hash(), std::hash<std::string_view>{}("ns/pod-1"));
  // Near misses: another separator, another split, a prefix, another name.
  EXPECT_NE(parts, KeyView("ns.pod-1"));
  EXPECT_NE(parts, KeyView("ns/pod-"));
  EXPECT_NE(parts, KeyView("ns/pod-12"));
  EXPECT_NE(parts, KeyView("ns", "pod-2"));
  EXPECT_NE(parts, KeyView("nt", "pod-1"));
  // The same characters split elsewhere (a head with a '/') are the same key.
  EXPECT_EQ(KeyView("a/b", "c"), KeyView("a", "b/c"));
  EXPECT_EQ(KeyView("a/b", "c").Hash(), KeyView("a", "b/c").Hash());
  EXPECT_LT(KeyView("ns", "a"), KeyView("ns", "b"));
  EXPECT_LT(KeyView("ns", "b"), KeyView("nt", "a"));
  EXPECT_LT(KeyView("ns/a"), KeyView("ns", "b"));
  EXPECT_GT(KeyView("ns", "b"), KeyView("ns/a"));
  // A key longer than the hash's stack buffer hashes as its characters too.
  const std::string long_name(400, 'x');
  EXPECT_EQ(KeyView("ns", long_name).Hash(), std::hash<std::string>{}("ns/" + long_name));
}

// A node's table finds a task by the joined "namespace/name" though it keeps only the parts.
TEST(TaskTableTest, FindsATaskByItsJoinedKeyAndByItsParts) {
  TaskTable table(TaskInfo::kByKey);
  for (int i = 0; i < 40; ++i) table.try_emplace(Task("t" + std::to_string(i), i));
  for (int i = 0; i < 40; ++i) {
    const std::string name = "t" + std::to_string(i);
    const auto it = table.find("ns/" + name);
    ASSERT_NE(it, table.end()) << name;
    EXPECT_EQ(it->second.priority, i);
    EXPECT_EQ(table.find(KeyView("ns", name)), it);
    EXPECT_EQ(it->first, KeyView("ns/" + name));
  }
  EXPECT_EQ(table.find("ns/t40"), table.end());
  EXPECT_EQ(table.find("nt/t1"), table.end());
}

TEST(TaskTableTest, AddsFindsAndRefusesADuplicateKey) {
  TaskTable table;
  EXPECT_EQ(table.find("ns/a"), table.end());
  const TaskInfo a = Task("a", 1);
  auto [stored, added] = table.try_emplace(a);
  ASSERT_TRUE(added);
  EXPECT_EQ(stored->priority, 1);
  EXPECT_EQ(stored->meta, a.meta);  // the stored copy shares the TaskMeta its key views
  auto [present, added_again] = table.try_emplace(Task("a", 2));
  EXPECT_FALSE(added_again);
  EXPECT_EQ(present, stored);
  EXPECT_EQ(present->priority, 1);  // unchanged
  EXPECT_EQ(table.count("ns/a"), 1u);
  EXPECT_FALSE(table.contains("ns/b"));
}

TEST(TaskTableTest, EraseMovesTheLastEntryIntoTheGapAndKeepsItFindable) {
  TaskTable table;
  for (int i = 0; i < 5; ++i) {
    const TaskInfo t = Task("t" + std::to_string(i), i);
    table.try_emplace(t);
  }
  table.erase(table.find("ns/t1"));
  EXPECT_EQ(table.begin()[1].first, "ns/t4");  // the last one took t1's place
  ExpectSame(table, {{"ns/t0", 0}, {"ns/t2", 2}, {"ns/t3", 3}, {"ns/t4", 4}});
  table.erase(table.end() - 1);
  ExpectSame(table, {{"ns/t0", 0}, {"ns/t2", 2}, {"ns/t4", 4}});
}

TEST(TaskTableTest, ReserveMakesRoomSoThatAddingThatManyMovesNoEntry) {
  TaskTable table;
  for (int i = 0; i < 3; ++i) table.try_emplace(Task("t" + std::to_string(i), i));
  table.reserve(40);  // re-indexes the three entries already there
  ExpectSame(table, {{"ns/t0", 0}, {"ns/t1", 1}, {"ns/t2", 2}});
  const TaskInfo* first = table.try_emplace(Task("t3", 3)).first;
  std::map<std::string, int32_t> want{{"ns/t0", 0}, {"ns/t1", 1}, {"ns/t2", 2}, {"ns/t3", 3}};
  for (int i = 4; i < 40; ++i) {
    table.try_emplace(Task("t" + std::to_string(i), i));
    want.emplace("ns/t" + std::to_string(i), i);
  }
  // Stored values move only when the table grows: t3 is where it was.
  EXPECT_EQ(&table.find("ns/t3")->second, first);
  ExpectSame(table, want);
  table.reserve(2);  // less than it holds: nothing changes
  EXPECT_EQ(&table.find("ns/t3")->second, first);
  ExpectSame(table, want);
}

TEST(TaskTableTest, ReplaceRekeysTheEntryToTheNewTaskMeta) {
  TaskTable table;
  {
    const TaskInfo old = Task("a", 1);
    table.try_emplace(old);
  }
  // The same name in a new TaskMeta (a pod update): the key must view the new one, since the
  // old TaskMeta dies with the old task.
  {
    const TaskInfo updated = Task("a", 2);
    TaskInfo& stored = table.replace(table.find("ns/a"), updated);
    EXPECT_EQ(stored.meta, updated.meta);
    EXPECT_EQ(table.begin()->first.tail().data(), updated.meta->pod->metadata.name.view().data());
  }
  ExpectSame(table, {{"ns/a", 2}});
  // Another name: the index follows.
  const TaskInfo renamed = Task("b", 3);
  table.replace(table.find("ns/a"), renamed);
  ExpectSame(table, {{"ns/b", 3}});
}

TEST(TaskTableTest, ACopyIsIndependentAndOutlivesTheOriginal) {
  auto original = std::make_unique<TaskTable>();
  for (int i = 0; i < 50; ++i) {
    const TaskInfo t = Task("t" + std::to_string(i), i);
    original->try_emplace(t);
  }
  TaskTable copy(*original);
  std::map<std::string, int32_t> want;
  for (int i = 0; i < 50; ++i) want["ns/t" + std::to_string(i)] = i;
  original->find_mutable("ns/t7")->priority = 700;
  original->erase(original->find("ns/t3"));
  const TaskInfo extra = Task("extra", 9);
  original->try_emplace(extra);
  original.reset();
  ExpectSame(copy, want);

  TaskTable assigned;
  assigned = copy;
  copy.clear();
  EXPECT_TRUE(copy.empty());
  EXPECT_EQ(copy.find("ns/t1"), copy.end());
  ExpectSame(assigned, want);
}

// A job's table is keyed by the tasks' uids, read from each task's own TaskMeta: lookups,
// iteration, erasure and copies all use the uid, never the "namespace/name" key.
TEST(TaskTableTest, AJobsTableIsKeyedByUid) {
  TaskTable table(TaskInfo::kByUid);
  for (int i = 0; i < 6; ++i) table.try_emplace(Task("t" + std::to_string(i), i));
  EXPECT_EQ(table.find("ns/t2"), table.end());
  ASSERT_NE(table.find("uid-t2"), table.end());
  EXPECT_EQ(table.find("uid-t2")->second.priority, 2);
  EXPECT_EQ(table.find("uid-t2")->first.head().data(), table.find("uid-t2")->second.uid().data());
  EXPECT_FALSE(table.try_emplace(Task("t2", 99)).second);  // the same uid
  table.erase(table.find("uid-t0"));                       // t5 moves into the gap
  const TaskTable copy(table);
  EXPECT_EQ(copy.kind(), TaskInfo::kByUid);
  std::map<std::string, int32_t> seen;
  for (const auto& [uid, task] : copy) {
    EXPECT_EQ(uid, task.uid());
    seen.emplace(std::string(uid), task.priority);
  }
  EXPECT_EQ(seen, (std::map<std::string, int32_t>{
                      {"uid-t1", 1}, {"uid-t2", 2}, {"uid-t3", 3}, {"uid-t4", 4}, {"uid-t5", 5}}));
  EXPECT_EQ(copy.find("uid-t5")->second.priority, 5);
  // A moved-from table is empty and still works.
  TaskTable moved(std::move(table));
  EXPECT_EQ(moved.size(), 5u);
  EXPECT_TRUE(table.empty());  // NOLINT(bugprone-use-after-move): the state a move leaves
  EXPECT_EQ(table.find("uid-t1"), table.end());
  table.try_emplace(Task("t9", 9));
  EXPECT_EQ(table.find("uid-t9")->second.priority, 9);
}

// One entry keeps no index (api/keyed_table_impl.h): lookups, copies, renaming and erasure
// work without it, and a second entry indexes the first.
TEST(TaskTableTest, ASmallTableWorksWithoutAnIndexAndIndexesWhenItGrows) {
  TaskTable table;
  ASSERT_TRUE(table.try_emplace(Task("a", 1)).second);
  EXPECT_FALSE(table.try_emplace(Task("a", 9)).second);
  EXPECT_FALSE(table.contains("ns/b"));
  ExpectSame(table, {{"ns/a", 1}});
  const TaskTable copy(table);
  table.replace(table.find("ns/a"), Task("c", 3));  // renamed without an index
  ExpectSame(table, {{"ns/c", 3}});
  EXPECT_FALSE(table.contains("ns/a"));
  for (const char* name : {"d", "e", "f"}) ASSERT_TRUE(table.try_emplace(Task(name, 4)).second);
  EXPECT_FALSE(table.try_emplace(Task("c", 9)).second);  // the first entry, indexed later
  ExpectSame(table, {{"ns/c", 3}, {"ns/d", 4}, {"ns/e", 4}, {"ns/f", 4}});
  table.erase(table.find("ns/c"));
  table.erase(table.find("ns/d"));
  table.erase(table.find("ns/e"));
  ExpectSame(table, {{"ns/f", 4}});  // fewer again, still indexed
  table.erase(table.begin());
  ExpectSame(table, {});
  ASSERT_TRUE(table.try_emplace(Task("g", 5)).second);
  ExpectSame(table, {{"ns/g", 5}});
  table.erase(table.begin());  // erased without an index
  ExpectSame(table, {});
  ExpectSame(copy, {{"ns/a", 1}});  // the copy is its own
}

// A table of one entry holds it in place, with no heap block of its own (the traces' jobs hold
// one task each); a second entry moves both to the heap. Copies and moves keep them.
TEST(TaskTableTest, AOneEntryTableHoldsItInPlace) {
  auto inside = [](const TaskTable& t, const TaskInfo& e) {
    const auto* p = reinterpret_cast<const char*>(&e);
    return p >= reinterpret_cast<const char*>(&t) && p < reinterpret_cast<const char*>(&t + 1);
  };
  TaskTable table;
  table.reserve(1);
  ASSERT_TRUE(table.try_emplace(Task("a", 1)).second);
  EXPECT_TRUE(inside(table, table.begin()->second));
  TaskTable copy(table);
  EXPECT_TRUE(inside(copy, copy.begin()->second));
  ExpectSame(copy, {{"ns/a", 1}});
  TaskTable moved(std::move(copy));
  ExpectSame(moved, {{"ns/a", 1}});
  ExpectSame(copy, {});  // NOLINT(bugprone-use-after-move): a moved-from table is empty
  ASSERT_TRUE(table.try_emplace(Task("b", 2)).second);
  EXPECT_FALSE(inside(table, table.begin()->second));
  ExpectSame(table, {{"ns/a", 1}, {"ns/b", 2}});
  moved = std::move(table);  // a heap table over one in place
  ExpectSame(moved, {{"ns/a", 1}, {"ns/b", 2}});
  ExpectSame(table, {});  // NOLINT(bugprone-use-after-move)
  table = moved;          // a copy over an empty one
  ExpectSame(table, {{"ns/a", 1}, {"ns/b", 2}});
  moved = TaskTable();
  ExpectSame(moved, {});
}

// A table with an index that shrinks to one entry holds it in place again, and its index goes
// (only a table on the heap has one): it finds the entry, copies, and grows again.
TEST(TaskTableTest, ATableShrunkToOneEntryHoldsItInPlaceAgain) {
  TaskTable table;
  table.reserve(100);  // an index of 256 slots: erasing to one entry gives the room back
  ASSERT_TRUE(table.try_emplace(Task("p0", 0)).second);
  ASSERT_TRUE(table.try_emplace(Task("p1", 1)).second);
  table.erase(table.find("ns/p1"));
  ExpectSame(table, {{"ns/p0", 0}});
  const auto* p = reinterpret_cast<const char*>(&table.begin()->second);
  EXPECT_TRUE(p >= reinterpret_cast<const char*>(&table) && p < reinterpret_cast<const char*>(&table + 1));
  TaskTable copy(table);
  ExpectSame(copy, {{"ns/p0", 0}});
  for (int i = 1; i < 10; ++i) ASSERT_TRUE(table.try_emplace(Task("p" + std::to_string(i), i)).second);
  EXPECT_FALSE(table.try_emplace(Task("p5", 7)).second);
  ExpectSame(copy, {{"ns/p0", 0}});
  EXPECT_EQ(table.size(), 10u);
  EXPECT_EQ(table.find("ns/p9")->second.priority, 9);
}

// Thousands of random adds, erasures, replacements and copies against std::map: long probe
// runs, backward-shift deletion across the index's wrap, growth and shrinking all happen.
TEST(TaskTableTest, RandomOperationsAgreeWithAMap) {
  std::mt19937 rng(12345);
  TaskTable table;
  std::map<std::string, int32_t> want;
  for (int step = 0; step < 20000; ++step) {
    // Few names, so adds hit present keys and erasures hit; the range drifts so the table
    // also grows to hundreds and shrinks to a handful, and to the sizes without an index.
    const int phase = step % 5000;
    const int range = phase < 2500 ? 400 : phase < 4000 ? 8 : 2;
    const std::string name = "p" + std::to_string(rng() % range);
    const std::string key = "ns/" + name;
    const auto prio = static_cast<int32_t>(rng() % 1000);
    switch (rng() % 4) {
      case 0:
      case 1: {
        const TaskInfo t = Task(name, prio);
        const bool added = table.try_emplace(t).second;
        EXPECT_EQ(added, want.emplace(key, prio).second) << key;
        break;
      }
      case 2:
        if (auto it = table.find(key); it != table.end()) {
          table.erase(it);
          EXPECT_EQ(want.erase(key), 1u);
        } else {
          EXPECT_EQ(want.count(key), 0u);
        }
        break;
      default:
        if (auto it = table.find(key); it != table.end()) {
          const TaskInfo t = Task(name, prio);
          table.replace(it, t);
          want[key] = prio;
        }
        break;
    }
    if (step % 331 == 0) table.reserve(rng() % 600);  // sometimes more room, sometimes none
    if (step % 997 == 0 || (range == 2 && step % 7 == 0)) {
      ExpectSame(table, want);
      TaskTable copy(table);
      ExpectSame(copy, want);
      // Moved out and back: the entries (in place or on the heap) go with the table.
      TaskTable moved(std::move(copy));
      ExpectSame(moved, want);
      table = std::move(moved);
      ExpectSame(table, want);
    }
  }
  ExpectSame(table, want);
}

}  // namespace
}  // namespace volcache
