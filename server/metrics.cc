#include "server/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <limits>
#include <string>

#include "api/check.h"

namespace volcache::metrics {

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  VC_CHECK(start > 0 && factor > 1 && count >= 1, "ExponentialBuckets: start > 0, factor > 1, count >= 1");
  std::vector<double> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// ------------------------------------------------------------------ ScrapeFamily

ScrapeFamily::ScrapeFamily(std::string name, std::string_view help, prometheus::MetricType type,
                           std::vector<std::string> label_names)
    : label_names_(std::move(label_names)) {
  VC_CHECK(prometheus::CheckMetricName(name), "invalid metric name: " + name);
  VC_CHECK(type == prometheus::MetricType::Counter || type == prometheus::MetricType::Gauge ||
               type == prometheus::MetricType::Histogram,
           "ScrapeFamily: a counter, gauge or histogram: " + name);
  for (const auto& l : label_names_) {
    VC_CHECK(prometheus::CheckLabelName(l), "invalid label name '" + l + "' on " + name);
    VC_CHECK(type != prometheus::MetricType::Histogram || l != "le",
             "a histogram may not use the label 'le': " + name);
  }
  family_.name = std::move(name);
  family_.help = EscapeHelp(help);
  family_.type = type;
}

prometheus::ClientMetric& ScrapeFamily::Series(std::vector<std::string> label_values) {
  VC_CHECK(label_values.size() == label_names_.size(), "wrong number of label values for " + family_.name);
  auto [it, inserted] = series_.try_emplace(std::move(label_values));
  if (inserted) {
    it->second.label.reserve(label_names_.size());
    for (size_t i = 0; i < label_names_.size(); ++i)
      it->second.label.push_back({label_names_[i], it->first[i]});
  }
  return it->second;
}

ScrapeFamily& ScrapeFamily::Add(std::vector<std::string> label_values, double value) {
  VC_CHECK(family_.type != prometheus::MetricType::Histogram,
           "ScrapeFamily::Add on a histogram: " + family_.name);
  prometheus::ClientMetric& m = Series(std::move(label_values));
  if (family_.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return *this;
}

ScrapeFamily& ScrapeFamily::AddHistogram(std::vector<std::string> label_values,
                                         const std::vector<double>& bounds,
                                         const std::vector<uint64_t>& cumulative, double sum,
                                         uint64_t count) {
  VC_CHECK(family_.type == prometheus::MetricType::Histogram, "ScrapeFamily::AddHistogram: " + family_.name);
  VC_CHECK(cumulative.size() == bounds.size() + 1,
           "ScrapeFamily::AddHistogram: one count per bucket, +Inf included: " + family_.name);
  prometheus::ClientMetric& m = Series(std::move(label_values));
  m.histogram.sample_count = count;
  m.histogram.sample_sum = sum;
  m.histogram.bucket.clear();
  m.histogram.bucket.reserve(cumulative.size());
  for (size_t i = 0; i < cumulative.size(); ++i) {
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative[i];
    b.upper_bound = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back(b);
  }
  return *this;
}

void ScrapeFamily::AppendTo(std::vector<prometheus::MetricFamily>* out) {
  if (series_.empty()) return;
  family_.metric.reserve(series_.size());
  for (auto& [_, m] : series_) family_.metric.push_back(std::move(m));
  series_.clear();
  out->push_back(std::move(family_));
}

// ------------------------------------------------------------------ Registry

Registry::Registry()
    : registry_(std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Throw)) {}

Registry::~Registry() = default;

prometheus::Family<prometheus::Counter>& Registry::AddCounter(const std::string& name,
                                                              std::string_view help) {
  return prometheus::BuildCounter().Name(name).Help(EscapeHelp(help)).Register(*registry_);
}

prometheus::Family<prometheus::Gauge>& Registry::AddGauge(const std::string& name, std::string_view help) {
  return prometheus::BuildGauge().Name(name).Help(EscapeHelp(help)).Register(*registry_);
}

prometheus::Family<prometheus::Histogram>& Registry::AddHistogram(const std::string& name,
                                                                  std::string_view help) {
  return prometheus::BuildHistogram().Name(name).Help(EscapeHelp(help)).Register(*registry_);
}

int Registry::AddCollector(std::function<std::vector<prometheus::MetricFamily>()> collect) {
  MutexLock lock(&collect_mu_);
  const int id = next_collector_++;
  collectors_.emplace(id, std::make_unique<FunctionCollectable>(std::move(collect)));
  return id;
}

void Registry::RemoveCollector(int id) {
  MutexLock lock(&collect_mu_);
  collectors_.erase(id);
}

std::vector<prometheus::MetricFamily> Registry::Collect() const {
  std::vector<prometheus::MetricFamily> out = registry_->Collect();
  MutexLock lock(&collect_mu_);
  for (const auto& [_, c] : collectors_) {
    std::vector<prometheus::MetricFamily> more = c->Collect();
    out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return out;
}

std::string Registry::Serialize() const { return prometheus::TextSerializer().Serialize(Collect()); }

}  // namespace volcache::metrics
