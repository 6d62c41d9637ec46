// Quantity: the Kubernetes grammar, exact storage and Kubernetes' rounding/saturation.
#include "api/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace volcache {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct ParseCase {
  const char* text;
  int64_t milli;
  int64_t value;
  const char* decimal;  // ToDecimalString()
};

void PrintTo(const ParseCase& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class QuantityParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(QuantityParseTest, ParsesAndConverts) {
  const ParseCase& c = GetParam();
  Result<Quantity> q = Quantity::Parse(c.text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->MilliValue(), c.milli);
  EXPECT_EQ(q->Value(), c.value);
  EXPECT_EQ(q->ToDecimalString(), c.decimal);
  // The canonical text parses back to the same value.
  Result<Quantity> again = Quantity::Parse(q->ToDecimalString());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *q);
}

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, QuantityParseTest,
    ::testing::Values(
        // The examples of SPEC §2.
        ParseCase{"100m", 100, 1, "0.1"}, ParseCase{"1.5", 1500, 2, "1.5"},
        ParseCase{"2e3", 2000000, 2000, "2000"}, ParseCase{"128974848", 128974848000, 128974848, "128974848"},
        ParseCase{"129M", 129000000000, 129000000, "129000000"},
        ParseCase{"123Mi", 128974848000, 128974848, "128974848"},
        ParseCase{"1Gi", 1073741824000, 1073741824, "1073741824"},
        ParseCase{"1E", kMax, 1000000000000000000, "1000000000000000000"},
        // Decimal SI suffixes.
        ParseCase{"1n", 1, 1, "0.000000001"}, ParseCase{"1u", 1, 1, "0.000001"},
        ParseCase{"1500u", 2, 1, "0.0015"}, ParseCase{"999m", 999, 1, "0.999"},
        ParseCase{"1000m", 1000, 1, "1"}, ParseCase{"0.1m", 1, 1, "0.0001"},
        ParseCase{"1k", 1000000, 1000, "1000"},
        ParseCase{"1T", 1000000000000000, 1000000000000, "1000000000000"},
        ParseCase{"1P", 1000000000000000000, 1000000000000000, "1000000000000000"},
        ParseCase{"9P", 9000000000000000000, 9000000000000000, "9000000000000000"},
        ParseCase{"10P", kMax, 10000000000000000, "10000000000000000"},
        // Binary SI suffixes, fractional mantissas multiplied exactly.
        ParseCase{"1Ki", 1024000, 1024, "1024"}, ParseCase{"1.5Ki", 1536000, 1536, "1536"},
        ParseCase{"0.5Ki", 512000, 512, "512"}, ParseCase{"0.001Ki", 1024, 2, "1.024"},
        ParseCase{"1Mi", 1048576000, 1048576, "1048576"},
        ParseCase{"1Ti", 1099511627776000, 1099511627776, "1099511627776"},
        ParseCase{"1Pi", 1125899906842624000, 1125899906842624, "1125899906842624"},
        ParseCase{"1Ei", kMax, 1152921504606846976, "1152921504606846976"},
        // Exponents.
        ParseCase{"1E3", 1000000, 1000, "1000"}, ParseCase{"1e+3", 1000000, 1000, "1000"},
        ParseCase{"1e-3", 1, 1, "0.001"}, ParseCase{"15e-4", 2, 1, "0.0015"}, ParseCase{"1e0", 1000, 1, "1"},
        ParseCase{"1.5e2", 150000, 150, "150"},
        // Number forms and signs.
        ParseCase{".5", 500, 1, "0.5"}, ParseCase{"5.", 5000, 5, "5"},
        ParseCase{"5.Gi", 5368709120000, 5368709120, "5368709120"}, ParseCase{"+1", 1000, 1, "1"},
        ParseCase{"0", 0, 0, "0"}, ParseCase{"-0", 0, 0, "0"}, ParseCase{"0.000", 0, 0, "0"},
        ParseCase{"0Ki", 0, 0, "0"}, ParseCase{"00012", 12000, 12, "12"},
        ParseCase{"12.345678901", 12346, 13, "12.345678901"},
        ParseCase{"12.345678901234", 12346, 13, "12.345678902"},  // 1n round-up
        ParseCase{"1.0001", 1001, 2, "1.0001"},
        // Negative values round away from zero.
        ParseCase{"-100m", -100, -1, "-0.1"}, ParseCase{"-1.5", -1500, -2, "-1.5"},
        ParseCase{"-1.5Ki", -1536000, -1536, "-1536"},
        ParseCase{"-1Ei", kMin, -1152921504606846976, "-1152921504606846976"},
        // Kubernetes rounds up to 1n at parse time (ParseQuantity's only rounding)...
        ParseCase{"0.0000000015", 1, 1, "0.000000002"}, ParseCase{"1e-100", 1, 1, "0.000000001"},
        ParseCase{"-1e-100", -1, -1, "-0.000000001"},
        ParseCase{"1e-99999999999999999999", 1, 1, "0.000000001"},
        ParseCase{"999999999.9999999999", 1000000000000, 1000000000, "1000000000"},
        // ... and caps magnitudes at 2^63-1.
        ParseCase{"8Ei", kMax, kMax, "9223372036854775807"},
        ParseCase{"-8Ei", kMin, -kMax, "-9223372036854775807"},
        ParseCase{"9223372036854775807", kMax, kMax, "9223372036854775807"},
        ParseCase{"9223372036854775807.5", kMax, kMax, "9223372036854775807"},
        ParseCase{"9223372036854775806.5", kMax, kMax, "9223372036854775806.5"},
        ParseCase{"9223372036854775806.999999999", kMax, kMax, "9223372036854775806.999999999"},
        ParseCase{"9223372036854775807000m", kMax, kMax, "9223372036854775807"},
        ParseCase{"999999999999999999T", kMax, kMax, "9223372036854775807"},
        ParseCase{"8589934591Gi", kMax, 9223372035781033984, "9223372035781033984"},
        ParseCase{"8589934592Gi", kMax, kMax, "9223372036854775807"},
        ParseCase{"1e19", kMax, kMax, "9223372036854775807"},
        ParseCase{"1e99999999999999999999", kMax, kMax, "9223372036854775807"},
        ParseCase{"100000000000000000000000000000Ei", kMax, kMax, "9223372036854775807"}));

struct ErrorCase {
  const char* text;
  const char* message;  // the whole Status message
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class QuantityErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(QuantityErrorTest, Rejects) {
  const ErrorCase& c = GetParam();
  Result<Quantity> q = Quantity::Parse(c.text);
  ASSERT_FALSE(q.ok()) << "parsed as " << q->ToDecimalString();
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(q.status().message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, QuantityErrorTest,
    ::testing::Values(ErrorCase{"", "quantity \"\": empty"}, ErrorCase{".", "quantity \".\": no digits"},
                      ErrorCase{"-", "quantity \"-\": no digits"},
                      ErrorCase{"+", "quantity \"+\": no digits"},
                      ErrorCase{"+.", "quantity \"+.\": no digits"},
                      ErrorCase{".Ki", "quantity \".Ki\": no digits"},
                      ErrorCase{"Ki", "quantity \"Ki\": unexpected 'K' at offset 0"},
                      ErrorCase{"e3", "quantity \"e3\": unexpected 'e' at offset 0"},
                      ErrorCase{" 1", "quantity \" 1\": unexpected ' ' at offset 0"},
                      ErrorCase{"1 ", "quantity \"1 \": unexpected ' ' at offset 1"},
                      ErrorCase{"1 Gi", "quantity \"1 Gi\": unexpected ' ' at offset 1"},
                      ErrorCase{"--1", "quantity \"--1\": unexpected '-' at offset 1"},
                      ErrorCase{"1.5.3", "quantity \"1.5.3\": unexpected '.' at offset 3"},
                      ErrorCase{"1..2", "quantity \"1..2\": unexpected '.' at offset 2"},
                      ErrorCase{"1x", "quantity \"1x\": unknown suffix \"x\""},
                      ErrorCase{"1KB", "quantity \"1KB\": unknown suffix \"KB\""},
                      ErrorCase{"1ki", "quantity \"1ki\": unknown suffix \"ki\""},
                      ErrorCase{"1K", "quantity \"1K\": unknown suffix \"K\""},
                      ErrorCase{"1Mii", "quantity \"1Mii\": unknown suffix \"Mii\""},
                      ErrorCase{"1mi", "quantity \"1mi\": unknown suffix \"mi\""},
                      ErrorCase{"0x10", "quantity \"0x10\": unknown suffix \"x10\""},
                      ErrorCase{"1e", "quantity \"1e\": exponent \"e\" has no digits"},
                      ErrorCase{"1E+", "quantity \"1E+\": exponent \"E+\" has no digits"},
                      ErrorCase{"1e3.5", "quantity \"1e3.5\": unexpected '.' at offset 3"},
                      ErrorCase{"1e3Ki", "quantity \"1e3Ki\": unexpected 'K' at offset 3"},
                      ErrorCase{"1e--3", "quantity \"1e--3\": unexpected '-' at offset 3"},
                      ErrorCase{"1\n", "quantity \"1\\x0a\": unexpected byte 0x0a at offset 1"}));

TEST(QuantityTest, LongInputIsQuotedShortInErrors) {
  const std::string text = std::string(200, '1') + "x";
  Result<Quantity> q = Quantity::Parse(text);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "quantity \"" + std::string(64, '1') + "...\": unknown suffix \"x\"");
}

// Fixed point, no heap: a ResourceList entry of a cached pod stays small.
static_assert(sizeof(Quantity) == 16);

TEST(QuantityTest, FastAndGeneralPathsAgree) {
  // The same values spelled so that one takes the common-form fast path and the other the
  // general parser.
  const std::pair<const char*, const char*> same[] = {
      {"1", "1.0"},     {"500m", "0.5"},       {"2Gi", "2.0Gi"},
      {"110", "1.1e2"}, {"3k", "3e3"},         {"7M", "7.0M"},
      {"5G", "5e9"},    {"1T", "1.0T"},        {"4Ki", "4096.0"},
      {"9Mi", "9.0Mi"}, {"1Ti", "1.0Ti"},      {"0", "0.0"},
      {"0m", "-0"},     {"000123", "123.000"}, {"999999999999999999", "999999999999999999.0"}};
  for (const auto& [fast, general] : same) {
    Result<Quantity> a = Quantity::Parse(fast), b = Quantity::Parse(general);
    ASSERT_TRUE(a.ok() && b.ok()) << fast << " " << general;
    EXPECT_EQ(*a, *b) << fast << " vs " << general;
    EXPECT_EQ(a->ToDecimalString(), b->ToDecimalString()) << fast;
    EXPECT_EQ(a->MilliValue(), b->MilliValue()) << fast;
    EXPECT_FALSE(a->negative()) << fast;
  }
}

TEST(QuantityTest, DefaultIsZero) {
  Quantity q;
  EXPECT_TRUE(q.IsZero());
  EXPECT_FALSE(q.negative());
  EXPECT_EQ(q.MilliValue(), 0);
  EXPECT_EQ(q.ToDecimalString(), "0");
  EXPECT_EQ(q, *Quantity::Parse("-0.0e5"));
}

TEST(QuantityTest, EqualityIsByValueNotSpelling) {
  EXPECT_EQ(*Quantity::Parse("1.5Ki"), *Quantity::Parse("1536"));
  EXPECT_EQ(*Quantity::Parse("1000m"), *Quantity::Parse("1"));
  EXPECT_EQ(*Quantity::Parse("0.1"), *Quantity::Parse("100m"));
  EXPECT_EQ(*Quantity::Parse("1k"), *Quantity::Parse("1e3"));
  EXPECT_EQ(*Quantity::Parse("1M"), *Quantity::Parse("1000k"));
  EXPECT_FALSE(*Quantity::Parse("1Ki") == *Quantity::Parse("1k"));
  EXPECT_FALSE(*Quantity::Parse("-1") == *Quantity::Parse("1"));
}

TEST(QuantityTest, NegativeFlag) {
  EXPECT_TRUE(Quantity::Parse("-1m")->negative());
  EXPECT_FALSE(Quantity::Parse("+1m")->negative());
  EXPECT_FALSE(Quantity::Parse("-0")->negative());
}

TEST(QuantityTest, FromMilli) {
  EXPECT_EQ(Quantity::FromMilli(1500), *Quantity::Parse("1.5"));
  EXPECT_EQ(Quantity::FromMilli(-100), *Quantity::Parse("-100m"));
  EXPECT_EQ(Quantity::FromMilli(2000), *Quantity::Parse("2"));
  EXPECT_TRUE(Quantity::FromMilli(0).IsZero());
  EXPECT_EQ(Quantity::FromMilli(kMax).MilliValue(), kMax);
  EXPECT_EQ(Quantity::FromMilli(kMin).MilliValue(), kMin);
  EXPECT_EQ(Quantity::FromMilli(kMin).ToDecimalString(), "-9223372036854775.808");
  EXPECT_EQ(Quantity::FromMilli(1).ToDecimalString(), "0.001");
  EXPECT_EQ(Quantity::FromMilli(1).Value(), 1);
}

TEST(QuantityTest, ScaledValueRoundsUpAndSaturates) {
  const Quantity q = *Quantity::Parse("1.5Gi");  // 1610612736
  EXPECT_EQ(q.ScaledValue(0), 1610612736);
  EXPECT_EQ(q.ScaledValue(3), 1610613);  // 1610612.736 → up
  EXPECT_EQ(q.ScaledValue(6), 1611);
  EXPECT_EQ(q.ScaledValue(9), 2);
  EXPECT_EQ(q.ScaledValue(18), 1);
  EXPECT_EQ(q.ScaledValue(-6), 1610612736000000);
  EXPECT_EQ(q.ScaledValue(-9), 1610612736000000000);
  EXPECT_EQ(q.ScaledValue(-12), kMax);
  EXPECT_EQ(Quantity::Parse("-1.5Gi")->ScaledValue(-12), kMin);
  EXPECT_EQ(Quantity::Parse("-1.5Gi")->ScaledValue(6), -1611);
  EXPECT_EQ(Quantity::Parse("1n")->ScaledValue(-9), 1);
  EXPECT_EQ(Quantity::Parse("1n")->ScaledValue(-18), 1000000000);
  EXPECT_EQ(Quantity::Parse("10")->ScaledValue(-18), kMax);
  EXPECT_EQ(Quantity::Parse("9")->ScaledValue(-18), 9000000000000000000);
  EXPECT_EQ(Quantity::Parse("0")->ScaledValue(-18), 0);
  // Scales outside [-18, 18] are clamped rather than overflowing.
  EXPECT_EQ(Quantity::Parse("1")->ScaledValue(-1000), 1000000000000000000);
  EXPECT_EQ(Quantity::Parse("1")->ScaledValue(1000), 1);
}

TEST(QuantityTest, HugeInputsAreFast) {
  // Thousands of digits and absurd exponents must neither hang nor overflow.
  const std::string many_digits = "0." + std::string(50000, '0') + "1";
  Result<Quantity> tiny = Quantity::Parse(many_digits);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->MilliValue(), 1);
  Result<Quantity> big = Quantity::Parse(std::string(50000, '9') + "Ei");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->Value(), kMax);
  Result<Quantity> exp = Quantity::Parse("1e" + std::string(5000, '9'));
  ASSERT_TRUE(exp.ok());
  EXPECT_EQ(exp->Value(), kMax);
}

}  // namespace
}  // namespace volcache
