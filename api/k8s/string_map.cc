// FlatStringMap's members that manage its block (api/k8s/string_map.h).

#include "api/k8s/string_map.h"

#include <memory>
#include <new>

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

}  // namespace volcache::k8s
