#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "api/check.h"

namespace volcache::metrics {

// ------------------------------------------------------------------ helpers

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Exact integers (counts, bytes) print without a fraction or exponent.
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0)
    return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);  // shortest representation that round-trips
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
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

bool IsNameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"` without the closing brace (so histograms can append le); "" for no labels.
std::string OpenLabels(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  if (names.empty()) return {};
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  return out;
}

std::string CloseLabels(const std::string& open) { return open.empty() ? open : open + "}"; }

void RenderHeader(const FamilyBase& f, std::string* out) {
  *out += "# HELP ";
  *out += f.name();
  *out += ' ';
  *out += EscapeHelp(f.help());
  *out += "\n# TYPE ";
  *out += f.name();
  *out += ' ';
  *out += TypeName(f.type());
  *out += '\n';
}

void RenderSample(std::string* out, std::string_view name, std::string_view labels, double v) {
  *out += name;
  *out += labels;
  *out += ' ';
  *out += FormatValue(v);
  *out += '\n';
}

void RenderSeries(const FamilyBase& f, const std::string& labels, const Counter& c, std::string* out) {
  RenderSample(out, f.name(), CloseLabels(labels), c.Value());
}

void RenderSeries(const FamilyBase& f, const std::string& labels, const Gauge& g, std::string* out) {
  RenderSample(out, f.name(), CloseLabels(labels), g.Value());
}

void RenderSeries(const FamilyBase& f, const std::string& labels, const Histogram& h, std::string* out) {
  Histogram::Data d = h.Collect();
  const std::string bucket = f.name() + "_bucket";
  const std::string prefix = labels.empty() ? std::string("{") : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= d.bounds.size(); ++i) {
    cumulative += d.counts[i];
    const std::string le = i < d.bounds.size() ? FormatValue(d.bounds[i]) : "+Inf";
    RenderSample(out, bucket, prefix + "le=\"" + le + "\"}", static_cast<double>(cumulative));
  }
  RenderSample(out, f.name() + "_sum", CloseLabels(labels), d.sum);
  RenderSample(out, f.name() + "_count", CloseLabels(labels), static_cast<double>(d.count));
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, /*colon=*/true)) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;  // "__" is reserved
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, /*colon=*/false)) return false;
  }
  return true;
}

// ------------------------------------------------------------------ values

void Counter::Inc(double v) {
  VC_CHECK(v >= 0, "a counter only goes up");
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    VC_CHECK(std::isfinite(bounds_[i]), "histogram bounds must be finite (+Inf is implicit)");
    VC_CHECK(i == 0 || bounds_[i - 1] < bounds_[i], "histogram bounds must be strictly increasing");
  }
}

void Histogram::Observe(double v) {
  // First bucket whose upper bound is >= v (le is inclusive); NaN lands in +Inf.
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  if (std::isnan(v)) i = bounds_.size();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += v;
  ++count_;
}

Histogram::Data Histogram::Collect() const {
  Data d;
  d.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  d.counts = counts_;
  d.sum = sum_;
  d.count = count_;
  return d;
}

void Histogram::Load(std::vector<uint64_t> counts, double sum, uint64_t count) {
  VC_CHECK(counts.size() == bounds_.size() + 1, "Histogram::Load: one count per bucket, +Inf included");
  std::lock_guard<std::mutex> lock(mu_);
  counts_ = std::move(counts);
  sum_ = sum;
  count_ = count;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  VC_CHECK(start > 0 && factor > 1 && count >= 1, "ExponentialBuckets: start > 0, factor > 1, count >= 1");
  std::vector<double> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  VC_CHECK(width > 0 && count >= 1, "LinearBuckets: width > 0, count >= 1");
  std::vector<double> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) out.push_back(start + width * i);
  return out;
}

// ------------------------------------------------------------------ families

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {
  VC_CHECK(IsValidMetricName(name_), "invalid metric name: " + name_);
  std::unordered_set<std::string> seen;
  for (const auto& l : label_names_) {
    VC_CHECK(IsValidLabelName(l), "invalid label name '" + l + "' on " + name_);
    VC_CHECK(seen.insert(l).second, "duplicate label name '" + l + "' on " + name_);
    VC_CHECK(type_ != MetricType::kHistogram || l != "le",
             "a histogram may not use the label 'le': " + name_);
  }
}

template <class T>
Family<T>::Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                  std::function<std::shared_ptr<T>()> make)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)), make_(std::move(make)) {}

template <class T>
std::shared_ptr<T> Family<T>::WithLabels(const LabelValues& values) {
  VC_CHECK(values.size() == label_names().size(), "wrong number of label values for " + name());
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = series_[values];
  if (!slot) slot = make_();
  return slot;
}

template <class T>
bool Family<T>::Remove(const LabelValues& values) {
  std::lock_guard<std::mutex> lock(mu_);
  return series_.erase(values) > 0;
}

template <class T>
size_t Family<T>::RemoveIf(const std::function<bool(const LabelValues&)>& pred) {
  std::lock_guard<std::mutex> lock(mu_);
  return std::erase_if(series_, [&](const auto& kv) { return pred(kv.first); });
}

template <class T>
std::vector<typename Family<T>::LabelValues> Family<T>::Series() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LabelValues> out;
  out.reserve(series_.size());
  for (const auto& [values, _] : series_) out.push_back(values);
  return out;
}

template <class T>
size_t Family<T>::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_.size();
}

template <class T>
void Family<T>::Render(std::string* out) const {
  // Copy the handles, render without the lock (histograms take their own).
  std::vector<std::pair<LabelValues, std::shared_ptr<T>>> series;
  {
    std::lock_guard<std::mutex> lock(mu_);
    series.assign(series_.begin(), series_.end());
  }
  if (series.empty()) return;
  RenderHeader(*this, out);
  for (const auto& [values, metric] : series)
    RenderSeries(*this, OpenLabels(label_names(), values), *metric, out);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ------------------------------------------------------------------ registry

Registry::Registry() = default;
Registry::~Registry() = default;

void Registry::Register(std::unique_ptr<FamilyBase> family) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_)
    VC_CHECK(f->name() != family->name(), "metric registered twice: " + f->name());
  families_.push_back(std::move(family));
}

Family<Counter>& Registry::AddCounter(std::string name, std::string help,
                                      std::vector<std::string> label_names) {
  auto f =
      std::make_unique<Family<Counter>>(std::move(name), std::move(help), MetricType::kCounter,
                                        std::move(label_names), [] { return std::make_shared<Counter>(); });
  auto& ref = *f;
  Register(std::move(f));
  return ref;
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help, std::vector<std::string> label_names) {
  auto f = std::make_unique<Family<Gauge>>(std::move(name), std::move(help), MetricType::kGauge,
                                           std::move(label_names), [] { return std::make_shared<Gauge>(); });
  auto& ref = *f;
  Register(std::move(f));
  return ref;
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          std::vector<std::string> label_names, std::vector<double> bounds) {
  Histogram check(bounds);  // validates the bounds now rather than at the first series
  auto f = std::make_unique<Family<Histogram>>(std::move(name), std::move(help), MetricType::kHistogram,
                                               std::move(label_names),
                                               [bounds] { return std::make_shared<Histogram>(bounds); });
  auto& ref = *f;
  Register(std::move(f));
  return ref;
}

int Registry::AddCollector(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(collect_mu_);
  int id = next_collector_++;
  collectors_.emplace(id, std::move(fn));
  return id;
}

void Registry::RemoveCollector(int id) {
  std::lock_guard<std::mutex> lock(collect_mu_);
  collectors_.erase(id);
}

std::string Registry::Serialize() const {
  {
    std::lock_guard<std::mutex> lock(collect_mu_);
    for (const auto& [_, fn] : collectors_) fn();
  }
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    families.reserve(families_.size());
    for (const auto& f : families_) families.push_back(f.get());
  }
  std::string out;
  for (const FamilyBase* f : families) f->Render(&out);
  return out;
}

}  // namespace volcache::metrics
