#include "api/quantity.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace volcache {
namespace {

// 2^63-1: Kubernetes caps every quantity's magnitude here at parse time.
constexpr std::string_view kMaxAllowed = "9223372036854775807";
// Kubernetes rounds every quantity up (away from zero) to a multiple of 10^-9 at parse time.
constexpr int64_t kNanoExp = -9;
// Exponents beyond this are clamped while parsing; any nonzero value this far out is capped
// (or rounded to 1n) long before the clamp matters, so clamping cannot change a result.
constexpr int64_t kExpClamp = int64_t{1} << 40;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Quotes `text` for an error message: printable ASCII verbatim, anything else as \xNN, cut
// after a reasonable length so a hostile input cannot produce a megabyte-long message.
std::string Quote(std::string_view text) {
  constexpr size_t kMaxQuoted = 64;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMaxQuoted; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > kMaxQuoted) out += "...";
  out += '"';
  return out;
}

std::string CharName(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  if (c >= 0x20 && c < 0x7f) return std::string("'") + ch + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
}

Status ParseError(std::string_view text, std::string_view what) {
  std::string msg = "quantity " + Quote(text) + ": ";
  msg += what;
  return Status::InvalidArgument(std::move(msg));
}

Status UnexpectedChar(std::string_view text, size_t offset) {
  return ParseError(text, "unexpected " + CharName(text[offset]) + " at offset " + std::to_string(offset));
}

// digits (most significant first, ASCII) *= m, for small m.
void MultiplyDigits(std::string& digits, uint32_t m) {
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    const uint64_t v = static_cast<uint64_t>(digits[i] - '0') * m + carry;
    digits[i] = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  while (carry > 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
}

// digits += 1 (ASCII decimal, most significant first).
void IncrementDigits(std::string& digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return;
    }
    digits[i] = '0';
  }
  digits.insert(digits.begin(), '1');
}

// Removes leading zeros and moves trailing zeros into the exponent.
void Normalize(std::string& digits, int64_t& exp10) {
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    digits.clear();
    exp10 = 0;
    return;
  }
  digits.erase(0, first);
  const size_t last = digits.find_last_not_of('0');
  exp10 += static_cast<int64_t>(digits.size() - 1 - last);
  digits.resize(last + 1);
}

struct Suffix {
  std::string_view text;
  int exp10;       // decimal SI exponent
  int binary_pow;  // power of 1024 (binary SI), 0 for decimal
};

constexpr Suffix kSuffixes[] = {
    {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0},  {"M", 6, 0},
    {"G", 9, 0},  {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0}, {"Ki", 0, 1},
    {"Mi", 0, 2}, {"Gi", 0, 3}, {"Ti", 0, 4}, {"Pi", 0, 5}, {"Ei", 0, 6},
};

__extension__ typedef unsigned __int128 U128;

constexpr U128 Pow10(int n) {
  U128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

int64_t SaturatingFromMagnitude(uint64_t magnitude, bool negative) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    return magnitude > kMax ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(magnitude);
  }
  return magnitude > kMax ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(magnitude);
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return ParseError(text, "empty");

  // Fast path for what the API server writes almost always: up to 18 digits and a common
  // suffix or none ("1", "500m", "2Gi", "110"), below the cap. Anything else takes the exact
  // general path below (which gives the same value for these).
  {
    size_t i = 0;
    uint64_t v = 0;
    while (i < text.size() && i < 18 && IsDigit(text[i])) v = v * 10 + static_cast<uint64_t>(text[i++] - '0');
    if (i > 0) {
      const std::string_view suffix = text.substr(i);
      U128 nanos_per_unit = 0;  // 0: not a fast-path suffix
      if (suffix.empty()) {
        nanos_per_unit = Pow10(9);
      } else if (suffix.size() == 1) {
        switch (suffix[0]) {
          case 'm':
            nanos_per_unit = Pow10(6);
            break;
          case 'k':
            nanos_per_unit = Pow10(12);
            break;
          case 'M':
            nanos_per_unit = Pow10(15);
            break;
          case 'G':
            nanos_per_unit = Pow10(18);
            break;
          case 'T':
            nanos_per_unit = Pow10(21);
            break;
          default:
            break;
        }
      } else if (suffix.size() == 2 && suffix[1] == 'i') {
        switch (suffix[0]) {
          case 'K':
            nanos_per_unit = Pow10(9) << 10;
            break;
          case 'M':
            nanos_per_unit = Pow10(9) << 20;
            break;
          case 'G':
            nanos_per_unit = Pow10(9) << 30;
            break;
          case 'T':
            nanos_per_unit = Pow10(9) << 40;
            break;
          default:
            break;
        }
      }
      // Below the cap: v * nanos_per_unit <= (2^63-1) * 10^9, checked without overflow
      // (nanos_per_unit / 10^9 is a whole number of base units except for 'm').
      constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      const U128 unit = nanos_per_unit / Pow10(9);
      const bool fits = nanos_per_unit != 0 && (unit == 0 || v <= kMax / static_cast<uint64_t>(unit));
      if (fits) {
        const U128 nanos = static_cast<U128>(v) * nanos_per_unit;
        return Make(static_cast<uint64_t>(nanos), static_cast<uint32_t>(nanos >> 64), false, false);
      }
    }
  }

  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') {
    negative = text[pos] == '-';
    ++pos;
  }
  const size_t int_begin = pos;
  while (pos < text.size() && IsDigit(text[pos])) ++pos;
  const size_t int_end = pos;
  size_t frac_begin = pos, frac_end = pos;
  if (pos < text.size() && text[pos] == '.') {
    frac_begin = ++pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    frac_end = pos;
  }
  if (int_end == int_begin && frac_end == frac_begin) {
    if (pos < text.size() && text[pos] != '.' && pos == int_begin) return UnexpectedChar(text, pos);
    return ParseError(text, "no digits");
  }

  // Suffix.
  const std::string_view suffix = text.substr(pos);
  int64_t exp10 = -static_cast<int64_t>(frac_end - frac_begin);
  int binary_pow = 0;
  if (!suffix.empty()) {
    const char c0 = suffix[0];
    const bool letter = (c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z');
    if (!letter) return UnexpectedChar(text, pos);
    const Suffix* known = nullptr;
    for (const Suffix& s : kSuffixes) {
      if (s.text == suffix) known = &s;
    }
    if (known != nullptr) {
      exp10 += known->exp10;
      binary_pow = known->binary_pow;
    } else if (c0 == 'e' || c0 == 'E') {
      size_t p = pos + 1;
      bool exp_negative = false;
      if (p < text.size() && (text[p] == '+' || text[p] == '-')) {
        exp_negative = text[p] == '-';
        ++p;
      }
      const size_t exp_digits = p;
      int64_t e = 0;
      for (; p < text.size(); ++p) {
        if (!IsDigit(text[p])) return UnexpectedChar(text, p);
        e = std::min<int64_t>(e * 10 + (text[p] - '0'), kExpClamp);
      }
      if (p == exp_digits) {
        return ParseError(text, "exponent " + Quote(suffix) + " has no digits");
      }
      exp10 += exp_negative ? -e : e;
    } else {
      return ParseError(text, "unknown suffix " + Quote(suffix));
    }
  }

  std::string digits;
  digits.reserve((int_end - int_begin) + (frac_end - frac_begin));
  digits.append(text.substr(int_begin, int_end - int_begin));
  digits.append(text.substr(frac_begin, frac_end - frac_begin));
  Normalize(digits, exp10);
  if (digits.empty()) return Quantity();  // "-0", "0.000Ki", "0e9": plain zero

  for (int i = 0; i < binary_pow; ++i) MultiplyDigits(digits, 1024);
  Normalize(digits, exp10);

  // Kubernetes' two parse-time normalisations (resource.ParseQuantity): the magnitude is
  // capped at 2^63-1, then rounded up to a multiple of 1n. Doing them here keeps every
  // stored value small (at most 28 significant digits) whatever the exponent in the text.
  const int64_t int_digits = static_cast<int64_t>(digits.size()) + exp10;  // digits before '.'
  bool cap = int_digits > static_cast<int64_t>(kMaxAllowed.size());
  if (int_digits == static_cast<int64_t>(kMaxAllowed.size())) {
    std::string int_part = digits.substr(0, static_cast<size_t>(int_digits));
    int_part.resize(kMaxAllowed.size(), '0');
    const bool has_fraction = exp10 < 0;  // the last digit is nonzero and below the point
    cap = int_part > kMaxAllowed || (int_part == kMaxAllowed && has_fraction);
  }
  if (cap) {
    digits.assign(kMaxAllowed);
    exp10 = 0;
  } else if (exp10 < kNanoExp) {
    // Keep the digits at 10^-9 and above; the dropped ones are nonzero (no trailing zeros),
    // so round up by one nano.
    const int64_t keep = int_digits - kNanoExp;
    if (keep <= 0) {
      digits.assign("1");
    } else {
      digits.resize(static_cast<size_t>(keep));
      IncrementDigits(digits);
    }
    exp10 = kNanoExp;
    Normalize(digits, exp10);
  }

  // value = digits * 10^exp10 with exp10 >= -9 and at most 19 integer digits: a whole number
  // of nanos below 2^93.
  U128 nanos = 0;
  for (char d : digits) nanos = nanos * 10 + static_cast<unsigned>(d - '0');
  nanos *= Pow10(static_cast<int>(exp10 - kNanoExp));
  return Make(static_cast<uint64_t>(nanos), static_cast<uint32_t>(nanos >> 64), negative, cap);
}

Quantity Quantity::Make(uint64_t lo, uint32_t hi, bool negative, bool capped) {
  Quantity q;
  q.lo_ = lo;
  q.hi_ = hi;
  if ((lo != 0 || hi != 0) && negative) q.hi_ |= kNegative;
  if (capped) q.hi_ |= kCapped;
  return q;
}

Quantity Quantity::FromMilli(int64_t milli) {
  // Magnitude in unsigned arithmetic so INT64_MIN is fine.
  const uint64_t magnitude = milli < 0 ? ~static_cast<uint64_t>(milli) + 1 : static_cast<uint64_t>(milli);
  const U128 nanos = static_cast<U128>(magnitude) * 1000000;
  return Make(static_cast<uint64_t>(nanos), static_cast<uint32_t>(nanos >> 64), milli < 0, false);
}

int64_t Quantity::ScaledValue(int scale) const {
  if (IsZero()) return 0;
  scale = std::clamp(scale, -18, 18);
  const U128 nanos = (static_cast<U128>(hi_ & kMagnitudeMask) << 64) | lo_;
  // |value| * 10^-scale = nanos * 10^(-scale - 9); nanos < 2^94, so 10^9 more fits in 128 bits.
  const int k = -scale - 9;
  U128 magnitude;
  if (k >= 0) {
    magnitude = nanos * Pow10(k);
  } else {
    const U128 div = Pow10(-k);
    magnitude = nanos / div + (nanos % div != 0 ? 1 : 0);  // round up, away from zero
  }
  constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();
  return SaturatingFromMagnitude(magnitude > kSaturated ? kSaturated : static_cast<uint64_t>(magnitude),
                                 negative());
}

std::string Quantity::ToDecimalString() const {
  if (IsZero()) return "0";
  U128 nanos = (static_cast<U128>(hi_ & kMagnitudeMask) << 64) | lo_;
  char buf[48];  // 2^94 has 29 decimal digits
  char* end = buf + sizeof(buf);
  char* p = end;
  int emitted = 0;
  bool fraction = false;  // a nonzero fractional digit has been written
  while (nanos != 0 || emitted <= 9) {
    const auto d = static_cast<char>('0' + static_cast<unsigned>(nanos % 10));
    nanos /= 10;
    if (emitted < 9) {
      if (fraction || d != '0') {
        *--p = d;
        fraction = true;
      }
    } else {
      if (emitted == 9 && fraction) *--p = '.';
      *--p = d;
    }
    ++emitted;
  }
  std::string out;
  if (negative()) out += '-';
  out.append(p, end);
  return out;
}

}  // namespace volcache
