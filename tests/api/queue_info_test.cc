#include "api/queue_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/k8s/objects.h"
#include "api/quantity.h"

namespace volcache {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGi = 1024ll * 1024 * 1024;

k8s::ResourceList RL(std::initializer_list<std::pair<std::string, std::string>> items) {
  k8s::ResourceList out;
  for (const auto& [name, text] : items) {
    Result<Quantity> q = Quantity::Parse(text);
    EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
    out.emplace_back(name, q.ok() ? *q : Quantity());
  }
  return out;
}

std::shared_ptr<k8s::Queue> MakeQueue(std::string name) {
  auto q = std::make_shared<k8s::Queue>();
  q->metadata.name = std::move(name);
  q->metadata.uid = "uid-" + q->metadata.name;
  return q;
}

QueueInfo From(std::shared_ptr<const k8s::Queue> q) {
  Result<QueueInfo> r = QueueInfo::FromQueue(std::move(q));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : QueueInfo();
}

TEST(QueueInfoTest, FromQueueReadsSpecStatusAndAnnotations) {
  auto q = MakeQueue("research");
  q->spec.weight = 4;
  q->spec.capability = RL({{"cpu", "100"}, {"memory", "200Gi"}, {"nvidia.com/gpu", "8"}});
  q->spec.deserved = RL({{"cpu", "40"}, {"memory", "80Gi"}});
  q->spec.guarantee = RL({{"cpu", "10"}, {"memory", "20Gi"}});
  q->spec.parent = "science";
  q->spec.reclaimable = false;
  q->status.state = "Closing";
  q->status.allocated = RL({{"cpu", "12500m"}, {"memory", "30Gi"}, {"pods", "7"}});
  q->metadata.annotations[std::string(kHierarchyAnnotation)] = "root/science/research";
  q->metadata.annotations[std::string(kHierarchyWeightsAnnotation)] = "1/2/4";

  QueueInfo info = From(q);
  EXPECT_EQ(info.name, "research");
  EXPECT_EQ(info.weight, 4);
  EXPECT_TRUE(info.has_capability);
  EXPECT_EQ(info.capability.milli_cpu(), 100000);
  EXPECT_EQ(info.capability.memory(), 200 * kGi);
  EXPECT_EQ(info.capability.Get("nvidia.com/gpu"), 8000);
  EXPECT_EQ(info.deserved.milli_cpu(), 40000);
  EXPECT_EQ(info.deserved.memory(), 80 * kGi);
  EXPECT_EQ(info.guarantee.milli_cpu(), 10000);
  EXPECT_EQ(info.guarantee.memory(), 20 * kGi);
  EXPECT_EQ(info.parent, "science");
  EXPECT_FALSE(info.reclaimable);
  EXPECT_EQ(info.state, QueueState::kClosing);
  EXPECT_EQ(info.allocated.milli_cpu(), 12500);
  EXPECT_EQ(info.allocated.memory(), 30 * kGi);
  EXPECT_EQ(info.allocated.Get("pods"), 7);
  EXPECT_EQ(info.hierarchy, "root/science/research");
  EXPECT_EQ(info.hierarchy_weights, "1/2/4");
  EXPECT_EQ(info.queue.get(), q.get());
}

TEST(QueueInfoTest, DefaultsForAMinimalQueue) {
  QueueInfo info = From(MakeQueue("default"));
  EXPECT_EQ(info.weight, 1);
  EXPECT_FALSE(info.has_capability);
  EXPECT_TRUE(info.capability.IsEmpty());
  EXPECT_TRUE(info.deserved.IsEmpty());
  EXPECT_TRUE(info.guarantee.IsEmpty());
  EXPECT_TRUE(info.allocated.IsEmpty());
  EXPECT_TRUE(info.reclaimable);             // absent means reclaimable
  EXPECT_EQ(info.state, QueueState::kOpen);  // no controller has written a state yet
  EXPECT_EQ(info.parent, "root");
  EXPECT_EQ(info.hierarchy, "");
}

TEST(QueueInfoTest, ReclaimableExplicitTrue) {
  auto q = MakeQueue("q");
  q->spec.reclaimable = true;
  EXPECT_TRUE(From(q).reclaimable);
}

TEST(QueueInfoTest, StateFromStatus) {
  struct Row {
    std::string state;
    QueueState want;
  };
  for (const Row& row :
       {Row{"", QueueState::kOpen}, Row{"Open", QueueState::kOpen}, Row{"Closed", QueueState::kClosed},
        Row{"Closing", QueueState::kClosing}, Row{"Unknown", QueueState::kUnknown},
        Row{"open", QueueState::kUnknown}, Row{"Draining", QueueState::kUnknown}}) {
    SCOPED_TRACE(row.state);
    auto q = MakeQueue("q");
    q->status.state = row.state;
    EXPECT_EQ(From(q).state, row.want);
  }
}

TEST(QueueInfoTest, ParentDefaultsToRootExceptForRoot) {
  struct Row {
    std::string name;
    std::string parent;
    std::string want;
  };
  for (const Row& row : {Row{"q1", "", "root"}, Row{"q1", "team-a", "team-a"}, Row{"root", "", ""}}) {
    SCOPED_TRACE(row.name + "/" + row.parent);
    auto q = MakeQueue(row.name);
    q->spec.parent = row.parent;
    EXPECT_EQ(From(q).parent, row.want);
  }
}

TEST(QueueInfoTest, StateNames) {
  EXPECT_EQ(QueueStateName(QueueState::kOpen), "Open");
  EXPECT_EQ(QueueStateName(QueueState::kClosed), "Closed");
  EXPECT_EQ(QueueStateName(QueueState::kClosing), "Closing");
  EXPECT_EQ(QueueStateName(QueueState::kUnknown), "Unknown");
}

TEST(QueueInfoTest, InvalidQuantityNamesQueueAndField) {
  struct Row {
    std::string field;
    void (*set)(k8s::Queue&, k8s::ResourceList);
  };
  const std::vector<Row> rows = {
      {"spec.capability", [](k8s::Queue& q, k8s::ResourceList l) { q.spec.capability = std::move(l); }},
      {"spec.deserved", [](k8s::Queue& q, k8s::ResourceList l) { q.spec.deserved = std::move(l); }},
      {"spec.guarantee.resource",
       [](k8s::Queue& q, k8s::ResourceList l) { q.spec.guarantee = std::move(l); }},
      {"status.allocated", [](k8s::Queue& q, k8s::ResourceList l) { q.status.allocated = std::move(l); }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.field);
    auto q = MakeQueue("bad");
    row.set(*q, RL({{"cpu", "-2"}}));
    Result<QueueInfo> r = QueueInfo::FromQueue(q);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("Queue bad"));
    EXPECT_THAT(r.status().message(), HasSubstr(row.field));
  }
  EXPECT_FALSE(QueueInfo::FromQueue(nullptr).ok());
}

}  // namespace
}  // namespace volcache
