#pragma once
// Boxed<T>: an optional field that is absent from almost every object, held in a heap block
// of its own when present. It reads as a std::optional<T> (has_value, `if (box)`, `*box`,
// `box->`), but an absent one is one null pointer (8 bytes) where a std::optional holds room
// for the whole value: a PodGroup's networkTopology took 80 bytes of every PodGroup, set or
// not.
//
// Copies are deep (each object owns its block), so a Boxed is a value like the optional it
// replaces.
//
// Thread-safety: as the object that holds it.

#include <memory>
#include <optional>
#include <utility>

namespace volcache::k8s {

template <class T>
class Boxed {
 public:
  using value_type = T;

  Boxed() = default;
  Boxed(std::nullopt_t) {}                               // NOLINT(google-explicit-constructor)
  Boxed(T v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT(google-explicit-constructor)
  Boxed(std::optional<T> v) : p_(v ? std::make_unique<T>(std::move(*v)) : nullptr) {}  // NOLINT
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  ~Boxed() = default;

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  // Precondition, as std::optional's: has_value().
  const T& operator*() const { return *p_; }
  T& operator*() { return *p_; }
  const T* operator->() const { return p_.get(); }
  T* operator->() { return p_.get(); }
  // The value, or nullptr when absent.
  const T* get() const { return p_.get(); }

  void reset() { p_.reset(); }
  template <class... A>
  T& emplace(A&&... a) {
    p_ = std::make_unique<T>(std::forward<A>(a)...);
    return *p_;
  }

  friend bool operator==(const Boxed& a, const Boxed& b) {
    if (!a.p_ || !b.p_) return a.p_ == b.p_;
    return *a.p_ == *b.p_;
  }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace volcache::k8s
