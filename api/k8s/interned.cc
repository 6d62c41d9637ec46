#include "api/k8s/interned.h"

#include <ostream>
#include <utility>
#include <vector>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache::k8s {

namespace {

size_t HashOf(std::string_view s) { return std::hash<std::string_view>{}(s); }

}  // namespace

// The values' numbers, by value: an open-addressing table of 4-byte numbers (0: empty), kept
// at most 3/4 full, whose probes compare the values in the chunks. An unordered_map from a
// view of the value to its number took a 48-byte node and a bucket per value.
struct Interned::Table {
  Mutex mu;
  std::vector<uint32_t> slots GUARDED_BY(mu);
  uint32_t next GUARDED_BY(mu) = 1;  // 0 is ""

  // The slot holding `s`'s number, or the empty slot where it goes.
  uint32_t& Find(std::string_view s, size_t hash) REQUIRES(mu) {
    const size_t mask = slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      uint32_t& slot = slots[i];
      if (slot == 0 || Value(slot) == s) return slot;
    }
  }
  void Grow() REQUIRES(mu) {
    std::vector<uint32_t> old =
        std::exchange(slots, std::vector<uint32_t>(std::max<size_t>(64, 2 * slots.size())));
    for (const uint32_t id : old) {
      if (id == 0) continue;
      const std::string& value = Value(id);
      Find(value, HashOf(value)) = id;
    }
  }
};

Interned::Table& Interned::TheTable() {
  static Table* const table = new Table();  // leaked: objects on any thread read its values
  return *table;
}

const std::string& Interned::Empty() {
  static const std::string* const empty = new std::string();
  return *empty;
}

uint32_t Interned::Intern(std::string_view s) {
  Table& t = TheTable();
  MutexLock lock(&t.mu);
  if (4 * size_t{t.next} >= 3 * t.slots.size()) t.Grow();
  const size_t hash = HashOf(s);
  uint32_t& slot = t.Find(s, hash);
  if (slot != 0) return slot;
  VC_CHECK(t.next != 0, "the intern table holds 2^32 values");
  const uint32_t id = t.next++;
  const Place p = PlaceOf(id);
  std::string* chunk = chunks_[p.chunk].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    // Leaked, as the table: values are read by objects on any thread until the process ends.
    chunk = new std::string[size_t{1} << (p.chunk + kFirstChunkBits)];
    chunks_[p.chunk].store(chunk, std::memory_order_release);
  }
  chunk[p.index] = s;
  slot = id;
  return id;
}

size_t Interned::TableSize() {
  Table& t = TheTable();
  MutexLock lock(&t.mu);
  return t.next - 1;
}

std::ostream& operator<<(std::ostream& os, const Interned& s) { return os << s.str(); }

}  // namespace volcache::k8s
