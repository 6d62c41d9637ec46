#pragma once
// `volcache serve`'s Kubernetes-side metrics (issue 11 #8): the REST client (requests by verb
// and code, latency per verb, time waiting on the client-side rate limiter, stale keep-alive
// connections), the reflectors (LISTs, watches, relists, events by type, decode errors, the
// age of the last event per resource) and the event recorder. Built from each component's own
// counters at scrape time (a registry collector producing prometheus::MetricFamily values:
// exact copies of the components' totals and bucket counts), so the hot paths pay nothing.
// Thread-safety: the collector runs on the scraping thread; the connector must outlive this.

#include <vector>

#include "kube/connector.h"
#include "kube/leader_election.h"
#include "server/metrics.h"

namespace volcache::cmd {

class KubeMetrics {
 public:
  KubeMetrics(metrics::Registry* registry, kube::Connector* connector);
  ~KubeMetrics();  // removes the collector
  KubeMetrics(const KubeMetrics&) = delete;
  KubeMetrics& operator=(const KubeMetrics&) = delete;

 private:
  std::vector<prometheus::MetricFamily> Collect() const;

  metrics::Registry* registry_;
  kube::Connector* connector_;
  int collector_ = 0;
};

// Leader election: volcache_leader (1 while this replica may decide: leading, or leader
// election off) and volcache_leader_transitions_total (times this replica became or stopped
// being the leader). Mirrored from the elector at scrape time. `elector` may be null (leader
// election off) and must outlive this.
class LeaderMetrics {
 public:
  LeaderMetrics(metrics::Registry* registry, kube::LeaderElector* elector);
  ~LeaderMetrics();  // removes the collector
  LeaderMetrics(const LeaderMetrics&) = delete;
  LeaderMetrics& operator=(const LeaderMetrics&) = delete;

 private:
  std::vector<prometheus::MetricFamily> Collect() const;

  metrics::Registry* registry_;
  kube::LeaderElector* elector_;
  int collector_ = 0;
};

}  // namespace volcache::cmd
