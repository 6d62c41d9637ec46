#include "gpu_plugin.h"

namespace gpu_plugin {

void DeviceAllocator::AddNode(const std::string& node, int gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < gpus; ++i) free_[node].insert(i);
}

std::vector<int> DeviceAllocator::Reserve(const std::string& node, int count) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& free = free_[node];
  if (static_cast<int>(free.size()) < count) return {};
  std::vector<int> ids(free.begin(), std::next(free.begin(), count));
  for (int id : ids) free.erase(id);
  return ids;
}

void DeviceAllocator::Release(const std::string& node, const std::vector<int>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int id : ids) free_[node].insert(id);
}

int DeviceAllocator::Free(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.find(node);
  return it == free_.end() ? 0 : static_cast<int>(it->second.size());
}

volcache::Status GpuBindHandler::SetupBindContextExtension(const void*, volcache::BindContext& ctx) {
  // Whole GPUs requested (milli-units of nvidia.com/gpu).
  int gpus = static_cast<int>(ctx.task.resreq.Get("nvidia.com/gpu") / 1000);
  if (gpus == 0) return volcache::Status::Ok();
  auto ids = alloc_->Reserve(ctx.node_name, gpus);
  if (ids.empty()) {
    return volcache::Status::FailedPrecondition("no " + std::to_string(gpus) + " free GPU devices on " +
                                                ctx.node_name);
  }
  auto ext = std::make_unique<GpuExtension>();
  ext->device_ids = std::move(ids);
  ctx.extensions[kName] = std::move(ext);
  return volcache::Status::Ok();
}

volcache::Status GpuPreBinder::PreBind(volcache::BindContext& ctx) {
  auto* ext = ctx.Extension<GpuExtension>(kName);
  if (!ext) return volcache::Status::Ok();
  std::string text;
  for (int id : ext->device_ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  ext->annotation = text;
  return volcache::Status::Ok();
}

void GpuPreBinder::PreBindRollBack(volcache::BindContext& ctx) {
  auto* ext = ctx.Extension<GpuExtension>(kName);
  if (!ext || ext->device_ids.empty()) return;
  alloc_->Release(ctx.node_name, ext->device_ids);
  ext->device_ids.clear();
  ext->annotation.clear();
}

}  // namespace gpu_plugin
