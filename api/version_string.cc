#include "api/version_string.h"

#include <optional>
#include <ostream>

#include "api/inline_string.h"

namespace volcache {

namespace {

// The number whose decimal form `s` is (digits, no leading zero, below 10^18), or nullopt.
std::optional<uint64_t> CanonicalNumber(std::string_view s) {
  if (s.empty() || s.size() > 18 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t n = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

// A version's characters live in a UidString's heap block (UidString::MakeBlock).
std::string_view HeapChars(uintptr_t bits) {
  return UidString::BlockView(reinterpret_cast<const char*>(bits));
}

uintptr_t Make(std::string_view s) {
  if (s.empty()) return 0;
  if (const auto n = CanonicalNumber(s)) return static_cast<uintptr_t>((*n << 1) | 1);
  return reinterpret_cast<uintptr_t>(UidString::MakeBlock(s));
}

}  // namespace

VersionString::VersionString(std::string_view s) : bits_(Make(s)) {}

VersionString::VersionString(const VersionString& o)
    : bits_(o.on_heap() ? Make(HeapChars(o.bits_)) : o.bits_) {}

VersionString& VersionString::operator=(const VersionString& o) {
  if (this != &o) {
    const uintptr_t copy = o.on_heap() ? Make(HeapChars(o.bits_)) : o.bits_;
    Free();
    bits_ = copy;
  }
  return *this;
}

VersionString& VersionString::operator=(VersionString&& o) noexcept {
  if (this != &o) {
    Free();
    bits_ = std::exchange(o.bits_, 0);
  }
  return *this;
}

void VersionString::Free() {
  if (on_heap()) delete[] reinterpret_cast<char*>(bits_);
  bits_ = 0;
}

std::string VersionString::str() const {
  if (bits_ == 0) return std::string();
  if (on_heap()) return std::string(HeapChars(bits_));
  return std::to_string(static_cast<uint64_t>(bits_) >> 1);
}

bool operator==(const VersionString& a, std::string_view b) {
  if (a.bits_ == 0) return b.empty();
  if (a.on_heap()) return HeapChars(a.bits_) == b;
  const auto n = CanonicalNumber(b);
  return n && static_cast<uintptr_t>((*n << 1) | 1) == a.bits_;
}

bool operator==(const VersionString& a, const VersionString& b) {
  if (!a.on_heap() || !b.on_heap()) return a.bits_ == b.bits_;
  return HeapChars(a.bits_) == HeapChars(b.bits_);
}

std::ostream& operator<<(std::ostream& os, const VersionString& v) { return os << v.str(); }

}  // namespace volcache
