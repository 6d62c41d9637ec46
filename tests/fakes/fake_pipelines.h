#pragma once
// Test doubles for the decision pipelines. Each one behaves like the API server would on an
// ObjectStoreSource: a successful bind sets the pod's nodeName in the store (so a resync sees
// it), "already bound" answers reflect a bind that did happen, and every call is recorded.
// Faults are injected by script (per task) or at random with a seeded RNG.
// Thread-safety: all fakes are safe for concurrent use.

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "binder/binder.h"
#include "cache/cluster_source.h"
#include "evictor/evictor.h"

namespace volcache::testing {

enum class BindFault { kNone, kError, kTimeout, kConflict, kAlreadyBound };

class FakeBinder final : public Binder {
 public:
  // `store` may be null (then nothing is written back).
  explicit FakeBinder(ObjectStoreSource* store = nullptr, uint64_t seed = 1) : store_(store), rng_(seed) {}

  // The next bind of `task_key` answers with `fault`.
  void Script(const std::string& task_key, BindFault fault);
  // Every bind fails with a random fault with probability p (0 disables).
  void SetRandomFaults(double p) {
    std::lock_guard<std::mutex> lock(mu_);
    random_fault_p_ = p;
  }
  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override;

  // Binds that took effect in the cluster, per task key (a correct system binds each ≤ 1).
  std::map<std::string, int> effective_binds() const;
  std::vector<size_t> batch_sizes() const;
  int64_t calls() const;

 private:
  BindFault NextFault(const std::string& key);

  mutable std::mutex mu_;
  ObjectStoreSource* store_;
  std::mt19937_64 rng_;
  double random_fault_p_ = 0;
  std::map<std::string, std::deque<BindFault>> script_;
  std::map<std::string, int> effective_;
  std::vector<size_t> batch_sizes_;
  int64_t calls_ = 0;
};

class FakeEvictor final : public Evictor {
 public:
  explicit FakeEvictor(uint64_t seed = 1) : rng_(seed) {}
  Status Evict(const k8s::Pod& pod, const std::string& reason) override;
  void FailNext(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = n;
  }
  // Every eviction fails with probability p (0 disables); failed ones are not recorded.
  void SetRandomFaults(double p) {
    std::lock_guard<std::mutex> lock(mu_);
    random_fault_p_ = p;
  }
  std::vector<std::string> evicted() const;

 private:
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  double random_fault_p_ = 0;
  int fail_next_ = 0;
  std::vector<std::string> evicted_;
};

class FakeStatusUpdater final : public StatusUpdater {
 public:
  explicit FakeStatusUpdater(uint64_t seed = 1) : rng_(seed) {}
  Status UpdatePodCondition(const k8s::Pod& pod, const k8s::PodCondition& condition) override;
  Status UpdatePodGroup(const k8s::PodGroup& pg) override;
  Status UpdateQueueStatus(const k8s::Queue& queue) override;
  void FailNext(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = n;
  }
  // Every write fails with probability p (0 disables); failed ones are not recorded.
  void SetRandomFaults(double p) {
    std::lock_guard<std::mutex> lock(mu_);
    random_fault_p_ = p;
  }
  std::vector<std::pair<std::string, k8s::PodCondition>> pod_conditions() const;
  std::vector<k8s::PodGroup> pod_groups() const;
  std::vector<k8s::Queue> queues() const;

 private:
  Status MaybeFail();
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  double random_fault_p_ = 0;
  int fail_next_ = 0;
  std::vector<std::pair<std::string, k8s::PodCondition>> pod_conditions_;
  std::vector<k8s::PodGroup> pod_groups_;
  std::vector<k8s::Queue> queues_;
};

struct RecordedEvent {
  EventRef object;
  std::string type, reason, message;
};

class FakeEventRecorder final : public EventRecorder {
 public:
  void Event(const EventRef& object, const std::string& type, const std::string& reason,
             const std::string& message) override;
  std::vector<RecordedEvent> events() const;

 private:
  mutable std::mutex mu_;
  std::vector<RecordedEvent> events_;
};

}  // namespace volcache::testing
