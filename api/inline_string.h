#pragma once
// Strings held in a fixed size smaller than a std::string's 32 bytes, for fields of objects
// the cache holds by the million.
//
// InlineChars<N>: a string that keeps up to N - 2 characters inside its N bytes, and longer
// ones in a heap block of their own, as a std::string does beyond 15.
//
// - ShortString (16 bytes, 14 characters): for an object's name and a label's or an
//   annotation's value, half a std::string each.
//
// UidString (8 bytes): a string in one heap block ({uint32 size, characters, '\0'}) behind a
// pointer, none when empty, for a field whose values are all longer than 14 characters: an
// object's uid (36 characters), which took the same heap block behind a 16-byte ShortString.
//
// Each reads as a std::string_view (implicitly) and converts to a std::string; compares with any
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
#include <type_traits>

namespace volcache {

// The read interface of the strings here, from S's data() and size(): views, copies,
// comparisons with any string, concatenation into a std::string.
template <class S>
class StringOps {
 public:
  bool empty() const { return Self().size() == 0; }
  std::string_view view() const { return std::string_view(Self().data(), Self().size()); }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  const char* c_str() const { return Self().data(); }
  // As std::string's (a copy); view().substr for a view.
  std::string substr(size_t pos, size_t n = std::string::npos) const {
    return std::string(view().substr(pos, n));
  }

  friend bool operator==(const S& a, const S& b) { return a.view() == b.view(); }
  friend bool operator==(const S& a, std::string_view b) { return a.view() == b; }
  friend auto operator<=>(const S& a, const S& b) { return a.view() <=> b.view(); }
  friend auto operator<=>(const S& a, std::string_view b) { return a.view() <=> b; }
  // Exact forms for the two other string types (each converts both to S and to
  // std::string_view, which would leave the two above ambiguous).
  friend bool operator==(const S& a, const std::string& b) { return a.view() == std::string_view(b); }
  friend bool operator==(const S& a, const char* b) { return a.view() == std::string_view(b); }
  friend auto operator<=>(const S& a, const std::string& b) { return a.view() <=> std::string_view(b); }
  friend auto operator<=>(const S& a, const char* b) { return a.view() <=> std::string_view(b); }

  friend std::string operator+(const S& a, std::string_view b) { return a.str().append(b); }
  friend std::string operator+(std::string_view a, const S& b) { return std::string(a).append(b.view()); }
  friend std::string operator+(const S& a, const char* b) { return a.str().append(b); }
  friend std::string operator+(const char* a, const S& b) { return std::string(a).append(b.view()); }
  friend std::string operator+(const S& a, const std::string& b) { return a.str().append(b); }
  friend std::string operator+(const std::string& a, const S& b) { return std::string(a).append(b.view()); }
  friend std::string operator+(const S& a, char b) { return a.str() + b; }

  friend std::ostream& operator<<(std::ostream& os, const S& s) { return os << s.view(); }

 private:
  const S& Self() const { return static_cast<const S&>(*this); }
};

template <size_t N>
class InlineChars : public StringOps<InlineChars<N>> {
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

  const char* data() const { return on_heap() ? HeapPtr() : bytes_; }
  size_t size() const { return on_heap() ? HeapSize() : static_cast<size_t>(tag()); }
  // True when the characters are held in the object itself (no heap block).
  bool is_inline() const { return !on_heap(); }

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

using ShortString = InlineChars<16>;
static_assert(sizeof(ShortString) == 16);

class UidString : public StringOps<UidString> {
 public:
  UidString() = default;
  UidString(std::string_view s) { Set(s); }  // NOLINT(google-explicit-constructor): a field's value
  UidString(const std::string& s) : UidString(std::string_view(s)) {}  // NOLINT
  UidString(const char* s) : UidString(std::string_view(s)) {}         // NOLINT
  UidString(const UidString& o) { Set(o.view()); }
  UidString(UidString&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  UidString& operator=(const UidString& o) {
    if (this != &o) Assign(o.view());
    return *this;
  }
  UidString& operator=(UidString&& o) noexcept {
    if (this != &o) {
      delete[] p_;
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  UidString& operator=(std::string_view s) {
    Assign(s);
    return *this;
  }
  UidString& operator=(const std::string& s) { return *this = std::string_view(s); }
  UidString& operator=(const char* s) { return *this = std::string_view(s); }
  ~UidString() { delete[] p_; }

  // None in the object itself: every character is in the heap block (as the tests of
  // InlineChars read it).
  static constexpr size_t kInlineCapacity = 0;
  bool is_inline() const { return p_ == nullptr; }

  const char* data() const { return p_ != nullptr ? p_ + kHeader : ""; }
  size_t size() const { return p_ != nullptr ? BlockView(p_).size() : 0; }

  // The heap block the characters live in, {uint32 size, characters, '\0'} (from new[]: its
  // address's low bit is clear), made for non-empty `s`, and read back. VersionString keeps its
  // non-numeric versions in one too.
  static char* MakeBlock(std::string_view s) {
    const auto n = static_cast<uint32_t>(s.size());  // no field is 4 GiB
    char* p = new char[kHeader + n + 1];
    std::memcpy(p, &n, sizeof(n));
    std::memcpy(p + kHeader, s.data(), n);
    p[kHeader + n] = '\0';
    return p;
  }
  static std::string_view BlockView(const char* p) {
    uint32_t n;
    std::memcpy(&n, p, sizeof(n));
    return std::string_view(p + kHeader, n);
  }

 private:
  static constexpr size_t kHeader = sizeof(uint32_t);
  // Precondition: p_ owns nothing (or its block is freed by the caller afterwards).
  void Set(std::string_view s) { p_ = s.empty() ? nullptr : MakeBlock(s); }

  // `s` may view this string's own characters: copied before the old block is freed.
  void Assign(std::string_view s) {
    char* old = p_;
    Set(s);
    delete[] old;
  }

  char* p_ = nullptr;
};
static_assert(sizeof(UidString) == 8);

// The strings of this header (for the hash, fmt and JSON support below).
template <class S>
concept OwnedString = std::is_base_of_v<StringOps<S>, S>;

}  // namespace volcache

template <volcache::OwnedString S>
struct std::hash<S> {
  size_t operator()(const S& s) const { return std::hash<std::string_view>{}(s.view()); }
};

template <volcache::OwnedString S>
struct fmt::formatter<S> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const S& s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(s.view(), ctx);
  }
};

NLOHMANN_JSON_NAMESPACE_BEGIN
template <volcache::OwnedString S>
struct adl_serializer<S, void> {
  template <class Json>
  static void to_json(Json& j, const S& s) {
    j = s.str();
  }
  template <class Json>
  static void from_json(const Json& j, S& s) {
    s = j.template get<std::string>();
  }
};
NLOHMANN_JSON_NAMESPACE_END
