// Exercises the example plugin the way the bind flow does and checks the results:
// setup → pre-bind (devices reserved, the annotation requested in ctx.pod_patch) → a later
// pre-binder fails → rollback in reverse order releases the devices and drops the request.
#include <cstdio>
#include <memory>

#include "api/quantity.h"
#include "api/task_info.h"
#include "gpu_plugin.h"

namespace {
class FailingPreBinder final : public volcache::PreBinder {
 public:
  std::string_view Name() const override { return "always-fails"; }
  volcache::Status PreBind(volcache::BindContext&) override {
    return volcache::Status::Unavailable("volume not ready");
  }
  void PreBindRollBack(volcache::BindContext&) override {}
};

int Fail(const char* what) {
  std::fprintf(stderr, "gpu plugin demo: %s\n", what);
  return 1;
}
}  // namespace

int main() {
  auto pod = std::make_shared<volcache::k8s::Pod>();
  pod->metadata.name = "trainer-0";
  pod->metadata.namespace_ = "ml";
  pod->metadata.uid = "uid-trainer-0";
  pod->spec.scheduler_name = "volcano";
  volcache::k8s::Container c;
  c.name = "main";
  c.requests.emplace_back("nvidia.com/gpu", *volcache::Quantity::Parse("2"));
  pod->spec.containers.push_back(c);
  auto task = volcache::TaskInfo::FromPod(pod);
  if (!task.ok()) return Fail("task");

  gpu_plugin::DeviceAllocator alloc;
  alloc.AddNode("gpu-a", 4);
  gpu_plugin::GpuBindHandler handler;
  volcache::BindContext ctx;
  ctx.task = *task;
  ctx.node_name = "gpu-a";
  if (!handler.SetupBindContextExtension(nullptr, ctx).ok() || alloc.Free("gpu-a") != 4) return Fail("setup");

  volcache::PreBinderRegistry ok_registry;
  (void)ok_registry.Register(std::make_shared<gpu_plugin::GpuPreBinder>(&alloc));
  if (!ok_registry.RunPreBind(ctx).ok() || alloc.Free("gpu-a") != 2) return Fail("pre-bind");
  auto it = ctx.pod_patch.annotations.find(gpu_plugin::kAnnotation);
  if (it == ctx.pod_patch.annotations.end() || it->second != "0,1") return Fail("annotation");
  ok_registry.RollBackAll(ctx);  // as after a refused bind
  if (alloc.Free("gpu-a") != 4) return Fail("rollback after the bind");

  ctx.pod_patch.clear();
  volcache::PreBinderRegistry failing;
  (void)failing.Register(std::make_shared<gpu_plugin::GpuPreBinder>(&alloc));
  (void)failing.Register(std::make_shared<FailingPreBinder>());
  volcache::Status s = failing.RunPreBind(ctx);
  if (s.ok() || alloc.Free("gpu-a") != 4 || !ctx.pod_patch.empty()) return Fail("rollback");
  std::printf("gpu plugin ok: %s=0,1 requested at pre-bind; rollback released the devices (%s)\n",
              gpu_plugin::kAnnotation, s.message().c_str());
  return 0;
}
