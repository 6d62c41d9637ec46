// InlineString: up to 30 characters in the object itself, longer ones on the heap; a value
// type that reads as a std::string_view.
#include "api/inline_string.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace volcache {
namespace {

TEST(InlineStringTest, ShortAndLongValuesReadBack) {
  InlineString empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.view(), "");
  EXPECT_EQ(empty.data()[0], '\0');

  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{29}, size_t{30}, size_t{31}, size_t{200}}) {
    const std::string v(n, 'x');
    InlineString s(v);
    EXPECT_EQ(s.view(), v) << n;
    EXPECT_EQ(s.size(), n);
    EXPECT_EQ(s.data()[n], '\0') << n;
    EXPECT_EQ(s.is_inline(), n <= InlineString::kInlineCapacity) << n;
  }
}

TEST(InlineStringTest, JoinBuildsTheKeyInPlace) {
  InlineString k = InlineString::Join("default", '/', "job-000001-3");
  EXPECT_EQ(k.view(), "default/job-000001-3");
  EXPECT_TRUE(k.is_inline());
  const std::string long_name(40, 'n');
  InlineString l = InlineString::Join("ns", '/', long_name);
  EXPECT_EQ(l.view(), "ns/" + long_name);
  EXPECT_FALSE(l.is_inline());
  EXPECT_EQ(l.data()[l.size()], '\0');
  EXPECT_EQ(InlineString::Join("", '/', "").view(), "/");
}

TEST(InlineStringTest, CopiesMovesAndAssignmentsAreValues) {
  const std::string long_v(50, 'a');
  std::vector<std::string> values = {"", "short", std::string(30, 'b'), long_v, std::string(31, 'c')};
  for (const auto& from : values) {
    for (const auto& to : values) {
      InlineString a(from), b(to);
      b = a;  // copy-assign over inline or heap
      EXPECT_EQ(b.view(), from);
      EXPECT_EQ(a.view(), from);
      InlineString c(to);
      c = std::move(b);  // move-assign: c takes b's characters
      EXPECT_EQ(c.view(), from);
      InlineString d(std::move(c));
      EXPECT_EQ(d.view(), from);
      d = std::string_view(to);
      EXPECT_EQ(d.view(), to);
      InlineString e(from);
      const InlineString& self = e;
      e = self;  // self-assignment keeps the value (through a reference: clang warns on `e = e`)
      EXPECT_EQ(e.view(), from);
      // Assigning a view of its own characters (a suffix).
      e = e.view().substr(e.size() / 2);
      EXPECT_EQ(e.view(), std::string_view(from).substr(from.size() / 2));
    }
  }
}

TEST(InlineStringTest, ComparesAsItsCharacters) {
  InlineString a("ns/a"), b("ns/b"), a2(std::string("ns/a"));
  EXPECT_TRUE(a == a2);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a == std::string_view("ns/a"));
  EXPECT_TRUE(a < b);
  EXPECT_EQ(a.str(), "ns/a");
}

}  // namespace
}  // namespace volcache
