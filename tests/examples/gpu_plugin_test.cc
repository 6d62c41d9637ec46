// The example GPU plugin (examples/gpu-plugin) end to end: BindFlow → its pre-binder →
// RestBinder → the loopback API server. The pod carries `volcano.sh/gpu-index` after the
// bind; a refused Binding takes the annotation off again and releases the devices.
#include "gpu_plugin.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "api/quantity.h"
#include "kube/rest_writers.h"
#include "tests/fakes/bind_outcomes.h"
#include "tests/kube/fake_apiserver.h"
#include "workers/bind_flow.h"
#include "workers/clock.h"
#include "workers/executor.h"

namespace volcache {
namespace {

using testing::FakeApiServer;
using testing::FaultRule;
using testing::PodJson;

// A task for pod ns/name (uid as PodJson gives it) requesting `gpus` nvidia.com/gpu.
TaskInfo GpuTask(const std::string& ns, const std::string& name, int gpus) {
  auto pod = std::make_shared<k8s::Pod>();
  pod->metadata.namespace_ = ns;
  pod->metadata.name = name;
  pod->metadata.uid = ns + "-" + name + "-uid";
  pod->spec.scheduler_name = "volcano";
  k8s::Container c;
  c.name = "main";
  c.requests.emplace_back("nvidia.com/gpu", *Quantity::Parse(std::to_string(gpus)));
  pod->spec.containers.push_back(c);
  return TaskInfo::FromPod(std::move(pod)).value();
}

using Outcomes = testing::BindOutcomes;

class GpuPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    alloc_.AddNode("gpu-a", 4);
    ASSERT_TRUE(registry_.Register(std::make_shared<gpu_plugin::GpuPreBinder>(&alloc_)).ok());
    client_ = std::move(kube::RestClient::Create(server_.Config()).value());
    binder_ = std::make_unique<kube::RestBinder>(client_.get());
    flow_ = std::make_unique<BindFlow>(BindFlowOptions{}, clock_, binder_.get(), &registry_, &outcomes_,
                                       &inline_);
  }
  // As CacheRuntime::Bind: the handler fills its extension, then the context is queued.
  void Bind(const std::string& name, int gpus) {
    auto ctx = std::make_unique<BindContext>();
    ctx->task = GpuTask("ml", name, gpus);
    ctx->node_name = "gpu-a";
    ASSERT_TRUE(handler_.SetupBindContextExtension(nullptr, *ctx).ok());
    ASSERT_TRUE(flow_->Push(std::move(ctx)).ok());
    flow_->FlushOnce();  // inline: every outcome has been handled when it returns
  }
  std::optional<std::string> Annotation(const std::string& name) const {
    auto pod = server_.Get("pods", "ml", name);
    if (!pod || !(*pod)["metadata"].contains("annotations")) return std::nullopt;
    const auto& a = (*pod)["metadata"]["annotations"];
    if (!a.contains(gpu_plugin::kAnnotation)) return std::nullopt;
    return a[gpu_plugin::kAnnotation].get<std::string>();
  }
  std::string NodeOf(const std::string& name) const {
    auto pod = server_.Get("pods", "ml", name);
    return pod ? (*pod)["spec"].value("nodeName", "") : "";
  }

  FakeApiServer server_;
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<kube::RestBinder> binder_;
  gpu_plugin::DeviceAllocator alloc_;
  gpu_plugin::GpuBindHandler handler_;
  PreBinderRegistry registry_;
  Outcomes outcomes_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  InlineExecutor inline_;
  std::unique_ptr<BindFlow> flow_;
};

TEST_F(GpuPluginTest, TheBoundPodCarriesItsDeviceIndices) {
  server_.Upsert(PodJson("ml", "trainer-0", "1", "1Gi"));
  server_.Upsert(PodJson("ml", "trainer-1", "1", "1Gi"));
  Bind("trainer-0", 2);
  Bind("trainer-1", 1);
  EXPECT_TRUE(outcomes_.Of("trainer-0").ok()) << outcomes_.Of("trainer-0").ToString();
  EXPECT_TRUE(outcomes_.Of("trainer-1").ok()) << outcomes_.Of("trainer-1").ToString();
  EXPECT_EQ(NodeOf("trainer-0"), "gpu-a");
  EXPECT_EQ(Annotation("trainer-0"), "0,1");
  EXPECT_EQ(Annotation("trainer-1"), "2");
  EXPECT_EQ(alloc_.Free("gpu-a"), 1);  // held by the bound pods
}

TEST_F(GpuPluginTest, RefusedBindingRemovesTheAnnotationAndReleasesTheDevices) {
  server_.Upsert(PodJson("ml", "trainer-0", "1", "1Gi", "", "volcano", "elsewhere"));  // Binding → 409
  Bind("trainer-0", 2);
  EXPECT_EQ(outcomes_.Of("trainer-0").code(), StatusCode::kConflict) << outcomes_.Of("trainer-0").ToString();
  EXPECT_EQ(NodeOf("trainer-0"), "elsewhere");
  EXPECT_EQ(Annotation("trainer-0"), std::nullopt);
  EXPECT_EQ(alloc_.Free("gpu-a"), 4);
  // The devices are free again for the next task.
  server_.Upsert(PodJson("ml", "trainer-1", "1", "1Gi"));
  Bind("trainer-1", 4);
  EXPECT_TRUE(outcomes_.Of("trainer-1").ok()) << outcomes_.Of("trainer-1").ToString();
  EXPECT_EQ(Annotation("trainer-1"), "0,1,2,3");
}

TEST_F(GpuPluginTest, RefusedPatchSendsNoBindingAndReleasesTheDevices) {
  server_.Upsert(PodJson("ml", "trainer-0", "1", "1Gi"));
  server_.AddFault(FaultRule{"PATCH", "/pods/trainer-0", 403, "Forbidden"});
  Bind("trainer-0", 2);
  EXPECT_EQ(outcomes_.Of("trainer-0").code(), StatusCode::kFailedPrecondition)
      << outcomes_.Of("trainer-0").ToString();
  EXPECT_EQ(server_.counters().binds, 0u);
  EXPECT_EQ(NodeOf("trainer-0"), "");
  EXPECT_EQ(alloc_.Free("gpu-a"), 4);
}

TEST_F(GpuPluginTest, TooFewDevicesFailsAtPreBindWithoutTouchingThePod) {
  server_.Upsert(PodJson("ml", "trainer-0", "1", "1Gi"));
  Bind("trainer-0", 5);
  EXPECT_EQ(outcomes_.Of("trainer-0").code(), StatusCode::kFailedPrecondition);
  auto c = server_.counters();
  EXPECT_EQ(c.object_patches, 0u);
  EXPECT_EQ(c.binds, 0u);
  EXPECT_EQ(alloc_.Free("gpu-a"), 4);
}

}  // namespace
}  // namespace volcache
