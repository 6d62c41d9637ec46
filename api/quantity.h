#pragma once
// Kubernetes resource.Quantity, parsed exactly.
//
// Grammar (k8s.io/apimachinery/pkg/api/resource):
//   <quantity>        ::= <signedNumber><suffix>
//   <signedNumber>    ::= <number> | <sign><number>          <sign> ::= "+" | "-"
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedInteger> | "E" <signedInteger>
// (`n` and `u` are not in the published grammar but the API server accepts them.)
//
// The value is held exactly, as a fixed-point count of nano-units: Kubernetes rounds every
// quantity up to a multiple of 1n and caps its magnitude at 2^63-1 at parse time, so every
// value is a whole number of nanos below 2^93, kept in 96 bits (no heap, 16 bytes). Conversions
// round exactly like Kubernetes: Value() and MilliValue() round up (away from zero). A scaled
// result that would not fit in int64 saturates at INT64_MAX (INT64_MIN when negative).
//
// Thread-safety: immutable value type.

#include <cstdint>
#include <string>
#include <string_view>

#include "api/status.h"

namespace volcache {

class Quantity {
 public:
  Quantity() = default;  // zero

  // Parses `text`. Errors are InvalidArgument with a message quoting the text and saying
  // what is wrong (e.g. `quantity "1.5.3": unexpected '.' at offset 3`).
  static Result<Quantity> Parse(std::string_view text);

  // A quantity of exactly `milli` thousandths.
  static Quantity FromMilli(int64_t milli);

  bool IsZero() const { return lo_ == 0 && (hi_ & kMagnitudeMask) == 0; }
  bool negative() const { return (hi_ & kNegative) != 0; }
  // True when the text's magnitude was past 2^63-1 and parsing capped it there (as
  // Kubernetes does silently); e.g. "999Ei".
  bool capped() const { return (hi_ & kCapped) != 0; }

  // ceil(value * 10^-scale) for scale in [-18, 18], away from zero, saturating.
  int64_t ScaledValue(int scale) const;
  int64_t Value() const { return ScaledValue(0); }
  int64_t MilliValue() const { return ScaledValue(-3); }

  // Canonical decimal text of the exact value, e.g. "1536", "0.1", "-2" (no suffix).
  std::string ToDecimalString() const;

  friend bool operator==(const Quantity& a, const Quantity& b) {
    // `capped` is not part of the value: a capped quantity equals 2^63-1.
    return a.lo_ == b.lo_ && (a.hi_ & ~kCapped) == (b.hi_ & ~kCapped);
  }

 private:
  static constexpr uint32_t kNegative = 1u << 31;
  static constexpr uint32_t kCapped = 1u << 30;
  static constexpr uint32_t kMagnitudeMask = kCapped - 1;  // 30 bits: magnitudes < 2^94 nanos

  // `hi` holds the magnitude's bits 64 and up (below 2^30).
  static Quantity Make(uint64_t lo, uint32_t hi, bool negative, bool capped);

  // value = (negative ? -1 : 1) * ((hi_ & kMagnitudeMask) * 2^64 + lo_) * 10^-9; zero is
  // never negative.
  uint64_t lo_ = 0;
  uint32_t hi_ = 0;
};

}  // namespace volcache
