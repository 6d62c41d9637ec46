#pragma once
// Interned: a string field whose values come from a small set that every object repeats — a
// pod's node name, scheduler name, priority class, phase, QoS class. It is the 32-bit number
// of the one copy of its value in a process-wide table (4 bytes and no heap block, instead of
// a 32-byte std::string with, for the longer names, a heap block of its own; 8 bytes as a
// pointer: a pod and a PodGroup are each 16 bytes and a tcmalloc class smaller with 4).
//
// Reads as a `const std::string&` (implicitly), compares with strings, and is assigned from
// them. Two Interned compare by number. The table keeps every value it was ever given, so
// it is only for fields whose values are bounded by the cluster (nodes, classes, phases),
// never for names or uids.
//
// The table: value n lives in chunk k = bit_width(n + 64) - 7 (chunk k holds 64 << k values),
// chunks are never freed or moved, so a read is two loads (the chunk's address, then the
// string) and needs no lock. Value 0 is "".
//
// Thread-safety: thread-safe (the table has a mutex for additions; reads take none: an
// Interned's value was written before the Interned was made, and whatever hands the Interned
// to another thread orders the two).

#include <fmt/core.h>

#include <atomic>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace volcache::k8s {

class Interned {
 public:
  Interned() = default;
  Interned(std::string_view s) : id_(s.empty() ? 0 : Intern(s)) {}   // NOLINT: a field's value
  Interned(const std::string& s) : Interned(std::string_view(s)) {}  // NOLINT
  Interned(const char* s) : Interned(std::string_view(s)) {}         // NOLINT

  const std::string& str() const { return id_ == 0 ? Empty() : Value(id_); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return str(); }    // NOLINT(google-explicit-constructor)

  bool empty() const { return id_ == 0; }
  size_t size() const { return str().size(); }
  const char* data() const { return str().data(); }
  const char* c_str() const { return str().c_str(); }
  void clear() { id_ = 0; }

  friend bool operator==(const Interned& a, const Interned& b) { return a.id_ == b.id_; }
  friend bool operator==(const Interned& a, std::string_view b) { return std::string_view(a.str()) == b; }
  friend bool operator==(const Interned& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const Interned& a, const char* b) { return a.str() == b; }
  friend std::strong_ordering operator<=>(const Interned& a, const Interned& b) {
    return a.str() <=> b.str();
  }
  friend std::strong_ordering operator<=>(const Interned& a, std::string_view b) {
    return std::string_view(a.str()) <=> b;
  }
  friend std::strong_ordering operator<=>(const Interned& a, const std::string& b) {
    return std::string_view(a.str()) <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const Interned& a, const char* b) {
    return std::string_view(a.str()) <=> std::string_view(b);
  }

  friend std::string operator+(const Interned& a, std::string_view b) {
    return std::string(a.str()).append(b);
  }
  friend std::string operator+(std::string_view a, const Interned& b) {
    return std::string(a).append(b.str());
  }
  friend std::string operator+(const Interned& a, const char* b) { return std::string(a.str()).append(b); }
  friend std::string operator+(const char* a, const Interned& b) { return std::string(a).append(b.str()); }
  friend std::string operator+(const Interned& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const Interned& b) { return a + b.str(); }
  friend std::string operator+(const Interned& a, char b) { return a.str() + b; }

  friend std::ostream& operator<<(std::ostream& os, const Interned& s);

  // Values held by the table (for tests and /debug).
  static size_t TableSize();

 private:
  static constexpr int kFirstChunkBits = 6;  // chunk 0 holds 64 values, chunk k 64 << k
  static constexpr int kChunks = 32 - kFirstChunkBits + 1;
  struct Table;
  static Table& TheTable();
  static const std::string& Empty();
  static uint32_t Intern(std::string_view s);
  // Where value `id` lives: its chunk and its index there.
  struct Place {
    int chunk;
    size_t index;
  };
  static Place PlaceOf(uint32_t id) {
    const uint64_t n = uint64_t{id} + (uint64_t{1} << kFirstChunkBits);
    const int k = std::bit_width(n) - 1 - kFirstChunkBits;
    return {k, static_cast<size_t>(n - (uint64_t{1} << (k + kFirstChunkBits)))};
  }
  static const std::string& Value(uint32_t id) {
    const Place p = PlaceOf(id);
    return chunks_[p.chunk].load(std::memory_order_relaxed)[p.index];
  }
  // Written once each, under the table's mutex, before any value of the chunk is handed out.
  static inline std::atomic<std::string*> chunks_[kChunks] = {};

  uint32_t id_ = 0;
};

}  // namespace volcache::k8s

// noexcept, so that a std::unordered_map keyed by Interned keeps no hash in its nodes (it does
// for a hash that may throw).
template <>
struct std::hash<volcache::k8s::Interned> {
  size_t operator()(const volcache::k8s::Interned& s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
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
