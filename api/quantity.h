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
// The value is held exactly as an arbitrary-length decimal digit string times a power of
// ten, so conversions round exactly like Kubernetes: Value() and MilliValue() round up
// (away from zero). Like Kubernetes, magnitudes are capped at 2^63-1 base units; a scaled
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

  bool IsZero() const { return digits_.empty(); }
  bool negative() const { return negative_; }
  // True when the text's magnitude was past 2^63-1 and parsing capped it there (as
  // Kubernetes does silently); e.g. "999Ei".
  bool capped() const { return capped_; }

  // ceil(value * 10^-scale) for scale in [-18, 18], away from zero, saturating.
  int64_t ScaledValue(int scale) const;
  int64_t Value() const { return ScaledValue(0); }
  int64_t MilliValue() const { return ScaledValue(-3); }

  // Canonical decimal text of the exact value, e.g. "1536", "0.1", "-2" (no suffix).
  std::string ToDecimalString() const;

  friend bool operator==(const Quantity& a, const Quantity& b) {
    return a.negative_ == b.negative_ && a.exp10_ == b.exp10_ && a.digits_ == b.digits_;
  }

 private:
  // value = (negative_ ? -1 : 1) * digits_ * 10^exp10_, where digits_ has no leading or
  // trailing zeros ("" means zero; then negative_ is false and exp10_ is 0).
  bool negative_ = false;
  bool capped_ = false;  // not part of the value: a capped quantity equals 2^63-1
  int32_t exp10_ = 0;
  std::string digits_;
};

}  // namespace volcache
