#pragma once
// BindOutcomes: a BindOutcomeHandler that records each task's outcome by task name, for
// tests that drive a BindFlow and then ask what became of a task. Safe for concurrent use.

#include <map>
#include <mutex>
#include <string>

#include "api/status.h"
#include "workers/bind_flow.h"

namespace volcache::testing {

class BindOutcomes final : public BindOutcomeHandler {
 public:
  void OnBindSucceeded(BindContext& ctx) override { Put(ctx, Status::Ok()); }
  void OnBindFailed(BindContext& ctx, const Status& error) override { Put(ctx, error); }
  // The task's outcome; Internal when it has none (yet).
  Status Of(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = results_.find(name);
    return it == results_.end() ? Status::Internal("no outcome for " + name) : it->second;
  }

 private:
  void Put(BindContext& ctx, Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    results_[ctx.task.name()] = std::move(s);
  }
  mutable std::mutex mu_;
  std::map<std::string, Status> results_;
};

}  // namespace volcache::testing
