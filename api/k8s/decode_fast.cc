// The streaming fast path of the JSON decoder (see decode_fast.h for the contract).
//
// A pull parser over the input text: each decode function below asks the Reader for the
// next value of the type it expects and writes straight into the struct, so no DOM is built
// and members we never read (managedFields, containerStatuses, volume sources, ...) are only
// scanned. Every function returns false for anything it does not decode exactly as the
// reference decoder (decode_json.cc) would; the caller then runs the reference decoder, which
// gives the result or the exact error. The rules that keep the two identical:
//  - JSON is checked as strictly as nlohmann::json checks it (grammar, UTF-8, escapes,
//    surrogate pairs, control characters), including in skipped members. What is harder to
//    match exactly (floats, exponents, a BOM, nesting deeper than kMaxDepth) is not handled.
//  - The reference reads a member through a sorted map where the last duplicate wins. A
//    member we read twice in one object is not handled; duplicate keys inside label,
//    annotation and resource maps are resolved the same way (last wins, sorted by key).
//  - null is "absent", as the reference's Find() treats it.
//  - The kind must be known before spec/status (and a List's kind before its items): an
//    object whose kind/apiVersion follows them is not handled. When it is known before
//    metadata (as API servers write it), the object is built in place from there on, and a
//    later apiVersion that changes the kind is not handled either.

#include "api/k8s/decode_fast.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "api/k8s/compact.h"
#include "api/k8s/decode.h"

namespace volcache::k8s {

namespace {

// Nesting handled by the fast path; real objects stay far below it.
constexpr int kMaxDepth = 128;
// Longest number token skipped: any shorter fraction without exponent is a finite double.
constexpr size_t kMaxNumberChars = 300;

// Bytes that may appear in a JSON string as themselves without further checks.
constexpr std::array<bool, 256> kPlainTable = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

// Members already read in one object, by the decoder's own index.
class Seen {
 public:
  bool Add(int i) {
    const uint32_t bit = uint32_t{1} << i;
    if ((bits_ & bit) != 0) return false;
    bits_ |= bit;
    return true;
  }
  bool Has(int i) const { return (bits_ & (uint32_t{1} << i)) != 0; }

 private:
  uint32_t bits_ = 0;
};

class Reader {
 public:
  explicit Reader(std::string_view text)
      : p_(text.data()),
        end_(text.data() + text.size()),
        key_buf_(Scratch().key),
        value_buf_(Scratch().value) {}

  // Only whitespace left.
  bool AtEnd() {
    SkipWs();
    return p_ == end_;
  }

  // The first byte of the next value ('\0' at the end of input).
  [[gnu::always_inline]] char Peek() {
    SkipWs();
    return p_ < end_ ? *p_ : '\0';
  }

  // Consumes a `null`; false (consuming nothing) when the next value is something else.
  bool Null() {
    if (Peek() != 'n' || end_ - p_ < 4 || std::string_view(p_, 4) != "null") return false;
    p_ += 4;
    return true;
  }

  bool Bool(bool* out) {
    const char c = Peek();
    if (c == 't' && end_ - p_ >= 4 && std::string_view(p_, 4) == "true") {
      p_ += 4;
      *out = true;
      return true;
    }
    if (c == 'f' && end_ - p_ >= 5 && std::string_view(p_, 5) == "false") {
      p_ += 5;
      *out = false;
      return true;
    }
    return false;
  }

  // An integer token (no fraction or exponent) as sign and magnitude, when nlohmann reads it
  // as an integer: up to 2^64-1, or down to -2^63.
  bool Integer(bool* negative, uint64_t* magnitude) {
    SkipWs();
    *negative = p_ < end_ && *p_ == '-';
    if (*negative) ++p_;
    if (p_ == end_) return false;
    uint64_t v = 0;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        if (__builtin_mul_overflow(v, 10u, &v) ||
            __builtin_add_overflow(v, static_cast<uint64_t>(*p_ - '0'), &v)) {
          return false;
        }
        ++p_;
      }
    } else {
      return false;
    }
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    if (*negative && v > (uint64_t{1} << 63)) return false;
    *magnitude = v;
    return true;
  }

  // A string value. *out views the input, or `buf` when the string has escapes; it stays
  // valid until `buf` is next written.
  bool Str(std::string_view* out, std::string* buf) {
    SkipWs();
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
    if (!ScanPlain()) return false;
    if (*p_ == '"') {
      *out = std::string_view(start, static_cast<size_t>(p_ - start));
      ++p_;
      return true;
    }
    buf->assign(start, p_);
    while (true) {
      if (!Escape(buf)) return false;
      const char* run = p_;
      if (!ScanPlain()) return false;
      buf->append(run, p_);
      if (*p_ == '"') {
        ++p_;
        *out = *buf;
        return true;
      }
    }
  }

  // A key of the current object: the views stay valid until the next key is read.
  bool Key(std::string_view* out) { return Str(out, &key_buf_) && Expect(':'); }
  // A string value, valid until the next value string is read.
  bool Value(std::string_view* out) { return Str(out, &value_buf_); }

  // Any value, checked and discarded.
  bool Skip() { return SkipValue(depth_); }

  // An object: fn(key) is called for every member and must consume its value.
  template <typename Fn>
  bool Obj(Fn&& fn) {
    if (Peek() != '{' || depth_ >= kMaxDepth) return false;
    ++p_;
    ++depth_;
    if (Peek() == '}') {
      ++p_;
      --depth_;
      return true;
    }
    while (true) {
      std::string_view key;
      if (!Key(&key) || !fn(key)) return false;
      const char c = Peek();
      if (p_ == end_) return false;
      ++p_;
      if (c == ',') continue;
      if (c != '}') return false;
      --depth_;
      return true;
    }
  }

  // An array: fn() is called for every element and must consume it.
  template <typename Fn>
  bool Arr(Fn&& fn) {
    if (Peek() != '[' || depth_ >= kMaxDepth) return false;
    ++p_;
    ++depth_;
    if (Peek() == ']') {
      ++p_;
      --depth_;
      return true;
    }
    while (true) {
      if (!fn()) return false;
      const char c = Peek();
      if (p_ == end_) return false;
      ++p_;
      if (c == ',') continue;
      if (c != ']') return false;
      --depth_;
      return true;
    }
  }

 private:
  // Called before every token: API servers write no whitespace between tokens, so the test
  // for that is inlined and the loop is not.
  [[gnu::always_inline]] void SkipWs() {
    if (p_<end_&& static_cast<uint8_t>(*p_)> ' ') return;
    SkipWsLoop();
  }
  [[gnu::noinline]] void SkipWsLoop() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool Expect(char c) {
    SkipWs();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  // Advances over string content that needs no unescaping; stops at '"' or '\\' (true) or
  // fails on the end of input, a control character or ill-formed UTF-8 (as nlohmann does:
  // the well-formed sequences of Unicode table 3-7).
  bool ScanPlain() {
    // On a local pointer: p_ is a member the compiler must otherwise store on every step.
    const char* p = p_;
    const char* const end = end_;
    const bool ok = ScanPlainFrom(p, end);
    p_ = p;
    return ok;
  }

  static bool ScanPlainFrom(const char*& p, const char* const end) {
    while (true) {
      bool special = false;
#if defined(__SSE2__)
      // 16 bytes at a time up to the first '"', '\\', control or non-ASCII byte (the signed
      // compare catches both: bytes >= 0x80 are negative).
      const __m128i quote = _mm_set1_epi8('"');
      const __m128i backslash = _mm_set1_epi8('\\');
      const __m128i space = _mm_set1_epi8(' ');
      while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i hits = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), _mm_cmplt_epi8(v, space));
        const int mask = _mm_movemask_epi8(hits);
        if (mask != 0) {
          p += __builtin_ctz(static_cast<unsigned>(mask));
          special = true;
          break;
        }
        p += 16;
      }
#endif
      if (!special) {
        while (p < end && kPlainTable[static_cast<uint8_t>(*p)]) ++p;
        if (p == end) return false;
      }
      const auto c = static_cast<uint8_t>(*p);
      if (c == '"' || c == '\\') return true;
      if (c < 0x80) return false;  // control character
      uint8_t lo = 0x80, hi = 0xBF;
      int tail = 0;
      if (c >= 0xC2 && c <= 0xDF) {
        tail = 1;
      } else if (c == 0xE0) {
        tail = 2;
        lo = 0xA0;
      } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
        tail = 2;
      } else if (c == 0xED) {
        tail = 2;
        hi = 0x9F;
      } else if (c == 0xF0) {
        tail = 3;
        lo = 0x90;
      } else if (c >= 0xF1 && c <= 0xF3) {
        tail = 3;
      } else if (c == 0xF4) {
        tail = 3;
        hi = 0x8F;
      } else {
        return false;
      }
      if (end - p <= tail) return false;
      ++p;
      for (int i = 0; i < tail; ++i, ++p) {
        const auto b = static_cast<uint8_t>(*p);
        if (b < lo || b > hi) return false;
        lo = 0x80;  // only the first continuation byte has a narrower range
        hi = 0xBF;
      }
    }
  }

  bool Hex4(uint32_t* out) {
    if (end_ - p_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const char c = *p_;
      uint32_t d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
      v = v * 16 + d;
    }
    *out = v;
    return true;
  }

  // One escape sequence at p_ (a backslash), checked as nlohmann checks it (a \u high
  // surrogate must be followed by a \u low one; a lone low surrogate is an error): *cp is
  // the code point it stands for.
  bool EscapeCodePoint(uint32_t* cp) {
    ++p_;
    if (p_ == end_) return false;
    const char c = *p_++;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        *cp = static_cast<uint8_t>(c);
        return true;
      case 'b':
        *cp = '\b';
        return true;
      case 'f':
        *cp = '\f';
        return true;
      case 'n':
        *cp = '\n';
        return true;
      case 'r':
        *cp = '\r';
        return true;
      case 't':
        *cp = '\t';
        return true;
      case 'u':
        break;
      default:
        return false;
    }
    if (!Hex4(cp)) return false;
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
      uint32_t low = 0;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      if (!Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
      *cp = ((*cp - 0xD800) << 10) + (low - 0xDC00) + 0x10000;
    } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
      return false;
    }
    return true;
  }

  // One escape sequence at p_ (a backslash), appended to buf unescaped (UTF-8).
  bool Escape(std::string* buf) {
    uint32_t cp = 0;
    if (!EscapeCodePoint(&cp)) return false;
    if (cp < 0x80) {
      buf->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      buf->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      buf->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      buf->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      buf->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      buf->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      buf->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      buf->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      buf->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      buf->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return true;
  }

  bool Digits() {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != start;
  }

  // A number token that nlohmann reads as a finite value: no exponent, bounded length.
  bool SkipNumber() {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!Digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) return false;
    return static_cast<size_t>(p_ - start) <= kMaxNumberChars;
  }

  bool Literal(std::string_view lit) {
    if (static_cast<size_t>(end_ - p_) < lit.size() || std::string_view(p_, lit.size()) != lit) return false;
    p_ += lit.size();
    return true;
  }

  // A string, checked as Str checks it but not unescaped (nothing is kept).
  bool SkipString() {
    SkipWs();
    if (p_ == end_ || *p_ != '"') return false;
    ++p_;
    while (true) {
      if (!ScanPlain()) return false;
      if (*p_ == '"') {
        ++p_;
        return true;
      }
      uint32_t cp = 0;
      if (!EscapeCodePoint(&cp)) return false;
    }
  }

  // One scalar value (string, literal, number), checked and discarded; false at a container.
  bool SkipScalar() {
    switch (Peek()) {
      case '"':
        return SkipString();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      case '{':
      case '[':
        return false;
      default:
        if (p_ == end_) return false;
        return SkipNumber();
    }
  }

  // Any value, checked and discarded: the same grammar as the recursive readers accept
  // (containers deeper than kMaxDepth, counting from `depth`, are not handled), walked in
  // one loop with the open containers on a stack of bits instead of one call per value.
  bool SkipValue(int depth) {
    std::array<uint64_t, (kMaxDepth + 63) / 64> in_object{};  // bit i: container i is an object
    int open = 0;
    while (true) {
      // A value is expected at p_.
      const char c = Peek();
      if (c == '{' || c == '[') {
        if (depth + open >= kMaxDepth) return false;
        const bool object = c == '{';
        ++p_;
        if (Peek() == (object ? '}' : ']')) {
          ++p_;
        } else {
          const uint64_t bit = uint64_t{1} << (open % 64);
          if (object) {
            in_object[static_cast<size_t>(open / 64)] |= bit;
          } else {
            in_object[static_cast<size_t>(open / 64)] &= ~bit;
          }
          ++open;
          if (object && (!SkipString() || !Expect(':'))) return false;
          continue;
        }
      } else if (!SkipScalar()) {
        return false;
      }
      // A value ended: close containers until one has a next element.
      while (true) {
        if (open == 0) return true;
        const bool object = (in_object[static_cast<size_t>((open - 1) / 64)] >> ((open - 1) % 64) & 1) != 0;
        const char d = Peek();
        if (p_ == end_) return false;
        ++p_;
        if (d == ',') {
          if (object && (!SkipString() || !Expect(':'))) return false;
          break;
        }
        if (d != (object ? '}' : ']')) return false;
        --open;
      }
    }
  }

  const char* p_;
  const char* const end_;
  int depth_ = 0;
  // Where escaped strings are unescaped: kept per thread, so that a long escaped annotation
  // (kubectl's last-applied configuration) does not grow a new buffer for every document.
  // One Reader per thread at a time (the decode functions do not nest).
  struct ScratchBuffers {
    std::string key;
    std::string value;
  };
  static ScratchBuffers& Scratch() {
    thread_local ScratchBuffers buffers;
    return buffers;
  }
  std::string& key_buf_;
  std::string& value_buf_;
};

// ------------------------------------------------------------------------ member readers
//
// Each reads the value of a member the reference reads with Get(): null leaves *out alone.

// A string field, whatever its type (std::string, ShortString, UidString, Interned, VersionString).
template <class S>
requires(std::is_same_v<S, std::string> || std::is_same_v<S, ShortString> || std::is_same_v<S, UidString> ||
         std::is_same_v<S, Interned> || std::is_same_v<S, VersionString>) bool ReadStr(Reader& r, S* out) {
  if (r.Null()) return true;
  std::string_view v;
  if (!r.Value(&v)) return false;
  *out = v;
  return true;
}

bool ReadBool(Reader& r, bool* out) { return r.Null() || r.Bool(out); }

bool ReadInt(Reader& r, int64_t lo, int64_t hi, int64_t* out) {
  bool negative = false;
  uint64_t magnitude = 0;
  if (!r.Integer(&negative, &magnitude)) return false;
  int64_t v = 0;
  if (negative) {
    v = magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude);
  } else {
    if (magnitude > static_cast<uint64_t>(INT64_MAX)) return false;
    v = static_cast<int64_t>(magnitude);
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ReadInt64(Reader& r, int64_t* out) { return r.Null() || ReadInt(r, INT64_MIN, INT64_MAX, out); }

bool ReadInt32(Reader& r, int32_t* out) {
  if (r.Null()) return true;
  int64_t v = 0;
  if (!ReadInt(r, INT32_MIN, INT32_MAX, &v)) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

// INT64_MIN is OptionalInt64's "absent": refused as a value, like any out-of-range integer.
bool ReadOptInt64(Reader& r, OptionalInt64* out) {
  if (r.Null()) return true;
  int64_t v = 0;
  if (!ReadInt(r, INT64_MIN + 1, INT64_MAX, &v)) return false;
  *out = v;
  return true;
}

// Opt: a std::optional<T>, or OptionalInt64 for a timestamp.
template <typename T, typename Opt>
bool ReadOpt(Reader& r, Opt* out, bool (*read)(Reader&, T*)) {
  if (r.Null()) return true;
  T v{};
  if (!read(r, &v)) return false;
  *out = v;
  return true;
}

bool ReadTime(Reader& r, TimeMs* out) {
  if (r.Null()) return true;
  std::string_view v;
  if (!r.Value(&v)) return false;
  auto t = ParseTimestamp(v);
  if (!t.ok()) return false;
  *out = *t;
  return true;
}

// A quantity: a string, or an integer written as the reference writes it before parsing.
bool ReadQuantity(Reader& r, Quantity* out) {
  std::string text;
  std::string_view view;
  if (r.Peek() == '"') {
    if (!r.Value(&view)) return false;
  } else {
    bool negative = false;
    uint64_t magnitude = 0;
    if (!r.Integer(&negative, &magnitude)) return false;
    if (negative) {
      text = std::to_string(magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude));
    } else {
      text = std::to_string(magnitude);
    }
    view = text;
  }
  auto q = Quantity::Parse(view);
  if (!q.ok()) return false;
  *out = std::move(q).value();
  return true;
}

bool ReadStringMap(Reader& r, StringMap* out) {
  if (r.Null()) return true;
  PlainStringMap m;
  const bool ok = r.Obj([&](std::string_view k) {
    const Interned key(k);  // before the value is read: `k` may view scratch space it reuses
    std::string value;
    if (!ReadStr(r, &value)) return false;  // null is an empty value, as in the reference
    m.insert_or_assign(m.end(), key, std::move(value));
    return true;
  });
  // Beyond StringMap::kMaxSize entries: the reference decoder's error.
  if (!ok || m.size() > StringMap::kMaxSize) return false;
  *out = std::move(m);
  return true;
}

bool ReadResourceList(Reader& r, ResourceList* out) {
  if (r.Null()) return true;
  ResourceList list;
  const bool ok = r.Obj([&](std::string_view k) {
    std::string key(k);
    Quantity q;  // null is zero
    if (!r.Null() && !ReadQuantity(r, &q)) return false;
    list.emplace_back(std::move(key), std::move(q));
    return true;
  });
  if (!ok) return false;
  // The reference lists entries in key order, the last of duplicate keys winning.
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(list.begin(), list.end(), by_key) ||
      std::adjacent_find(list.begin(), list.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; }) != list.end()) {
    std::stable_sort(list.begin(), list.end(), by_key);
    ResourceList unique;
    for (size_t i = 0; i < list.size(); ++i) {
      if (i + 1 < list.size() && list[i + 1].first == list[i].first) continue;
      unique.push_back(std::move(list[i]));
    }
    list = std::move(unique);
  }
  *out = std::move(list);
  return true;
}

// An array member of objects (null: none); fn() reads one element.
template <typename Fn>
bool ReadObjects(Reader& r, Fn&& fn) {
  if (r.Null()) return true;
  return r.Arr([&] { return r.Peek() == '{' && fn(); });
}

// -------------------------------------------------------------------------------- objects

bool ReadOwnerReference(Reader& r, OwnerReference* ref) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "apiVersion") return seen.Add(0) && ReadStr(r, &ref->api_version);
    if (k == "kind") return seen.Add(1) && ReadStr(r, &ref->kind);
    if (k == "name") return seen.Add(2) && ReadStr(r, &ref->name);
    if (k == "uid") return seen.Add(3) && ReadStr(r, &ref->uid);
    if (k == "controller") return seen.Add(4) && ReadBool(r, &ref->controller);
    return r.Skip();
  });
}

bool ReadMeta(Reader& r, ObjectMeta* m) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "name") return seen.Add(0) && ReadStr(r, &m->name);
    if (k == "namespace") return seen.Add(1) && ReadStr(r, &m->namespace_);
    if (k == "uid") return seen.Add(2) && ReadStr(r, &m->uid);
    if (k == "resourceVersion") return seen.Add(3) && ReadStr(r, &m->resource_version);
    if (k == "generation") {
      int64_t g = 0;
      if (!seen.Add(4) || !ReadInt64(r, &g)) return false;
      m->set_generation(g);
      return true;
    }
    if (k == "creationTimestamp") return seen.Add(5) && ReadTime(r, &m->creation_timestamp);
    if (k == "deletionTimestamp") return seen.Add(6) && ReadOpt<TimeMs>(r, &m->deletion_timestamp, ReadTime);
    if (k == "deletionGracePeriodSeconds") {
      OptionalInt64 grace;
      if (!seen.Add(7) || !ReadOptInt64(r, &grace)) return false;
      m->set_deletion_grace_period_seconds(grace);
      return true;
    }
    if (k == "labels") return seen.Add(8) && ReadStringMap(r, &m->labels);
    if (k == "annotations") return seen.Add(9) && ReadStringMap(r, &m->annotations);
    if (k == "ownerReferences") {
      return seen.Add(10) && ReadObjects(r, [&] {
               OwnerReference ref;
               if (!ReadOwnerReference(r, &ref)) return false;
               m->owner_references.push_back(std::move(ref));
               return true;
             });
    }
    return r.Skip();
  });
}

bool ReadPort(Reader& r, ContainerPort* port) {
  Seen seen;
  if (!r.Obj([&](std::string_view k) {
        if (k == "containerPort") return seen.Add(0) && ReadInt32(r, &port->container_port);
        if (k == "hostPort") return seen.Add(1) && ReadInt32(r, &port->host_port);
        if (k == "protocol") return seen.Add(2) && ReadStr(r, &port->protocol);
        if (k == "hostIP") return seen.Add(3) && ReadStr(r, &port->host_ip);
        return r.Skip();
      })) {
    return false;
  }
  if (port->protocol.empty()) port->protocol = "TCP";
  return true;
}

bool ReadResources(Reader& r, Container* ct) {
  if (r.Null()) return true;
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "requests") return seen.Add(0) && ReadResourceList(r, &ct->requests);
    if (k == "limits") return seen.Add(1) && ReadResourceList(r, &ct->limits);
    return r.Skip();
  });
}

bool ReadContainer(Reader& r, bool init, Container* ct) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "name") return seen.Add(0) && ReadStr(r, &ct->name);
    if (k == "image") return seen.Add(1) && ReadStr(r, &ct->image);
    if (k == "resources") return seen.Add(2) && ReadResources(r, ct);
    if (k == "ports") {
      return seen.Add(3) && ReadObjects(r, [&] {
               ContainerPort port;
               if (!ReadPort(r, &port)) return false;
               ct->ports.push_back(std::move(port));
               return true;
             });
    }
    if (init && k == "restartPolicy") return seen.Add(4) && ReadStr(r, &ct->restart_policy);
    return r.Skip();
  });
}

bool ReadContainers(Reader& r, bool init, Shared<std::vector<Container>>* out) {
  return ReadObjects(r, [&] {
    Container ct;
    if (!ReadContainer(r, init, &ct)) return false;
    out->push_back(std::move(ct));
    return true;
  });
}

bool ReadToleration(Reader& r, Toleration* t) {
  Seen seen;
  if (!r.Obj([&](std::string_view k) {
        if (k == "key") return seen.Add(0) && ReadStr(r, &t->key);
        if (k == "operator") return seen.Add(1) && ReadStr(r, &t->operator_);
        if (k == "value") return seen.Add(2) && ReadStr(r, &t->value);
        if (k == "effect") return seen.Add(3) && ReadStr(r, &t->effect);
        if (k == "tolerationSeconds")
          return seen.Add(4) && ReadOpt<int64_t>(r, &t->toleration_seconds, ReadInt64);
        return r.Skip();
      })) {
    return false;
  }
  if (t->operator_.empty()) t->operator_ = "Equal";
  return true;
}

// -------------------------------------------------------------- placement constraints
//
// spec.affinity's terms and spec.topologySpreadConstraints, with the reference's validation
// (decode_json.cc, the API server's rules): a violation is not handled, so that the reference
// reports it.

// An array member of strings (null: none); a null or non-string element is the reference's error.
bool ReadStrings(Reader& r, std::vector<std::string>* out) {
  if (r.Null()) return true;
  return r.Arr([&] {
    std::string_view v;
    if (r.Peek() != '"' || !r.Value(&v)) return false;
    out->emplace_back(v);
    return true;
  });
}

// A requirement of a label or node selector: {key, operator, values}.
template <typename Requirement>
bool ReadRequirement(Reader& r, Requirement* req) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "key") return seen.Add(0) && ReadStr(r, &req->key);
    if (k == "operator") return seen.Add(1) && ReadStr(r, &req->op);
    if (k == "values") return seen.Add(2) && ReadStrings(r, &req->values);
    return r.Skip();
  });
}

// The reference's label selector rules (Conv(LabelSelector*)).
bool ValidLabelSelectorRequirement(const LabelSelectorRequirement& req) {
  const std::string& op = req.op;
  if (req.key.empty()) return false;
  if (op == "In" || op == "NotIn") return !req.values.empty();
  if (op == "Exists" || op == "DoesNotExist") return req.values.empty();
  return false;
}

// metav1.LabelSelector; null leaves *out std::nullopt.
bool ReadLabelSelector(Reader& r, std::optional<LabelSelector>* out) {
  if (r.Null()) return true;
  LabelSelector sel;
  Seen seen;
  if (!r.Obj([&](std::string_view k) {
        if (k == "matchLabels") return seen.Add(0) && ReadStringMap(r, &sel.match_labels);
        if (k == "matchExpressions") {
          return seen.Add(1) && ReadObjects(r, [&] {
                   LabelSelectorRequirement req;
                   if (!ReadRequirement(r, &req) || !ValidLabelSelectorRequirement(req)) return false;
                   sel.match_expressions.push_back(std::move(req));
                   return true;
                 });
        }
        return r.Skip();
      })) {
    return false;
  }
  *out = std::move(sel);
  return true;
}

// strconv.ParseInt(s, 10, 64), as the reference's ParsesAsInt64.
bool ParsesAsInt64(std::string_view s) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  }
  int64_t v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end;
}

// The reference's ConvNodeSelectorRequirement rules.
bool ValidNodeSelectorRequirement(const NodeSelectorRequirement& req, bool field) {
  const std::string& op = req.op;
  if (field) return req.key == "metadata.name" && (op == "In" || op == "NotIn") && req.values.size() == 1;
  if (req.key.empty()) return false;
  if (op == "In" || op == "NotIn") return !req.values.empty();
  if (op == "Exists" || op == "DoesNotExist") return req.values.empty();
  if (op == "Gt" || op == "Lt") return req.values.size() == 1 && ParsesAsInt64(req.values[0]);
  return false;
}

bool ReadNodeSelectorTerm(Reader& r, NodeSelectorTerm* t) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    const bool field = k == "matchFields";
    if (!field && k != "matchExpressions") return r.Skip();
    if (!seen.Add(field ? 1 : 0)) return false;
    auto* out = field ? &t->match_fields : &t->match_expressions;
    return ReadObjects(r, [&] {
      NodeSelectorRequirement req;
      if (!ReadRequirement(r, &req) || !ValidNodeSelectorRequirement(req, field)) return false;
      out->push_back(std::move(req));
      return true;
    });
  });
}

// A preferred term's weight: 1..100 (absent is 0, the reference's error).
bool ValidWeight(int32_t weight) { return weight >= 1 && weight <= 100; }

bool ReadNodeAffinity(Reader& r, NodeAffinity* na) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "requiredDuringSchedulingIgnoredDuringExecution") {
      if (!seen.Add(0)) return false;
      if (r.Null()) return true;
      std::vector<NodeSelectorTerm> terms;
      Seen req_seen;
      if (!r.Obj([&](std::string_view rk) {
            if (rk != "nodeSelectorTerms") return r.Skip();
            return req_seen.Add(0) &&
                   ReadObjects(r, [&] { return ReadNodeSelectorTerm(r, &terms.emplace_back()); });
          })) {
        return false;
      }
      na->required = std::move(terms);
      return true;
    }
    if (k == "preferredDuringSchedulingIgnoredDuringExecution") {
      return seen.Add(1) && ReadObjects(r, [&] {
               PreferredSchedulingTerm t;
               Seen term_seen;
               if (!r.Obj([&](std::string_view tk) {
                     if (tk == "weight") return term_seen.Add(0) && ReadInt32(r, &t.weight);
                     if (tk == "preference") {
                       return term_seen.Add(1) && (r.Null() || ReadNodeSelectorTerm(r, &t.preference));
                     }
                     return r.Skip();
                   }) ||
                   !ValidWeight(t.weight)) {
                 return false;
               }
               na->preferred.push_back(std::move(t));
               return true;
             });
    }
    return r.Skip();
  });
}

// A PodAffinityTerm: topologyKey must be set (an absent term has none).
bool ReadPodAffinityTerm(Reader& r, PodAffinityTerm* t) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "labelSelector") return seen.Add(0) && ReadLabelSelector(r, &t->label_selector);
    if (k == "namespaces") return seen.Add(1) && ReadStrings(r, &t->namespaces);
    if (k == "namespaceSelector") return seen.Add(2) && ReadLabelSelector(r, &t->namespace_selector);
    if (k == "topologyKey") return seen.Add(3) && ReadStr(r, &t->topology_key);
    return r.Skip();
  }) && !t->topology_key.empty();
}

// podAffinity or podAntiAffinity.
bool ReadPodAffinity(Reader& r, PodAffinity* pa) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "requiredDuringSchedulingIgnoredDuringExecution") {
      return seen.Add(0) &&
             ReadObjects(r, [&] { return ReadPodAffinityTerm(r, &pa->required.emplace_back()); });
    }
    if (k == "preferredDuringSchedulingIgnoredDuringExecution") {
      return seen.Add(1) && ReadObjects(r, [&] {
               WeightedPodAffinityTerm t;
               Seen term_seen;
               if (!r.Obj([&](std::string_view tk) {
                     if (tk == "weight") return term_seen.Add(0) && ReadInt32(r, &t.weight);
                     // null or absent: the reference's "missing required field".
                     if (tk == "podAffinityTerm") return term_seen.Add(1) && ReadPodAffinityTerm(r, &t.term);
                     return r.Skip();
                   }) ||
                   !term_seen.Has(1) || !ValidWeight(t.weight)) {
                 return false;
               }
               pa->preferred.push_back(std::move(t));
               return true;
             });
    }
    return r.Skip();
  });
}

// spec.affinity: the presence flags, and the terms into the caller's locals.
bool ReadAffinity(Reader& r, PodSpec* spec, NodeAffinity* na, PodAffinity* pa, PodAffinity* anti) {
  if (r.Null()) return true;
  Seen seen;
  return r.Obj([&](std::string_view k) {
    // The flags are bit-fields: set after the value is read.
    if (k == "nodeAffinity") {
      if (!seen.Add(0)) return false;
      if (r.Null()) return true;  // the flag stays false
      if (!ReadNodeAffinity(r, na)) return false;
      spec->has_node_affinity = true;
      return true;
    }
    if (k == "podAffinity") {
      if (!seen.Add(1)) return false;
      if (r.Null()) return true;
      if (!ReadPodAffinity(r, pa)) return false;
      spec->has_pod_affinity = true;
      return true;
    }
    if (k == "podAntiAffinity") {
      if (!seen.Add(2)) return false;
      if (r.Null()) return true;
      if (!ReadPodAffinity(r, anti)) return false;
      spec->has_pod_anti_affinity = true;
      return true;
    }
    return r.Skip();
  });
}

bool ValidNodeInclusionPolicy(const std::string& policy) {
  return policy.empty() || policy == "Honor" || policy == "Ignore";
}

// One constraint, defaulted and checked as the reference's DecodeSpreadConstraint.
bool ReadSpreadConstraint(Reader& r, TopologySpreadConstraint* t) {
  Seen seen;
  if (!r.Obj([&](std::string_view k) {
        if (k == "maxSkew") return seen.Add(0) && ReadInt32(r, &t->max_skew);
        if (k == "topologyKey") return seen.Add(1) && ReadStr(r, &t->topology_key);
        if (k == "whenUnsatisfiable") return seen.Add(2) && ReadStr(r, &t->when_unsatisfiable);
        if (k == "labelSelector") return seen.Add(3) && ReadLabelSelector(r, &t->label_selector);
        if (k == "minDomains") return seen.Add(4) && ReadOpt<int32_t>(r, &t->min_domains, ReadInt32);
        if (k == "nodeAffinityPolicy") return seen.Add(5) && ReadStr(r, &t->node_affinity_policy);
        if (k == "nodeTaintsPolicy") return seen.Add(6) && ReadStr(r, &t->node_taints_policy);
        if (k == "matchLabelKeys") return seen.Add(7) && ReadStrings(r, &t->match_label_keys);
        return r.Skip();
      })) {
    return false;
  }
  if (t->when_unsatisfiable.empty()) t->when_unsatisfiable = "DoNotSchedule";
  const bool do_not_schedule = t->when_unsatisfiable == "DoNotSchedule";
  return t->max_skew > 0 && !t->topology_key.empty() &&
         (do_not_schedule || t->when_unsatisfiable == "ScheduleAnyway") &&
         (!t->min_domains || (*t->min_domains > 0 && do_not_schedule)) &&
         ValidNodeInclusionPolicy(t->node_affinity_policy) && ValidNodeInclusionPolicy(t->node_taints_policy);
}

// spec.topologySpreadConstraints into *out: no two with the same topologyKey and
// whenUnsatisfiable.
bool ReadSpreadConstraints(Reader& r, std::vector<TopologySpreadConstraint>* out) {
  return ReadObjects(r, [&] {
    TopologySpreadConstraint t;
    if (!ReadSpreadConstraint(r, &t)) return false;
    for (const TopologySpreadConstraint& prev : *out) {
      if (prev.topology_key == t.topology_key && prev.when_unsatisfiable == t.when_unsatisfiable)
        return false;
    }
    out->push_back(std::move(t));
    return true;
  });
}

bool ReadVolume(Reader& r, PodSpec* spec) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k != "persistentVolumeClaim") return r.Skip();
    if (!seen.Add(0)) return false;
    if (r.Null()) return true;
    std::string claim;
    Seen pvc_seen;
    if (!r.Obj([&](std::string_view pk) {
          if (pk == "claimName") return pvc_seen.Add(0) && ReadStr(r, &claim);
          return r.Skip();
        })) {
      return false;
    }
    if (!claim.empty()) spec->mutable_rare().pvc_names.push_back(std::move(claim));
    return true;
  });
}

bool ReadSchedulingGate(Reader& r, PodSpec* spec) {
  Seen seen;
  std::string name;
  if (!r.Obj([&](std::string_view k) {
        if (k == "name") return seen.Add(0) && ReadStr(r, &name);
        return r.Skip();
      })) {
    return false;
  }
  spec->mutable_rare().scheduling_gates.push_back(std::move(name));
  return true;
}

bool ReadPodSpec(Reader& r, PodSpec* spec) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "nodeName") return seen.Add(0) && ReadStr(r, &spec->node_name);
    if (k == "schedulerName") return seen.Add(1) && ReadStr(r, &spec->scheduler_name);
    if (k == "priority") return seen.Add(2) && ReadOpt<int32_t>(r, &spec->priority, ReadInt32);
    if (k == "priorityClassName") return seen.Add(3) && ReadStr(r, &spec->priority_class_name);
    if (k == "containers") return seen.Add(4) && ReadContainers(r, false, &spec->containers);
    if (k == "initContainers") return seen.Add(5) && ReadContainers(r, true, &spec->init_containers);
    if (k == "overhead") {
      ResourceList overhead;
      if (!seen.Add(6) || !ReadResourceList(r, &overhead)) return false;
      if (!overhead.empty()) spec->mutable_rare().overhead = std::move(overhead);
      return true;
    }
    if (k == "nodeSelector") return seen.Add(7) && ReadStringMap(r, &spec->node_selector);
    if (k == "tolerations") {
      return seen.Add(8) && ReadObjects(r, [&] {
               Toleration t;
               if (!ReadToleration(r, &t)) return false;
               spec->tolerations.push_back(std::move(t));
               return true;
             });
    }
    if (k == "affinity") {
      // Read into locals: the rare block is made only for a pod that sets a term.
      NodeAffinity na;
      PodAffinity pa;
      PodAffinity anti;
      if (!seen.Add(9) || !ReadAffinity(r, spec, &na, &pa, &anti)) return false;
      if (na.required || !na.preferred.empty()) spec->mutable_rare().node_affinity = std::move(na);
      if (!pa.required.empty() || !pa.preferred.empty()) spec->mutable_rare().pod_affinity = std::move(pa);
      if (!anti.required.empty() || !anti.preferred.empty())
        spec->mutable_rare().pod_anti_affinity = std::move(anti);
      return true;
    }
    if (k == "topologySpreadConstraints") {
      std::vector<TopologySpreadConstraint> spread;
      if (!seen.Add(13) || !ReadSpreadConstraints(r, &spread)) return false;
      if (!spread.empty()) spec->mutable_rare().topology_spread_constraints = std::move(spread);
      return true;
    }
    if (k == "volumes") return seen.Add(10) && ReadObjects(r, [&] { return ReadVolume(r, spec); });
    if (k == "schedulingGates")
      return seen.Add(11) && ReadObjects(r, [&] { return ReadSchedulingGate(r, spec); });
    if (k == "hostNetwork") {
      bool host_network = spec->host_network;  // a bit-field
      if (!seen.Add(12) || !ReadBool(r, &host_network)) return false;
      spec->host_network = host_network;
      return true;
    }
    return r.Skip();
  });
}

bool ReadPodCondition(Reader& r, PodCondition* cond) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "type") return seen.Add(0) && ReadStr(r, &cond->type);
    if (k == "status") return seen.Add(1) && ReadStr(r, &cond->status);
    if (k == "reason") return seen.Add(2) && ReadStr(r, &cond->reason);
    if (k == "message") return seen.Add(3) && ReadStr(r, &cond->message);
    if (k == "lastTransitionTime") return seen.Add(4) && ReadTime(r, &cond->last_transition_time);
    return r.Skip();
  });
}

bool ReadPodStatus(Reader& r, PodStatus* st) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "phase") return seen.Add(0) && ReadStr(r, &st->phase);
    if (k == "conditions") {
      return seen.Add(1) && ReadObjects(r, [&] {
               PodCondition cond;
               if (!ReadPodCondition(r, &cond)) return false;
               st->conditions.push_back(std::move(cond));
               return true;
             });
    }
    if (k == "nominatedNodeName") return seen.Add(2) && ReadStr(r, &st->nominated_node_name);
    if (k == "qosClass") return seen.Add(3) && r.Skip();  // not kept, as in the reference
    if (k == "startTime") return seen.Add(4) && ReadOpt<TimeMs>(r, &st->start_time, ReadTime);
    return r.Skip();
  });
}

bool ReadTaint(Reader& r, Taint* t) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "key") return seen.Add(0) && ReadStr(r, &t->key);
    if (k == "value") return seen.Add(1) && ReadStr(r, &t->value);
    if (k == "effect") return seen.Add(2) && ReadStr(r, &t->effect);
    return r.Skip();
  });
}

bool ReadNodeSpec(Reader& r, NodeSpec* spec) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "unschedulable") return seen.Add(0) && ReadBool(r, &spec->unschedulable);
    if (k == "taints") {
      return seen.Add(1) && ReadObjects(r, [&] {
               Taint t;
               if (!ReadTaint(r, &t)) return false;
               spec->taints.push_back(std::move(t));
               return true;
             });
    }
    return r.Skip();
  });
}

bool ReadNodeCondition(Reader& r, NodeCondition* cond) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "type") return seen.Add(0) && ReadStr(r, &cond->type);
    if (k == "status") return seen.Add(1) && ReadStr(r, &cond->status);
    if (k == "reason") return seen.Add(2) && ReadStr(r, &cond->reason);
    if (k == "message") return seen.Add(3) && ReadStr(r, &cond->message);
    return r.Skip();
  });
}

bool ReadImage(Reader& r, ContainerImage* image) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "names") {
      if (!seen.Add(0)) return false;
      if (r.Null()) return true;
      // Each element is converted as a string: null or another type is the reference's error.
      return r.Arr([&] {
        std::string_view v;
        if (r.Peek() != '"' || !r.Value(&v)) return false;
        image->names.emplace_back(v);
        return true;
      });
    }
    if (k == "sizeBytes") return seen.Add(1) && ReadInt64(r, &image->size_bytes);
    return r.Skip();
  });
}

bool ReadNodeStatus(Reader& r, NodeStatus* st) {
  Seen seen;
  return r.Obj([&](std::string_view k) {
    if (k == "capacity") return seen.Add(0) && ReadResourceList(r, &st->capacity.mut());
    if (k == "allocatable") return seen.Add(1) && ReadResourceList(r, &st->allocatable.mut());
    if (k == "conditions") {
      return seen.Add(2) && ReadObjects(r, [&] {
               NodeCondition cond;
               if (!ReadNodeCondition(r, &cond)) return false;
               st->conditions.push_back(std::move(cond));
               return true;
             });
    }
    if (k == "images") {
      return seen.Add(3) && ReadObjects(r, [&] {
               ContainerImage image;
               if (!ReadImage(r, &image)) return false;
               st->images.push_back(std::move(image));
               return true;
             });
    }
    return r.Skip();
  });
}

// What the reference's Classify() decodes as a Pod / a Node.
bool IsPod(std::string_view kind, std::string_view api_version) {
  return kind == "Pod" && (api_version == "v1" || api_version.empty());
}
bool IsNode(std::string_view kind, std::string_view api_version) {
  return kind == "Node" && (api_version == "v1" || api_version.empty());
}

// A Pod or Node object (alone, a watch event's object or a List item) into *out. `kind` and
// `api_version` start as the defaults a List gives its items. Any other kind is not handled.
bool ReadFastObject(Reader& r, std::string kind, std::string api_version, Object* out) {
  Seen seen;
  ObjectMeta meta;             // read before the kind is known; moved into the object at the end
  bool meta_in_place = false;  // or read straight into the object
  Pod* pod = nullptr;
  Node* node = nullptr;
  bool committed = false;          // spec or status read: the kind is fixed
  bool committed_by_meta = false;  // fixed by metadata, read in place (kind known before it)
  auto commit = [&] {
    if (committed) return true;
    if (IsPod(kind, api_version)) {
      pod = &out->emplace<Pod>();
    } else if (IsNode(kind, api_version)) {
      node = &out->emplace<Node>();
    } else {
      return false;
    }
    committed = true;
    return true;
  };
  // kind and apiVersion: a string; null or "" keeps the default.
  // After spec/status it is not handled; after metadata read in place, only if it keeps the
  // kind the object was given.
  auto read_name = [&](std::string* out) {
    if (committed && !committed_by_meta) return false;
    if (r.Null()) return true;
    std::string_view v;
    if (!r.Value(&v)) return false;
    if (!v.empty()) out->assign(v);
    return !committed || (pod != nullptr ? IsPod(kind, api_version) : IsNode(kind, api_version));
  };
  const bool ok = r.Obj([&](std::string_view k) {
    if (k == "kind") return seen.Add(0) && read_name(&kind);
    if (k == "apiVersion") return seen.Add(1) && read_name(&api_version);
    if (k == "metadata") {
      if (!seen.Add(2) || r.Null()) return false;
      // API servers write kind and apiVersion first: the object is then read in place.
      if (!committed && (IsPod(kind, api_version) || IsNode(kind, api_version))) {
        if (!commit()) return false;
        committed_by_meta = true;
      }
      if (!committed) return ReadMeta(r, &meta);
      meta_in_place = true;
      return ReadMeta(r, pod != nullptr ? &pod->metadata : &node->metadata);
    }
    if (k == "spec") {
      if (!seen.Add(3) || !commit()) return false;
      if (r.Null()) return true;
      return pod != nullptr ? ReadPodSpec(r, &pod->spec) : ReadNodeSpec(r, &node->spec);
    }
    if (k == "status") {
      if (!seen.Add(4) || !commit()) return false;
      if (r.Null()) return true;
      return pod != nullptr ? ReadPodStatus(r, &pod->status) : ReadNodeStatus(r, &node->status);
    }
    return r.Skip();
  });
  if (!ok || !seen.Has(2) || !commit()) return false;
  ObjectMeta& m = pod != nullptr ? pod->metadata : node->metadata;
  if (!meta_in_place) m = std::move(meta);
  if (m.name.empty()) return false;
  if (pod != nullptr) {
    if (pod->spec.scheduler_name.empty()) pod->spec.scheduler_name = "default-scheduler";
    Compact(pod);
  } else {
    Compact(node);
  }
  return true;
}

// The reference refuses larger documents; a UTF-8 BOM is skipped by nlohmann (left to it).
bool Acceptable(std::string_view text) {
  return text.size() <= kMaxDocumentBytes && !(text.size() >= 1 && static_cast<uint8_t>(text[0]) == 0xEF);
}

template <typename Fn>
bool Guarded(Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    return false;  // allocation failure: the reference decoder reports it
  }
}

}  // namespace

bool FastDecodeObject(std::string_view text, Object* out) {
  if (!Acceptable(text)) return false;
  return Guarded([&] {
    Reader r(text);
    return ReadFastObject(r, "", "", out) && r.AtEnd();
  });
}

bool FastDecodeList(std::string_view text, ObjectList* out) {
  if (!Acceptable(text)) return false;
  return Guarded([&] {
    Reader r(text);
    Seen seen;
    std::string kind;
    std::string api_version;
    const bool ok = r.Obj([&](std::string_view k) {
      if (k == "kind") {
        std::string_view v;
        if (!seen.Add(0) || seen.Has(3) || !r.Value(&v)) return false;
        kind.assign(v);
        return kind.size() >= 4 && kind.compare(kind.size() - 4, 4, "List") == 0;
      }
      if (k == "apiVersion") return seen.Add(1) && !seen.Has(3) && ReadStr(r, &api_version);
      if (k == "metadata") {
        if (!seen.Add(2)) return false;
        if (r.Null()) return true;
        Seen meta_seen;
        return r.Obj([&](std::string_view mk) {
          if (mk == "resourceVersion") return meta_seen.Add(0) && ReadStr(r, &out->resource_version);
          if (mk == "continue") return meta_seen.Add(1) && ReadStr(r, &out->continue_token);
          return r.Skip();
        });
      }
      if (k == "items") {
        if (!seen.Add(3) || !seen.Has(0)) return false;
        if (r.Null()) return true;
        const std::string default_kind = kind.substr(0, kind.size() - 4);
        return r.Arr(
            [&] { return ReadFastObject(r, default_kind, api_version, &out->items.emplace_back()); });
      }
      return r.Skip();
    });
    if (!ok || !seen.Has(0) || !r.AtEnd()) return false;
    out->kind = std::move(kind);
    return true;
  });
}

bool FastDecodeWatchEvent(std::string_view text, WatchEventType* type, Object* object) {
  if (!Acceptable(text)) return false;
  return Guarded([&] {
    Reader r(text);
    Seen seen;
    const bool ok = r.Obj([&](std::string_view k) {
      if (k == "type") {
        std::string_view v;
        if (!seen.Add(0) || !r.Value(&v)) return false;
        // BOOKMARK and ERROR events are rare and decoded differently: left to the reference.
        if (v == "ADDED") {
          *type = WatchEventType::kAdded;
        } else if (v == "MODIFIED") {
          *type = WatchEventType::kModified;
        } else if (v == "DELETED") {
          *type = WatchEventType::kDeleted;
        } else {
          return false;
        }
        return true;
      }
      if (k == "object") {
        if (!seen.Add(1) || !seen.Has(0)) return false;
        return ReadFastObject(r, "", "", object);
      }
      return r.Skip();
    });
    return ok && seen.Has(1) && r.AtEnd();
  });
}

bool FastDecodeWatchEvent(std::string_view text, WatchEvent* out) {
  return FastDecodeWatchEvent(text, &out->type, &out->object.emplace());
}

}  // namespace volcache::k8s
