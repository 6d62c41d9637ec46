#include "kube/daemon.h"

#include <spdlog/spdlog.h>

#include "api/fmt.h"

namespace volcache::kube {

Result<std::unique_ptr<KubeDaemon>> KubeDaemon::Start(DaemonOptions options) {
  auto client = RestClient::Create(options.config, options.rest);
  if (!client.ok()) return client.status();
  std::unique_ptr<KubeDaemon> d(new KubeDaemon());
  options.connector.scheduler_name = options.runtime.cache.scheduler_name;
  options.connector.default_queue = options.runtime.cache.default_queue;
  d->connector_ = std::make_unique<Connector>(std::move(client).value(), options.connector);
  Connector& c = *d->connector_;
  d->runtime_ = std::make_unique<CacheRuntime>(options.runtime, RealClock::Instance(), c.source(), c.binder(),
                                               c.evictor(), c.status_updater(), c.event_recorder());
  d->runtime_->Run();
  c.Start(d->runtime_.get());
  spdlog::info("connected to {}; waiting for the initial lists", options.config.server);
  Status s = d->runtime_->WaitForCacheSync(options.sync_timeout);
  if (!s.ok()) {
    // Name the resources whose first LIST never completed (RBAC, missing CRDs, ...).
    std::string pending;
    for (ResourceKind kind : {ResourceKind::kPods, ResourceKind::kNodes, ResourceKind::kPodGroups,
                              ResourceKind::kQueues, ResourceKind::kPriorityClasses, ResourceKind::kResourceQuotas}) {
      if (!c.reflector(kind).HasSynced()) pending += (pending.empty() ? "" : ", ") + std::string(Info(kind).name);
    }
    d->Stop();
    if (!pending.empty()) {
      return s.WithPrefix("initial LIST of " + pending + " not complete (see the log: missing CRDs or RBAC?)");
    }
    return s;
  }
  spdlog::info("cache synced: {} nodes, {} jobs, {} tasks", d->runtime_->cache().num_nodes(),
               d->runtime_->cache().num_jobs(), d->runtime_->cache().num_tasks());
  return d;
}

KubeDaemon::~KubeDaemon() { Stop(); }

void KubeDaemon::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (runtime_) runtime_->Stop();
  if (connector_) connector_->Stop();
}

}  // namespace volcache::kube
