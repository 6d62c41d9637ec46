#pragma once
// TaskTable: the tasks of one job or one node, flat (issue 16).
//
// The entries live in one array, in insertion order (an erase moves the last entry into the
// gap), each next to its key: a view of a string that the entry's own TaskMeta keeps alive
// (the uid for a job, "namespace/name" for a node). A separate open-addressing index of
// 8-byte slots (a 32-bit hash tag and the entry's position) finds an entry by key, so a lookup
// reads one slot and compares one key, and a copy of the table is two array copies instead of
// one heap node per task. That copy is what MaterializeSnapshot spends its time on.
//
// Pointers and iterators into the table are valid until the next insertion or erasure (as for
// a std::vector); an entry's task can be changed in place through the table's owner.

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "api/task_info.h"

namespace volcache {

class TaskTable {
 public:
  using value_type = std::pair<std::string_view, TaskInfo>;
  using const_iterator = std::vector<value_type>::const_iterator;
  using iterator = const_iterator;

  TaskTable() = default;
  TaskTable(const TaskTable& other);
  TaskTable& operator=(const TaskTable& other);
  TaskTable(TaskTable&&) noexcept = default;
  TaskTable& operator=(TaskTable&&) noexcept = default;

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  const_iterator find(std::string_view key) const;
  size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
  bool contains(std::string_view key) const { return find(key) != end(); }

  // Cache hints for a copy to come (MaterializeSnapshot): the entries' lines; the
  // TaskMetas' reference counts, which a copy bumps (reads the entries).
  void PrefetchEntries() const;
  void PrefetchMetas() const;

  // Adds `task` under `key` unless the key is present. `key` must view a string that `task`'s
  // TaskMeta owns (the stored copy shares it). Returns the stored (or present) task and whether
  // it was added.
  std::pair<TaskInfo*, bool> try_emplace(std::string_view key, const TaskInfo& task);
  // The stored task under `key`, for a change in place; nullptr if absent.
  TaskInfo* find_mutable(std::string_view key);
  // Replaces the task at `it` and re-keys it (`key` views the new task's TaskMeta).
  TaskInfo& replace(const_iterator it, std::string_view key, TaskInfo task);
  void erase(const_iterator it);
  void clear();

 private:
  static constexpr size_t kAbsent = ~size_t{0};
  static uint32_t Tag(std::string_view key);
  size_t Find(std::string_view key, uint32_t tag) const;  // the entry's position, or kAbsent
  size_t mask() const { return capacity_ - 1; }
  // The slot holding entry `pos` (whose key hashes to `tag`).
  size_t SlotOf(uint32_t tag, uint32_t pos) const;
  void Insert(uint32_t tag, uint32_t pos);  // adds a slot; the index has room
  void EraseSlot(size_t i);                 // backward-shift deletion
  void Rehash(size_t capacity);

  std::vector<value_type> entries_;
  // capacity_ slots (a power of two, at most 3/4 used, or 0): 0 is empty, else
  // (tag << 32) | (position + 1).
  std::unique_ptr<uint64_t[]> slots_;
  size_t capacity_ = 0;
};

}  // namespace volcache
