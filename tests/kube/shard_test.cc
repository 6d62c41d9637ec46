// The hash ring against Volcano's (stathat.com/c/consistent v1.0.0), and the settings rules.
//
// Expected owners were computed once, independently of this code, by a small Python model of
// stathat/consistent v1.0.0 using zlib.crc32: for each member m (in order) and replica
// i in 0..19, point crc32(str(i) + m) -> m (a later member overwrites a colliding point); the
// sorted points; owner(key) = the member of the first point strictly greater than
// crc32(key), wrapping to the first point (bisect.bisect_right). Members were
// "volcano-scheduler-0" .. "volcano-scheduler-(N-1)".
#include "kube/shard.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace volcache::kube {
namespace {

std::vector<std::string> Members(int n, const std::string& base = "volcano-scheduler") {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(base + "-" + std::to_string(i));
  return out;
}

TEST(Crc32IeeeTest, KnownValues) {
  EXPECT_EQ(Crc32Ieee(""), 0u);
  EXPECT_EQ(Crc32Ieee("123456789"), 0xCBF43926u);  // the CRC-32/ISO-HDLC check value
  // zlib.crc32 (see the file comment).
  EXPECT_EQ(Crc32Ieee("0volcano-scheduler-0"), 0xE3A9882Du);
  EXPECT_EQ(Crc32Ieee("1volcano-scheduler-0"), 0x86CEB36Bu);
  EXPECT_EQ(Crc32Ieee("node-0"), 0x64F52CC9u);
  EXPECT_EQ(Crc32Ieee("job-b"), 0xBE203A71u);
  EXPECT_EQ(Crc32Ieee(std::string("a-very-long-key-") + std::string(70, 'x')), 0xA4AB6EE9u);
}

// Owners by member index, from the Python model (file comment).
TEST(HashRingTest, OwnersMatchVolcanosRing) {
  const std::vector<std::string> keys = {
      "node-0", "node-1",  "node-2",  "node-7", "job-a",
      "job-b",  "gang-17", "volcano", "",       std::string("a-very-long-key-") + std::string(70, 'x')};
  const std::map<int, std::vector<int>> want = {
      {1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {2, {0, 0, 0, 1, 0, 1, 0, 1, 0, 0}},
      {3, {2, 0, 0, 1, 0, 1, 2, 1, 2, 0}},
      {5, {2, 0, 0, 1, 0, 1, 2, 1, 2, 4}},
  };
  for (const auto& [n, owners] : want) {
    HashRing ring(Members(n));
    EXPECT_EQ(ring.points(), static_cast<size_t>(20 * n));  // no collisions among these names
    for (size_t k = 0; k < keys.size(); ++k) {
      EXPECT_EQ(ring.Owner(keys[k]), "volcano-scheduler-" + std::to_string(owners[k]))
          << "N=" << n << " key \"" << keys[k] << "\"";
    }
  }
}

TEST(HashRingTest, SearchIsStrictlyGreaterAndWraps) {
  HashRing ring(Members(3));
  // The key's hash equals member 0's replica-0 point: the owner is the member of the NEXT
  // point (stathat searches for a point > hash), here volcano-scheduler-2; a ">=" search would
  // answer volcano-scheduler-0.
  EXPECT_EQ(ring.Owner("0volcano-scheduler-0"), "volcano-scheduler-2");
  EXPECT_EQ(ring.Owner("19volcano-scheduler-0"), "volcano-scheduler-0");  // next point is also 0's
  EXPECT_EQ(ring.Owner("7volcano-scheduler-0"), "volcano-scheduler-1");
  // Above the last point (0xfcee6951, volcano-scheduler-1): wraps to the first point
  // (0x008003ad, volcano-scheduler-2). crc32("wrap-51") = 0xfe5e744f.
  EXPECT_EQ(ring.Owner("wrap-51"), "volcano-scheduler-2");
  // Below the first point: the first point.
  EXPECT_EQ(ring.Owner(""), "volcano-scheduler-2");
}

TEST(HashRingTest, EmptyRingOwnsNothing) {
  HashRing ring({});
  EXPECT_EQ(ring.Owner("x"), "");
}

TEST(HashRingTest, GrowingMovesKeysOnlyToTheNewMember) {
  for (int n = 1; n < 6; ++n) {
    HashRing before(Members(n)), after(Members(n + 1));
    int moved = 0;
    const int keys = 2000;
    for (int k = 0; k < keys; ++k) {
      const std::string key = "job-" + std::to_string(k);
      const std::string& a = before.Owner(key);
      const std::string& b = after.Owner(key);
      if (a != b) {
        ++moved;
        EXPECT_EQ(b, "volcano-scheduler-" + std::to_string(n)) << key << " moved between old members";
      }
    }
    // About 1/(n+1) of the keys move (20 points per member: uneven, so a wide margin).
    EXPECT_GT(moved, 0) << "N " << n << " -> " << n + 1;
    EXPECT_LT(moved, keys * 2 / (n + 1)) << "N " << n << " -> " << n + 1;
  }
}

TEST(HashRingTest, CollidingPointGoesToTheLaterMember) {
  // The same member twice collides on all 20 points: Go's map keeps the later assignment.
  HashRing ring({"a-0", "a-0"});
  EXPECT_EQ(ring.points(), 20u);
  EXPECT_EQ(ring.Owner("anything"), "a-0");
}

TEST(ShardKeyTest, FirstOwnerReferenceElseName) {
  k8s::ObjectMeta meta;
  meta.name = "job-a-worker-0";
  EXPECT_EQ(ShardKey(meta), "job-a-worker-0");
  meta.owner_references.push_back({"batch.volcano.sh/v1alpha1", "Job", "job-a", "uid-1", true});
  meta.owner_references.push_back({"v1", "Other", "other", "uid-2", false});
  EXPECT_EQ(ShardKey(meta), "job-a");
}

TEST(ResolveShardTest, OffByDefaultAndWhenFalse) {
  auto r = ResolveShard({});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  r = ResolveShard({.enable_env = "false", .num_env = "garbage"});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  // The flag wins over the variable.
  r = ResolveShard({.enable_env = "true", .num_env = "3", .pod_name_env = "s-1", .enable_flag = false});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(ResolveShardTest, VolcanosEnvironment) {
  auto r = ResolveShard({.enable_env = "true", .num_env = "3", .pod_name_env = "volcano-scheduler-2"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->pod_name, "volcano-scheduler-2");
  EXPECT_EQ((*r)->base, "volcano-scheduler");
  EXPECT_EQ((*r)->num, 3);
  Shard shard(**r);
  EXPECT_EQ(shard.members(), Members(3));
  // From the Python model: N=3 gives node-7 to member 1, gang-17 to member 2.
  EXPECT_FALSE(shard.OwnsNode("node-7"));
  EXPECT_TRUE(shard.OwnsKey("gang-17"));
}

TEST(ResolveShardTest, FlagsWinOverEnvironment) {
  auto r = ResolveShard({.enable_env = "false",
                         .num_env = "9",
                         .pod_name_env = "env-name-8",
                         .enable_flag = true,
                         .num_flag = "2",
                         .pod_name_flag = "flag-name-1"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->pod_name, "flag-name-1");
  EXPECT_EQ((*r)->base, "flag-name");
  EXPECT_EQ((*r)->num, 2);
}

TEST(ResolveShardTest, BadValuesNameTheFlagOrVariable) {
  struct Case {
    ShardSettings settings;
    std::string want;  // substring of the message
  };
  const Case cases[] = {
      {{.enable_env = "yes"}, "MULTI_SCHEDULER_ENABLE=\"yes\""},
      {{.enable_env = "true", .pod_name_env = "s-0"}, "SCHEDULER_NUM"},
      {{.enable_env = "true", .num_env = "0", .pod_name_env = "s-0"}, "SCHEDULER_NUM=\"0\""},
      {{.enable_env = "true", .num_env = "-2", .pod_name_env = "s-0"}, "SCHEDULER_NUM=\"-2\""},
      {{.enable_env = "true", .num_env = "3x", .pod_name_env = "s-0"}, "SCHEDULER_NUM=\"3x\""},
      {{.enable_env = "true", .num_env = "5000", .pod_name_env = "s-0"}, "SCHEDULER_NUM=\"5000\""},
      {{.enable_flag = true, .num_flag = "two", .pod_name_flag = "s-0"}, "--scheduler-num=\"two\""},
      {{.enable_env = "true", .num_env = "3"}, "SCHEDULER_POD_NAME"},
      {{.enable_env = "true", .num_env = "3", .pod_name_env = "scheduler"},
       "SCHEDULER_POD_NAME=\"scheduler\""},
      {{.enable_env = "true", .num_env = "3", .pod_name_env = "-1"}, "SCHEDULER_POD_NAME=\"-1\""},
      {{.enable_env = "true", .num_env = "3", .pod_name_env = "s-x"}, "SCHEDULER_POD_NAME=\"s-x\""},
      {{.enable_env = "true", .num_env = "3", .pod_name_env = "s-3"}, "would own nothing"},
      {{.enable_env = "true", .num_env = "3", .pod_name_env = "s-01"}, "SCHEDULER_POD_NAME=\"s-01\""},
      {{.enable_flag = true, .num_flag = "3", .pod_name_flag = "s-7"}, "--scheduler-pod-name=\"s-7\""},
  };
  for (const Case& c : cases) {
    auto r = ResolveShard(c.settings);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace volcache::kube
