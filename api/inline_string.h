#pragma once
// InlineString: a string that keeps up to 30 characters inside itself, where std::string
// keeps 15 (both are 32 bytes). For a field unique to each object whose values are mostly
// 16–30 characters — a task's "namespace/name" key — that is one heap block less per object
// (32 bytes for a key of 16–31 characters). Longer values go to the heap, as std::string's.
//
// Reads as a std::string_view (implicitly); assigned from any string_view-like value. The
// characters are always followed by a '\0'.
//
// Thread-safety: a value type.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace volcache {

class InlineString {
 public:
  static constexpr size_t kInlineCapacity = 30;

  InlineString() { Clear(); }
  InlineString(std::string_view s) { Set(s); }  // NOLINT(google-explicit-constructor): a field's value
  InlineString(const std::string& s) : InlineString(std::string_view(s)) {}  // NOLINT
  InlineString(const char* s) : InlineString(std::string_view(s)) {}         // NOLINT
  InlineString(const InlineString& o) { Set(o.view()); }
  InlineString(InlineString&& o) noexcept {
    std::memcpy(bytes_, o.bytes_, sizeof(bytes_));
    o.Clear();
  }
  InlineString& operator=(const InlineString& o) {
    if (this != &o) Assign(o.view());
    return *this;
  }
  InlineString& operator=(InlineString&& o) noexcept {
    if (this != &o) {
      Free();
      std::memcpy(bytes_, o.bytes_, sizeof(bytes_));
      o.Clear();
    }
    return *this;
  }
  InlineString& operator=(std::string_view s) {
    Assign(s);
    return *this;
  }
  InlineString& operator=(const std::string& s) { return *this = std::string_view(s); }
  InlineString& operator=(const char* s) { return *this = std::string_view(s); }
  ~InlineString() { Free(); }

  // a + sep + b, built in place (no intermediate std::string when it fits inline).
  static InlineString Join(std::string_view a, char sep, std::string_view b) {
    InlineString out;
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
  // True when the characters are held in the object itself (no heap block).
  bool is_inline() const { return !on_heap(); }

  friend bool operator==(const InlineString& a, const InlineString& b) { return a.view() == b.view(); }
  friend bool operator==(const InlineString& a, std::string_view b) { return a.view() == b; }
  friend auto operator<=>(const InlineString& a, const InlineString& b) { return a.view() <=> b.view(); }

 private:
  // bytes_[31] is the tag: the inline length (0..30), or kHeapTag when bytes_ hold a heap
  // pointer (bytes 0..7) and the length (bytes 8..15).
  static constexpr uint8_t kHeapTag = 0xff;

  uint8_t tag() const { return static_cast<uint8_t>(bytes_[sizeof(bytes_) - 1]); }
  bool on_heap() const { return tag() == kHeapTag; }
  const char* HeapPtr() const {
    const char* p;
    std::memcpy(&p, bytes_, sizeof(p));
    return p;
  }
  size_t HeapSize() const {
    size_t n;
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
      std::memcpy(bytes_, &p, sizeof(p));
      std::memcpy(bytes_ + sizeof(char*), &n, sizeof(n));
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
      InlineString copy(s);
      *this = std::move(copy);
      return;
    }
    Set(s);
  }
  void Free() {
    if (on_heap()) delete[] HeapPtr();
  }

  char bytes_[32];
};

static_assert(sizeof(InlineString) == 32);

}  // namespace volcache
