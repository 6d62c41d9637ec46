// Plugins that reach the pod, against the REAL kube-apiserver: the example GPU plugin
// (examples/gpu-plugin) runs in-process through BindFlow and RestBinder (volcache serve
// cannot load plugins). After the bind the pod on the server carries `volcano.sh/gpu-index`;
// when the server refuses the Binding (409: the pod is already bound) the annotation is
// taken off again and the devices are released.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/quantity.h"
#include "gpu_plugin.h"
#include "kube/kubeconfig.h"
#include "kube/rest_client.h"
#include "kube/rest_writers.h"
#include "tests/fakes/bind_outcomes.h"
#include "tests/integration/fixture.h"
#include "workers/bind_flow.h"
#include "workers/clock.h"
#include "workers/executor.h"

namespace volcache::integration {
namespace {

using Outcomes = testing::BindOutcomes;

class PreBindTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }

  void SetUp() override {
    RealServerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto config = kube::LoadKubeConfig(server().kubeconfig());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto client = kube::RestClient::Create(*config);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    binder_ = std::make_unique<kube::RestBinder>(client_.get());
    alloc_.AddNode("gpu-node-1", 4);
    ASSERT_TRUE(registry_.Register(std::make_shared<gpu_plugin::GpuPreBinder>(&alloc_)).ok());
    flow_ = std::make_unique<BindFlow>(BindFlowOptions{}, clock_, binder_.get(), &registry_, &outcomes_,
                                       &inline_);
  }

  // Creates the pod on the server (bound to `node_name` if not empty) and returns the task the
  // cache would hold for it, requesting `gpus` GPUs.
  TaskInfo CreatePod(KubeClient& c, const std::string& ns, const std::string& name, int gpus,
                     const std::string& node_name = "") {
    HttpAnswer a = c.Post("/api/v1/namespaces/" + ns + "/pods",
                          PodJson(ns, name, "", "100m", "64Mi", {}, "volcano", node_name));
    EXPECT_EQ(a.status, 201) << a.body;
    auto pod = std::make_shared<k8s::Pod>();
    pod->metadata.namespace_ = ns;
    pod->metadata.name = name;
    pod->metadata.uid = a.json()["metadata"].value("uid", "");
    pod->spec.scheduler_name = "volcano";
    k8s::Container container;
    container.name = "main";
    container.requests.emplace_back("nvidia.com/gpu", *Quantity::Parse(std::to_string(gpus)));
    pod->spec.containers.push_back(container);
    return TaskInfo::FromPod(std::move(pod)).value();
  }

  void Bind(TaskInfo task, const std::string& node) {
    auto ctx = std::make_unique<BindContext>();
    ctx->task = std::move(task);
    ctx->node_name = node;
    ASSERT_TRUE(handler_.SetupBindContextExtension(nullptr, *ctx).ok());
    ASSERT_TRUE(flow_->Push(std::move(ctx)).ok());
    flow_->FlushOnce();  // inline executor: the outcome has been handled when it returns
  }

  static Json PodOnServer(KubeClient& c, const std::string& ns, const std::string& name) {
    HttpAnswer a = c.Get("/api/v1/namespaces/" + ns + "/pods/" + name);
    EXPECT_EQ(a.status, 200) << a.body;
    return a.json();
  }
  static std::string AnnotationOf(const Json& pod) {
    const Json& meta = pod["metadata"];
    if (!meta.contains("annotations") || !meta["annotations"].contains(gpu_plugin::kAnnotation))
      return "<absent>";
    return meta["annotations"][gpu_plugin::kAnnotation].get<std::string>();
  }

  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<kube::RestBinder> binder_;
  gpu_plugin::DeviceAllocator alloc_;
  gpu_plugin::GpuBindHandler handler_;
  PreBinderRegistry registry_;
  Outcomes outcomes_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  InlineExecutor inline_;
  std::unique_ptr<BindFlow> flow_;  // last: stopped before what it borrows goes
};

TEST_F(PreBindTest, TheBoundPodCarriesTheGpuIndexAnnotation) {
  KubeClient c = Admin();
  CreateNamespace(c, "prebind-ok");
  Bind(CreatePod(c, "prebind-ok", "trainer-0", 2), "gpu-node-1");
  ASSERT_TRUE(outcomes_.Of("trainer-0").ok()) << outcomes_.Of("trainer-0").ToString();
  Json pod = PodOnServer(c, "prebind-ok", "trainer-0");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "gpu-node-1");
  EXPECT_EQ(AnnotationOf(pod), "0,1");
  EXPECT_EQ(alloc_.Free("gpu-node-1"), 2);
}

TEST_F(PreBindTest, ARefusedBindingRollsTheAnnotationBackAndReleasesTheDevices) {
  KubeClient c = Admin();
  CreateNamespace(c, "prebind-refused");
  // Already bound: the server answers the Binding with 409 after our PATCH went in.
  TaskInfo task = CreatePod(c, "prebind-refused", "trainer-0", 2, "elsewhere");
  Bind(task, "gpu-node-1");
  EXPECT_EQ(outcomes_.Of("trainer-0").code(), StatusCode::kConflict) << outcomes_.Of("trainer-0").ToString();
  Json pod = PodOnServer(c, "prebind-refused", "trainer-0");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "elsewhere");
  EXPECT_EQ(AnnotationOf(pod), "<absent>");
  EXPECT_EQ(alloc_.Free("gpu-node-1"), 4);
}

TEST_F(PreBindTest, APatchOfAPodRecreatedUnderTheNameIsRefusedAndNoBindingIsSent) {
  KubeClient c = Admin();
  CreateNamespace(c, "prebind-uid");
  TaskInfo stale = CreatePod(c, "prebind-uid", "trainer-0", 1);
  ASSERT_EQ(c.Delete("/api/v1/namespaces/prebind-uid/pods/trainer-0?gracePeriodSeconds=0").status, 200);
  ASSERT_TRUE(Eventually([&] { return c.Get("/api/v1/namespaces/prebind-uid/pods/trainer-0").status == 404; },
                         Seconds(30)));
  CreatePod(c, "prebind-uid", "trainer-0", 1);  // same name, new uid
  Bind(stale, "gpu-node-1");
  EXPECT_FALSE(outcomes_.Of("trainer-0").ok());
  Json pod = PodOnServer(c, "prebind-uid", "trainer-0");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "");
  EXPECT_EQ(AnnotationOf(pod), "<absent>");
  EXPECT_EQ(alloc_.Free("gpu-node-1"), 4);
}

}  // namespace
}  // namespace volcache::integration
