#pragma once
// volcache's own Prometheus metrics: counters, gauges and histograms with label sets, series
// removal, and the text exposition format 0.0.4 (what /metrics serves).
//
// prometheus-cpp (SPEC §8) is packaged in Debian 12 (prometheus-cpp-dev 1.0.1); moving onto
// it is open work. Until then this file is the subset a scheduler cache needs, with the same
// model (Registry → Family → labelled series) and the same output.
//
// Model:
//  - A Registry owns Families; a Family has a name, help text, a type and a fixed list of
//    label names; each distinct tuple of label values is one series (a Counter, Gauge or
//    Histogram), created on first use by WithLabels() and dropped by Remove()/RemoveIf().
//    Series for a job or queue must be removed when it leaves the cache (CONVENTIONS §11);
//    label values never carry pod names.
//  - Collectors are callbacks the Registry runs at the start of every Serialize(), for
//    values that are cheaper to compute at scrape time (depths, counts by state) than to
//    maintain on every change.
//  - Serialize(): families in registration order, series sorted by label values; HELP/TYPE
//    lines; label values escaped (\\, \", \n); histograms as cumulative _bucket{le=...}
//    (ending with le="+Inf"), _sum and _count. A family with no series is omitted.
//
// Misuse is a programming error and stops the process (VC_CHECK): invalid metric or label
// names, a duplicate family name, the wrong number of label values, a negative counter
// increment, histogram bounds that are not strictly increasing.
//
// Thread-safety: everything here is safe for concurrent use. A series handle (shared_ptr)
// stays valid after Remove(); updating it then changes nothing that is exported. Collectors
// run on the scraping thread, one Serialize() at a time, without the families' locks (they may
// create and remove series, not add or remove collectors); RemoveCollector() waits for a
// running collector to finish.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace volcache::metrics {

// The Content-Type of Serialize()'s output.
inline constexpr std::string_view kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

// A monotonically increasing value.
class Counter {
 public:
  void Inc(double v = 1);
  // For counters whose source of truth is elsewhere (a component's own monotonic total,
  // mirrored at scrape time): sets the exported value.
  void Set(double total) { value_.store(total, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Dec(double v = 1) { value_.fetch_add(-v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into buckets with the given upper bounds (le, inclusive); the +Inf
// bucket is implicit.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  struct Data {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket, not cumulative; bounds.size() + 1 (+Inf last)
    double sum = 0;
    uint64_t count = 0;
  };
  Data Collect() const;  // one consistent view
  // For histograms whose source of truth is elsewhere (a component's own bucket counts,
  // mirrored at scrape time): replaces the counts. `counts` is per bucket, not cumulative,
  // bounds().size() + 1 long; VC_CHECK otherwise.
  void Load(std::vector<uint64_t> counts, double sum, uint64_t count);
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // guarded by mu_
  double sum_ = 0;                // guarded by mu_
  uint64_t count_ = 0;            // guarded by mu_
};

// start, start*factor, ... (count bounds). VC_CHECK: start > 0, factor > 1, count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// start, start+width, ... (count bounds). VC_CHECK: width > 0, count >= 1.
std::vector<double> LinearBuckets(double start, double width, int count);

enum class MetricType { kCounter, kGauge, kHistogram };

class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Appends this family in the exposition format (nothing when it has no series).
  virtual void Render(std::string* out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);

 private:
  const std::string name_, help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

template <class T>
class Family final : public FamilyBase {
 public:
  using LabelValues = std::vector<std::string>;
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::function<std::shared_ptr<T>()> make);

  // The series for these label values (one per label name, in order), created at zero on
  // first use.
  std::shared_ptr<T> WithLabels(const LabelValues& values);
  // Drops a series; false when it did not exist.
  bool Remove(const LabelValues& values);
  // Drops every series whose label values match; returns how many.
  size_t RemoveIf(const std::function<bool(const LabelValues&)>& pred);
  std::vector<LabelValues> Series() const;
  size_t size() const;

  void Render(std::string* out) const override;

 private:
  const std::function<std::shared_ptr<T>()> make_;
  mutable std::mutex mu_;
  std::map<LabelValues, std::shared_ptr<T>> series_;  // guarded by mu_
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Families live as long as the registry; references to them stay valid.
  Family<Counter>& AddCounter(std::string name, std::string help, std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  Family<Histogram>& AddHistogram(std::string name, std::string help, std::vector<std::string> label_names,
                                  std::vector<double> bounds);

  // Runs `fn` at the start of every Serialize(). Returns an id for RemoveCollector.
  int AddCollector(std::function<void()> fn);
  // Returns once `id` is gone and not running.
  void RemoveCollector(int id);

  // Runs the collectors, then renders every family.
  std::string Serialize() const;

 private:
  void Register(std::unique_ptr<FamilyBase> family);

  mutable std::mutex collect_mu_;                    // one Serialize (collectors) at a time; RemoveCollector
  std::map<int, std::function<void()>> collectors_;  // guarded by collect_mu_
  int next_collector_ = 1;                           // guarded by collect_mu_
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;  // guarded by mu_
};

// Exposition helpers (exposed for tests).
// A sample value: integers without a fraction, "+Inf", "-Inf", "NaN", else shortest repr.
std::string FormatValue(double v);
// Label value escaping: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view v);
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace volcache::metrics
