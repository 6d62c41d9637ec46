#pragma once
// Example plugin: picks GPU device indices for a task at session time (a BindContext
// extension), writes them as the annotation `example.volcache.io/gpu-ids` at pre-bind, and
// releases them on rollback. Shows the three plugin seams: BindContextExtension,
// BindContextHandler::SetupBindContextExtension and PreBinder (PreBind/PreBindRollBack).
// Thread-safety: the allocator's state is guarded by a mutex; pre-bind may run concurrently.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "binder/binder.h"

namespace gpu_plugin {

inline constexpr const char* kName = "gpu-devices";
inline constexpr const char* kAnnotation = "example.volcache.io/gpu-ids";

struct GpuExtension : volcache::BindContextExtension {
  std::vector<int> device_ids;
  std::string annotation;  // written at pre-bind
};

// Tracks free device indices per node.
class DeviceAllocator {
 public:
  void AddNode(const std::string& node, int gpus);
  // Reserves `count` devices on `node`; empty when not enough are free.
  std::vector<int> Reserve(const std::string& node, int count);
  void Release(const std::string& node, const std::vector<int>& ids);
  int Free(const std::string& node) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::set<int>> free_;
};

class GpuBindHandler final : public volcache::BindContextHandler {
 public:
  explicit GpuBindHandler(DeviceAllocator* alloc) : alloc_(alloc) {}
  std::string_view Name() const override { return kName; }
  volcache::Status SetupBindContextExtension(const void* session_state, volcache::BindContext& ctx) override;

 private:
  DeviceAllocator* alloc_;
};

class GpuPreBinder final : public volcache::PreBinder {
 public:
  explicit GpuPreBinder(DeviceAllocator* alloc) : alloc_(alloc) {}
  std::string_view Name() const override { return kName; }
  volcache::Status PreBind(volcache::BindContext& ctx) override;
  void PreBindRollBack(volcache::BindContext& ctx) override;

 private:
  DeviceAllocator* alloc_;
};

}  // namespace gpu_plugin
