#pragma once
// KeyedTable<V>: a flat hash table of values that each own their key (issue 16).
//
// V holds `meta`, a std::shared_ptr<const TaskMeta>-like pointer whose object owns the string
// the entry is keyed by: a task's uid in its job, its "namespace/name" on its node and in the
// cache's task index. The entries live in one array, in insertion order (an erase moves the
// last entry into the gap), each next to a view of its key. A separate open-addressing index
// of 8-byte slots (a 32-bit hash tag and the entry's position) finds an entry by key, so a
// lookup reads one slot and compares one key (a key that is absent, most often none), and a
// copy of the table is two array copies instead of one heap node per entry. That copy is what
// MaterializeSnapshot spends its time on.
//
// Pointers and iterators into the table are valid until the next insertion or erasure (as for
// a std::vector); an entry's value can be changed in place through the table's owner.
//
// The members are defined in api/keyed_table_impl.h and instantiated once per V (TaskTable in
// api/task_table.cc; the cache's task index in cache/task_accounting.cc).

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace volcache {

template <class V>
class KeyedTable {
 public:
  using value_type = std::pair<std::string_view, V>;
  using const_iterator = typename std::vector<value_type>::const_iterator;
  using iterator = const_iterator;

  KeyedTable() = default;
  KeyedTable(const KeyedTable& other);
  KeyedTable& operator=(const KeyedTable& other);
  KeyedTable(KeyedTable&&) noexcept = default;
  KeyedTable& operator=(KeyedTable&&) noexcept = default;

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  const_iterator find(std::string_view key) const;
  size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
  bool contains(std::string_view key) const { return find(key) != end(); }

  // Cache hints for a copy to come (MaterializeSnapshot): the entries' lines; the metas'
  // reference counts, which a copy bumps (reads the entries).
  void PrefetchEntries() const;
  void PrefetchMetas() const;

  // Adds `value` under `key` unless the key is present. `key` must view a string that
  // `value`'s meta owns (the stored copy shares it). Returns the stored (or present) value and
  // whether it was added.
  std::pair<V*, bool> try_emplace(std::string_view key, const V& value);
  // The stored value under `key`, for a change in place; nullptr if absent.
  V* find_mutable(std::string_view key);
  // Replaces the value at `it` and re-keys it (`key` views the new value's meta).
  V& replace(const_iterator it, std::string_view key, V value);
  void erase(const_iterator it);
  void clear();

 private:
  static constexpr size_t kAbsent = ~size_t{0};
  static constexpr size_t kMinCapacity = 4;
  // The entries' metas are reference-counted: a copy touches each one's count, which lives
  // wherever that task's pod was decoded. Fetching them this many entries ahead hides most of
  // those misses.
  static constexpr size_t kPrefetchAhead = 8;
  static void PrefetchMetaCount(const V& v);
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
