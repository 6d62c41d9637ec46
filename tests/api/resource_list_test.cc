// ResourceFromList: Volcano's NewResource rules on a Kubernetes ResourceList.
#include "api/resource_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "api/k8s/objects.h"

namespace volcache {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

k8s::ResourceList List(std::initializer_list<std::pair<const char*, const char*>> items) {
  k8s::ResourceList list;
  for (const auto& [name, text] : items) {
    Result<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    list.emplace_back(name, q.ok() ? *q : Quantity());
  }
  return list;
}

Resource Convert(const k8s::ResourceList& list) {
  Result<Resource> r = ResourceFromList(list, "spec");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Resource();
}

TEST(ResourceFromListTest, VolcanoNewResourceTable) {
  EXPECT_EQ(Convert({}), Resource());
  // Volcano: cpu NewScaledQuantity(4, -3), memory 2000, scalar.test/scalar1 1,
  // hugepages-test 2, ephemeral-storage 3.
  EXPECT_EQ(Convert(List({{"cpu", "4m"},
                          {"memory", "2000"},
                          {"scalar.test/scalar1", "1"},
                          {"hugepages-test", "2"},
                          {"ephemeral-storage", "3"}})),
            Resource(4, 2000,
                     {{"scalar.test/scalar1", 1000}, {"hugepages-test", 2000}, {"ephemeral-storage", 3000}}));
}

TEST(ResourceFromListTest, TypicalNodeAllocatable) {
  const Resource r = Convert(List({{"cpu", "7910m"},
                                   {"memory", "31Gi"},
                                   {"pods", "110"},
                                   {"nvidia.com/gpu", "8"},
                                   {"hugepages-2Mi", "0"},
                                   {"attachable-volumes-aws-ebs", "25"}}));
  Resource want(
      7910, int64_t{31} << 30,
      {{"pods", 110}, {"nvidia.com/gpu", 8000}, {"hugepages-2Mi", 0}, {"attachable-volumes-aws-ebs", 25000}});
  want.set_max_task_num(110);
  EXPECT_EQ(r, want);
  EXPECT_TRUE(r.Has(static_cast<uint32_t>(ResourceNames::Find("hugepages-2Mi"))));  // zero kept
}

TEST(ResourceFromListTest, PodsIsACountAndSetsMaxTaskNum) {
  const Resource r = Convert(List({{"pods", "1"}}));
  EXPECT_EQ(r.max_task_num(), 1);
  EXPECT_EQ(r.Get(ResourceNames::kPods), 1);  // not 1000
  EXPECT_EQ(r.milli_cpu(), 0);
  // A fractional pod count rounds up like Kubernetes' Value().
  EXPECT_EQ(Convert(List({{"pods", "1.5"}})).Get(ResourceNames::kPods), 2);
}

TEST(ResourceFromListTest, RoundsUpLikeKubernetes) {
  const Resource r = Convert(List({{"cpu", "0.1m"}, {"memory", "0.5"}, {"example.com/x", "1u"}}));
  EXPECT_EQ(r.milli_cpu(), 1);
  EXPECT_EQ(r.memory(), 1);
  EXPECT_EQ(r.Get("example.com/x"), 1);
}

TEST(ResourceFromListTest, IgnoresNamesWeDoNotAccount) {
  const Resource r = Convert(List({{"count/pods", "5"},
                                   {"count/deployments.apps", "2"},
                                   {"requests.cpu", "4"},
                                   {"limits.memory", "1Gi"},
                                   {"requests.nvidia.com/gpu", "4"},
                                   {"storage", "10Gi"},
                                   {"foo", "3"},
                                   {"cpu", "1"}}));
  EXPECT_EQ(r, Resource(1000, 0));
  EXPECT_EQ(r.scalar_count(), 0);
}

TEST(ResourceFromListTest, RepeatedNamesAddUp) {
  const Resource r = Convert(List({{"cpu", "100m"},
                                   {"memory", "1Ki"},
                                   {"nvidia.com/gpu", "1"},
                                   {"cpu", "1"},
                                   {"memory", "1"},
                                   {"nvidia.com/gpu", "500m"},
                                   {"pods", "2"},
                                   {"pods", "3"}}));
  Resource want(1100, 1025, {{"nvidia.com/gpu", 1500}, {"pods", 5}});
  want.set_max_task_num(5);
  EXPECT_EQ(r, want);
}

TEST(ResourceFromListTest, SumsSaturateInsteadOfOverflowing) {
  // Each amount fits in int64 on its own; their sums do not.
  const Resource r = Convert(List({{"cpu", "9e15"},
                                   {"cpu", "9e15"},
                                   {"memory", "4Ei"},
                                   {"memory", "4Ei"},
                                   {"pods", "1e12"},
                                   {"example.com/x", "5P"},
                                   {"example.com/x", "5P"}}));
  EXPECT_EQ(r.milli_cpu(), kMax);
  EXPECT_EQ(r.memory(), kMax);
  EXPECT_EQ(r.max_task_num(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(r.Get(ResourceNames::kPods), 1000000000000);
  EXPECT_EQ(r.Get("example.com/x"), kMax);
}

TEST(ResourceFromListTest, AmountPastInt64IsRefusedNamingFieldAndValue) {
  // Kubernetes would saturate these at 2^63-1; volcache cannot account them exactly.
  for (const auto& [name, text] : std::vector<std::pair<const char*, const char*>>{
           {"memory", "999Ei"}, {"cpu", "1Ei"}, {"example.com/x", "1E"}}) {
    Result<Resource> r = ResourceFromList(List({{name, text}}), "spec.containers[0].resources.requests");
    ASSERT_FALSE(r.ok()) << name << " " << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(
        r.status().message(),
        ::testing::HasSubstr(std::string("spec.containers[0].resources.requests.") + name + ": quantity "));
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("2^63-1"));
  }
  // Exactly 2^63-1 too: it is what the API server sends back for "999Ei".
  EXPECT_FALSE(ResourceFromList(List({{"memory", "9223372036854775807"}}), "x").ok());
  EXPECT_TRUE(ResourceFromList(List({{"memory", "9223372036854775806"}}), "x").ok());
}

TEST(ResourceFromListTest, NegativeQuantityNamesFieldAndValue) {
  Result<Resource> r =
      ResourceFromList(List({{"memory", "1Gi"}, {"cpu", "-100m"}}), "spec.containers[0].resources.requests");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "spec.containers[0].resources.requests.cpu: quantity must not be negative, got -0.1");

  Result<Resource> gpu = ResourceFromList(List({{"nvidia.com/gpu", "-1"}}), "status.allocatable");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message(),
            "status.allocatable.nvidia.com/gpu: quantity must not be negative, got -1");

  // Negative is invalid even under a name we would ignore.
  Result<Resource> ignored = ResourceFromList(List({{"count/pods", "-2"}}), "spec.hard");
  ASSERT_FALSE(ignored.ok());
  EXPECT_EQ(ignored.status().message(), "spec.hard.count/pods: quantity must not be negative, got -2");

  // Negative zero is zero.
  EXPECT_TRUE(ResourceFromList(List({{"cpu", "-0"}}), "spec").ok());
}

}  // namespace
}  // namespace volcache
