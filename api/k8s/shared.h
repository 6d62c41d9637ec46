#pragma once
// Shared<C>: a container field that copies share, for the parts of an object that repeat
// from object to object (a pod's containers, tolerations, owner references; its labels and
// annotations are StringMaps, api/k8s/string_map.h, which share the same way in one block). An empty one
// holds no heap at all; a non-empty one is one heap block that every copy of the object points to, and that
// k8s::Compact (api/k8s/compact.h) can replace with an equal block already held by other objects, so that the
// 100 pods of one job hold their containers once.
//
// Reading is the container's const interface (or `get()`, or the implicit conversion to
// `const C&`). Writing is explicit: `mut()` gives the container to change, after copying it
// when the block is shared; the map-style `operator[](key)`, `emplace`, `push_back`, ...
// do the same. Iterating a non-const Shared never copies (begin()/end() are const).
//
// Thread-safety: as the object that holds it. A block is frozen — never written in place
// again — from the moment it is shared (a copy of the field, or interning), so objects that
// share it may be read by any number of threads while their private copies are changed.
//
// The field is one pointer (8 bytes): the block counts its holders itself (an intrusive
// count, as boost::intrusive_ptr), where a std::shared_ptr took 16 bytes in the field and a
// 16-byte control block beside the value. A decoded pod holds five of these fields, and three
// StringMaps.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <type_traits>
#include <utility>

namespace volcache::k8s {

// A pointer to a counted heap block B, which copies of the pointer share and whose last holder
// frees it: the handle of Shared, of SharedString (api/k8s/shared_string.h) and of StringMap
// (api/k8s/string_map.h). B has the
// atomic `refs` (its holders), `frozen` (it has been shared: never written again) and
// `interned` (a SharedTable holds it weakly); D frees a block with D::Free(B*).
template <class D, class B>
class CountedBlockRef {
 public:
  CountedBlockRef(const CountedBlockRef& o) : block_(o.block_) { Hold(); }
  CountedBlockRef(CountedBlockRef&& o) noexcept : block_(std::exchange(o.block_, nullptr)) {}
  CountedBlockRef& operator=(const CountedBlockRef& o) {
    if (block_ != o.block_) {
      B* old = block_;
      block_ = o.block_;
      Hold();
      Release(old);
    }
    return *this;
  }
  CountedBlockRef& operator=(CountedBlockRef&& o) noexcept {
    if (this != &o) {
      Release(block_);
      block_ = std::exchange(o.block_, nullptr);
    }
    return *this;
  }
  ~CountedBlockRef() { Release(block_); }

  // True when both hold the same block (or are both empty): equal without comparing.
  bool SameBlock(const CountedBlockRef& o) const { return block_ == o.block_; }

 protected:
  CountedBlockRef() = default;
  explicit CountedBlockRef(B* b) : block_(b) {}

  void Reset() { Release(std::exchange(block_, nullptr)); }
  // Another holder of block_ (a copy): the block is shared from now on.
  void Hold() const {
    if (block_ == nullptr) return;
    block_->refs.fetch_add(1, std::memory_order_relaxed);
    block_->frozen.store(true, std::memory_order_relaxed);
  }
  // One holder fewer; the last one frees the block (acq_rel: every holder's reads and writes
  // happen before the free).
  static void Release(B* b) {
    if (b == nullptr || b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (b->interned.load(std::memory_order_relaxed)) {
      unintern_(b);  // takes it out of its table, which then frees it
    } else {
      D::Free(b);
    }
  }
  // What releases an interned block (set by the one SharedTable of D when it is made).
  static inline void (*unintern_)(B*) = nullptr;

  B* block_ = nullptr;
};

// A Shared<C>'s block: the container and its counts.
template <class C>
struct SharedBlock {
  SharedBlock() = default;
  explicit SharedBlock(const C& v) : value(v) {}
  explicit SharedBlock(C&& v) : value(std::move(v)) {}
  C value;
  std::atomic<uint32_t> refs{1};  // the Shared fields that point here
  std::atomic<bool> frozen{false};
  // Set once, by SharedTable (api/k8s/compact.cc), before the table hands the block out:
  // the table holds it weakly, by a plain pointer that the last holder's release removes.
  std::atomic<bool> interned{false};
};

template <class C>
class Shared : public CountedBlockRef<Shared<C>, SharedBlock<C>> {
  using Base = CountedBlockRef<Shared<C>, SharedBlock<C>>;
  using Block = SharedBlock<C>;
  using Base::block_;
  using Base::Hold;
  using Base::Release;
  using Base::Reset;

 public:
  using container_type = C;
  using value_type = typename C::value_type;
  using size_type = typename C::size_type;
  using const_iterator = typename C::const_iterator;
  using iterator = const_iterator;
  using const_reference = typename C::const_reference;

  Shared() = default;
  Shared(C c) { Assign(std::move(c)); }  // NOLINT(google-explicit-constructor): a field's value
  Shared(std::initializer_list<value_type> il) { Assign(C(il)); }
  Shared(const Shared&) = default;
  Shared(Shared&&) noexcept = default;
  Shared& operator=(const Shared&) = default;
  Shared& operator=(Shared&&) noexcept = default;
  Shared& operator=(C c) {
    Assign(std::move(c));
    return *this;
  }
  Shared& operator=(std::initializer_list<value_type> il) {
    Assign(C(il));
    return *this;
  }

  const C& get() const { return block_ ? block_->value : Empty(); }
  operator const C&() const { return get(); }  // NOLINT(google-explicit-constructor)

  // The container to change: this field's own (a shared or frozen block is copied first).
  C& mut() {
    if (!block_) {
      block_ = new Block();
    } else if (block_->frozen.load(std::memory_order_relaxed)) {
      Block* old = block_;
      block_ = new Block(old->value);
      Release(old);
    }
    return block_->value;
  }

  // The const container interface.
  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  const_iterator cbegin() const { return get().begin(); }
  const_iterator cend() const { return get().end(); }
  size_type size() const { return block_ ? block_->value.size() : 0; }
  bool empty() const { return !block_ || block_->value.empty(); }
  decltype(auto) front() const { return get().front(); }
  decltype(auto) back() const { return get().back(); }
  template <class K>
  decltype(auto) operator[](const K& i) const {
    return get()[i];
  }
  template <class K>
  decltype(auto) at(const K& k) const {
    return get().at(k);
  }
  template <class K>
  decltype(auto) find(const K& k) const {
    return get().find(k);
  }
  template <class K>
  size_type count(const K& k) const {
    return get().count(k);
  }
  template <class K>
  bool contains(const K& k) const {
    return get().find(k) != get().end();
  }

  // Writes (each through mut()). Indexing a non-const vector reads (the const overload); a
  // map's operator[] inserts, as std::map's does.
  template <class K>
  requires requires { typename C::mapped_type; }
  decltype(auto) operator[](K&& k) { return mut()[std::forward<K>(k)]; }
  template <class A0, class... A>
  requires(!std::is_convertible_v<std::decay_t<A0>, const_iterator>) decltype(auto)
      emplace(A0&& a0, A&&... a) {
    return mut().emplace(std::forward<A0>(a0), std::forward<A>(a)...);
  }
  // No hinted forms: an iterator of this field may belong to a block mut() replaces.
  template <class K, class... A>
  requires(!std::is_convertible_v<std::decay_t<K>, const_iterator>) decltype(auto)
      try_emplace(K&& k, A&&... a) {
    return mut().try_emplace(std::forward<K>(k), std::forward<A>(a)...);
  }
  template <class K, class V>
  requires(!std::is_convertible_v<std::decay_t<K>, const_iterator>) decltype(auto)
      insert_or_assign(K&& k, V&& v) {
    return mut().insert_or_assign(std::forward<K>(k), std::forward<V>(v));
  }
  decltype(auto) insert(const value_type& v) { return mut().insert(v); }
  decltype(auto) insert(value_type&& v) { return mut().insert(std::move(v)); }
  template <class... A>
  decltype(auto) emplace_back(A&&... a) {
    return mut().emplace_back(std::forward<A>(a)...);
  }
  void push_back(const value_type& v) { mut().push_back(v); }
  void push_back(value_type&& v) { mut().push_back(std::move(v)); }
  template <class K>
  size_type erase(const K& k) {
    return block_ ? mut().erase(k) : 0;
  }
  void clear() { Reset(); }
  void reserve(size_type n) { mut().reserve(n); }
  void resize(size_type n) { mut().resize(n); }

  friend bool operator==(const Shared& a, const Shared& b) {
    return a.block_ == b.block_ || a.get() == b.get();
  }
  friend bool operator==(const Shared& a, const C& b) { return a.get() == b; }

 private:
  template <class>
  friend class SharedTable;
  friend Base;

  // For SharedTable: a block's value, and the free of the block its table let go.
  static const C& ValueOf(const Block* b) { return b->value; }
  static void Free(Block* b) { delete b; }

  static const C& Empty() {
    static const C kEmpty;
    return kEmpty;
  }
  void Assign(C c) {
    if (c.empty()) {
      Reset();
    } else {
      Block* old = block_;
      block_ = new Block(std::move(c));
      Release(old);
    }
  }
};

}  // namespace volcache::k8s

// nlohmann::json reads and writes a Shared as the container it holds (without this it would
// see a range of pairs and write a map as an array).
NLOHMANN_JSON_NAMESPACE_BEGIN
template <class C>
struct adl_serializer<volcache::k8s::Shared<C>, void> {
  template <class Json>
  static void to_json(Json& j, const volcache::k8s::Shared<C>& s) {
    j = s.get();
  }
  template <class Json>
  static void from_json(const Json& j, volcache::k8s::Shared<C>& s) {
    s = j.template get<C>();
  }
};
NLOHMANN_JSON_NAMESPACE_END
