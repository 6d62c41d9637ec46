#pragma once
// FlatStringMap: the string-to-string map of labels, annotations and selectors, as a sorted
// vector of (key, value) pairs whose keys are Interned (api/k8s/interned.h): label and
// annotation keys repeat from object to object ("app", "scheduling.k8s.io/group-name"), so a
// key is one pointer into the process-wide table, not a 32-byte string with a heap block of
// its own for the longer ones.
//
// An entry is 20 bytes in one array: the key a 4-byte number, the value a ShortString
// (api/inline_string.h: 14 characters inline, a longer value in a heap block of its own, as a
// std::string's beyond 15). A std::map took a 96-byte node (and a heap block for a key over 15
// characters) per entry and 48 bytes of header. A pod's one group-name annotation took 180
// bytes so, 72 in a vector (docs/BENCHMARKS.md, session 21), 64 of blocks since the map is one
// pointer to its array (session 24), and 48 since its values are ShortStrings (the array's
// block of one entry is tcmalloc's 32-byte class; 48-byte with a 32-byte std::string value).
//
// It reads and writes as std::map<std::string, std::string> does (a value converts to a
// std::string), for the members the code uses: find/count/contains/at with any string-like
// key, operator[], emplace, try_emplace, insert_or_assign, insert, erase, ordered iteration (by
// key, as std::map: documents and dumps come out in the same order). Lookups are binary
// searches; maps are small.
// Differences: iterators are invalidated by every insertion and erasure (as a vector's), and
// an entry's key is not const (do not assign it: the order would break).
//
// The intern table keeps every key it was given, so a stream of objects with ever-new keys
// grows it; keys are bounded by the tools that write them in every cluster we know of.
//
// Thread-safety: a value type.

#include <algorithm>
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

namespace volcache::k8s {

class FlatStringMap {
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

  const_iterator find(std::string_view k) const {
    auto it = LowerBound(k);
    return it != end() && std::string_view(it->first) == k ? it : end();
  }
  iterator find(std::string_view k) { return const_cast<iterator>(std::as_const(*this).find(k)); }
  size_type count(std::string_view k) const { return find(k) != end() ? 1 : 0; }
  bool contains(std::string_view k) const { return find(k) != end(); }
  // Throws std::out_of_range when absent, as std::map's.
  const ShortString& at(std::string_view k) const {
    auto it = find(k);
    if (it == end()) throw std::out_of_range("no key " + std::string(k));
    return it->second;
  }
  ShortString& at(std::string_view k) { return const_cast<ShortString&>(std::as_const(*this).at(k)); }

  ShortString& operator[](std::string_view k) { return try_emplace(k).first->second; }

  template <class... A>
  std::pair<iterator, bool> try_emplace(std::string_view k, A&&... a) {
    auto it = const_cast<iterator>(LowerBound(k));
    if (it != end() && std::string_view(it->first) == k) return {it, false};
    // The value is made before the array may move: an argument may be one of its entries.
    return {InsertAt(static_cast<size_t>(it - begin()),
                     value_type(std::piecewise_construct, std::forward_as_tuple(k),
                                std::forward_as_tuple(std::forward<A>(a)...))),
            true};
  }
  template <class V>
  std::pair<iterator, bool> emplace(std::string_view k, V&& v) {
    return try_emplace(k, std::forward<V>(v));
  }
  std::pair<iterator, bool> insert(const value_type& e) { return try_emplace(e.first, e.second); }
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
  // The entries and their count, in one heap block: the map itself is one pointer, null while
  // it has never held an entry. A std::vector took 24 bytes beside its array: a k8s::Shared
  // map's block was then tcmalloc's 32-byte class, now its 16-byte one (a pod's one group-name
  // annotation: 64 bytes of blocks instead of 80).
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
  const_iterator LowerBound(std::string_view k) const {
    return std::lower_bound(begin(), end(), k, [](const value_type& e, std::string_view key) {
      return std::string_view(e.first) < key;
    });
  }

  Rep* rep_ = nullptr;
};

}  // namespace volcache::k8s

// JSON: an object of strings (the form of labels and annotations in every document).
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
NLOHMANN_JSON_NAMESPACE_END
