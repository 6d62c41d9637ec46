// Exercises the example plugin the way the bind flow does and checks the results:
// setup → pre-bind (annotation written) → a later pre-binder fails → rollback in reverse
// order releases the devices.
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
  gpu_plugin::GpuBindHandler handler(&alloc);
  volcache::BindContext ctx;
  ctx.task = *task;
  ctx.node_name = "gpu-a";
  if (!handler.SetupBindContextExtension(nullptr, ctx).ok() || alloc.Free("gpu-a") != 2) return Fail("setup");

  volcache::PreBinderRegistry ok_registry;
  (void)ok_registry.Register(std::make_shared<gpu_plugin::GpuPreBinder>(&alloc));
  if (!ok_registry.RunPreBind(ctx).ok()) return Fail("pre-bind");
  auto* ext = ctx.Extension<gpu_plugin::GpuExtension>(gpu_plugin::kName);
  if (!ext || ext->annotation != "0,1") return Fail("annotation");

  volcache::PreBinderRegistry failing;
  (void)failing.Register(std::make_shared<gpu_plugin::GpuPreBinder>(&alloc));
  (void)failing.Register(std::make_shared<FailingPreBinder>());
  volcache::Status s = failing.RunPreBind(ctx);
  if (s.ok() || alloc.Free("gpu-a") != 4) return Fail("rollback");
  std::printf("gpu plugin ok: annotation %s=0,1 at pre-bind; rollback released the devices (%s)\n",
              gpu_plugin::kAnnotation, s.message().c_str());
  return 0;
}
