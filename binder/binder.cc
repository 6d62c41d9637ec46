#include "binder/binder.h"

#include <string>

namespace volcache {

void ApplyPodPatch(const PodPatch& patch, k8s::ObjectMeta& meta) {
  auto apply = [](const auto& keys, k8s::StringMap& into) {
    for (const auto& [k, v] : keys) {
      if (v) {
        into[k] = *v;
      } else {
        into.erase(k);
      }
    }
  };
  apply(patch.annotations, meta.annotations);
  apply(patch.labels, meta.labels);
}

Status PreBinderRegistry::Register(std::shared_ptr<PreBinder> pre_binder) {
  for (const auto& p : pre_binders_) {
    if (p->Name() == pre_binder->Name()) {
      return Status::AlreadyExists("pre-binder " + std::string(pre_binder->Name()) + " already registered");
    }
  }
  pre_binders_.push_back(std::move(pre_binder));
  return Status::Ok();
}

Status PreBinderRegistry::RunPreBind(BindContext& ctx) const {
  for (size_t i = 0; i < pre_binders_.size(); ++i) {
    Status s = pre_binders_[i]->PreBind(ctx);
    if (!s.ok()) {
      for (size_t j = i; j-- > 0;) pre_binders_[j]->PreBindRollBack(ctx);
      ctx.pod_patch.clear();
      return s.WithPrefix("pre-bind " + std::string(pre_binders_[i]->Name()) + " for " +
                          std::string(ctx.task.key()));
    }
  }
  return Status::Ok();
}

void PreBinderRegistry::RollBackAll(BindContext& ctx) const {
  for (size_t j = pre_binders_.size(); j-- > 0;) pre_binders_[j]->PreBindRollBack(ctx);
}

}  // namespace volcache
