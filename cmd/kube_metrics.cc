#include "cmd/kube_metrics.h"

#include <string>

#include "kube/events.h"

namespace volcache::cmd {

namespace {
using metrics::ScrapeFamily;
using prometheus::MetricType;
}  // namespace

KubeMetrics::KubeMetrics(metrics::Registry* registry, kube::Connector* connector)
    : registry_(registry), connector_(connector) {
  collector_ = registry_->AddCollector([this] { return Collect(); });
}

KubeMetrics::~KubeMetrics() { registry_->RemoveCollector(collector_); }

std::vector<prometheus::MetricFamily> KubeMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  const kube::RestClientMetrics m = connector_->client().metrics();
  ScrapeFamily requests("volcache_rest_client_requests_total",
                        "Requests to the API server by verb and HTTP code (0: no answer)",
                        MetricType::Counter, {"verb", "code"});
  for (const auto& r : m.requests)
    requests.Add({r.verb, std::to_string(r.code)}, static_cast<double>(r.count));
  requests.AppendTo(&out);
  ScrapeFamily latency("volcache_rest_client_request_duration_seconds", "API server request latency by verb",
                       MetricType::Histogram, {"verb"});
  for (const auto& l : m.latency)
    latency.AddHistogram({l.verb}, kube::RestClientMetrics::LatencyBuckets(), l.cumulative, l.sum_seconds,
                         l.count);
  latency.AppendTo(&out);
  auto counter = [&out](const char* name, const char* help, double v) {
    ScrapeFamily(name, help, MetricType::Counter).Add({}, v).AppendTo(&out);
  };
  counter("volcache_rest_client_rate_limiter_wait_seconds_total",
          "Time requests spent waiting on the client-side rate limiter", m.rate_limiter_wait_seconds);
  counter("volcache_rest_client_rate_limited_requests_total",
          "Requests that had to wait on the client-side rate limiter", static_cast<double>(m.rate_limited));
  counter("volcache_rest_client_stale_retries_total",
          "Requests retried on a fresh connection after a stale keep-alive one failed",
          static_cast<double>(m.stale_retries));
  counter("volcache_rest_client_stale_connections_total",
          "Idle keep-alive connections found closed or expired and dropped",
          static_cast<double>(m.stale_connections));

  const std::vector<std::string> resource = {"resource"};
  ScrapeFamily lists("volcache_reflector_lists_total", "Complete LISTs by resource", MetricType::Counter,
                     resource);
  ScrapeFamily list_failures("volcache_reflector_list_failures_total", "Failed LISTs by resource",
                             MetricType::Counter, resource);
  ScrapeFamily relists("volcache_reflector_relists_total",
                       "LISTs after the first (410 Gone, ERROR events) by resource", MetricType::Counter,
                       resource);
  ScrapeFamily watches("volcache_reflector_watches_total", "Watch requests started by resource",
                       MetricType::Counter, resource);
  ScrapeFamily watch_errors("volcache_reflector_watch_errors_total",
                            "Watches that ended in an error by resource", MetricType::Counter, resource);
  ScrapeFamily events("volcache_reflector_events_total", "Watch events by resource and type",
                      MetricType::Counter, {"resource", "type"});
  ScrapeFamily decode_errors("volcache_reflector_decode_errors_total",
                             "Objects the decoder refused by resource", MetricType::Counter, resource);
  ScrapeFamily last_event_age("volcache_reflector_last_event_age_seconds",
                              "Seconds since the last watch event (bookmarks included) by resource; "
                              "-1 before the first",
                              MetricType::Gauge, resource);
  ScrapeFamily backing_off("volcache_reflector_backing_off",
                           "1 while the reflector waits to retry a failed LIST or watch", MetricType::Gauge,
                           resource);
  const TimePoint now = RealClock::Instance()->Now();
  for (kube::ResourceKind kind : kube::kAllResourceKinds) {
    const std::string name(kube::Info(kind).name);
    const kube::ReflectorStats s = connector_->reflector(kind).stats();
    lists.Add({name}, static_cast<double>(s.lists));
    list_failures.Add({name}, static_cast<double>(s.list_failures));
    relists.Add({name}, static_cast<double>(s.relists));
    watches.Add({name}, static_cast<double>(s.watches));
    watch_errors.Add({name}, static_cast<double>(s.stream_errors));
    decode_errors.Add({name}, static_cast<double>(s.decode_errors));
    const std::pair<const char*, uint64_t> by_type[] = {{"ADDED", s.added},
                                                        {"MODIFIED", s.modified},
                                                        {"DELETED", s.deleted},
                                                        {"BOOKMARK", s.bookmarks},
                                                        {"ERROR", s.error_events}};
    for (const auto& [type, n] : by_type) events.Add({name, type}, static_cast<double>(n));
    last_event_age.Add({name}, s.last_event == TimePoint{}
                                   ? -1.0
                                   : std::chrono::duration<double>(now - s.last_event).count());
    backing_off.Add({name}, s.backing_off ? 1 : 0);
  }
  for (ScrapeFamily* f : {&lists, &list_failures, &relists, &watches, &watch_errors, &events, &decode_errors,
                          &last_event_age, &backing_off}) {
    f->AppendTo(&out);
  }

  if (const auto* rec = dynamic_cast<const kube::RestEventRecorder*>(connector_->event_recorder())) {
    const auto e = rec->stats();
    const std::pair<const char*, uint64_t> outcomes[] = {
        {"created", e.created}, {"patched", e.patched},           {"failed", e.failed},
        {"dropped", e.dropped}, {"spam_dropped", e.spam_dropped}, {"coalesced", e.coalesced},
        {"retried", e.retried}};
    ScrapeFamily k8s_events("volcache_kube_events_total",
                            "core/v1 Event writes by outcome (created, patched, failed, dropped, "
                            "spam_dropped, coalesced, retried)",
                            MetricType::Counter, {"outcome"});
    for (const auto& [outcome, n] : outcomes) k8s_events.Add({outcome}, static_cast<double>(n));
    k8s_events.AppendTo(&out);
  }
  return out;
}

LeaderMetrics::LeaderMetrics(metrics::Registry* registry, kube::LeaderElector* elector)
    : registry_(registry), elector_(elector) {
  collector_ = registry_->AddCollector([this] { return Collect(); });
}

std::vector<prometheus::MetricFamily> LeaderMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  ScrapeFamily("volcache_leader", "1 while this replica is the leader (or leader election is off), else 0",
               MetricType::Gauge)
      .Add({}, elector_ == nullptr || elector_->IsLeader() ? 1 : 0)
      .AppendTo(&out);
  ScrapeFamily("volcache_leader_transitions_total", "Times this replica became or stopped being the leader",
               MetricType::Counter)
      .Add({}, elector_ ? static_cast<double>(elector_->transitions()) : 0)
      .AppendTo(&out);
  return out;
}

LeaderMetrics::~LeaderMetrics() { registry_->RemoveCollector(collector_); }

}  // namespace volcache::cmd
