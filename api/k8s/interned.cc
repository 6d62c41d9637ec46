#include "api/k8s/interned.h"

#include <ostream>
#include <unordered_set>

#include "api/mutex.h"

namespace volcache::k8s {

namespace {

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The values, never freed (a node-based set: the strings do not move).
struct Table {
  Mutex mu;
  std::unordered_set<std::string, Hash, std::equal_to<>> values GUARDED_BY(mu);
};
Table& TheTable() {
  static Table* const table = new Table();  // leaked: objects on any thread point into it
  return *table;
}

}  // namespace

const std::string& Interned::Empty() {
  static const std::string* const empty = new std::string();
  return *empty;
}

const std::string& Interned::Intern(std::string_view s) {
  Table& t = TheTable();
  MutexLock lock(&t.mu);
  auto it = t.values.find(s);
  if (it == t.values.end()) it = t.values.emplace(s).first;
  return *it;
}

size_t Interned::TableSize() {
  Table& t = TheTable();
  MutexLock lock(&t.mu);
  return t.values.size();
}

std::ostream& operator<<(std::ostream& os, const Interned& s) { return os << s.str(); }

}  // namespace volcache::k8s
