#pragma once
// Binder: carries bind decisions to the cluster; BindContext: one task's bind decision plus
// per-plugin extensions and the pod changes plugins ask for; PreBinder: named hooks run
// before the bind with rollback.
//
// Contract: Bind() receives a batch and returns exactly one Status per context, in order;
// one task's failure never hides another's success. Implementations are called from the
// bind-flow worker without any cache lock held and must be safe to call concurrently for
// different batches.
//
// Pod changes (BindContext::pod_patch): a binder that writes to a cluster applies a
// context's non-empty pod_patch to the pod *before* the Binding, and only the keys it names.
// If that write fails, the task fails and no Binding is sent. If the Binding then fails, the
// binder undoes the write (keys that were absent are removed, changed keys get their
// previous value back) before it returns the failure. In-process binders (simulator, fakes)
// apply or record the patch as their cluster allows. Either way the bind flow then rolls the
// pre-binders back (PreBinder::PreBindRollBack, reverse registration order), so the order on
// a refused bind is: undo the pod write (binder) → pre-binder rollbacks → the cache forgets
// the task.

#include <map>
#include <memory>
#include <optional>
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

// Metadata changes for the pod being bound, requested by pre-binders (e.g. a device
// plugin's `volcano.sh/gpu-index` annotation). Key → the value to set, or std::nullopt to
// remove the key. Keys not named are left as they are on the pod. A plain value type: no
// thread-safety of its own (a context is used by one thread at a time).
struct PodPatch {
  std::map<std::string, std::optional<std::string>> annotations;
  std::map<std::string, std::optional<std::string>> labels;

  bool empty() const { return annotations.empty() && labels.empty(); }
  void clear() {
    annotations.clear();
    labels.clear();
  }
};

// Applies `patch` to `meta` (sets and removes the named keys; nothing else changes). For
// in-process binders that hold the pod themselves.
void ApplyPodPatch(const PodPatch& patch, k8s::ObjectMeta& meta);

struct BindContext {
  TaskInfo task;
  std::string node_name;
  // Plugin name → its extension.
  std::unordered_map<std::string, std::unique_ptr<BindContextExtension>> extensions;
  // What pre-binders want changed on the pod before it is bound (see the file comment).
  // Written by PreBind; read by the binder. A pre-binder sets only its own keys.
  PodPatch pod_patch;

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

// A hook run on the bind-flow worker after the task was assumed in the cache and before the
// binder sees it. PreBind may reserve what the task needs (devices, volumes) and ask for pod
// changes through ctx.pod_patch; the binder applies those before the Binding. Reserve here
// rather than in BindContextHandler::SetupBindContextExtension: a context refused before the
// bind flow (the assume step fails) never reaches a pre-binder, so nothing has to be undone.
// PreBindRollBack is called exactly once for each PreBind that returned OK when the task does
// not get bound (a later pre-binder failed, or the binder refused the task — after the binder
// has undone its pod write); it must release what PreBind reserved and must not fail. A
// PreBind that fails is not rolled back: it must leave nothing reserved. Both may be called
// concurrently for different contexts.
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
  // order, clears ctx.pod_patch (nothing is written to the pod) and returns the failure
  // prefixed with the plugin name.
  Status RunPreBind(BindContext& ctx) const;
  // Rolls back every pre-binder in reverse order (after a failed bind; the binder has already
  // undone its pod write).
  void RollBackAll(BindContext& ctx) const;
  size_t size() const { return pre_binders_.size(); }

 private:
  std::vector<std::shared_ptr<PreBinder>> pre_binders_;
};

}  // namespace volcache
