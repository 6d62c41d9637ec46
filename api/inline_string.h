#pragma once
// InlineChars<N>: a string that keeps up to N - 2 characters inside its N bytes, and longer
// ones in a heap block of their own, as a std::string does beyond 15.
//
// - TaskKeyString (28 bytes, 26 characters): for a field unique to each object whose values
//   are mostly 16–26 characters — a task's "namespace/name" key — that is one heap block
//   less per object (32 bytes for a key of 16–31 characters). 28 bytes, not a std::string's
//   32, so that a TaskMeta is 112 bytes (api/task_info.h).
// - ShortString (16 bytes, 14 characters): for an object's uid and resourceVersion, half a
//   std::string each. A resourceVersion (an etcd revision) is inline; a uid (36 characters)
//   takes the same heap block as a std::string's.
//
// Reads as a std::string_view (implicitly) and converts to a std::string; compares with any
// string; assigned from any string_view-like value. The characters are always followed by a
// '\0' (c_str()).
//
// Thread-safety: a value type.

#include <fmt/format.h>  // formatter<string_view>::format is defined here, not in core.h

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace volcache {

template <size_t N>
class InlineChars {
 public:
  static_assert(N >= 16 && N <= 256);
  static constexpr size_t kInlineCapacity = N - 2;

  InlineChars() { Clear(); }
  InlineChars(std::string_view s) { Set(s); }  // NOLINT(google-explicit-constructor): a field's value
  InlineChars(const std::string& s) : InlineChars(std::string_view(s)) {}  // NOLINT
  InlineChars(const char* s) : InlineChars(std::string_view(s)) {}         // NOLINT
  InlineChars(const InlineChars& o) { Set(o.view()); }
  InlineChars(InlineChars&& o) noexcept {
    std::memcpy(bytes_, o.bytes_, sizeof(bytes_));
    o.Clear();
  }
  InlineChars& operator=(const InlineChars& o) {
    if (this != &o) Assign(o.view());
    return *this;
  }
  InlineChars& operator=(InlineChars&& o) noexcept {
    if (this != &o) {
      Free();
      std::memcpy(bytes_, o.bytes_, sizeof(bytes_));
      o.Clear();
    }
    return *this;
  }
  InlineChars& operator=(std::string_view s) {
    Assign(s);
    return *this;
  }
  InlineChars& operator=(const std::string& s) { return *this = std::string_view(s); }
  InlineChars& operator=(const char* s) { return *this = std::string_view(s); }
  ~InlineChars() { Free(); }

  // a + sep + b, built in place (no intermediate std::string when it fits inline).
  static InlineChars Join(std::string_view a, char sep, std::string_view b) {
    InlineChars out;
    char* p = out.Room(a.size() + 1 + b.size());
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    p[a.size()] = sep;
    if (!b.empty()) std::memcpy(p + a.size() + 1, b.data(), b.size());
    p[a.size() + 1 + b.size()] = '\0';
    return out;
  }

  const char* data() const { return on_heap() ? HeapPtr() : bytes_; }
  size_t size() const { return on_heap() ? HeapSize() : static_cast<size_t>(tag()); }
  bool empty() const { return size() == 0; }
  std::string_view view() const { return std::string_view(data(), size()); }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  const char* c_str() const { return data(); }
  // As std::string's (a copy); view().substr for a view.
  std::string substr(size_t pos, size_t n = std::string::npos) const {
    return std::string(view().substr(pos, n));
  }
  // True when the characters are held in the object itself (no heap block).
  bool is_inline() const { return !on_heap(); }

  friend bool operator==(const InlineChars& a, const InlineChars& b) { return a.view() == b.view(); }
  friend bool operator==(const InlineChars& a, std::string_view b) { return a.view() == b; }
  friend auto operator<=>(const InlineChars& a, const InlineChars& b) { return a.view() <=> b.view(); }
  friend auto operator<=>(const InlineChars& a, std::string_view b) { return a.view() <=> b; }
  // Exact forms for the two other string types (each converts both to InlineChars and to
  // std::string_view, which would leave the two above ambiguous).
  friend bool operator==(const InlineChars& a, const std::string& b) {
    return a.view() == std::string_view(b);
  }
  friend bool operator==(const InlineChars& a, const char* b) { return a.view() == std::string_view(b); }
  friend auto operator<=>(const InlineChars& a, const std::string& b) {
    return a.view() <=> std::string_view(b);
  }
  friend auto operator<=>(const InlineChars& a, const char* b) { return a.view() <=> std::string_view(b); }

  friend std::string operator+(const InlineChars& a, std::string_view b) { return a.str().append(b); }
  friend std::string operator+(std::string_view a, const InlineChars& b) {
    return std::string(a).append(b.view());
  }
  friend std::string operator+(const InlineChars& a, const char* b) { return a.str().append(b); }
  friend std::string operator+(const char* a, const InlineChars& b) {
    return std::string(a).append(b.view());
  }
  friend std::string operator+(const InlineChars& a, const std::string& b) { return a.str().append(b); }
  friend std::string operator+(const std::string& a, const InlineChars& b) {
    return std::string(a).append(b.view());
  }
  friend std::string operator+(const InlineChars& a, char b) { return a.str() + b; }

 private:
  // bytes_[N - 1] is the tag: the inline length (0..N - 2), or kHeapTag when bytes_ hold a
  // heap pointer (bytes 0..7) and the length (bytes 8..11).
  static constexpr uint8_t kHeapTag = 0xff;

  uint8_t tag() const { return static_cast<uint8_t>(bytes_[sizeof(bytes_) - 1]); }
  bool on_heap() const { return tag() == kHeapTag; }
  const char* HeapPtr() const {
    const char* p;
    std::memcpy(&p, bytes_, sizeof(p));
    return p;
  }
  size_t HeapSize() const {
    uint32_t n;
    std::memcpy(&n, bytes_ + sizeof(char*), sizeof(n));
    return n;
  }
  // Makes this (holding nothing on the heap) n characters long, in itself or in a new heap
  // block, and returns where they go. The caller writes them and the '\0' after them (in
  // that order: the characters may come from this string's own).
  char* Room(size_t n) {
    char* p = bytes_;
    if (n <= kInlineCapacity) {
      bytes_[sizeof(bytes_) - 1] = static_cast<char>(n);
    } else {
      p = new char[n + 1];
      const auto n32 = static_cast<uint32_t>(n);  // no field is 4 GiB
      std::memcpy(bytes_, &p, sizeof(p));
      std::memcpy(bytes_ + sizeof(char*), &n32, sizeof(n32));
      bytes_[sizeof(bytes_) - 1] = static_cast<char>(kHeapTag);
    }
    return p;
  }
  // Precondition: nothing on the heap. memmove: `s` may view this string's own characters
  // (then it fits inline). An empty view's data() may be null, which memmove may not be
  // passed even for no bytes.
  void Set(std::string_view s) {
    const size_t n = s.size();
    char* p = Room(n);
    if (n != 0) std::memmove(p, s.data(), n);
    p[n] = '\0';
  }
  // Empty. Precondition: nothing on the heap (or its block handed to another string).
  void Clear() { Room(0)[0] = '\0'; }
  void Assign(std::string_view s) {
    if (on_heap()) {
      // `s` may view our own characters: copy before freeing.
      InlineChars copy(s);
      *this = std::move(copy);
      return;
    }
    Set(s);
  }
  void Free() {
    if (on_heap()) delete[] HeapPtr();
  }

  char bytes_[N];
};

using TaskKeyString = InlineChars<28>;
using ShortString = InlineChars<16>;
static_assert(sizeof(TaskKeyString) == 28);
static_assert(sizeof(ShortString) == 16);

template <size_t N>
std::ostream& operator<<(std::ostream& os, const InlineChars<N>& s) {
  return os << s.view();
}

}  // namespace volcache

template <size_t N>
struct std::hash<volcache::InlineChars<N>> {
  size_t operator()(const volcache::InlineChars<N>& s) const {
    return std::hash<std::string_view>{}(s.view());
  }
};

template <size_t N>
struct fmt::formatter<volcache::InlineChars<N>> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const volcache::InlineChars<N>& s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(s.view(), ctx);
  }
};

NLOHMANN_JSON_NAMESPACE_BEGIN
template <size_t N>
struct adl_serializer<volcache::InlineChars<N>, void> {
  template <class Json>
  static void to_json(Json& j, const volcache::InlineChars<N>& s) {
    j = s.str();
  }
  template <class Json>
  static void from_json(const Json& j, volcache::InlineChars<N>& s) {
    s = j.template get<std::string>();
  }
};
NLOHMANN_JSON_NAMESPACE_END
