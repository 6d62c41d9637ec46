#pragma once
// Hash maps keyed by std::string that can be searched with a std::string_view (no temporary
// string is built for a lookup).

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace volcache {

struct StringHash {
  using is_transparent = void;
  // Deliberately not noexcept: libstdc++ then stores each element's hash in its node (as it
  // does for std::hash<std::string>), so a lookup compares stored hashes instead of rehashing
  // every key along the bucket chain. Measured: cache_bench BM_AddRemovePod/1 and
  // `bench ingest` (see the commit that introduced this comment).
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using StringHashMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace volcache

namespace volcache {

// A hash map keyed by a view of a string that the mapped value itself keeps alive (a task's
// uid or "namespace/name" in its shared, immutable TaskMeta), so an entry does not hold a
// second copy of the name. Whoever replaces a mapped value with one that owns a different
// string must re-key the entry (extract the node, set key and value, insert it back).
template <typename V>
using ViewKeyMap = std::unordered_map<std::string_view, V, StringHash, std::equal_to<>>;

// Replaces the value of entry `it` with `value` and re-keys the entry with `key_of(value)`
// (a view into the new value), without reallocating the node. Returns the stored value.
template <typename V, typename KeyOf>
V& ReplaceAndRekey(ViewKeyMap<V>& map, typename ViewKeyMap<V>::iterator it, V value, KeyOf key_of) {
  auto node = map.extract(it);
  node.mapped() = std::move(value);
  node.key() = key_of(node.mapped());
  return map.insert(std::move(node)).position->second;
}

}  // namespace volcache
