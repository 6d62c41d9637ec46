#include "gpu_plugin.h"

#include <iterator>

namespace gpu_plugin {

void DeviceAllocator::AddNode(const std::string& node, int gpus) {
  volcache::MutexLock lock(&mu_);
  for (int i = 0; i < gpus; ++i) free_[node].insert(i);
}

std::vector<int> DeviceAllocator::Reserve(const std::string& node, int count) {
  volcache::MutexLock lock(&mu_);
  auto& free = free_[node];
  if (static_cast<int>(free.size()) < count) return {};
  std::vector<int> ids(free.begin(), std::next(free.begin(), count));
  for (int id : ids) free.erase(id);
  return ids;
}

void DeviceAllocator::Release(const std::string& node, const std::vector<int>& ids) {
  volcache::MutexLock lock(&mu_);
  for (int id : ids) free_[node].insert(id);
}

int DeviceAllocator::Free(const std::string& node) const {
  volcache::MutexLock lock(&mu_);
  auto it = free_.find(node);
  return it == free_.end() ? 0 : static_cast<int>(it->second.size());
}

std::string DeviceList(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

volcache::Status GpuBindHandler::SetupBindContextExtension(const void*, volcache::BindContext& ctx) {
  // Whole GPUs requested (milli-units of nvidia.com/gpu).
  const int gpus = static_cast<int>(ctx.task.resreq().Get("nvidia.com/gpu") / 1000);
  if (gpus == 0) return volcache::Status::Ok();
  auto ext = std::make_unique<GpuExtension>();
  ext->gpus = gpus;
  ctx.extensions[kName] = std::move(ext);
  return volcache::Status::Ok();
}

volcache::Status GpuPreBinder::PreBind(volcache::BindContext& ctx) {
  auto* ext = ctx.Extension<GpuExtension>(kName);
  if (!ext || ext->gpus == 0) return volcache::Status::Ok();
  auto ids = alloc_->Reserve(ctx.node_name, ext->gpus);
  if (ids.empty()) {
    return volcache::Status::FailedPrecondition("no " + std::to_string(ext->gpus) + " free GPU devices on " +
                                                ctx.node_name);
  }
  ext->device_ids = std::move(ids);
  ctx.pod_patch.annotations[kAnnotation] = DeviceList(ext->device_ids);
  return volcache::Status::Ok();
}

void GpuPreBinder::PreBindRollBack(volcache::BindContext& ctx) {
  auto* ext = ctx.Extension<GpuExtension>(kName);
  if (!ext || ext->device_ids.empty()) return;
  alloc_->Release(ctx.node_name, ext->device_ids);
  ext->device_ids.clear();
}

}  // namespace gpu_plugin
