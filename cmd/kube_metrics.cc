#include "cmd/kube_metrics.h"

#include <string>

#include "kube/events.h"

namespace volcache::cmd {

namespace {
constexpr kube::ResourceKind kKinds[] = {
    kube::ResourceKind::kPods,   kube::ResourceKind::kNodes,           kube::ResourceKind::kPodGroups,
    kube::ResourceKind::kQueues, kube::ResourceKind::kPriorityClasses, kube::ResourceKind::kResourceQuotas};
}  // namespace

KubeMetrics::KubeMetrics(metrics::Registry* registry, kube::Connector* connector)
    : registry_(registry),
      connector_(connector),
      requests_(registry->AddCounter("volcache_rest_client_requests_total",
                                     "Requests to the API server by verb and HTTP code (0: no answer)",
                                     {"verb", "code"})),
      latency_(registry->AddHistogram("volcache_rest_client_request_duration_seconds",
                                      "API server request latency by verb", {"verb"},
                                      kube::RestClientMetrics::LatencyBuckets())),
      limiter_wait_(registry->AddCounter("volcache_rest_client_rate_limiter_wait_seconds_total",
                                         "Time requests spent waiting on the client-side rate limiter")),
      limited_(registry->AddCounter("volcache_rest_client_rate_limited_requests_total",
                                    "Requests that had to wait on the client-side rate limiter")),
      stale_retries_(
          registry->AddCounter("volcache_rest_client_stale_retries_total",
                               "Requests retried on a fresh connection after a stale keep-alive one failed")),
      stale_connections_(
          registry->AddCounter("volcache_rest_client_stale_connections_total",
                               "Idle keep-alive connections found closed or expired and dropped")),
      lists_(
          registry->AddCounter("volcache_reflector_lists_total", "Complete LISTs by resource", {"resource"})),
      list_failures_(registry->AddCounter("volcache_reflector_list_failures_total",
                                          "Failed LISTs by resource", {"resource"})),
      relists_(registry->AddCounter("volcache_reflector_relists_total",
                                    "LISTs after the first (410 Gone, ERROR events) by resource",
                                    {"resource"})),
      watches_(registry->AddCounter("volcache_reflector_watches_total", "Watch requests started by resource",
                                    {"resource"})),
      watch_errors_(registry->AddCounter("volcache_reflector_watch_errors_total",
                                         "Watches that ended in an error by resource", {"resource"})),
      events_(registry->AddCounter("volcache_reflector_events_total", "Watch events by resource and type",
                                   {"resource", "type"})),
      decode_errors_(registry->AddCounter("volcache_reflector_decode_errors_total",
                                          "Objects the decoder refused by resource", {"resource"})),
      last_event_age_(
          registry->AddGauge("volcache_reflector_last_event_age_seconds",
                             "Seconds since the last watch event (bookmarks included) by resource; "
                             "-1 before the first",
                             {"resource"})),
      backing_off_(registry->AddGauge("volcache_reflector_backing_off",
                                      "1 while the reflector waits to retry a failed LIST or watch",
                                      {"resource"})),
      k8s_events_(registry->AddCounter("volcache_kube_events_total",
                                       "core/v1 Event writes by outcome (created, patched, failed, dropped, "
                                       "spam_dropped, coalesced)",
                                       {"outcome"})) {
  collector_ = registry_->AddCollector([this] { Collect(); });
}

KubeMetrics::~KubeMetrics() { registry_->RemoveCollector(collector_); }

void KubeMetrics::Collect() {
  const kube::RestClientMetrics m = connector_->client().metrics();
  for (const auto& r : m.requests)
    requests_.WithLabels({r.verb, std::to_string(r.code)})->Set(static_cast<double>(r.count));
  for (const auto& l : m.latency) {
    // RestClientMetrics counts are cumulative; the histogram takes per-bucket counts.
    std::vector<uint64_t> per_bucket(l.cumulative.size());
    for (size_t i = 0; i < l.cumulative.size(); ++i)
      per_bucket[i] = l.cumulative[i] - (i ? l.cumulative[i - 1] : 0);
    latency_.WithLabels({l.verb})->Load(std::move(per_bucket), l.sum_seconds, l.count);
  }
  limiter_wait_.WithLabels({})->Set(m.rate_limiter_wait_seconds);
  limited_.WithLabels({})->Set(static_cast<double>(m.rate_limited));
  stale_retries_.WithLabels({})->Set(static_cast<double>(m.stale_retries));
  stale_connections_.WithLabels({})->Set(static_cast<double>(m.stale_connections));

  const TimePoint now = RealClock::Instance()->Now();
  for (kube::ResourceKind kind : kKinds) {
    const std::string name(kube::Info(kind).name);
    const kube::ReflectorStats s = connector_->reflector(kind).stats();
    auto set = [&](metrics::Family<metrics::Counter>& f, uint64_t v) {
      f.WithLabels({name})->Set(static_cast<double>(v));
    };
    set(lists_, s.lists);
    set(list_failures_, s.list_failures);
    set(relists_, s.relists);
    set(watches_, s.watches);
    set(watch_errors_, s.stream_errors);
    set(decode_errors_, s.decode_errors);
    const std::pair<const char*, uint64_t> by_type[] = {{"ADDED", s.added},
                                                        {"MODIFIED", s.modified},
                                                        {"DELETED", s.deleted},
                                                        {"BOOKMARK", s.bookmarks},
                                                        {"ERROR", s.error_events}};
    for (const auto& [type, n] : by_type) events_.WithLabels({name, type})->Set(static_cast<double>(n));
    last_event_age_.WithLabels({name})->Set(
        s.last_event == TimePoint{} ? -1.0 : std::chrono::duration<double>(now - s.last_event).count());
    backing_off_.WithLabels({name})->Set(s.backing_off ? 1 : 0);
  }

  if (const auto* rec = dynamic_cast<const kube::RestEventRecorder*>(connector_->event_recorder())) {
    const auto e = rec->stats();
    const std::pair<const char*, uint64_t> outcomes[] = {
        {"created", e.created}, {"patched", e.patched},           {"failed", e.failed},
        {"dropped", e.dropped}, {"spam_dropped", e.spam_dropped}, {"coalesced", e.coalesced}};
    for (const auto& [outcome, n] : outcomes) k8s_events_.WithLabels({outcome})->Set(static_cast<double>(n));
  }
}

LeaderMetrics::LeaderMetrics(metrics::Registry* registry, kube::LeaderElector* elector)
    : registry_(registry),
      elector_(elector),
      leader_(registry->AddGauge("volcache_leader",
                                 "1 while this replica is the leader (or leader election is off), else 0")),
      transitions_(registry->AddCounter("volcache_leader_transitions_total",
                                        "Times this replica became or stopped being the leader")) {
  collector_ = registry_->AddCollector([this] {
    leader_.WithLabels({})->Set(elector_ == nullptr || elector_->IsLeader() ? 1 : 0);
    transitions_.WithLabels({})->Set(elector_ ? static_cast<double>(elector_->transitions()) : 0);
  });
}

LeaderMetrics::~LeaderMetrics() { registry_->RemoveCollector(collector_); }

}  // namespace volcache::cmd
