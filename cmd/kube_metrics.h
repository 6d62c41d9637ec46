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

}  // namespace volcache::cmd
