// The members of FlatStringMap and StringMap that manage their blocks (api/k8s/string_map.h).

#include "api/k8s/string_map.h"

#include <memory>
#include <new>
#include <stdexcept>
#include <string>

namespace volcache::k8s {

namespace {

using Value = FlatStringMap::value_type;

}  // namespace

void FlatStringMap::Free(Rep* r) {
  if (r == nullptr) return;
  std::destroy_n(r->entries(), r->size);
  ::operator delete(r);
}

void FlatStringMap::reserve(size_type n) {
  if (n <= capacity()) return;
  if (n > UINT32_MAX) throw std::length_error("FlatStringMap: too many entries");
  auto* r = static_cast<Rep*>(::operator new(sizeof(Rep) + n * sizeof(Value)));
  r->size = 0;
  r->capacity = static_cast<uint32_t>(n);
  if (rep_ != nullptr) {
    std::uninitialized_move_n(rep_->entries(), rep_->size, r->entries());
    r->size = rep_->size;
    Free(rep_);
  }
  rep_ = r;
}

FlatStringMap::FlatStringMap(const FlatStringMap& o) {
  if (o.empty()) return;
  reserve(o.size());
  std::uninitialized_copy(o.begin(), o.end(), rep_->entries());
  rep_->size = o.rep_->size;
}

FlatStringMap& FlatStringMap::operator=(const FlatStringMap& o) {
  if (this != &o) {
    FlatStringMap copy(o);
    std::swap(rep_, copy.rep_);
  }
  return *this;
}

void FlatStringMap::clear() {
  if (rep_ == nullptr) return;
  std::destroy_n(rep_->entries(), rep_->size);
  rep_->size = 0;
}

FlatStringMap::iterator FlatStringMap::InsertAt(size_t pos, value_type&& v) {
  const size_t n = size();
  if (n == capacity()) reserve(n == 0 ? 1 : 2 * n);
  value_type* e = rep_->entries();
  if (pos == n) {
    ::new (static_cast<void*>(e + n)) value_type(std::move(v));
  } else {
    ::new (static_cast<void*>(e + n)) value_type(std::move(e[n - 1]));
    std::move_backward(e + pos, e + n - 1, e + n);
    e[pos] = std::move(v);
  }
  ++rep_->size;
  return e + pos;
}

FlatStringMap::iterator FlatStringMap::erase(const_iterator it) {
  value_type* e = rep_->entries();
  const size_t pos = static_cast<size_t>(it - e);
  std::move(e + pos + 1, e + rep_->size, e + pos);
  std::destroy_at(e + rep_->size - 1);
  --rep_->size;
  return e + pos;
}

// ---------------------------------------------------------------- StringMap

StringMap::Block* StringMap::Allocate(size_t n) {
  if (n > kMaxSize) {
    throw std::length_error("StringMap: " + std::to_string(n) +
                            " entries; a label, annotation or selector map holds at most " +
                            std::to_string(kMaxSize));
  }
  void* raw = ::operator new(sizeof(Block) + n * sizeof(value_type));
  return ::new (raw) Block();
}

void StringMap::Free(Block* b) {
  std::destroy_n(b->entries(), b->size);
  b->~Block();
  ::operator delete(b);
}

namespace {

// Fills new block `b` (of room for `n` entries) by `fill(entries)`, which constructs all `n`;
// frees it when that throws (fill destroys what it made itself, as std::uninitialized_* do).
template <class Fill>
void FillBlock(StringMapBlock* b, size_t n, Fill fill) {
  try {
    fill(b->entries());
  } catch (...) {
    b->~StringMapBlock();
    ::operator delete(b);
    throw;
  }
  b->size = static_cast<uint16_t>(n);
}

// Copies src[0, a) to dst[0, a) and src[a + skip, n) to dst[a + gap, ...): the entries of a
// block around one entry inserted (gap 1) or erased (skip 1). On a throw, destroys what it
// made.
void CopyAround(const Value* src, size_t n, size_t a, size_t skip, Value* dst, size_t gap) {
  std::uninitialized_copy_n(src, a, dst);
  try {
    std::uninitialized_copy(src + a + skip, src + n, dst + a + gap);
  } catch (...) {
    std::destroy_n(dst, a);
    throw;
  }
}

}  // namespace

StringMap::StringMap(FlatStringMap&& m) {
  if (m.empty()) return;
  Block* b = Allocate(m.size());
  FillBlock(b, m.size(), [&](value_type* e) { std::uninitialized_move(m.begin(), m.end(), e); });
  m.clear();
  block_ = b;
}

StringMap::StringMap(const FlatStringMap& m) {
  if (m.empty()) return;
  Block* b = Allocate(m.size());
  FillBlock(b, m.size(), [&](value_type* e) { std::uninitialized_copy(m.begin(), m.end(), e); });
  block_ = b;
}

void StringMap::Unshare() {
  Block* old = block_;
  const size_t n = old->size;
  Block* b = Allocate(n);
  FillBlock(b, n, [&](value_type* e) { std::uninitialized_copy_n(old->entries(), n, e); });
  block_ = b;
  Release(old);
}

ShortString& StringMap::operator[](std::string_view k) {
  auto it = LowerBound(k);
  const auto pos = static_cast<size_t>(it - begin());
  if (it == end() || std::string_view(it->first) != k) {
    it = InsertAt(pos, value_type(k, ShortString()));
  } else {
    mut();
    it = begin() + pos;
  }
  return const_cast<value_type*>(it)->second;  // the block is this map's own
}

StringMap::const_iterator StringMap::InsertAt(size_t pos, value_type&& v) {
  Block* old = block_;
  const size_t n = size();
  Block* b = Allocate(n + 1);
  value_type* e = b->entries();
  ::new (static_cast<void*>(e + pos)) value_type(std::move(v));  // noexcept: an Interned and a ShortString
  if (old != nullptr && !old->frozen.load(std::memory_order_relaxed)) {
    // This map's own block (not frozen: never shared, so no other holder): its entries move
    // (noexcept), and it is freed.
    std::uninitialized_move_n(old->entries(), pos, e);
    std::uninitialized_move_n(old->entries() + pos, n - pos, e + pos + 1);
    b->size = static_cast<uint16_t>(n + 1);
    block_ = b;
    Free(old);
    return e + pos;
  }
  if (old != nullptr) {
    try {
      CopyAround(old->entries(), n, pos, 0, e, 1);
    } catch (...) {
      std::destroy_at(e + pos);
      b->~Block();
      ::operator delete(b);
      throw;
    }
  }
  b->size = static_cast<uint16_t>(n + 1);
  block_ = b;
  Release(old);
  return e + pos;
}

StringMap::size_type StringMap::erase(std::string_view k) {
  auto it = find(k);
  if (it == end()) return 0;
  const size_t n = size();
  const auto pos = static_cast<size_t>(it - begin());
  if (n == 1) {
    Reset();  // an empty map holds no block
    return 1;
  }
  Block* old = block_;
  if (!old->frozen.load(std::memory_order_relaxed)) {
    value_type* e = old->entries();
    std::move(e + pos + 1, e + n, e + pos);
    std::destroy_at(e + n - 1);
    --old->size;  // the block keeps its room for one more (unused: an insertion makes a new one)
    return 1;
  }
  Block* b = Allocate(n - 1);
  FillBlock(b, n - 1, [&](value_type* d) { CopyAround(old->entries(), n, pos, 1, d, 0); });
  block_ = b;
  Release(old);
  return 1;
}

}  // namespace volcache::k8s
