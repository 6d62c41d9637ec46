#include "app/daemon_wiring.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace volcache::app {

DaemonWiring::DaemonWiring(CacheRuntime* runtime)
    : runtime_(runtime),
      cache_metrics_(std::make_unique<CacheMetrics>(&registry_, runtime)),
      dump_(LogCacheDumpCallback(runtime)) {}

DaemonWiring::~DaemonWiring() { Stop(); }

AdminServer& DaemonWiring::CreateAdmin(const AdminOptions& options) {
  admin_ = std::make_unique<AdminServer>(options, runtime_, &registry_);
  return *admin_;
}

Status DaemonWiring::StartAdmin() {
  if (!admin_) return Status::FailedPrecondition("admin server: not created");
  Status s = admin_->Start();
  if (!s.ok()) admin_.reset();
  return s;
}

void DaemonWiring::StartSignalDump() {
  if (Status s = dump_.Start(); !s.ok()) spdlog::warn("SIGUSR2 dump not available: {}", s.ToString());
}

void DaemonWiring::ObserveSnapshot(const CycleStats& cycle) {
  if (!cache_metrics_) return;
  cache_metrics_->ObserveSnapshot(
      std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(cycle.open_ms)));
}

void DaemonWiring::ObserveSession(const CycleStats& cycle) {
  if (!cache_metrics_) return;
  cache_metrics_->ObserveSession(SessionSample{
      cycle.total_ms / 1e3, cycle.open_ms / 1e3, cycle.placements, cycle.binds, cycle.jobs_unschedulable,
      cycle.enqueued, cycle.pipelined, cycle.evictions_reclaim, cycle.evictions_preempt});
}

void DaemonWiring::Stop() {
  dump_.Stop();
  if (admin_) admin_->Stop();
  admin_.reset();
  cache_metrics_.reset();  // before the runtime it observes
}

}  // namespace volcache::app
