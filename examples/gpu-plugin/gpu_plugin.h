#pragma once
// Example plugin: GPU device allocation the way Volcano's device plugins do it. At session
// time the handler records how many whole GPUs the task asks for (a BindContext extension).
// At pre-bind, on the bind-flow worker and after the task was assumed, the pre-binder
// reserves that many device indices on the chosen node and asks, through ctx.pod_patch, for
// the annotation `volcano.sh/gpu-index` ("0,1") on the pod; the binder writes it before the
// Binding (a PATCH with the REST binder). When the bind is refused, the binder undoes the
// annotation and then PreBindRollBack releases the devices. Reserving at pre-bind rather than
// in SetupBindContextExtension means a task whose assume is refused holds nothing.
// Shows the three plugin seams: BindContextExtension, BindContextHandler and PreBinder.
//
// Thread-safety: DeviceAllocator is safe for concurrent use (one annotated mutex); pre-bind
// and rollback may run concurrently for different tasks.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/mutex.h"
#include "binder/binder.h"

namespace gpu_plugin {

inline constexpr const char* kName = "gpu-devices";
// The annotation Volcano's GPU-sharing device plugin reads on the node (the device indices).
inline constexpr const char* kAnnotation = "volcano.sh/gpu-index";

struct GpuExtension : volcache::BindContextExtension {
  int gpus = 0;                 // whole GPUs requested (set at session time)
  std::vector<int> device_ids;  // reserved at pre-bind on the context's node, empty otherwise
};

// Tracks free device indices per node.
class DeviceAllocator {
 public:
  void AddNode(const std::string& node, int gpus) EXCLUDES(mu_);
  // Reserves the `count` lowest free devices on `node`; empty (nothing reserved) when fewer
  // are free.
  std::vector<int> Reserve(const std::string& node, int count) EXCLUDES(mu_);
  void Release(const std::string& node, const std::vector<int>& ids) EXCLUDES(mu_);
  int Free(const std::string& node) const EXCLUDES(mu_);

 private:
  mutable volcache::Mutex mu_;
  std::map<std::string, std::set<int>> free_ GUARDED_BY(mu_);
};

// "0,1" for devices {0, 1}.
std::string DeviceList(const std::vector<int>& ids);

class GpuBindHandler final : public volcache::BindContextHandler {
 public:
  std::string_view Name() const override { return kName; }
  // Adds a GpuExtension for a task that requests nvidia.com/gpu; nothing otherwise.
  volcache::Status SetupBindContextExtension(const void* session_state, volcache::BindContext& ctx) override;
};

class GpuPreBinder final : public volcache::PreBinder {
 public:
  explicit GpuPreBinder(DeviceAllocator* alloc) : alloc_(alloc) {}
  std::string_view Name() const override { return kName; }
  // Reserves the devices on ctx.node_name and requests the annotation; FailedPrecondition
  // (nothing reserved) when the node has too few free.
  volcache::Status PreBind(volcache::BindContext& ctx) override;
  // Releases the devices PreBind reserved (the binder has already undone the annotation).
  void PreBindRollBack(volcache::BindContext& ctx) override;

 private:
  DeviceAllocator* alloc_;
};

}  // namespace gpu_plugin
