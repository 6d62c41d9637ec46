#pragma once
// volcache's metrics on prometheus-cpp's core (SPEC §8; Debian 12: prometheus-cpp-dev 1.0.1).
// A thin layer: storage, families and serialization are prometheus-cpp's.
//
// Two kinds of values (docs/ADMIN.md lists every metric):
//  - Event-driven series (observed as things happen: bind latency, session durations, ...)
//    live in a prometheus::Registry: AddCounter/AddGauge/AddHistogram return a
//    prometheus::Family<T>&, whose Add(labels[, bucket bounds]) gives the series (a
//    prometheus::Counter/Gauge/Histogram&). Families live as long as this Registry; a series
//    lives until Family::Remove(&series) (after which the reference dangles: remove only
//    series nothing else still updates).
//  - Scrape-time values (depths, counts by state, totals mirrored from a component's own
//    counters or bucket counts) are not stored at all: a collector (AddCollector) builds them
//    as prometheus::MetricFamily values at every scrape, exactly, with ScrapeFamily. Each
//    collector is a prometheus::Collectable, serialized alongside the registry. A series of
//    an object (a job, a queue) exists exactly while the collector still sees the object.
//
// Serialize() writes the registry's families, then every collector's, with
// prometheus::TextSerializer (text exposition format 0.0.4). Series order within a family is
// prometheus-cpp's (unspecified for registry families; sorted by label values for
// ScrapeFamily). A family with no series is omitted.
//
// HELP text: prometheus-cpp 1.0.1's TextSerializer writes it verbatim, so this layer escapes
// backslashes and newlines (as the format requires) when a family is added or built.
//
// Misuse: prometheus-cpp throws std::invalid_argument for an invalid metric or label name, a
// family name added twice (the registry refuses duplicates) or histogram bounds that are not
// strictly increasing; ScrapeFamily stops the process (VC_CHECK) on an invalid name, the
// wrong number of label values or bucket counts that do not match the bounds.
//
// Thread-safety: prometheus-cpp's families and series are safe for concurrent use. One
// Serialize() runs the collectors at a time (concurrent scrapes take turns), on the
// scraping thread; RemoveCollector() waits for a running collector to finish. Collectors run
// with the registry's collector lock held: a collector must not call AddCollector,
// RemoveCollector, Collect or Serialize.

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/mutex.h"

namespace volcache::metrics {

// The Content-Type of Serialize()'s output.
inline constexpr std::string_view kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

// start, start*factor, ... (count bounds). VC_CHECK: start > 0, factor > 1, count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// HELP text escaped for the exposition format: backslash and newline.
std::string EscapeHelp(std::string_view help);

// One family built at scrape time, inside a collector:
//   ScrapeFamily depth("volcache_workqueue_depth", "Items ready in a work queue.",
//                      prometheus::MetricType::Gauge, {"queue"});
//   depth.Add({"node"}, 3);
//   depth.AppendTo(&families);
class ScrapeFamily {
 public:
  // `type` is Counter, Gauge or Histogram.
  ScrapeFamily(std::string name, std::string_view help, prometheus::MetricType type,
               std::vector<std::string> label_names = {});

  // A counter's or gauge's series: one value per label name, in order. Adding the same label
  // values again replaces the value.
  ScrapeFamily& Add(std::vector<std::string> label_values, double value);
  // A histogram's series from a component's own counts: cumulative[i] = observations <=
  // bounds[i], one more entry for +Inf (bounds.size() + 1 in all).
  ScrapeFamily& AddHistogram(std::vector<std::string> label_values, const std::vector<double>& bounds,
                             const std::vector<uint64_t>& cumulative, double sum, uint64_t count);

  // Moves the family to `out`, series sorted by label values (nothing when it has no
  // series). Use once, last.
  void AppendTo(std::vector<prometheus::MetricFamily>* out);

 private:
  prometheus::ClientMetric& Series(std::vector<std::string> label_values);

  const std::vector<std::string> label_names_;
  prometheus::MetricFamily family_;
  std::map<std::vector<std::string>, prometheus::ClientMetric> series_;
};

// A prometheus::Collectable whose families a function builds at every Collect().
class FunctionCollectable final : public prometheus::Collectable {
 public:
  explicit FunctionCollectable(std::function<std::vector<prometheus::MetricFamily>()> fn)
      : fn_(std::move(fn)) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return fn_(); }

 private:
  const std::function<std::vector<prometheus::MetricFamily>()> fn_;
};

// What /metrics serves: a prometheus::Registry plus the scrape-time collectors.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  prometheus::Registry& registry() { return *registry_; }

  // Families live as long as this Registry; references to them stay valid.
  prometheus::Family<prometheus::Counter>& AddCounter(const std::string& name, std::string_view help);
  prometheus::Family<prometheus::Gauge>& AddGauge(const std::string& name, std::string_view help);
  prometheus::Family<prometheus::Histogram>& AddHistogram(const std::string& name, std::string_view help);

  // A handle on a series of this registry that keeps every family alive, for callbacks that
  // may still run after their owner let go of them (observers called outside their owner's
  // lock). Series must not be Remove()d while such a handle is in use.
  template <class T>
  std::shared_ptr<T> Share(T& series) const {
    return std::shared_ptr<T>(registry_, &series);
  }

  // Runs `collect` at every Collect()/Serialize() (wrapped in a FunctionCollectable) and
  // exports what it returns. Returns an id for RemoveCollector.
  int AddCollector(std::function<std::vector<prometheus::MetricFamily>()> collect) EXCLUDES(collect_mu_);
  // Returns once `id` is gone and not running.
  void RemoveCollector(int id) EXCLUDES(collect_mu_);

  // The registry's families, then every collector's.
  std::vector<prometheus::MetricFamily> Collect() const EXCLUDES(collect_mu_);
  // Collect() in the text exposition format 0.0.4 (prometheus::TextSerializer).
  std::string Serialize() const EXCLUDES(collect_mu_);

 private:
  const std::shared_ptr<prometheus::Registry> registry_;
  mutable Mutex collect_mu_;  // one collect at a time; RemoveCollector waits on it
  std::map<int, std::unique_ptr<prometheus::Collectable>> collectors_ GUARDED_BY(collect_mu_);
  int next_collector_ GUARDED_BY(collect_mu_) = 1;
};

}  // namespace volcache::metrics
