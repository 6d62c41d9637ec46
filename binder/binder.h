#pragma once
// Binder: carries bind decisions to the cluster; BindContext: one task's bind decision plus
// per-plugin extensions; PreBinder: named hooks run before the bind with rollback.
//
// Contract: Bind() receives a batch and returns exactly one Status per context, in order;
// one task's failure never hides another's success. Implementations are called from the
// bind-flow worker without any cache lock held and must be safe to call concurrently for
// different batches.

#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "api/status.h"
#include "api/task_info.h"

namespace volcache {

// Base of every plugin's per-task data. Plugins derive from it.
class BindContextExtension {
 public:
  virtual ~BindContextExtension() = default;
};

struct BindContext {
  TaskInfo task;
  std::string node_name;
  // Plugin name → its extension.
  std::unordered_map<std::string, std::unique_ptr<BindContextExtension>> extensions;

  // Typed access: the extension registered under `plugin` if it is a T, else nullptr.
  template <typename T>
  T* Extension(std::string_view plugin) const {
    auto it = extensions.find(std::string(plugin));
    return it == extensions.end() ? nullptr : dynamic_cast<T*>(it->second.get());
  }
};

class Binder {
 public:
  virtual ~Binder() = default;
  virtual std::vector<Status> Bind(const std::vector<BindContext*>& batch) = 0;
};

// A plugin that fills its own extension before AddBindTask.
class BindContextHandler {
 public:
  virtual ~BindContextHandler() = default;
  virtual std::string_view Name() const = 0;
  // `session_state` is opaque to volcache: whatever the session passes along.
  virtual Status SetupBindContextExtension(const void* session_state, BindContext& ctx) = 0;
};

class PreBinder {
 public:
  virtual ~PreBinder() = default;
  virtual std::string_view Name() const = 0;
  virtual Status PreBind(BindContext& ctx) = 0;
  virtual void PreBindRollBack(BindContext& ctx) = 0;
};

// Pre-binders by name, run in registration order. Not thread-safe to register while
// running; register at start-up.
class PreBinderRegistry {
 public:
  Status Register(std::shared_ptr<PreBinder> pre_binder);  // AlreadyExists on a duplicate name
  // Runs every pre-binder; on the first failure rolls back those already run, in reverse
  // order, and returns the failure prefixed with the plugin name.
  Status RunPreBind(BindContext& ctx) const;
  // Rolls back every pre-binder in reverse order (after a failed bind).
  void RollBackAll(BindContext& ctx) const;
  size_t size() const { return pre_binders_.size(); }

 private:
  std::vector<std::shared_ptr<PreBinder>> pre_binders_;
};

}  // namespace volcache
