// InlineChars<N>: up to N - 2 characters in the object itself, longer ones on the heap; a
// value type that reads as a std::string_view. The size in use: ShortString (16 bytes, an
// object's name); InlineChars<28> is tested too (a task's key was one until session 27). UidString
// (8 bytes, an object's uid) keeps every character on the heap and reads the same way.
#include "api/inline_string.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace volcache {
namespace {

template <class S>
class InlineCharsTest : public ::testing::Test {};
using Sizes = ::testing::Types<InlineChars<28>, ShortString, UidString>;
TYPED_TEST_SUITE(InlineCharsTest, Sizes);

TYPED_TEST(InlineCharsTest, ShortAndLongValuesReadBack) {
  using S = TypeParam;
  S empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.view(), "");
  EXPECT_EQ(empty.data()[0], '\0');

  for (size_t n : {size_t{1}, size_t{13}, size_t{14}, size_t{15}, size_t{16}, size_t{29}, size_t{30},
                   size_t{31}, size_t{36}, size_t{200}}) {
    const std::string v(n, 'x');
    S s(v);
    EXPECT_EQ(s.view(), v) << n;
    EXPECT_EQ(s.size(), n);
    EXPECT_EQ(s.c_str()[n], '\0') << n;
    EXPECT_EQ(s.is_inline(), n <= S::kInlineCapacity) << n;
  }
}

TYPED_TEST(InlineCharsTest, CopiesMovesAndAssignmentsAreValues) {
  using S = TypeParam;
  const std::string long_v(50, 'a');
  std::vector<std::string> values = {"",
                                     "short",
                                     std::string(14, 'd'),
                                     std::string(15, 'e'),
                                     std::string(30, 'b'),
                                     long_v,
                                     std::string(31, 'c')};
  for (const auto& from : values) {
    for (const auto& to : values) {
      S a(from), b(to);
      b = a;  // copy-assign over inline or heap
      EXPECT_EQ(b.view(), from);
      EXPECT_EQ(a.view(), from);
      S c(to);
      c = std::move(b);  // move-assign: c takes b's characters
      EXPECT_EQ(c.view(), from);
      S d(std::move(c));
      EXPECT_EQ(d.view(), from);
      d = std::string_view(to);
      EXPECT_EQ(d.view(), to);
      S e(from);
      const S& self = e;
      e = self;  // self-assignment keeps the value (through a reference: clang warns on `e = e`)
      EXPECT_EQ(e.view(), from);
      // Assigning a view of its own characters (a suffix).
      e = e.view().substr(e.size() / 2);
      EXPECT_EQ(e.view(), std::string_view(from).substr(from.size() / 2));
    }
  }
}

// As a field that was a std::string: it compares, concatenates, converts, formats and
// serializes as one, with every kind of string on either side.
TYPED_TEST(InlineCharsTest, ReadsAsTheStringItReplaced) {
  using S = TypeParam;
  const std::string uid = "0c7a5e4e-1b2f-4a3c-9d8e-7f6a5b4c3d2e";
  const S s(uid), short_one("42");
  const std::string copy = s;  // converts
  EXPECT_EQ(copy, uid);
  EXPECT_TRUE(s == uid);
  EXPECT_TRUE(uid == s);
  EXPECT_TRUE(s == uid.c_str());
  EXPECT_TRUE(short_one == "42");
  EXPECT_TRUE(s != "other");
  EXPECT_TRUE(s < short_one);  // "0c7a..." < "42"
  EXPECT_TRUE(short_one < std::string("5"));
  EXPECT_TRUE(std::string("41") < short_one);
  EXPECT_EQ(short_one + "/x", "42/x");
  EXPECT_EQ("x/" + short_one, "x/42");
  EXPECT_EQ(std::string("a") + short_one + 'b', "a42b");
  EXPECT_EQ(fmt::format("[{}]", short_one), "[42]");
  EXPECT_EQ(s.substr(0, 4), "0c7a");
  EXPECT_EQ(s.substr(33), "d2e");
  std::ostringstream os;
  os << s;
  EXPECT_EQ(os.str(), uid);
  nlohmann::json j = s;
  EXPECT_EQ(j, uid);
  EXPECT_EQ(j.get<S>(), s);
  // A key of a transparent map, found by any string.
  std::map<S, int, std::less<>> m = {{S("a"), 1}, {s, 2}};
  EXPECT_EQ(m.find(std::string_view(uid))->second, 2);
  EXPECT_EQ(std::hash<S>{}(s), std::hash<std::string_view>{}(uid));
}

}  // namespace
}  // namespace volcache
