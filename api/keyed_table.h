#pragma once
// KeyedTable<V>: a flat hash table of values that each own their key (issue 16).
//
// V holds `meta`, a pointer (TaskMetaPtr) to an object that owns the strings
// the entry is keyed by: a task's uid in its job, its "namespace/name" on its node and in the
// cache's task index. Which of its strings keys a value is the table's `kind`, handed to
// V::TableKey(kind), which returns a KeyView: the entries store no key of their own (a view of
// it took 16 bytes per entry, two or three entries per task), and a "namespace/name" key is
// not kept joined anywhere either (a task's pod holds the two parts; the joined copy in every
// TaskMeta took 28 of its 112 bytes). The entries live in one array, in insertion order (an
// erase moves the last entry into the gap). A separate open-addressing index of 8-byte slots (a
// 32-bit hash tag and the entry's position) finds an entry by key, so a lookup reads one slot
// and compares one key (a key that is absent, most often none), and a copy of the table is two
// array copies instead of one heap node per entry. That copy is what MaterializeSnapshot spends
// its time on. A table of one entry has no index (a lookup compares its key): most jobs of the
// traces hold one task.
//
// Iterating yields (key, value) pairs, the key (a KeyView) read from the value: `for (const
// auto& [key, task] : table)`, `it->second`.
//
// Pointers and iterators into the table are valid until the next insertion or erasure (as for
// a std::vector), and until the table itself is moved or assigned to: a table of one entry
// holds it in place, so the entry moves with the table. An entry's value can be changed in
// place through the table's owner, but not its key.
//
// The members are defined in api/keyed_table_impl.h and instantiated once per V (TaskTable in
// api/task_table.cc; the cache's task index in cache/task_accounting.cc).

#include <fmt/core.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace volcache {

// A key that is one string, or "<head>/<tail>" held as its two parts (a task's namespace and
// name, which its pod keeps: no joined copy is made). Either form compares, and hashes, as its
// characters: a lookup with the joined string finds an entry keyed by the parts. It views
// strings that its holder must keep alive.
class KeyView {
 public:
  KeyView() = default;
  KeyView(std::string_view s) : head_(s) {}    // NOLINT(google-explicit-constructor)
  KeyView(const std::string& s) : head_(s) {}  // NOLINT(google-explicit-constructor)
  KeyView(const char* s) : head_(s) {}         // NOLINT(google-explicit-constructor)
  KeyView(std::string_view head, std::string_view tail) : head_(head), tail_(tail), joined_(true) {}

  bool joined() const { return joined_; }
  std::string_view head() const { return head_; }  // the whole key when not joined()
  std::string_view tail() const { return tail_; }  // "" when not joined()
  size_t size() const { return joined_ ? head_.size() + 1 + tail_.size() : head_.size(); }
  bool empty() const { return size() == 0; }
  // The characters, joined.
  std::string str() const;
  explicit operator std::string() const { return str(); }
  // std::hash<std::string_view> of the characters (either form the same).
  size_t Hash() const;

  friend bool operator==(const KeyView& a, const KeyView& b);
  // With any string: a uid, a ShortString, a std::string.
  template <class S>
  requires(!std::is_same_v<S, KeyView> && std::is_convertible_v<const S&, std::string_view>) friend bool
  operator==(const KeyView& a, const S& b) {
    return a == KeyView(std::string_view(b));
  }
  // Ordered as the characters are.
  friend std::strong_ordering operator<=>(const KeyView& a, const KeyView& b);
  friend std::ostream& operator<<(std::ostream& os, const KeyView& k);

 private:
  std::string_view head_;
  std::string_view tail_;
  bool joined_ = false;
};

}  // namespace volcache

template <>
struct fmt::formatter<volcache::KeyView> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const volcache::KeyView& k, Ctx& ctx) const {
    if (!k.joined()) return fmt::formatter<std::string_view>::format(k.head(), ctx);
    return fmt::formatter<std::string_view>::format(k.str(), ctx);
  }
};

namespace volcache {

template <class V>
class KeyedTable {
 public:
  using value_type = std::pair<KeyView, const V&>;

  // A position in the table; dereferences to (key, value).
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = KeyedTable::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;
    struct pointer {
      value_type pair;
      const value_type* operator->() const { return &pair; }
    };

    const_iterator() = default;
    value_type operator*() const { return {V::TableKey(*p_, kind_), *p_}; }
    pointer operator->() const { return pointer{**this}; }
    value_type operator[](difference_type n) const { return *(*this + n); }
    const_iterator& operator++() {
      ++p_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++p_;
      return old;
    }
    const_iterator& operator--() {
      --p_;
      return *this;
    }
    const_iterator& operator+=(difference_type n) {
      p_ += n;
      return *this;
    }
    const_iterator& operator-=(difference_type n) {
      p_ -= n;
      return *this;
    }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) { return a.p_ - b.p_; }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.p_ == b.p_; }

   private:
    friend class KeyedTable;
    const_iterator(const V* p, uint8_t kind) : p_(p), kind_(kind) {}
    const V* p_ = nullptr;
    uint8_t kind_ = 0;
  };
  using iterator = const_iterator;

  // `kind`: which of a value's strings keys it (V::TableKey).
  explicit KeyedTable(uint8_t kind = 0) : kind_(kind) {}
  KeyedTable(const KeyedTable& other);
  KeyedTable& operator=(const KeyedTable& other);
  // A moved-from table is empty (and keeps its kind).
  KeyedTable(KeyedTable&& other) noexcept : kind_(other.kind_) { TakeFrom(other); }
  KeyedTable& operator=(KeyedTable&& other) noexcept {
    if (this != &other) {
      DropEntries();
      kind_ = other.kind_;
      TakeFrom(other);
    }
    return *this;
  }
  ~KeyedTable() { DropEntries(); }

  const_iterator begin() const { return {Data(), kind_}; }
  const_iterator end() const { return {Data() + size(), kind_}; }
  size_t size() const { return on_heap_ ? heap_.size : size_t{has_one_}; }
  bool empty() const { return size() == 0; }
  uint8_t kind() const { return kind_; }

  const_iterator find(KeyView key) const;
  size_t count(KeyView key) const { return find(key) == end() ? 0 : 1; }
  bool contains(KeyView key) const { return find(key) != end(); }

  // Cache hints for a copy to come (MaterializeSnapshot): the entries' lines; the metas'
  // reference counts, which a copy bumps (reads the entries).
  void PrefetchEntries() const;
  void PrefetchMetas() const;

  // Adds `value` under its key unless the key is present. Returns the stored (or present)
  // value and whether it was added.
  std::pair<V*, bool> try_emplace(const V& value);
  // Room for `n` entries, so that adding up to n allocates nothing more.
  void reserve(size_t n);
  // The stored value under `key`, for a change in place (not of its key); nullptr if absent.
  V* find_mutable(KeyView key);
  // Replaces the value at `it` (re-keyed if the new value's key differs).
  V& replace(const_iterator it, V value);
  void erase(const_iterator it);
  void clear();

 private:
  static constexpr size_t kAbsent = ~size_t{0};
  static constexpr uint32_t kMinCapacity = 4;
  // The entries' metas are reference-counted: a copy touches each one's count, which lives
  // wherever that task's pod was decoded. Fetching them this many entries ahead hides most of
  // those misses.
  static constexpr size_t kPrefetchAhead = 8;
  static void PrefetchMetaCount(const V& v);
  static uint32_t Tag(KeyView key);
  KeyView KeyAt(size_t pos) const { return V::TableKey(Data()[pos], kind_); }
  size_t Find(KeyView key, uint32_t tag) const;  // the entry's position, or kAbsent
  size_t mask() const { return capacity_ - 1; }
  // The index (capacity_ != 0 only): on the heap beside the entries' array.
  uint64_t* Slots() const { return heap_.slots; }
  // The slot holding entry `pos` (whose key hashes to `tag`).
  size_t SlotOf(uint32_t tag, uint32_t pos) const;
  void Insert(uint32_t tag, uint32_t pos);  // adds a slot; the index has room
  void EraseSlot(size_t i);                 // backward-shift deletion
  void Rehash(uint32_t capacity);
  size_t Pos(const_iterator it) const { return static_cast<size_t>(it.p_ - Data()); }

  // The entries: one in place, or an array on the heap. A table of one entry holds it
  // without a heap block (the traces' jobs hold one task each: a 32-byte block a job), as a
  // std::vector's 24 bytes would not. Only a table on the heap has an index (capacity_ != 0
  // implies on_heap_), so its pointer shares the union too: a table is 32 bytes.
  struct HeapArray {
    V* data;
    uint64_t* slots;  // the index, capacity_ slots; null when capacity_ is 0
    uint32_t size;
    uint32_t cap;
  };
  V* Data() { return on_heap_ ? heap_.data : &one_; }
  const V* Data() const { return on_heap_ ? heap_.data : &one_; }
  size_t Capacity() const { return on_heap_ ? heap_.cap : 1; }
  // A new heap array of `room` entries, holding the `count` entries moved out of `from` (which
  // are destroyed there; the caller frees their storage).
  static V* Relocate(V* from, size_t count, size_t room);
  void Reserve(size_t n);     // room for n entries (moved to the heap when n > 1)
  void PushBack(const V& v);  // there is room
  void PopBack();
  void ShrinkToFit();            // the heap array to the size (in place again when one is left)
  void DropEntries() noexcept {  // none left, no heap, no index
    V* d = Data();
    for (size_t i = 0, n = size(); i < n; ++i) d[i].~V();
      // GCC cannot tell that heap_ is read only while it is the union's member (on_heap_).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
    if (on_heap_) {
      ::operator delete(heap_.data);
      delete[] heap_.slots;
    }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    on_heap_ = false;
    has_one_ = false;
    capacity_ = 0;
  }
  // This table (holding no entries, no index) takes `other`'s, which is left empty.
  void TakeFrom(KeyedTable& other) noexcept {
    if (other.on_heap_) {
      heap_ = other.heap_;
      on_heap_ = true;
      other.on_heap_ = false;
    } else if (other.has_one_) {
      new (&one_) V(std::move(other.one_));
      has_one_ = true;
      other.one_.~V();
      other.has_one_ = false;
    }
    capacity_ = std::exchange(other.capacity_, 0);
  }
  union {
    V one_;           // when has_one_
    HeapArray heap_;  // when on_heap_
  };
  // The index's slots (heap_.slots): a power of two, at most 3/4 used; or 0: no index, a
  // small table's (see kKeyedTableLinearMax in api/keyed_table_impl.h). A slot is 0 when
  // empty, else (tag << 32) | (position + 1).
  uint32_t capacity_ = 0;
  uint8_t kind_ = 0;
  bool on_heap_ = false;
  bool has_one_ = false;
};

}  // namespace volcache
