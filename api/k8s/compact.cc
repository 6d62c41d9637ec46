#include "api/k8s/compact.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache::k8s {

namespace {

void Mix(size_t* h, size_t v) { *h ^= v + 0x9e3779b97f4a7c15ULL + (*h << 6) + (*h >> 2); }
void MixStr(size_t* h, std::string_view s) { Mix(h, std::hash<std::string_view>{}(s)); }

void MixList(size_t* h, const ResourceList& list) {
  for (const auto& [name, q] : list) {
    MixStr(h, name);
    Mix(h, static_cast<size_t>(q.MilliValue()));
  }
}

size_t HashOf(std::string_view s) { return std::hash<std::string_view>{}(s); }

// Hashes need not see every field: equality decides, the hash only spreads the buckets.
size_t HashOf(StringMapView m) {
  size_t h = m.size();
  for (const auto& [k, v] : m) {
    MixStr(&h, k);
    MixStr(&h, v);
  }
  return h;
}
size_t HashOf(const std::vector<Container>& cs) {
  size_t h = cs.size();
  for (const Container& c : cs) {
    MixStr(&h, c.name);
    MixStr(&h, c.image);
    MixList(&h, c.requests);
    MixList(&h, c.limits);
    Mix(&h, c.ports.size());
  }
  return h;
}
size_t HashOf(const std::vector<Toleration>& ts) {
  size_t h = ts.size();
  for (const Toleration& t : ts) {
    MixStr(&h, t.key);
    MixStr(&h, t.value);
    MixStr(&h, t.effect);
  }
  return h;
}
size_t HashOf(const std::vector<OwnerReference>& rs) {
  size_t h = rs.size();
  for (const OwnerReference& r : rs) MixStr(&h, r.uid);
  return h;
}
size_t HashOf(const std::vector<PodCondition>& cs) {
  size_t h = cs.size();
  for (const PodCondition& c : cs) {
    MixStr(&h, c.type);
    MixStr(&h, c.status);
    Mix(&h, static_cast<size_t>(c.last_transition_time));
  }
  return h;
}

size_t HashOf(const ResourceList& list) {
  size_t h = list.size();
  MixList(&h, list);
  return h;
}
size_t HashOf(const std::vector<NodeCondition>& cs) {
  size_t h = cs.size();
  for (const NodeCondition& c : cs) {
    MixStr(&h, c.type);
    MixStr(&h, c.status);
    MixStr(&h, c.reason);
  }
  return h;
}

}  // namespace

// The canonical blocks of one kind of part, held weakly, by hash: an entry is a plain
// pointer, and the release of a block's last holder (Shared::Release) takes the entry out
// before the block is freed. A lookup revives a block only while it still has a holder.
//
// An open-addressing table (linear probing, backward-shift erase) of 8-byte slots: the
// block's address (below 2^48) under the top 16 bits of its hash, mixed (Mixed). The tag
// spares a probe most loads of other blocks, and holds the home slot of a table of up to 2^16
// slots; a larger table hashes the block again to find it (on erase and rehash only). About
// 12 bytes an entry at its load of 7/16 to 7/8 while it grows (7/32 to 7/8 once entries leave:
// it halves below 7/32, so a cluster that shrinks gives the room back). A (hash, block) pair
// took 16 bytes a slot, and a std::unordered_multimap a 32-byte node and a bucket. A trace of
// one-task jobs holds two entries a task: its pod's annotations and its job's id.
//
// H is the holder: a Shared<C> (its block's value a C), a SharedString (its block's value the
// characters) or a StringMap (its block's value a StringMapView of the entries); H::ValueOf
// reads a block's value.
template <class H>
class SharedTable {
 public:
  // One table per kind of part (Tables, below), made before any block is interned.
  SharedTable() {
    the_ = this;
    H::unintern_ = &SharedTable::Forget;
  }

  void Intern(H* s) EXCLUDES(mu_) {
    Block* block = s->block_;
    if (block == nullptr) return;
    if (H::ValueOf(block).empty()) {
      s->Reset();
      return;
    }
    Block* canonical = FindOrInsert(block);
    if (canonical == block) return;
    s->block_ = canonical;
    // After the lock: the last release of a block frees its value (and, were it interned,
    // would take this table's lock to remove its entry).
    H::Release(block);
  }

  size_t Entries() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return size_;
  }
  size_t Slots() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return slots_count_;
  }

 private:
  using Block = typename H::Block;
  // 0: a free slot.
  using Entry = uint64_t;
  static constexpr unsigned kTagShift = 48;
  static constexpr uint64_t kAddressMask = (uint64_t{1} << kTagShift) - 1;
  static constexpr size_t kMinSlots = 16;

  // Where a hash's probe starts (Fibonacci hashing: the part hashes need not spread their
  // low bits).
  static uint64_t Mixed(size_t h) { return h * 0x9e3779b97f4a7c15ULL; }
  size_t Home(uint64_t mixed) const REQUIRES(mu_) { return mixed >> shift_; }
  static Block* BlockOf(Entry e) { return reinterpret_cast<Block*>(e & kAddressMask); }
  static Entry MakeEntry(Block* b, uint64_t mixed) {
    const auto address = reinterpret_cast<uintptr_t>(b);
    VC_CHECK((address & ~kAddressMask) == 0, "compact: a block's address has more than 48 bits");
    return (mixed & ~kAddressMask) | address;
  }
  // The home slot of entry `e`: from its tag while the table has at most 2^16 slots.
  size_t HomeOf(Entry e) const REQUIRES(mu_) {
    if (shift_ >= kTagShift) return (e >> kTagShift) >> (shift_ - kTagShift);
    return Home(Mixed(HashOf(H::ValueOf(BlockOf(e)))));
  }
  size_t Next(size_t i) const REQUIRES(mu_) { return (i + 1) & (slots_count_ - 1); }

  // The table's block equal to `block`, with one more holder; `block` itself (entered) when
  // the table has none.
  Block* FindOrInsert(Block* block) EXCLUDES(mu_) {
    const uint64_t m = Mixed(HashOf(H::ValueOf(block)));
    const uint64_t tag = m >> kTagShift;
    MutexLock lock(&mu_);
    if ((size_ + 1) * 8 > slots_count_ * 7) Grow();
    for (size_t i = Home(m);; i = Next(i)) {
      Entry& e = slots_[i];
      if (e == 0) {
        block->frozen.store(true, std::memory_order_relaxed);
        block->interned.store(true, std::memory_order_relaxed);
        e = MakeEntry(block, m);
        ++size_;
        return block;
      }
      if ((e >> kTagShift) != tag) continue;
      Block* b = BlockOf(e);
      if (b == block) return block;
      if (H::ValueOf(b) == H::ValueOf(block) && TryHold(b)) return b;
    }
  }

  // Twice the slots (kMinSlots at first).
  void Grow() REQUIRES(mu_) { Rehash(slots_count_ == 0 ? kMinSlots : slots_count_ * 2); }

  // `count` slots (a power of two, with room for every entry), every entry re-placed.
  void Rehash(size_t count) REQUIRES(mu_) {
    const size_t old_count = slots_count_;
    std::unique_ptr<Entry[]> old = std::move(slots_);
    slots_count_ = count;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots_count_));
    slots_ = std::make_unique<Entry[]>(slots_count_);  // zeroed: free
    for (size_t j = 0; j < old_count; ++j) {
      if (old[j] == 0) continue;
      size_t i = HomeOf(old[j]);
      while (slots_[i] != 0) i = Next(i);
      slots_[i] = old[j];
    }
  }

  // One more holder of `b`, unless its last one already let go (its release is then on its
  // way to Forget, waiting for the lock this caller holds).
  static bool TryHold(Block* b) {
    uint32_t n = b->refs.load(std::memory_order_relaxed);
    while (n != 0) {
      if (b->refs.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  // The last holder of interned block `b` let go: out of the table, then freed.
  static void Forget(Block* b) {
    the_->Erase(b);
    H::Free(b);
  }
  void Erase(Block* b) EXCLUDES(mu_) {
    const uint64_t m = Mixed(HashOf(H::ValueOf(b)));
    MutexLock lock(&mu_);
    if (size_ == 0) return;
    size_t i = Home(m);
    while (BlockOf(slots_[i]) != b) {
      if (slots_[i] == 0) return;  // not entered (cannot happen: interned blocks are)
      i = Next(i);
    }
    // Backward shift: each later entry of the run moves into the hole unless the hole lies
    // before its home (cyclically), so that every entry stays reachable from its home.
    const size_t mask = slots_count_ - 1;
    for (size_t j = Next(i); slots_[j] != 0; j = Next(j)) {
      const size_t home = HomeOf(slots_[j]);
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = 0;
    --size_;
    // Below 7/32 full: half the slots (at most 7/16 full then, so that growing again takes
    // as many inserts as there are entries; each halving is paid for by the erases before it).
    if (slots_count_ > kMinSlots && size_ * 32 < slots_count_ * 7) Rehash(slots_count_ / 2);
  }

  static inline SharedTable* the_ = nullptr;
  mutable Mutex mu_;
  std::unique_ptr<Entry[]> slots_ GUARDED_BY(mu_);
  size_t slots_count_ GUARDED_BY(mu_) = 0;  // a power of two (or 0 before the first entry)
  unsigned shift_ GUARDED_BY(mu_) = 64;
  size_t size_ GUARDED_BY(mu_) = 0;
};

namespace {

// Leaked on purpose: decoders on any thread may compact until the process exits.
struct Tables {
  SharedTable<StringMap> maps;
  SharedTable<Shared<std::vector<Container>>> containers;
  SharedTable<Shared<std::vector<Toleration>>> tolerations;
  SharedTable<Shared<std::vector<OwnerReference>>> owners;
  SharedTable<Shared<std::vector<PodCondition>>> conditions;
  SharedTable<SharedString> strings;
  SharedTable<Shared<ResourceList>> resource_lists;
  SharedTable<Shared<std::vector<NodeCondition>>> node_conditions;
};
Tables& TheTables() {
  static Tables* const tables = new Tables();
  return *tables;
}

}  // namespace

void Compact(Pod* pod) {
  Tables& t = TheTables();
  t.maps.Intern(&pod->metadata.labels);
  t.maps.Intern(&pod->metadata.annotations);
  t.owners.Intern(&pod->metadata.owner_references);
  t.containers.Intern(&pod->spec.containers);
  t.containers.Intern(&pod->spec.init_containers);
  t.maps.Intern(&pod->spec.node_selector);
  t.tolerations.Intern(&pod->spec.tolerations);
  t.conditions.Intern(&pod->status.conditions);
}

void Compact(Node* node) {
  Tables& t = TheTables();
  t.resource_lists.Intern(&node->status.capacity);
  t.resource_lists.Intern(&node->status.allocatable);
  t.node_conditions.Intern(&node->status.conditions);
}

SharedString::Block* SharedString::Make(std::string_view s) {
  if (s.empty()) return nullptr;
  void* raw = ::operator new(sizeof(Block) + s.size() + 1);
  auto* b = ::new (raw) Block();
  b->size = static_cast<uint32_t>(s.size());  // no key is 4 GiB
  std::memcpy(b->chars(), s.data(), s.size());
  b->chars()[s.size()] = '\0';
  return b;
}

void SharedString::Free(Block* b) {
  b->~Block();
  ::operator delete(b);
}

SharedString InternSharedKey(std::string_view ns, std::string_view name) {
  thread_local SharedString last;
  const std::string_view l = last;
  if (!l.empty() && l.size() == ns.size() + 1 + name.size() && l[ns.size()] == '/' &&
      l.substr(0, ns.size()) == ns && l.substr(ns.size() + 1) == name) {
    return last;
  }
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append(1, '/').append(name);
  last = InternShared(key);
  return last;
}

SharedString InternShared(std::string_view key) {
  SharedString s(key);
  TheTables().strings.Intern(&s);
  return s;
}

size_t CompactTableSlots() {
  Tables& t = TheTables();
  return t.maps.Slots() + t.containers.Slots() + t.tolerations.Slots() + t.owners.Slots() +
         t.conditions.Slots() + t.strings.Slots() + t.resource_lists.Slots() + t.node_conditions.Slots();
}

size_t CompactTableEntries() {
  Tables& t = TheTables();
  return t.maps.Entries() + t.containers.Entries() + t.tolerations.Entries() + t.owners.Entries() +
         t.conditions.Entries() + t.strings.Entries() + t.resource_lists.Entries() +
         t.node_conditions.Entries();
}

}  // namespace volcache::k8s
