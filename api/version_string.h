#pragma once
// VersionString: an object's resourceVersion in 8 bytes. An etcd revision, the decimal number
// every API server writes, is kept as that number (no heap block: a ShortString took 16 bytes);
// any other string (the API calls versions opaque, and a test may write anything) is kept in a
// heap block of its own, {uint32 size, characters, '\0'}, as a UidString's.
//
// Reads as a std::string (str(), or implicitly), not as a view: a number has no characters to
// view. Compares with any string as the version it was made from would ("012" is not 12).
// Assigned from any string.
//
// Thread-safety: a value type.

#include <fmt/format.h>

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace volcache {

class VersionString {
 public:
  VersionString() = default;
  VersionString(std::string_view s);                                           // NOLINT: a field's value
  VersionString(const std::string& s) : VersionString(std::string_view(s)) {}  // NOLINT
  VersionString(const char* s) : VersionString(std::string_view(s)) {}         // NOLINT
  VersionString(const VersionString& o);
  VersionString(VersionString&& o) noexcept : bits_(std::exchange(o.bits_, 0)) {}
  VersionString& operator=(const VersionString& o);
  VersionString& operator=(VersionString&& o) noexcept;
  ~VersionString() { Free(); }

  bool empty() const { return bits_ == 0; }
  std::string str() const;
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  // Whether the characters are in a heap block (not a number).
  bool on_heap() const { return bits_ != 0 && (bits_ & 1) == 0; }

  friend bool operator==(const VersionString& a, std::string_view b);
  friend bool operator==(const VersionString& a, const std::string& b) { return a == std::string_view(b); }
  friend bool operator==(const VersionString& a, const char* b) { return a == std::string_view(b); }
  friend bool operator==(const VersionString& a, const VersionString& b);
  friend std::string operator+(const VersionString& a, std::string_view b) { return a.str().append(b); }
  friend std::string operator+(std::string_view a, const VersionString& b) {
    return std::string(a) + b.str();
  }
  friend std::string operator+(const char* a, const VersionString& b) { return std::string(a) + b.str(); }
  friend std::string operator+(const std::string& a, const VersionString& b) { return a + b.str(); }
  friend std::ostream& operator<<(std::ostream& os, const VersionString& v);

 private:
  void Free();
  // 0: empty; (n << 1) | 1: the number n, whose decimal form (no leading zero) is the version;
  // else the address of a heap block (its low bit clear).
  uintptr_t bits_ = 0;
};
static_assert(sizeof(VersionString) == 8);

}  // namespace volcache

template <>
struct fmt::formatter<volcache::VersionString> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const volcache::VersionString& v, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(v.str(), ctx);
  }
};

NLOHMANN_JSON_NAMESPACE_BEGIN
template <>
struct adl_serializer<volcache::VersionString, void> {
  template <class Json>
  static void to_json(Json& j, const volcache::VersionString& v) {
    j = v.str();
  }
  template <class Json>
  static void from_json(const Json& j, volcache::VersionString& v) {
    v = j.template get<std::string>();
  }
};
NLOHMANN_JSON_NAMESPACE_END
