#pragma once
// Interned: a string field whose values come from a small set that every object repeats — a
// pod's node name, scheduler name, priority class, phase, QoS class. It is one pointer to
// the one copy of its value in a process-wide table (8 bytes and no heap block, instead of
// a 32-byte std::string with, for the longer names, a heap block of its own).
//
// Reads as a `const std::string&` (implicitly), compares with strings, and is assigned from
// them. Two Interned compare by pointer. The table keeps every value it was ever given, so
// it is only for fields whose values are bounded by the cluster (nodes, classes, phases),
// never for names or uids.
//
// Thread-safety: thread-safe (the table has a mutex; an Interned is a value type).

#include <fmt/core.h>

#include <compare>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace volcache::k8s {

class Interned {
 public:
  Interned() = default;
  Interned(std::string_view s) : s_(s.empty() ? &Empty() : &Intern(s)) {}  // NOLINT: a field's value
  Interned(const std::string& s) : Interned(std::string_view(s)) {}        // NOLINT
  Interned(const char* s) : Interned(std::string_view(s)) {}               // NOLINT

  const std::string& str() const { return *s_; }
  operator const std::string&() const { return *s_; }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return *s_; }    // NOLINT(google-explicit-constructor)

  bool empty() const { return s_->empty(); }
  size_t size() const { return s_->size(); }
  const char* data() const { return s_->data(); }
  const char* c_str() const { return s_->c_str(); }
  void clear() { s_ = &Empty(); }

  friend bool operator==(const Interned& a, const Interned& b) { return a.s_ == b.s_; }
  friend bool operator==(const Interned& a, std::string_view b) { return *a.s_ == b; }
  friend bool operator==(const Interned& a, const std::string& b) { return *a.s_ == b; }
  friend bool operator==(const Interned& a, const char* b) { return *a.s_ == b; }
  friend std::strong_ordering operator<=>(const Interned& a, const Interned& b) { return *a.s_ <=> *b.s_; }
  friend std::strong_ordering operator<=>(const Interned& a, std::string_view b) {
    return std::string_view(*a.s_) <=> b;
  }
  friend std::strong_ordering operator<=>(const Interned& a, const std::string& b) {
    return std::string_view(*a.s_) <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const Interned& a, const char* b) {
    return std::string_view(*a.s_) <=> std::string_view(b);
  }

  friend std::string operator+(const Interned& a, std::string_view b) { return std::string(*a.s_).append(b); }
  friend std::string operator+(std::string_view a, const Interned& b) { return std::string(a).append(*b.s_); }
  friend std::string operator+(const Interned& a, const char* b) { return std::string(*a.s_).append(b); }
  friend std::string operator+(const char* a, const Interned& b) { return std::string(a).append(*b.s_); }
  friend std::string operator+(const Interned& a, const std::string& b) { return *a.s_ + b; }
  friend std::string operator+(const std::string& a, const Interned& b) { return a + *b.s_; }
  friend std::string operator+(const Interned& a, char b) { return *a.s_ + b; }

  friend std::ostream& operator<<(std::ostream& os, const Interned& s);

  // Values held by the table (for tests and /debug).
  static size_t TableSize();

 private:
  static const std::string& Empty();
  static const std::string& Intern(std::string_view s);

  const std::string* s_ = &Empty();
};

}  // namespace volcache::k8s

template <>
struct std::hash<volcache::k8s::Interned> {
  size_t operator()(const volcache::k8s::Interned& s) const { return std::hash<std::string_view>{}(s); }
};

template <>
struct fmt::formatter<volcache::k8s::Interned> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const volcache::k8s::Interned& s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(s), ctx);
  }
};

NLOHMANN_JSON_NAMESPACE_BEGIN
template <>
struct adl_serializer<volcache::k8s::Interned, void> {
  template <class Json>
  static void to_json(Json& j, const volcache::k8s::Interned& s) {
    j = s.str();
  }
  template <class Json>
  static void from_json(const Json& j, volcache::k8s::Interned& s) {
    s = j.template get<std::string>();
  }
};
NLOHMANN_JSON_NAMESPACE_END
