#include "api/task_table.h"

#include <cstring>
#include <functional>
#include <ostream>

#include "api/keyed_table_impl.h"

namespace volcache {

std::string KeyView::str() const { return joined_ ? PodKey(head_, tail_) : std::string(head_); }

size_t KeyView::Hash() const {
  if (!joined_) return std::hash<std::string_view>{}(head_);
  // Joined on the stack (a namespace is at most 63 characters and a pod's name at most 253).
  char buf[320];
  const size_t n = size();
  if (n > sizeof(buf)) return std::hash<std::string>{}(str());
  std::memcpy(buf, head_.data(), head_.size());
  buf[head_.size()] = '/';
  std::memcpy(buf + head_.size() + 1, tail_.data(), tail_.size());
  return std::hash<std::string_view>{}(std::string_view(buf, n));
}

bool operator==(const KeyView& a, const KeyView& b) {
  if (a.joined_ == b.joined_) {
    // The tails first: of two tasks' keys, the names differ most often. Heads of different
    // lengths can still join to the same characters (a head holding a '/').
    if (a.head_.size() == b.head_.size()) return a.tail_ == b.tail_ && a.head_ == b.head_;
    return a.str() == b.str();
  }
  const KeyView& one = a.joined_ ? b : a;  // the joined string
  const KeyView& two = a.joined_ ? a : b;  // the parts
  const std::string_view s = one.head_;
  return s.size() == two.size() && s.substr(two.head_.size() + 1) == two.tail_ &&
         s[two.head_.size()] == '/' && s.substr(0, two.head_.size()) == two.head_;
}

std::strong_ordering operator<=>(const KeyView& a, const KeyView& b) {
  if (a.joined_ == b.joined_ && a.head_ == b.head_) return a.tail_ <=> b.tail_;
  if (!a.joined_ && !b.joined_) return a.head_ <=> b.head_;
  return a.str() <=> b.str();
}

std::ostream& operator<<(std::ostream& os, const KeyView& k) {
  os << k.head_;
  if (k.joined_) os << '/' << k.tail_;
  return os;
}

template class KeyedTable<TaskInfo>;

}  // namespace volcache
