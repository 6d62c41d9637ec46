#include "kube/daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "api/fmt.h"

namespace volcache::kube {

Result<std::unique_ptr<KubeDaemon>> KubeDaemon::Launch(DaemonOptions options) {
  auto client = RestClient::Create(options.config, options.rest);
  if (!client.ok()) return client.status();
  std::unique_ptr<KubeDaemon> d(new KubeDaemon());
  d->server_ = options.config.server;
  d->sync_timeout_ = options.sync_timeout;
  d->clock_ = options.clock ? options.clock : RealClock::Instance();
  options.connector.scheduler_name = options.runtime.cache.scheduler_name;
  options.connector.default_queue = options.runtime.cache.default_queue;
  d->connector_ = std::make_unique<Connector>(std::move(client).value(), options.connector);
  Connector& c = *d->connector_;
  d->runtime_ = std::make_unique<CacheRuntime>(options.runtime, d->clock_, c.source(), c.binder(),
                                               c.evictor(), c.status_updater(), c.event_recorder());
  d->runtime_->Run();
  c.Start(d->runtime_.get());
  spdlog::info("connected to {}; waiting for the initial lists", options.config.server);
  return d;
}

Status KubeDaemon::WaitForSync(const std::function<bool()>& cancelled) {
  const TimePoint deadline = SaturatingAdd(clock_->Now(), sync_timeout_);
  Status s;
  for (;;) {
    const Duration left = deadline - clock_->Now();
    s = runtime_->WaitForCacheSync(
        std::clamp<Duration>(left, Duration::zero(), std::chrono::milliseconds(50)));
    if (s.ok()) break;
    if (cancelled && cancelled()) return Status::Cancelled("stopped before the cache synced");
    if (clock_->Now() >= deadline) break;
  }
  if (!s.ok()) {
    // Name the resources whose first LIST never completed (RBAC, missing CRDs, ...).
    std::string pending;
    for (ResourceKind kind :
         {ResourceKind::kPods, ResourceKind::kNodes, ResourceKind::kPodGroups, ResourceKind::kQueues,
          ResourceKind::kPriorityClasses, ResourceKind::kResourceQuotas}) {
      if (!connector_->reflector(kind).HasSynced()) {
        pending += (pending.empty() ? "" : ", ") + std::string(Info(kind).name);
      }
    }
    if (!pending.empty()) {
      return s.WithPrefix("initial LIST of " + pending +
                          " not complete (see the log: missing CRDs or RBAC?)");
    }
    return s;
  }
  spdlog::info("cache synced: {} nodes, {} jobs, {} tasks", runtime_->cache().num_nodes(),
               runtime_->cache().num_jobs(), runtime_->cache().num_tasks());
  return Status::Ok();
}

Result<std::unique_ptr<KubeDaemon>> KubeDaemon::Start(DaemonOptions options) {
  auto d = Launch(std::move(options));
  if (!d.ok()) return d.status();
  if (Status s = (*d)->WaitForSync(); !s.ok()) {
    (*d)->Stop();
    return s;
  }
  return d;
}

KubeDaemon::~KubeDaemon() { Stop(); }

void KubeDaemon::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (runtime_) runtime_->Stop();
  if (connector_) connector_->Stop();
}

void KubeDaemon::StopNow() {
  if (stopped_) return;
  if (runtime_) runtime_->StopNow();
  Stop();
}

}  // namespace volcache::kube
