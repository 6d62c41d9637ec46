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
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using StringHashMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace volcache
