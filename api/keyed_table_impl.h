#pragma once
// The members of KeyedTable<V> (api/keyed_table.h). Included only by the file that
// instantiates the table for a V, so that the rest of the build does not compile them again.

#include <algorithm>
#include <cstring>
#include <functional>

#include "api/check.h"
#include "api/keyed_table.h"

namespace volcache {

// Tables of at most this many entries keep no index (capacity_ 0): a lookup compares the key.
// Most jobs of the traces hold one task, and their index took 32 bytes a job. (Two cost
// ingest 2 % more instructions, in key comparisons a tag would have spared, for nothing.)
inline constexpr size_t kKeyedTableLinearMax = 1;

// The count is the object's first word (boost::intrusive_ref_counter).
template <class V>
void KeyedTable<V>::PrefetchMetaCount(const V& v) {
  __builtin_prefetch(v.meta.get(), 1);
}

template <class V>
KeyedTable<V>::KeyedTable(const KeyedTable& other) : kind_(other.kind_) {
  const size_t n = other.size();
  Reserve(n);
  const V* src = other.Data();
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) PrefetchMetaCount(src[i + kPrefetchAhead]);
    PushBack(src[i]);
  }
  // The same positions: the index copies as it is. A copy of one entry holds it in place,
  // without one (a lookup compares its key).
  if (other.capacity_ != 0 && on_heap_) {
    heap_.slots = new uint64_t[other.capacity_];
    std::memcpy(heap_.slots, other.Slots(), other.capacity_ * sizeof(uint64_t));
    capacity_ = other.capacity_;
  }
}

template <class V>
void KeyedTable<V>::PrefetchEntries() const {
  const auto* begin = reinterpret_cast<const char*>(Data());
  const auto* end = reinterpret_cast<const char*>(Data() + size());
  for (const char* p = begin; p < end; p += 64) __builtin_prefetch(p);
}

template <class V>
void KeyedTable<V>::PrefetchMetas() const {
  const V* d = Data();
  for (size_t i = 0, n = size(); i < n; ++i) PrefetchMetaCount(d[i]);
}

template <class V>
V* KeyedTable<V>::Relocate(V* from, size_t count, size_t room) {
  V* fresh = static_cast<V*>(::operator new(room * sizeof(V)));
  for (size_t i = 0; i < count; ++i) {
    new (fresh + i) V(std::move(from[i]));
    from[i].~V();
  }
  return fresh;
}

template <class V>
void KeyedTable<V>::Reserve(size_t n) {
  if (n <= Capacity()) return;
  const size_t count = size();
  V* fresh = Relocate(Data(), count, n);
  uint64_t* slots = nullptr;  // an index stays (only a table on the heap has one)
  if (on_heap_) {
    ::operator delete(heap_.data);
    slots = heap_.slots;
  }
  heap_ = HeapArray{fresh, slots, static_cast<uint32_t>(count), static_cast<uint32_t>(n)};
  on_heap_ = true;
  has_one_ = false;
}

template <class V>
void KeyedTable<V>::PushBack(const V& v) {
  if (on_heap_) {
    new (heap_.data + heap_.size) V(v);
    ++heap_.size;
  } else {
    new (&one_) V(v);
    has_one_ = true;
  }
}

template <class V>
void KeyedTable<V>::PopBack() {
  if (on_heap_) {
    heap_.data[--heap_.size].~V();
  } else {
    one_.~V();
    has_one_ = false;
  }
}

template <class V>
void KeyedTable<V>::ShrinkToFit() {
  if (!on_heap_ || heap_.size == heap_.cap) return;
  const HeapArray old = heap_;
  if (old.size <= 1) {
    // In place again, which a table with an index never is: it goes, and a lookup compares
    // the one key.
    delete[] old.slots;
    capacity_ = 0;
    on_heap_ = false;
    if (old.size == 1) {
      new (&one_) V(std::move(old.data[0]));
      old.data[0].~V();
      has_one_ = true;
    }
  } else {
    heap_.data = Relocate(old.data, old.size, old.size);
    heap_.cap = old.size;
  }
  ::operator delete(old.data);
}

template <class V>
KeyedTable<V>& KeyedTable<V>::operator=(const KeyedTable& other) {
  if (this != &other) *this = KeyedTable(other);
  return *this;
}

template <class V>
uint32_t KeyedTable<V>::Tag(KeyView key) {
  const uint64_t h = key.Hash();
  return static_cast<uint32_t>(h ^ (h >> 32));
}

template <class V>
typename KeyedTable<V>::const_iterator KeyedTable<V>::find(KeyView key) const {
  // No index (empty or small): no key to hash.
  const size_t pos = capacity_ == 0 ? Find(key, 0) : Find(key, Tag(key));
  return pos == kAbsent ? end() : const_iterator(Data() + pos, kind_);
}

template <class V>
size_t KeyedTable<V>::Find(KeyView key, uint32_t tag) const {
  if (capacity_ == 0) {
    for (size_t pos = 0, n = size(); pos < n; ++pos) {
      if (KeyAt(pos) == key) return pos;
    }
    return kAbsent;
  }
  for (size_t i = tag & mask();; i = (i + 1) & mask()) {
    const uint64_t s = Slots()[i];
    if (s == 0) return kAbsent;
    if (static_cast<uint32_t>(s >> 32) != tag) continue;
    const auto pos = static_cast<size_t>(static_cast<uint32_t>(s) - 1);
    if (KeyAt(pos) == key) return pos;
  }
}

template <class V>
V* KeyedTable<V>::find_mutable(KeyView key) {
  const auto it = find(key);
  if (it == end()) return nullptr;
  return Data() + Pos(it);
}

template <class V>
std::pair<V*, bool> KeyedTable<V>::try_emplace(const V& value) {
  const KeyView key = V::TableKey(value, kind_);
  const size_t n = size();
  const bool linear = capacity_ == 0 && n < kKeyedTableLinearMax;  // stays without an index
  const uint32_t tag = linear ? 0 : Tag(key);
  if (const size_t pos = Find(key, tag); pos != kAbsent) return {Data() + pos, false};
  // Grown by a quarter (most jobs hold one task or a few: a doubling array would leave a third
  // of its room empty), and before the index, so that a failure leaves the two consistent.
  if (n == Capacity()) Reserve(n + std::max<size_t>(1, n / 4));
  if (linear) {
    PushBack(value);
    return {Data() + n, true};
  }
  // The index stays at most three quarters full: runs stay short, and the tags in the slots
  // spare a probe the entry's key.
  if ((n + 1) * 4 > size_t{capacity_} * 3) Rehash(std::max(kMinCapacity, capacity_ * 2));
  PushBack(value);
  Insert(tag, static_cast<uint32_t>(n));
  return {Data() + n, true};
}

template <class V>
void KeyedTable<V>::reserve(size_t n) {
  Reserve(n);
  if (capacity_ == 0 && n <= kKeyedTableLinearMax) return;
  uint32_t capacity = std::max(kMinCapacity, capacity_);
  while (n * 4 > size_t{capacity} * 3) capacity *= 2;
  if (capacity != capacity_) Rehash(capacity);
}

template <class V>
V& KeyedTable<V>::replace(const_iterator it, V value) {
  const auto pos = static_cast<uint32_t>(Pos(it));
  const KeyView old_key = KeyAt(pos);
  const KeyView key = V::TableKey(value, kind_);
  // A new name in an indexed table: its slot moves (the old value still owns old_key here).
  if (capacity_ != 0 && old_key != key) {
    EraseSlot(SlotOf(Tag(old_key), pos));
    Insert(Tag(key), pos);
  }
  Data()[pos] = std::move(value);
  return Data()[pos];
}

template <class V>
void KeyedTable<V>::erase(const_iterator it) {
  const auto pos = static_cast<uint32_t>(Pos(it));
  if (capacity_ != 0) EraseSlot(SlotOf(Tag(KeyAt(pos)), pos));
  const auto last = static_cast<uint32_t>(size() - 1);
  if (pos != last) {
    // The last entry moves into the gap: its slot now names `pos`.
    if (capacity_ != 0) {
      const size_t moved = SlotOf(Tag(KeyAt(last)), last);
      Slots()[moved] = (Slots()[moved] & ~uint64_t{0xffffffff}) | (pos + 1);
    }
    Data()[pos] = std::move(Data()[last]);
  }
  PopBack();
  if (empty()) {
    clear();
  } else if (capacity_ > kMinCapacity && size() * 4 <= capacity_) {
    // A node that ran many tasks and now runs few gives the room back (a table left with one
    // entry holds it in place, without an index).
    ShrinkToFit();
    if (capacity_ != 0) Rehash(capacity_ / 2);
  }
}

template <class V>
void KeyedTable<V>::clear() {
  DropEntries();
}

template <class V>
size_t KeyedTable<V>::SlotOf(uint32_t tag, uint32_t pos) const {
  const uint64_t want = (uint64_t{tag} << 32) | (pos + 1);
  for (size_t i = tag & mask();; i = (i + 1) & mask()) {
    VC_CHECK(Slots()[i] != 0, "keyed table: an entry has no slot");
    if (Slots()[i] == want) return i;
  }
}

template <class V>
void KeyedTable<V>::Insert(uint32_t tag, uint32_t pos) {
  size_t i = tag & mask();
  while (Slots()[i] != 0) i = (i + 1) & mask();
  Slots()[i] = (uint64_t{tag} << 32) | (pos + 1);
}

template <class V>
void KeyedTable<V>::EraseSlot(size_t i) {
  // Linear probing without tombstones: later slots of the same run that could live at `i`
  // move back into it, so every entry stays reachable from its home slot.
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask();
    const uint64_t s = Slots()[j];
    if (s == 0) break;
    const size_t home = static_cast<uint32_t>(s >> 32) & mask();
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    Slots()[i] = s;
    i = j;
  }
  Slots()[i] = 0;
}

template <class V>
void KeyedTable<V>::Rehash(uint32_t capacity) {
  // From the old slots, which hold every entry's tag: no key is read (or hashed) again; a
  // table without an index yet hashes its few keys.
  VC_CHECK(on_heap_, "keyed table: an index for entries held in place");
  std::unique_ptr<uint64_t[]> old(std::exchange(heap_.slots, new uint64_t[capacity]()));
  const uint32_t old_capacity = std::exchange(capacity_, capacity);
  if (old_capacity == 0) {
    for (size_t pos = 0, n = size(); pos < n; ++pos) Insert(Tag(KeyAt(pos)), static_cast<uint32_t>(pos));
  }
  for (uint32_t i = 0; i < old_capacity; ++i) {
    if (old[i] != 0) Insert(static_cast<uint32_t>(old[i] >> 32), static_cast<uint32_t>(old[i]) - 1);
  }
}

}  // namespace volcache
