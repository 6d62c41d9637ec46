// libFuzzer target for Quantity::Parse: any input either fails with a well-formed
// InvalidArgument or yields a Quantity whose conversions are mutually consistent.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "api/quantity.h"

namespace {

using volcache::Quantity;
using volcache::Result;
using volcache::StatusCode;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "quantity_fuzz: invariant failed: %s (input %zu bytes)\n", what, input.size());
  std::abort();
}

#define FUZZ_CHECK(cond)            \
  do {                              \
    if (!(cond)) Fail(#cond, text); \
  } while (0)

bool Saturated(int64_t v) { return v == kMax || v == kMin; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Quantity> parsed = Quantity::Parse(text);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    FUZZ_CHECK(parsed.status().message().rfind("quantity \"", 0) == 0);
    // Text and suffix are each quoted to at most 64 bytes (4 chars per escaped byte).
    FUZZ_CHECK(parsed.status().message().size() < 1024);
    return 0;
  }
  const Quantity& q = *parsed;

  // Deterministic, and the canonical text round-trips to an equal value.
  const std::string decimal = q.ToDecimalString();
  FUZZ_CHECK(decimal.size() <= 40);  // capped at 2^63-1, rounded to 1n: at most 19+1+9 digits
  Result<Quantity> again = Quantity::Parse(decimal);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == q);
  FUZZ_CHECK(again->ToDecimalString() == decimal);

  const int64_t milli = q.MilliValue();
  const int64_t value = q.Value();

  // Signs agree; a nonzero value never rounds to zero (rounding is away from zero).
  if (q.IsZero()) {
    FUZZ_CHECK(!q.negative() && milli == 0 && value == 0 && decimal == "0");
  } else if (q.negative()) {
    FUZZ_CHECK(milli <= -1 && value <= -1 && decimal[0] == '-');
  } else {
    FUZZ_CHECK(milli >= 1 && value >= 1 && decimal[0] != '-');
  }

  // Value is MilliValue scaled by 1000 with the same rounding: value = ceil(milli / 1000)
  // away from zero, unless milli saturated. (Note milli >= value * 1000 does NOT hold for
  // fractions: 0.5 has milli 500, value 1; the true relation is this one.)
  if (!Saturated(milli)) {
    const int64_t mag = milli < 0 ? -milli : milli;
    const int64_t expect = mag / 1000 + (mag % 1000 != 0 ? 1 : 0);
    FUZZ_CHECK(value == (milli < 0 ? -expect : expect));
    // FromMilli of an exact milli-value gives the same milli back.
    FUZZ_CHECK(Quantity::FromMilli(milli).MilliValue() == milli);
  } else {
    // Milli saturated ⇒ |value| >= 2^63/1000.
    FUZZ_CHECK(value >= kMax / 1000 || value <= kMin / 1000);
  }
  // Magnitudes are capped at 2^63-1, so Value() itself only reaches INT64_MAX as the cap.
  FUZZ_CHECK(value != kMin);

  // Every scale is consistent with the next finer one: ScaledValue(s) rounds
  // ScaledValue(s-1) / 10 away from zero, unless the finer one saturated.
  int64_t finer = q.ScaledValue(-18);
  for (int scale = -17; scale <= 18; ++scale) {
    const int64_t coarser = q.ScaledValue(scale);
    if (!Saturated(finer)) {
      const int64_t mag = finer < 0 ? -finer : finer;
      const int64_t expect = mag / 10 + (mag % 10 != 0 ? 1 : 0);
      FUZZ_CHECK(coarser == (finer < 0 ? -expect : expect));
    } else {
      FUZZ_CHECK(coarser == finer || (finer > 0 ? coarser > 0 : coarser < 0));
    }
    finer = coarser;
  }
  return 0;
}
