#include "kube/daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "api/fmt.h"

namespace volcache::kube {

Result<std::unique_ptr<KubeDaemon>> KubeDaemon::Launch(DaemonOptions options) {
  std::unique_ptr<KubeDaemon> d(new KubeDaemon());
  if (options.leader_election) {
    if (Status s = ValidateLeaderElection(*options.leader_election); !s.ok()) return s;
    // A client of its own: renewals never wait behind binds on the rate limiter or the
    // connection pool, and a hanging renewal gives up by the renew deadline.
    RestClientOptions lo = options.rest;
    lo.write_gate = nullptr;
    lo.max_idle_connections = 2;
    lo.request_timeout = options.leader_election->renew_deadline;
    lo.connect_timeout = std::min(lo.connect_timeout, options.leader_election->renew_deadline);
    lo.user_agent += " leader-election";
    auto lc = RestClient::Create(options.config, lo);
    if (!lc.ok()) return lc.status();
    d->elector_clock_ = std::make_shared<RealClock>();  // attempts block on HTTP: own timer thread
    d->elector_client_ = std::move(lc).value();
    d->elector_ = std::make_unique<LeaderElector>(d->elector_client_.get(), d->elector_clock_,
                                                  *options.leader_election);
    LeaderElector* e = d->elector_.get();
    options.rest.write_gate = [e] { return e->WriteGate(); };
    options.connector.may_write = [e] { return e->IsLeader(); };
  }
  auto client = RestClient::Create(options.config, options.rest);
  if (!client.ok()) return client.status();
  d->server_ = options.config.server;
  d->sync_timeout_ = options.sync_timeout;
  d->clock_ = options.clock ? options.clock : RealClock::Instance();
  options.connector.scheduler_name = options.runtime.cache.scheduler_name;
  options.connector.default_queue = options.runtime.cache.default_queue;
  // Each batch of BATCH_BIND_NUM binds holds a dispatch thread until the REST binder answers
  // for all of it: with fewer threads than the binder's concurrency / batch size, fewer
  // Bindings are in flight than --kube-bind-concurrency says (4 threads, batches of 1: 2.6
  // Bindings in flight on average on a real API server, bound at a third of its rate).
  const size_t batch = std::max<size_t>(1, options.runtime.bind_flow.batch_size);
  const size_t needed = (options.connector.binder.max_in_flight + batch - 1) / batch;
  options.runtime.dispatch_threads = std::max(options.runtime.dispatch_threads, static_cast<int>(needed));
  d->connector_ = std::make_unique<Connector>(std::move(client).value(), options.connector);
  Connector& c = *d->connector_;
  d->runtime_ = std::make_unique<CacheRuntime>(options.runtime, d->clock_, c.source(), c.binder(),
                                               c.evictor(), c.status_updater(), c.event_recorder());
  d->runtime_->Run();
  c.Start(d->runtime_.get());
  if (d->elector_) d->elector_->Start();
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
    for (ResourceKind kind : kAllResourceKinds) {
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
  // Every write of ours has finished: the lease may go (client-go's ReleaseOnCancel).
  if (elector_) elector_->Stop(/*release=*/true);
}

void KubeDaemon::StopNow() {
  if (stopped_) return;
  if (runtime_) runtime_->StopNow();
  Stop();
}

}  // namespace volcache::kube
