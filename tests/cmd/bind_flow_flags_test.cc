// BATCH_BIND_NUM is read here, in the command layer, and nowhere else.
#include "cmd/bind_flow_flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace volcache::cmd {
namespace {

TEST(BindFlowOptionsFromEnvTest, ParsesBatchBindNum) {
  struct Case {
    std::optional<std::string> value;  // nullopt: unset
    size_t want;
    bool error;
  };
  const Case cases[] = {
      {std::nullopt, 4, false}, {"", 4, false},
      {"8", 8, false},          {"+16", 16, false},
      {"1", 1, false},          {"0", 4, true},
      {"-3", 4, true},          {"abc", 4, true},
      {"5x", 4, true},          {" 5", 4, true},
      {"+", 4, true},           {"+-5", 4, true},
      {"2.5", 4, true},         {"99999999999999999999999", 4, true},
  };
  BindFlowOptions base;
  base.batch_size = 4;
  base.channel_capacity = 77;
  for (const Case& c : cases) {
    if (c.value) {
      ASSERT_EQ(setenv(kBatchBindNumEnv, c.value->c_str(), 1), 0);
    } else {
      ASSERT_EQ(unsetenv(kBatchBindNumEnv), 0);
    }
    Status error = Status::Internal("not written");
    BindFlowOptions got = BindFlowOptionsFromEnv(base, &error);
    const std::string label = c.value ? "\"" + *c.value + "\"" : "unset";
    EXPECT_EQ(got.batch_size, c.want) << label;
    EXPECT_EQ(got.channel_capacity, 77u) << label;  // other fields untouched
    EXPECT_EQ(!error.ok(), c.error) << label << ": " << error.ToString();
    if (c.error) {
      EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(error.message().find("BATCH_BIND_NUM"), std::string::npos) << error.ToString();
    }
    EXPECT_EQ(BindFlowOptionsFromEnv(base).batch_size, c.want) << label;  // error is optional
  }
  unsetenv(kBatchBindNumEnv);
}

TEST(BindFlowFlagsTest, FlagsWinOverTheEnvironmentAndABadValueIsAnErrorNamingIt) {
  BindFlowFlags f;
  CLI::App app;
  AddBindFlowFlags(app, &f, /*with_channel_capacity=*/true);
  ASSERT_EQ(setenv(kBatchBindNumEnv, "6", 1), 0);
  BindFlowOptions o;
  ASSERT_TRUE(ApplyBindFlowFlags(f, &o).ok());
  EXPECT_EQ(o.batch_size, 6u);  // the environment, no flag given

  const char* argv[] = {"t", "--batch-bind-num",        "3", "--max-concurrent-binds",
                        "9", "--bind-channel-capacity", "11"};
  app.parse(7, const_cast<char**>(argv));
  o = BindFlowOptions{};
  ASSERT_TRUE(ApplyBindFlowFlags(f, &o).ok());
  EXPECT_EQ(o.batch_size, 3u);
  EXPECT_EQ(o.max_concurrent_binds, 9u);
  EXPECT_EQ(o.channel_capacity, 11u);

  ASSERT_EQ(setenv(kBatchBindNumEnv, "lots", 1), 0);
  o = BindFlowOptions{};
  Status s = ApplyBindFlowFlags(f, &o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("BATCH_BIND_NUM=\"lots\""), std::string::npos) << s.ToString();
  EXPECT_EQ(o.batch_size, BindFlowOptions{}.batch_size);  // unchanged on error
  unsetenv(kBatchBindNumEnv);
}

}  // namespace
}  // namespace volcache::cmd
