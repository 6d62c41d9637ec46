// Resource: Volcano's published test tables (pkg/scheduler/api/resource_info_test.go) as
// data, in our integer units, plus the storage, naming and saturation guarantees.
#include "api/resource.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace volcache {
namespace {

using ::testing::HasSubstr;
constexpr auto kZero = DimensionDefault::kZero;
constexpr auto kInfinity = DimensionDefault::kInfinity;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

constexpr std::string_view kS1 = "scalar.test/scalar1";
constexpr std::string_view kHp = "hugepages-test";

// Volcano's two usual shapes: cpu/memory plus scalar1 and hugepages-test.
Resource R(int64_t cpu, int64_t mem) { return Resource(cpu, mem); }
Resource R(int64_t cpu, int64_t mem, int64_t s1, int64_t hp) {
  return Resource(cpu, mem, {{kS1, s1}, {kHp, hp}});
}
Resource RS1(int64_t cpu, int64_t mem, int64_t s1) { return Resource(cpu, mem, {{kS1, s1}}); }
Resource RHp(int64_t cpu, int64_t mem, int64_t hp) { return Resource(cpu, mem, {{kHp, hp}}); }

struct CompareCase {
  Resource l;
  Resource r;
  bool want;
};

// ---------------------------------------------------------------------------------------
// Comparisons (TestLessEqual, TestLess, TestLessPartly, TestLessEqualPartly, TestEqual)

TEST(ResourceVolcanoTable, LessEqualZero) {
  const std::vector<CompareCase> cases = {
      {Resource(), Resource(), true},
      {Resource(), R(4000, 2000, 1000, 2000), true},
      {R(4000, 2000, 1000, 2000), Resource(), false},
      {R(4000, 4000, 1000, 2000), R(8000, 8000, 4000, 5000), true},
      {R(4000, 8000, 1000, 2000), R(8000, 8000, 4000, 5000), true},
      {R(4000, 4000, 4000, 2000), R(8000, 8000, 4000, 5000), true},
      {R(4000, 4000, 5000, 2000), R(8000, 8000, 4000, 5000), false},
      {R(9000, 4000, 1000, 2000), R(8000, 8000, 4000, 5000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.LessEqual(cases[i].r, kZero), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " <= " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessEqualInfinity) {
  const std::vector<CompareCase> cases = {
      {Resource(), Resource(), true},
      // Scalars absent on the left are infinite there.
      {Resource(), R(4000, 2000, 1000, 2000), false},
      {R(4000, 2000, 1000, 2000), Resource(), false},
      {R(4000, 2000), R(4000, 2000, 1000, 2000), false},
      // Scalars absent on the right are infinite there.
      {R(4000, 2000, 1000, 2000), R(4000, 2000), true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.LessEqual(cases[i].r, kInfinity), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " <= " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessZero) {
  const std::vector<CompareCase> cases = {
      {Resource(), Resource(), false},
      {Resource(), R(4000, 2000, 1000, 2000), true},
      {R(4000, 4000, 1000, 2000), R(8000, 8000, 4000, 5000), true},
      {R(4000, 4000, 5000, 2000), R(8000, 8000, 4000, 5000), false},
      {R(9000, 4000, 1000, 2000), R(8000, 8000, 4000, 5000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.Less(cases[i].r, kZero), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " < " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessInfinity) {
  const std::vector<CompareCase> cases = {
      {R(1000, 1000, 1000, 2000), RHp(2000, 2000, 3000), true},
      {RHp(1000, 1000, 1000), R(2000, 2000, 1000, 2000), false},
      {RHp(1000, 1000, 2000), R(2000, 2000, 1000, 2000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.Less(cases[i].r, kInfinity), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " < " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessPartlyZero) {
  const std::vector<CompareCase> cases = {
      {Resource(), Resource(), false},
      {Resource(), R(2000, 2000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), Resource(), false},
      {R(2000, 2000, 1000, 2000), R(4000, 2000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), R(2000, 4000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), R(2000, 2000, 2000, 2000), true},
      {RHp(2000, 2000, 2000), R(2000, 2000, 1000, 2000), true},
      {R(4000, 4000, 1000, 2000), R(2000, 2000, 1000, 2000), false},
      {R(2000, 2000, 1000, 2000), RHp(2000, 2000, 2000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.LessPartly(cases[i].r, kZero), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " vs " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessPartlyInfinity) {
  const std::vector<CompareCase> cases = {
      {RHp(2000, 2000, 2000), R(2000, 2000, 1000, 2000), false},
      {R(2000, 2000, 1000, 2000), RHp(2000, 2000, 2000), true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.LessPartly(cases[i].r, kInfinity), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " vs " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessEqualPartlyZero) {
  const std::vector<CompareCase> cases = {
      {Resource(), Resource(), true},
      {Resource(), R(2000, 2000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), Resource(), false},
      {R(2000, 2000, 1000, 2000), R(4000, 2000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), R(2000, 4000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), R(2000, 2000, 2000, 2000), true},
      {RHp(2000, 2000, 2000), R(2000, 2000, 1000, 2000), true},
      {R(4000, 4000, 1000, 2000), R(2000, 2000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), RHp(2000, 2000, 2000), true},
      // Not in Volcano's table: every dimension strictly greater.
      {R(4000, 4000, 2000, 3000), R(2000, 2000, 1000, 2000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.LessEqualPartly(cases[i].r, kZero), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " vs " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, LessEqualPartlyInfinity) {
  const std::vector<CompareCase> cases = {
      {RHp(2000, 2000, 2000), R(2000, 2000, 1000, 2000), true},
      {R(2000, 2000, 1000, 2000), RHp(2000, 2000, 2000), true},
      // Not in Volcano's table: cpu/memory/hp greater, scalar1 infinite on the right.
      {R(3000, 3000, 1000, 3000), RHp(2000, 2000, 2000), true},
      // ... and infinite on the left only: skipped, nothing else is <=.
      {RHp(3000, 3000, 3000), R(2000, 2000, 1000, 2000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.LessEqualPartly(cases[i].r, kInfinity), cases[i].want)
        << "case " << i << ": " << cases[i].l.ToString() << " vs " << cases[i].r.ToString();
  }
}

TEST(ResourceVolcanoTable, EqualZero) {
  const std::vector<CompareCase> cases = {
      {Resource(), Resource(), true},
      {R(2000, 2000), Resource(2000, 2000, {{kS1, 0}}), true},
      {RHp(2000, 2000, 2000), RHp(2000, 2000, 2000), true},
      {Resource(), R(2000, 4000, 1000, 2000), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].l.Equal(cases[i].r, kZero), cases[i].want) << "case " << i;
    EXPECT_EQ(cases[i].r.Equal(cases[i].l, kZero), cases[i].want) << "case " << i << " reversed";
  }
}

TEST(ResourceTest, EqualInfinityNeedsTheSameDimensions) {
  EXPECT_TRUE(RHp(1, 2, 3).Equal(RHp(1, 2, 3), kInfinity));
  EXPECT_FALSE(RHp(1, 2, 3).Equal(R(1, 2), kInfinity));
  EXPECT_FALSE(R(1, 2).Equal(RHp(1, 2, 0), kInfinity));
  EXPECT_TRUE(R(1, 2).Equal(RHp(1, 2, 0), kZero));
  EXPECT_FALSE(RHp(1, 2, 3).Equal(RHp(1, 2, 4), kZero));
  EXPECT_FALSE(R(1, 2).Equal(R(1, 3), kZero));
}

TEST(ResourceTest, PresentZeroAndAbsentAreTheSameUnderZero) {
  const Resource absent(1000, 1000);
  const Resource present_zero(1000, 1000, {{kS1, 0}});
  EXPECT_TRUE(absent.LessEqual(present_zero, kZero));
  EXPECT_TRUE(present_zero.LessEqual(absent, kZero));
  EXPECT_TRUE(absent.Equal(present_zero, kZero));
  EXPECT_FALSE(absent == present_zero);  // structurally different
}

TEST(ResourceTest, ComparisonsAreExactInIntegerUnits) {
  // Volcano's |l - r| < 0.1 tolerance is exactly l == r in integer units.
  EXPECT_TRUE(RS1(1000, 1, 1000).LessEqual(RS1(1000, 1, 1000), kZero));
  EXPECT_FALSE(RS1(1000, 1, 1001).LessEqual(RS1(1000, 1, 1000), kZero));
  EXPECT_FALSE(R(1001, 1).LessEqual(R(1000, 1), kZero));
  EXPECT_FALSE(R(1000, 2).LessEqual(R(1000, 1), kZero));
  EXPECT_FALSE(R(1000, 1).Less(R(1001, 1), kZero));  // memory equal
  EXPECT_TRUE(R(999, 0).Less(R(1000, 1), kZero));
  // A zero on the right that is absent on the left is "0 < 0": not less.
  EXPECT_FALSE(R(1, 1).Less(RS1(2, 2, 0), kZero));
  EXPECT_FALSE(R(1, 1).Less(RS1(2, 2, 0), kInfinity));  // left scalar infinite
  EXPECT_TRUE(RS1(1, 1, 0).Less(R(2, 2), kInfinity));   // right scalar infinite
}

// ---------------------------------------------------------------------------------------
// Diff (TestDiff)

struct DiffCase {
  Resource l;
  Resource r;
  Resource increased;
  Resource decreased;
};

TEST(ResourceVolcanoTable, DiffZero) {
  const std::vector<DiffCase> cases = {
      {Resource(), Resource(), Resource(), Resource()},
      {R(1000, 2000), Resource(), R(1000, 2000), Resource()},
      {Resource(), R(1000, 2000), Resource(), R(1000, 2000)},
      {RS1(1000, 2000, 1000), R(2000, 1000), RS1(0, 1000, 1000), R(1000, 0)},
      {R(2000, 1000), RS1(1000, 2000, 1000), R(1000, 0), RS1(0, 1000, 1000)},
      {RS1(1000, 2000, 3000), RS1(2000, 1000, 1000), RS1(0, 1000, 2000), R(1000, 0)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto [inc, dec] = cases[i].l.Diff(cases[i].r, kZero);
    EXPECT_EQ(inc, cases[i].increased) << "case " << i << ": got " << inc.ToString();
    EXPECT_EQ(dec, cases[i].decreased) << "case " << i << ": got " << dec.ToString();
  }
}

TEST(ResourceVolcanoTable, DiffInfinity) {
  const std::vector<DiffCase> cases = {
      {RS1(1000, 2000, 1000), R(2000, 1000), R(0, 1000), RS1(1000, 0, Resource::kInfiniteValue)},
      {R(2000, 1000), RS1(1000, 2000, 1000), RS1(1000, 0, Resource::kInfiniteValue), R(0, 1000)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto [inc, dec] = cases[i].l.Diff(cases[i].r, kInfinity);
    EXPECT_EQ(inc, cases[i].increased) << "case " << i << ": got " << inc.ToString();
    EXPECT_EQ(dec, cases[i].decreased) << "case " << i << ": got " << dec.ToString();
  }
}

TEST(ResourceTest, DiffReportsUnchangedScalarAsDecreasedByZero) {
  auto [inc, dec] = RS1(5, 5, 7).Diff(RS1(5, 5, 7), kZero);
  EXPECT_EQ(inc, Resource());
  EXPECT_EQ(dec, RS1(0, 0, 0));
  EXPECT_TRUE(dec.Has(static_cast<uint32_t>(ResourceNames::Find(kS1))));
}

// ---------------------------------------------------------------------------------------
// MinDimensionResource / SetMaxResource / Add / Sub / IsZero / IsEmpty

struct OpCase {
  Resource l;
  Resource r;
  Resource want;
};

TEST(ResourceVolcanoTable, MinDimensionZero) {
  const std::vector<OpCase> cases = {
      {R(4000, 2000, 1, 2), R(3000, 2000, 0, 0), R(3000, 2000, 0, 0)},
      {R(4000, 4000, 1000, 2000), R(5000, 2000, 0, 3000), R(4000, 2000, 0, 2000)},
      {R(4000, 2000, 1, 2), RS1(3000, 2000, 0), R(3000, 2000, 0, 0)},
      {R(4000, 4000, 1000, 2000), R(kMax, 2000), R(4000, 2000, 0, 0)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Resource got = cases[i].l;
    got.MinDimension(cases[i].r, kZero);
    EXPECT_EQ(got, cases[i].want) << "case " << i << ": got " << got.ToString();
  }
}

TEST(ResourceVolcanoTable, MinDimensionInfinity) {
  const std::vector<OpCase> cases = {
      {R(4000, 2000, 1, 2), RS1(3000, 2000, 0), R(3000, 2000, 0, 2)},
      {R(4000, 4000, 1000, 2000), R(kMax, 2000), R(4000, 2000, 1000, 2000)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Resource got = cases[i].l;
    got.MinDimension(cases[i].r, kInfinity);
    EXPECT_EQ(got, cases[i].want) << "case " << i << ": got " << got.ToString();
  }
}

TEST(ResourceTest, MinDimensionDoesNotAddScalarsOfTheOtherSide) {
  Resource got = R(10, 10);
  got.MinDimension(RS1(5, 20, 3), kZero);
  EXPECT_EQ(got, R(5, 10));
}

TEST(ResourceVolcanoTable, SetMax) {
  const std::vector<OpCase> cases = {
      {Resource(), R(4000, 2000, 1, 2), R(4000, 2000, 1, 2)},
      {R(4000, 4000, 1, 2), R(4000, 2000, 4, 5), R(4000, 4000, 4, 5)},
      // Not in Volcano's table: per-dimension max, scalars of either side kept.
      {RS1(1000, 9000, 7), RHp(3000, 1000, 2), R(3000, 9000, 7, 2)},
      {R(1, 1, 9, 1), R(0, 0, 1, 9), R(1, 1, 9, 9)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Resource got = cases[i].l;
    got.SetMax(cases[i].r);
    EXPECT_EQ(got, cases[i].want) << "case " << i << ": got " << got.ToString();
  }
}

TEST(ResourceVolcanoTable, Add) {
  const std::vector<OpCase> cases = {
      {Resource(), R(4000, 2000, 1, 2), R(4000, 2000, 1, 2)},
      {R(4000, 4000, 1, 2), R(4000, 2000, 4, 5), R(8000, 6000, 5, 7)},
      {RS1(4000, 4000, 1), R(4000, 2000, 4, 5), R(8000, 6000, 5, 5)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Resource got = cases[i].l;
    got.Add(cases[i].r);
    EXPECT_EQ(got, cases[i].want) << "case " << i << ": got " << got.ToString();
  }
}

TEST(ResourceVolcanoTable, Sub) {
  const std::vector<OpCase> cases = {
      {R(4000, 2000, 1, 2), Resource(), R(4000, 2000, 1, 2)},
      {R(4000, 4000, 1000, 2000), R(3000, 2000, 500, 1000), R(1000, 2000, 500, 1000)},
      // Not in Volcano's table: exactly everything.
      {R(4000, 4000, 1000, 2000), R(4000, 4000, 1000, 2000), R(0, 0, 0, 0)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Resource got = cases[i].l;
    Status st = got.Sub(cases[i].r);
    ASSERT_TRUE(st.ok()) << "case " << i << ": " << st.ToString();
    EXPECT_EQ(got, cases[i].want) << "case " << i << ": got " << got.ToString();
  }
}

TEST(ResourceTest, SubRefusesAndLeavesResourceUnchanged) {
  Resource idle(1000, 4096, {{"nvidia.com/gpu", 1000}, {kHp, 5}});
  const Resource before = idle;
  const Resource request(2000, 1024, {{"nvidia.com/gpu", 2000}, {kS1, 1}});
  Status st = idle.Sub(request);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("short of cpu, nvidia.com/gpu, scalar.test/scalar1"));
  EXPECT_THAT(st.message(), HasSubstr("resource is not sufficient"));
  EXPECT_EQ(idle, before);
}

TEST(ResourceTest, SubUncheckedGoesNegative) {
  Resource r = RS1(1000, 1000, 1);
  r.SubUnchecked(R(3000, 500, 2, 4));
  EXPECT_EQ(r, R(-2000, 500, -1, -4));
}

struct IsZeroCase {
  Resource r;
  std::string_view name;
  bool want;
};

TEST(ResourceVolcanoTable, IsZero) {
  const std::vector<IsZeroCase> cases = {
      {Resource(), "cpu", true},
      {R(4000, 4000, 4, 5), "cpu", false},
      {R(4000, 4000, 0, 5), kS1, true},
      // Not in Volcano's table.
      {R(4000, 0, 4, 5), "memory", true},
      {R(4000, 4000, 4, 5), "memory", false},
      {R(4000, 4000, 4, 5), kHp, false},
      {R(-5, 4000), "cpu", true},
      {R(4000, 4000), "never.interned/name", true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].r.IsZero(cases[i].name), cases[i].want) << "case " << i;
  }
  EXPECT_EQ(ResourceNames::Find("never.interned/name"), -1);  // IsZero did not intern
}

TEST(ResourceTest, IsEmpty) {
  EXPECT_TRUE(Resource().IsEmpty());
  EXPECT_FALSE(R(1, 0).IsEmpty());
  EXPECT_FALSE(R(0, 1).IsEmpty());
  EXPECT_TRUE(RS1(0, 0, 0).IsEmpty());
  EXPECT_FALSE(RS1(0, 0, 1).IsEmpty());
  EXPECT_TRUE(R(-5, -5, -1, 0).IsEmpty());
  // Every task request carries pods = 1; that alone does not make it non-empty.
  EXPECT_TRUE(Resource(0, 0, {{"pods", 1}}).IsEmpty());
  EXPECT_FALSE(Resource(0, 0, {{"pods", 1}, {kS1, 1}}).IsEmpty());
}

// ---------------------------------------------------------------------------------------
// FitDelta (Volcano subtracts rr + 0.1 per requested dimension; we subtract rr + 1)

TEST(ResourceTest, FitDelta) {
  const std::vector<OpCase> cases = {
      // Enough of everything: all stay >= 0.
      {R(2000, 4000, 2000, 10), R(1000, 1000, 1000, 5), R(999, 2999, 999, 4)},
      // Exactly equal is insufficient, as in Volcano (x - x - 0.1 < 0).
      {R(1000, 1000), R(1000, 1000), R(-1, -1)},
      // Dimensions not requested (zero or negative) are untouched.
      {R(1000, 1000, 5, 5), R(0, -3, 0, 0), R(1000, 1000, 5, 5)},
      // A requested scalar the node lacks becomes negative.
      {R(1000, 1000), RS1(0, 0, 2000), RS1(1000, 1000, -2001)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Resource got = cases[i].l;
    got.FitDelta(cases[i].r);
    EXPECT_EQ(got, cases[i].want) << "case " << i << ": got " << got.ToString();
  }
}

// ---------------------------------------------------------------------------------------
// Multi, saturation, formatting

TEST(ResourceTest, MultiRoundsToNearest) {
  Resource r(1000, 3, {{kS1, 1000}, {kHp, 5}});
  r.set_max_task_num(10);
  r.Multi(0.5);
  Resource want(500, 2, {{kS1, 500}, {kHp, 3}});  // 1.5 → 2, 2.5 → 3 (half away from zero)
  want.set_max_task_num(10);                      // untouched
  EXPECT_EQ(r, want);
  Resource big(kMax / 2, 7);
  big.Multi(4.0);
  EXPECT_EQ(big.milli_cpu(), kMax);
  EXPECT_EQ(big.memory(), 28);
  Resource neg(-1000, 0);
  neg.Multi(1e300);
  EXPECT_EQ(neg.milli_cpu(), kMin);
  Resource exact(kMax - 1, (int64_t{1} << 53) + 1);
  exact.Multi(1.0);
  EXPECT_EQ(exact, Resource(kMax - 1, (int64_t{1} << 53) + 1));
}

TEST(ResourceTest, ArithmeticSaturates) {
  Resource r(kMax - 1, kMin + 1, {{kS1, kMax}});
  r.Add(Resource(10, 0, {{kS1, 1}}));
  EXPECT_EQ(r.milli_cpu(), kMax);
  EXPECT_EQ(r.Get(kS1), kMax);
  r.SubUnchecked(Resource(0, 10));
  EXPECT_EQ(r.memory(), kMin);
  r.AddScalar(kS1, kMax);
  EXPECT_EQ(r.Get(kS1), kMax);
}

TEST(ResourceTest, MaxTaskNumIsNotAccounted) {
  Resource a(1, 1);
  a.set_max_task_num(110);
  Resource b(1, 1);
  b.set_max_task_num(5);
  a.Add(b);
  EXPECT_EQ(a.max_task_num(), 110);
  ASSERT_TRUE(a.Sub(b).ok());
  EXPECT_EQ(a.max_task_num(), 110);
  EXPECT_FALSE(a == Resource(1, 1));  // but it is part of structural equality
}

TEST(ResourceTest, ToStringLikeVolcanoWithScalarsByName) {
  EXPECT_EQ(Resource().ToString(), "cpu 0.00, memory 0.00");
  EXPECT_EQ(Resource(1000, 2147483648, {{"nvidia.com/gpu", 1000}, {kHp, 2}}).ToString(),
            "cpu 1000.00, memory 2147483648.00, hugepages-test 2.00, nvidia.com/gpu 1000.00");
  EXPECT_EQ(Resource(-1, kMax).ToString(), "cpu -1.00, memory 9223372036854775807.00");
}

TEST(ResourceTest, InsufficientDimensions) {
  // Volcano's LessEqualWithResourcesName table (kZero), names joined and sorted.
  EXPECT_EQ(Resource().InsufficientDimensions(Resource()), "");
  EXPECT_EQ(Resource().InsufficientDimensions(R(4000, 2000, 1000, 2000)), "");
  EXPECT_EQ(R(4000, 2000, 1000, 2000).InsufficientDimensions(Resource()),
            "cpu, memory, hugepages-test, scalar.test/scalar1");
  EXPECT_EQ(R(4000, 4000, 1000, 2000).InsufficientDimensions(R(8000, 8000, 4000, 5000)), "");
  EXPECT_EQ(R(4000, 8000, 1000, 2000).InsufficientDimensions(R(8000, 8000, 4000, 5000)), "");
  EXPECT_EQ(R(4000, 4000, 4000, 2000).InsufficientDimensions(R(8000, 8000, 4000, 5000)), "");
  EXPECT_EQ(R(4000, 4000, 5000, 2000).InsufficientDimensions(R(8000, 8000, 4000, 5000)),
            "scalar.test/scalar1");
  EXPECT_EQ(R(9000, 4000, 1000, 2000).InsufficientDimensions(R(8000, 8000, 4000, 5000)), "cpu");
}

// ---------------------------------------------------------------------------------------
// Storage: inline up to kInlineScalars, heap beyond; sorted by id; copy/move.

Resource ManyScalars(int n, int64_t base) {
  Resource r(base, base);
  for (int i = 0; i < n; ++i) r.SetScalar("example.com/dev-" + std::to_string(i), base + i);
  return r;
}

void ExpectSortedById(const Resource& r) {
  for (const Resource::Scalar* s = r.scalars_begin(); s + 1 < r.scalars_end(); ++s) {
    EXPECT_LT(s->id, (s + 1)->id);
  }
}

TEST(ResourceStorageTest, ScalarsStaySortedAndPresent) {
  Resource r;
  r.SetScalar("z.example/x", 1);
  r.SetScalar("a.example/x", 2);
  r.SetScalar(ResourceNames::kPods, 0);
  r.AddScalar("m.example/x", 5);
  r.AddScalar("m.example/x", 5);
  EXPECT_EQ(r.scalar_count(), 4);
  ExpectSortedById(r);
  EXPECT_TRUE(r.Has(ResourceNames::kPods));  // present with 0
  EXPECT_EQ(r.Get(ResourceNames::kPods), 0);
  EXPECT_EQ(r.Get("m.example/x"), 10);
  EXPECT_EQ(r.Get("not.present/x"), 0);
  r.RemoveScalar(static_cast<uint32_t>(ResourceNames::Find("a.example/x")));
  EXPECT_EQ(r.scalar_count(), 3);
  EXPECT_EQ(r.Get("a.example/x"), 0);
  r.RemoveScalar(static_cast<uint32_t>(ResourceNames::Intern("never.set/x")));  // no-op
  EXPECT_EQ(r.scalar_count(), 3);
  ExpectSortedById(r);
}

// Add and SubUnchecked walk both sorted scalar arrays at once and insert what is missing:
// against a model (a map per id) on random subsets of five scalars, including ids missing
// before, between and after the present ones, an operand with more scalars than the
// target (to the heap and back) and a Resource added to itself.
TEST(ResourceStorageTest, AddAndSubMatchAModelOnRandomScalarSets) {
  std::vector<uint32_t> ids;
  for (const char* name : {"a.example/m", "b.example/m", "c.example/m", "d.example/m"}) {
    ids.push_back(ResourceNames::Intern(name));
  }
  ids.push_back(ResourceNames::kPods);
  std::mt19937 rng(7);
  auto random = [&](std::map<uint32_t, int64_t>* model) {
    Resource r(static_cast<int64_t>(rng() % 100), static_cast<int64_t>(rng() % 100));
    for (uint32_t id : ids) {
      if (rng() % 2 == 0) continue;
      const auto v = static_cast<int64_t>(rng() % 1000);
      r.SetScalar(id, v);
      (*model)[id] = v;
    }
    return r;
  };
  auto expect = [](const Resource& r, const std::map<uint32_t, int64_t>& model, int round) {
    ASSERT_EQ(r.scalar_count(), static_cast<int>(model.size())) << "round " << round;
    for (const auto& [id, v] : model) {
      EXPECT_TRUE(r.Has(id)) << "round " << round << " id " << id;
      EXPECT_EQ(r.Get(id), v) << "round " << round << " id " << id;
    }
    ExpectSortedById(r);
  };
  for (int round = 0; round < 2000; ++round) {
    std::map<uint32_t, int64_t> a_model, b_model;
    Resource a = random(&a_model);
    const Resource b = random(&b_model);
    const bool add = rng() % 2 == 0;
    if (add) {
      a.Add(b);
    } else {
      a.SubUnchecked(b);
    }
    for (const auto& [id, v] : b_model) a_model[id] += add ? v : -v;
    expect(a, a_model, round);
    if (round % 10 == 0) {
      a.Add(a);
      for (auto& [id, v] : a_model) v *= 2;
      expect(a, a_model, round);
    }
  }
}

TEST(ResourceStorageTest, GetByNameAnswersCpuAndMemory) {
  const Resource r(1500, 4096);
  EXPECT_EQ(r.Get("cpu"), 1500);
  EXPECT_EQ(r.Get("memory"), 4096);
}

TEST(ResourceStorageTest, GrowsToHeapAndBack) {
  for (int n : {0, 1, Resource::kInlineScalars, Resource::kInlineScalars + 1, 17}) {
    SCOPED_TRACE(n);
    const Resource original = ManyScalars(n, 100);
    ASSERT_EQ(original.scalar_count(), n);
    ExpectSortedById(original);
    for (int i = 0; i < n; ++i) EXPECT_EQ(original.Get("example.com/dev-" + std::to_string(i)), 100 + i);

    Resource copy(original);
    EXPECT_EQ(copy, original);
    copy.AddScalar("example.com/dev-0", 1);  // deep copy: original unaffected
    EXPECT_FALSE(copy == original);

    Resource moved(std::move(copy));
    EXPECT_EQ(moved.Get("example.com/dev-0"), n > 0 ? 101 : 1);
    EXPECT_EQ(copy.scalar_count(), 0);  // NOLINT(bugprone-use-after-move): documented state
    copy = original;                    // a moved-from Resource is reusable
    EXPECT_EQ(copy, original);

    // Assignment between every pair of shapes.
    for (int m : {0, 2, Resource::kInlineScalars + 2, 30}) {
      Resource target = ManyScalars(m, 7);
      target = original;
      EXPECT_EQ(target, original);
      Resource target2 = ManyScalars(m, 7);
      Resource source = original;
      target2 = std::move(source);
      EXPECT_EQ(target2, original);
      Resource target3 = original;
      target3 = ManyScalars(m, 7);
      EXPECT_EQ(target3, ManyScalars(m, 7));
    }
    Resource self = original;
    const Resource& alias = self;
    self = alias;
    EXPECT_EQ(self, original);
    Resource& same = self;
    self = std::move(same);  // self-move must be harmless
    EXPECT_EQ(self.milli_cpu(), 100);
  }
}

TEST(ResourceStorageTest, AGpuPodsRequestIsInline) {
  // A TaskInfo holds one Resource and has two copies per task: 48 bytes with two inline scalars.
  static_assert(sizeof(Resource) <= 48);
  // A pod's request holds `pods` and, on a GPU pod, one more scalar: both stay in the object,
  // so copying it never allocates. A third scalar moves them to the heap.
  const auto inside = [](const Resource& r) {
    const auto* p = reinterpret_cast<const char*>(r.scalars_begin());
    const auto* o = reinterpret_cast<const char*>(&r);
    return p >= o && p < o + sizeof(Resource);
  };
  const Resource gpu_pod(1000, 1 << 30, {{"pods", 1}, {"nvidia.com/gpu", 1000}});
  const Resource copy = gpu_pod;
  EXPECT_TRUE(inside(gpu_pod));
  EXPECT_TRUE(inside(copy));
  EXPECT_EQ(copy, gpu_pod);
  Resource three = gpu_pod;
  three.SetScalar("ephemeral-storage", 1 << 20);
  EXPECT_FALSE(inside(three));
  EXPECT_EQ(three.scalar_count(), 3);
  EXPECT_EQ(three.Get("nvidia.com/gpu"), 1000);
}

TEST(ResourceStorageTest, InitializerListSetsLastValueForRepeatedName) {
  const Resource r(0, 0, {{kS1, 1}, {kS1, 5}});
  EXPECT_EQ(r.scalar_count(), 1);
  EXPECT_EQ(r.Get(kS1), 5);
}

// ---------------------------------------------------------------------------------------
// Names

TEST(ResourceNamesTest, PodsIsIdZeroAndIdsAreStable) {
  EXPECT_EQ(ResourceNames::Find("pods"), 0);
  EXPECT_EQ(ResourceNames::Intern("pods"), ResourceNames::kPods);
  EXPECT_EQ(ResourceNames::Name(ResourceNames::kPods), "pods");
  const uint32_t id = ResourceNames::Intern("stable.example/name");
  EXPECT_EQ(ResourceNames::Intern("stable.example/name"), id);
  EXPECT_EQ(ResourceNames::Find("stable.example/name"), static_cast<int64_t>(id));
  EXPECT_EQ(ResourceNames::Name(id), "stable.example/name");
  EXPECT_EQ(ResourceNames::Find("unknown.example/name"), -1);
}

TEST(ResourceNamesTest, ConcurrentInternAgrees) {
  constexpr int kThreads = 4;
  constexpr int kNames = 200;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kNames));
  std::vector<const std::string*> first_refs(kNames);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &ids] {
      for (int i = 0; i < kNames; ++i) {
        // Threads walk the names in different orders so they race on new entries.
        const int n = (t % 2 == 0) ? i : kNames - 1 - i;
        ids[t][n] = ResourceNames::Intern("concurrent.example/n" + std::to_string(n));
        (void)ResourceNames::Name(ids[t][n]).size();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int n = 0; n < kNames; ++n) {
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t][n], ids[0][n]);
    EXPECT_EQ(ResourceNames::Name(ids[0][n]), "concurrent.example/n" + std::to_string(n));
  }
  // References handed out earlier stay valid while the table grows.
  const std::string& ref = ResourceNames::Name(ids[0][0]);
  for (int i = 0; i < 1000; ++i) ResourceNames::Intern("growth.example/n" + std::to_string(i));
  EXPECT_EQ(ref, "concurrent.example/n0");
}

// ---------------------------------------------------------------------------------------
// Classification (Volcano's IsScalarResourceName plus our pods/count rules)

TEST(ResourceKindTest, Classify) {
  const std::vector<std::pair<std::string_view, ResourceKind>> cases = {
      {"cpu", ResourceKind::kCpu},
      {"memory", ResourceKind::kMemory},
      {"pods", ResourceKind::kPods},
      {"ephemeral-storage", ResourceKind::kScalar},
      {"hugepages-2Mi", ResourceKind::kScalar},
      {"hugepages-1Gi", ResourceKind::kScalar},
      {"attachable-volumes-aws-ebs", ResourceKind::kScalar},
      {"nvidia.com/gpu", ResourceKind::kScalar},
      {"kubernetes.io/batch", ResourceKind::kScalar},
      {"example.com/foo", ResourceKind::kScalar},
      {"count/pods", ResourceKind::kIgnored},
      {"count/deployments.apps", ResourceKind::kIgnored},
      {"requests.nvidia.com/gpu", ResourceKind::kIgnored},
      {"limits.nvidia.com/gpu", ResourceKind::kIgnored},
      {"requests.cpu", ResourceKind::kIgnored},
      {"storage", ResourceKind::kIgnored},
      {"foo", ResourceKind::kIgnored},
      {"CPU", ResourceKind::kIgnored},
      {"", ResourceKind::kIgnored},
  };
  for (const auto& [name, kind] : cases) {
    EXPECT_EQ(ClassifyResourceName(name), kind) << name;
  }
}

}  // namespace
}  // namespace volcache
