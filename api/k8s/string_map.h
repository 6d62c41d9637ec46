#pragma once
// The string-to-string maps of labels, annotations and selectors, with their keys Interned
// (api/k8s/interned.h): label and annotation keys repeat from object to object ("app",
// "scheduling.k8s.io/group-name"), so a key is a 4-byte number of the process-wide table, not a
// 32-byte string with a heap block of its own for the longer ones. An entry is 20 bytes: the key
// and the value, a ShortString (api/inline_string.h: 14 characters inline, a longer value in a
// heap block of its own, as a std::string's beyond 15).
//
// - StringMap, the maps of the objects (ObjectMeta labels and annotations, PodSpec
//   node_selector, LabelSelector match_labels): copies share it, as a k8s::Shared field, and it
//   is ONE heap block, {its holders' count, frozen, interned, size (16 bits), entries}: 8 + 20 n
//   bytes, a pod's one group-name annotation tcmalloc's 32-byte class. A Shared<FlatStringMap>
//   took two: the counted block (16 bytes) and the map's own {size, capacity, entries} (32):
//   48 bytes (docs/BENCHMARKS.md: 180 bytes in a std::map, 72 in a vector, 64 in two blocks).
// - FlatStringMap, the same map as a plain value of its own (one pointer to its {size, capacity,
//   entries} block, grown by doubling): what the decoders build a StringMap from.
//
// Both read and write as std::map<std::string, std::string> does (a value converts to a
// std::string), for the members the code uses: find/count/contains/at with any string-like
// key, operator[], emplace, try_emplace, insert_or_assign, insert, erase, ordered iteration (by
// key, as std::map: documents and dumps come out in the same order). Lookups are binary
// searches; maps are small.
// Differences: iterators are invalidated by every insertion and erasure (as a vector's; a
// StringMap's also by any write to a shared block, which copies it first), and an entry's key
// is not const (do not assign it: the order would break).
//
// The intern table keeps every key it was given, so a stream of objects with ever-new keys
// grows it; keys are bounded by the tools that write them in every cluster we know of.
//
// Thread-safety: FlatStringMap is a value type; StringMap is as k8s::Shared (api/k8s/shared.h):
// a block is frozen from the moment it is shared (a copy, or interning by k8s::Compact) and never
// written in place again, so copies may be read on any threads while others are written.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "api/inline_string.h"
#include "api/k8s/interned.h"
#include "api/k8s/shared.h"

namespace volcache::k8s {

// The lookups and insertions of both maps, over the derived map's sorted entries (CRTP): D has
// begin() and end() (const) and InsertAt(pos, value_type&&), which puts the entry at `pos` and
// returns an It to it. It is the iterator insertions return (a StringMap's is read-only).
template <class D, class It>
class SortedStringEntries {
 public:
  using value_type = std::pair<Interned, ShortString>;
  using const_iterator = const value_type*;

  const_iterator find(std::string_view k) const {
    auto it = LowerBound(k);
    return it != Self().end() && std::string_view(it->first) == k ? it : Self().end();
  }
  size_t count(std::string_view k) const { return find(k) != Self().end() ? 1 : 0; }
  bool contains(std::string_view k) const { return find(k) != Self().end(); }
  // Throws std::out_of_range when absent, as std::map's.
  const ShortString& at(std::string_view k) const {
    auto it = find(k);
    if (it == Self().end()) throw std::out_of_range("no key " + std::string(k));
    return it->second;
  }

  template <class... A>
  std::pair<It, bool> try_emplace(std::string_view k, A&&... a) {
    auto it = LowerBound(k);
    if (it != Self().end() && std::string_view(it->first) == k) return {const_cast<It>(it), false};
    // The value is made before the entries may move: an argument may be one of them.
    return {static_cast<D*>(this)->InsertAt(static_cast<size_t>(it - Self().begin()),
                                            value_type(std::piecewise_construct, std::forward_as_tuple(k),
                                                       std::forward_as_tuple(std::forward<A>(a)...))),
            true};
  }
  template <class V>
  std::pair<It, bool> emplace(std::string_view k, V&& v) {
    return try_emplace(k, std::forward<V>(v));
  }
  std::pair<It, bool> insert(const value_type& e) { return try_emplace(e.first, e.second); }

 protected:
  const_iterator LowerBound(std::string_view k) const {
    return std::lower_bound(Self().begin(), Self().end(), k, [](const value_type& e, std::string_view key) {
      return std::string_view(e.first) < key;
    });
  }

 private:
  const D& Self() const { return static_cast<const D&>(*this); }
};

class FlatStringMap : public SortedStringEntries<FlatStringMap, std::pair<Interned, ShortString>*> {
  using Base = SortedStringEntries<FlatStringMap, std::pair<Interned, ShortString>*>;
  friend Base;

 public:
  using key_type = Interned;
  using mapped_type = ShortString;
  using value_type = std::pair<Interned, ShortString>;
  using size_type = size_t;
  using iterator = value_type*;
  using const_iterator = const value_type*;
  using reference = value_type&;
  using const_reference = const value_type&;

  FlatStringMap() = default;
  // As std::map's: a repeated key keeps its first value.
  FlatStringMap(std::initializer_list<value_type> il) {
    reserve(il.size());
    for (const value_type& e : il) emplace(e.first, e.second);
  }
  template <class It>
  FlatStringMap(It first, It last) {
    for (; first != last; ++first) emplace(first->first, first->second);
  }
  FlatStringMap(const FlatStringMap& o);
  FlatStringMap(FlatStringMap&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
  FlatStringMap& operator=(const FlatStringMap& o);
  FlatStringMap& operator=(FlatStringMap&& o) noexcept {
    std::swap(rep_, o.rep_);
    return *this;
  }
  ~FlatStringMap() { Free(rep_); }

  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size(); }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  iterator begin() { return data(); }
  iterator end() { return data() + size(); }
  size_type size() const { return rep_ != nullptr ? rep_->size : 0; }
  bool empty() const { return size() == 0; }
  void clear();
  void reserve(size_type n);

  using Base::at;
  using Base::find;
  iterator find(std::string_view k) { return const_cast<iterator>(std::as_const(*this).find(k)); }
  ShortString& at(std::string_view k) { return const_cast<ShortString&>(std::as_const(*this).at(k)); }

  ShortString& operator[](std::string_view k) { return try_emplace(k).first->second; }

  template <class V>
  std::pair<iterator, bool> insert_or_assign(std::string_view k, V&& v) {
    auto [it, added] = try_emplace(k);
    it->second = std::forward<V>(v);
    return {it, added};
  }
  // For the decoders, whose keys come in order: appended without a search when `k` sorts
  // after the last key. The iterator is a hint only (std::map's form), not read.
  template <class V>
  iterator insert_or_assign(const_iterator /*hint*/, const Interned& k, V&& v) {
    if (SortsLast(k)) return InsertAt(size(), value_type(k, std::forward<V>(v)));
    return insert_or_assign(std::string_view(k), std::forward<V>(v)).first;
  }
  template <class V>
  iterator emplace_hint(const_iterator /*hint*/, const Interned& k, V&& v) {
    if (SortsLast(k)) return InsertAt(size(), value_type(k, std::forward<V>(v)));
    return try_emplace(std::string_view(k), std::forward<V>(v)).first;
  }

  size_type erase(std::string_view k) {
    auto it = find(k);
    if (it == end()) return 0;
    erase(it);
    return 1;
  }
  iterator erase(const_iterator it);

  friend bool operator==(const FlatStringMap& a, const FlatStringMap& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // The entries, their count and the room for more, in one heap block: the map itself is one
  // pointer, null while it has never held an entry (a std::vector took 24 bytes beside its
  // array).
  struct Rep {
    uint32_t size;
    uint32_t capacity;
    value_type* entries() { return reinterpret_cast<value_type*>(this + 1); }
  };
  static_assert(sizeof(Rep) == 8 && alignof(value_type) <= 8);
  static void Free(Rep* r);
  // Moves `v` to position `pos` (the entries from there on move up one), growing the block
  // when full.
  iterator InsertAt(size_t pos, value_type&& v);
  value_type* data() const { return rep_ != nullptr ? rep_->entries() : nullptr; }
  size_t capacity() const { return rep_ != nullptr ? rep_->capacity : 0; }

  // Whether `k` sorts after every key held: the hinted inserts then append it.
  bool SortsLast(std::string_view k) const { return empty() || std::string_view(end()[-1].first) < k; }

  Rep* rep_ = nullptr;
};

template <class>
class SharedTable;

// A StringMap's block: its holders' count and flags (as a Shared block's), its size, and then
// its entries. No capacity: the block holds exactly `size` entries, and an insertion makes a
// new block one entry larger (maps are written seldom: a decoder makes the block from a whole
// FlatStringMap, and a write to a shared block copies it anyway). The size is 16 bits: a map
// holds at most 65,535 entries, and more is refused, with no fallback (the decoders' error names
// the object and the field; a write, or a conversion from a FlatStringMap, throws
// std::length_error).
struct StringMapBlock {
  std::atomic<uint32_t> refs{1};    // the StringMaps that point here
  std::atomic<bool> frozen{false};  // shared (copied or interned): never written again
  // Set once, by SharedTable (api/k8s/compact.cc), before the table hands the block out.
  std::atomic<bool> interned{false};
  uint16_t size = 0;
  FlatStringMap::value_type* entries() { return reinterpret_cast<FlatStringMap::value_type*>(this + 1); }
  const FlatStringMap::value_type* entries() const {
    return reinterpret_cast<const FlatStringMap::value_type*>(this + 1);
  }
};
static_assert(sizeof(StringMapBlock) == 8 && alignof(FlatStringMap::value_type) <= alignof(StringMapBlock));

// A StringMap's entries, for reading without a holder (the compaction table's hashing).
struct StringMapView {
  const FlatStringMap::value_type* first = nullptr;
  const FlatStringMap::value_type* last = nullptr;
  const FlatStringMap::value_type* begin() const { return first; }
  const FlatStringMap::value_type* end() const { return last; }
  size_t size() const { return static_cast<size_t>(last - first); }
  bool empty() const { return first == last; }
  friend bool operator==(StringMapView a, StringMapView b) {
    return std::equal(a.first, a.last, b.first, b.last);
  }
};

class StringMap : public CountedBlockRef<StringMap, StringMapBlock>,
                  public SortedStringEntries<StringMap, const FlatStringMap::value_type*> {
  using Base = CountedBlockRef<StringMap, StringMapBlock>;
  using Entries = SortedStringEntries<StringMap, const FlatStringMap::value_type*>;
  using Block = StringMapBlock;
  using Base::block_;
  using Base::Release;
  using Base::Reset;

 public:
  using key_type = Interned;
  using mapped_type = ShortString;
  using value_type = FlatStringMap::value_type;
  using size_type = size_t;
  using const_iterator = const value_type*;
  using iterator = const_iterator;  // iteration never writes (nor copies a shared block)
  using const_reference = const value_type&;
  using reference = const_reference;

  // The most entries a map holds (its size is 16 bits).
  static constexpr size_t kMaxSize = UINT16_MAX;

  StringMap() = default;
  // As std::map's: a repeated key keeps its first value.
  StringMap(std::initializer_list<value_type> il) : StringMap(FlatStringMap(il)) {}
  // The entries of a plain map, in one block (none for an empty map). Throws
  // std::length_error beyond kMaxSize entries.
  StringMap(FlatStringMap&& m);       // NOLINT(google-explicit-constructor): a field's value
  StringMap(const FlatStringMap& m);  // NOLINT(google-explicit-constructor)
  StringMap(const StringMap&) = default;
  StringMap(StringMap&&) noexcept = default;
  StringMap& operator=(const StringMap&) = default;
  StringMap& operator=(StringMap&&) noexcept = default;
  StringMap& operator=(FlatStringMap&& m) { return *this = StringMap(std::move(m)); }
  StringMap& operator=(const FlatStringMap& m) { return *this = StringMap(m); }
  StringMap& operator=(std::initializer_list<value_type> il) { return *this = StringMap(il); }

  // Reading: the map itself (what a Shared<C> field's get() was, the container).
  const StringMap& get() const { return *this; }
  const_iterator begin() const { return block_ != nullptr ? block_->entries() : nullptr; }
  const_iterator end() const { return block_ != nullptr ? block_->entries() + block_->size : nullptr; }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  size_type size() const { return block_ != nullptr ? block_->size : 0; }
  bool empty() const { return block_ == nullptr || block_->size == 0; }
  // find, count, contains, at: SortedStringEntries's.

  // Writing. Each copies the block first when it is shared (frozen); an insertion makes a
  // block one entry larger. The iterators returned are read-only: write a value through
  // operator[] or insert_or_assign.
  // This map, its block its own (copied first when shared): as a Shared field's mut().
  StringMap& mut() {
    if (block_ != nullptr && block_->frozen.load(std::memory_order_relaxed)) Unshare();
    return *this;
  }
  ShortString& operator[](std::string_view k);
  // try_emplace, emplace, insert: SortedStringEntries's.
  template <class V>
  std::pair<const_iterator, bool> insert_or_assign(std::string_view k, V&& v) {
    // The value is made before the block may move: `v` may be one of its entries.
    ShortString value;
    value = std::forward<V>(v);
    const bool added = !contains(k);
    (*this)[k] = std::move(value);
    return {find(k), added};
  }
  size_type erase(std::string_view k);
  void clear() { Reset(); }

  friend bool operator==(const StringMap& a, const StringMap& b) {
    return a.block_ == b.block_ || std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const StringMap& a, const FlatStringMap& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  template <class>
  friend class SharedTable;
  friend Base;
  friend Entries;

  // A block for `n` entries, none made yet (size 0). Throws std::length_error beyond kMaxSize.
  static Block* Allocate(size_t n);
  static void Free(Block* b);
  static StringMapView ValueOf(const Block* b) { return {b->entries(), b->entries() + b->size}; }

  // Replaces the frozen block by a copy of its own.
  void Unshare();
  // Puts `v` at position `pos` (the entries from there on one further) in a new block one entry
  // larger, which replaces this map's block.
  const_iterator InsertAt(size_t pos, value_type&& v);
};
static_assert(sizeof(StringMap) == 8);

}  // namespace volcache::k8s

// JSON: an object of strings (the form of labels and annotations in every document), for both.
NLOHMANN_JSON_NAMESPACE_BEGIN
template <>
struct adl_serializer<volcache::k8s::FlatStringMap, void> {
  template <class Json>
  static void to_json(Json& j, const volcache::k8s::FlatStringMap& m) {
    j = Json::object();
    for (const auto& [k, v] : m) j[k.str()] = v.view();
  }
  template <class Json>
  static void from_json(const Json& j, volcache::k8s::FlatStringMap& m) {
    m.clear();
    for (auto it = j.begin(); it != j.end(); ++it)
      m.insert_or_assign(it.key(), it->template get<std::string>());
  }
};
template <>
struct adl_serializer<volcache::k8s::StringMap, void> {
  template <class Json>
  static void to_json(Json& j, const volcache::k8s::StringMap& m) {
    j = Json::object();
    for (const auto& [k, v] : m) j[k.str()] = v.view();
  }
  template <class Json>
  static void from_json(const Json& j, volcache::k8s::StringMap& m) {
    m = j.template get<volcache::k8s::FlatStringMap>();
  }
};
NLOHMANN_JSON_NAMESPACE_END
