// ParseDuration: the duration flags and annotations (api/duration.h).
#include "api/duration.h"

#include <gtest/gtest.h>

#include <chrono>

namespace volcache {
namespace {

using namespace std::chrono_literals;

TEST(DurationTest, ParseDuration) {
  EXPECT_EQ(*ParseDuration("1500ms"), 1500ms);
  EXPECT_EQ(*ParseDuration("90s"), 90s);
  EXPECT_EQ(*ParseDuration("5m"), 300s);
  EXPECT_EQ(*ParseDuration("2h"), 7200s);
  EXPECT_EQ(*ParseDuration("2.5s"), 2500ms);
  for (const char* bad : {"", "s", "5", "-1s", "5x", "1.2.3s", "ms"})
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
}

}  // namespace
}  // namespace volcache
