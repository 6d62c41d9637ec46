#include "api/version_string.h"

#include <cstring>
#include <optional>
#include <ostream>

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

constexpr size_t kHeader = sizeof(uint32_t);

std::string_view HeapChars(uintptr_t bits) {
  const char* p = reinterpret_cast<const char*>(bits);
  uint32_t n;
  std::memcpy(&n, p, sizeof(n));
  return std::string_view(p + kHeader, n);
}

uintptr_t Make(std::string_view s) {
  if (s.empty()) return 0;
  if (const auto n = CanonicalNumber(s)) return static_cast<uintptr_t>((*n << 1) | 1);
  const auto n = static_cast<uint32_t>(s.size());  // no version is 4 GiB
  char* p = new char[kHeader + n + 1];             // aligned: the low bit is clear
  std::memcpy(p, &n, sizeof(n));
  std::memcpy(p + kHeader, s.data(), n);
  p[kHeader + n] = '\0';
  return reinterpret_cast<uintptr_t>(p);
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
