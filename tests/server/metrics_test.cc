// The metrics layer over prometheus-cpp: what Serialize() writes for small registries
// (parsed, so the assertions do not depend on prometheus-cpp's series order), escaping,
// histogram buckets, series removal, scrape-time families and collectors, misuse, and
// concurrent updates while scraping.
#include "server/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/server/exposition.h"

namespace volcache::metrics {
namespace {

using prometheus::MetricType;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using volcache::testing::ParseExposition;
using volcache::testing::Sample;

TEST(MetricsRegistryTest, CounterAndGauge) {
  Registry r;
  auto& binds = r.AddCounter("volcache_test_binds_total", "Binds done.").Add({});
  auto& depth = r.AddGauge("volcache_test_depth", "Queue depth.");
  binds.Increment();
  binds.Increment(2);
  depth.Add({{"queue", "node"}}).Set(3);
  depth.Add({{"queue", "errTasks"}}).Set(0.5);
  const std::string text = r.Serialize();
  const auto e = ParseExposition(text);
  EXPECT_THAT(e.problems, IsEmpty()) << text;
  EXPECT_EQ(e.type.at("volcache_test_binds_total"), "counter");
  EXPECT_EQ(e.help.at("volcache_test_binds_total"), "Binds done.");
  EXPECT_EQ(e.type.at("volcache_test_depth"), "gauge");
  EXPECT_EQ(e.samples.size(), 3u);
  EXPECT_EQ(e.Value("volcache_test_binds_total"), 3);
  EXPECT_EQ(e.Value("volcache_test_depth", {{"queue", "node"}}), 3);
  EXPECT_EQ(e.Value("volcache_test_depth", {{"queue", "errTasks"}}), 0.5);
  // Integers print without a fraction.
  EXPECT_THAT(text, HasSubstr("\nvolcache_test_binds_total 3\n"));
}

TEST(MetricsRegistryTest, HelpAndLabelValuesAreEscaped) {
  Registry r;
  auto& g = r.AddGauge("g", "back\\slash and\nnewline");
  g.Add({{"a", "q\"uote"}, {"b", "x\\y\nz"}}).Set(1);
  const std::string text = r.Serialize();
  EXPECT_THAT(text, HasSubstr("# HELP g back\\\\slash and\\nnewline\n"));
  EXPECT_THAT(text, HasSubstr("g{a=\"q\\\"uote\",b=\"x\\\\y\\nz\"} 1\n"));
  const auto e = ParseExposition(text);
  EXPECT_THAT(e.problems, IsEmpty()) << text;
  EXPECT_EQ(e.help.at("g"), "back\\slash and\nnewline");
  EXPECT_EQ(e.Value("g", {{"a", "q\"uote"}, {"b", "x\\y\nz"}}), 1);
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithInf) {
  Registry r;
  auto& s = r.AddHistogram("lat_seconds", "Latency.").Add({{"op", "bind"}}, std::vector<double>{0.1, 1, 10});
  s.Observe(0.05);
  s.Observe(0.1);  // le is inclusive
  s.Observe(0.5);
  s.Observe(100);
  const std::string text = r.Serialize();
  const auto e = ParseExposition(text);
  EXPECT_THAT(e.problems, IsEmpty()) << text;
  EXPECT_EQ(e.type.at("lat_seconds"), "histogram");
  EXPECT_EQ(e.Value("lat_seconds_bucket", {{"op", "bind"}, {"le", "0.1"}}), 2);
  EXPECT_EQ(e.Value("lat_seconds_bucket", {{"op", "bind"}, {"le", "1"}}), 3);
  EXPECT_EQ(e.Value("lat_seconds_bucket", {{"op", "bind"}, {"le", "10"}}), 3);
  EXPECT_EQ(e.Value("lat_seconds_bucket", {{"op", "bind"}, {"le", "+Inf"}}), 4);
  EXPECT_DOUBLE_EQ(e.Value("lat_seconds_sum", {{"op", "bind"}}).value_or(0), 100.65);
  EXPECT_EQ(e.Value("lat_seconds_count", {{"op", "bind"}}), 4);
  EXPECT_EQ(e.samples.size(), 6u);
}

TEST(MetricsRegistryTest, UnlabelledHistogram) {
  Registry r;
  r.AddHistogram("batch", "Batch size.").Add({}, std::vector<double>{1, 2}).Observe(2);
  const auto e = ParseExposition(r.Serialize());
  EXPECT_THAT(e.problems, IsEmpty());
  EXPECT_EQ(e.Value("batch_bucket", {{"le", "1"}}), 0);
  EXPECT_EQ(e.Value("batch_bucket", {{"le", "2"}}), 1);
  EXPECT_EQ(e.Value("batch_bucket", {{"le", "+Inf"}}), 1);
  EXPECT_EQ(e.Value("batch_sum"), 2);
  EXPECT_EQ(e.Value("batch_count"), 1);
}

TEST(MetricsRegistryTest, EmptyFamilyIsOmittedAndRemovedSeriesDisappear) {
  Registry r;
  auto& g = r.AddGauge("queue_allocated", "Allocated.");
  EXPECT_EQ(r.Serialize(), "");
  auto& a = g.Add({{"queue", "a"}});
  a.Set(1);
  auto& b = g.Add({{"queue", "b"}});
  b.Set(2);
  EXPECT_EQ(&g.Add({{"queue", "a"}}), &a);  // the same series
  g.Remove(&a);
  EXPECT_FALSE(g.Has({{"queue", "a"}}));
  const std::string text = r.Serialize();
  EXPECT_EQ(Sample(text, "queue_allocated{queue=\"a\"}"), std::nullopt);
  EXPECT_EQ(Sample(text, "queue_allocated{queue=\"b\"}"), 2);
  g.Remove(&b);
  EXPECT_EQ(r.Serialize(), "");
  // Re-created series start from zero.
  EXPECT_EQ(g.Add({{"queue", "a"}}).Value(), 0);
}

TEST(MetricsScrapeFamilyTest, CountersGaugesInLabelOrderSortedByValues) {
  std::vector<prometheus::MetricFamily> out;
  ScrapeFamily g("volcache_job_pending_tasks", "Pending.", MetricType::Gauge, {"namespace", "job"});
  g.Add({"ns", "b"}, 2).Add({"ns", "a"}, 1).Add({"ns", "b"}, 3);  // the same series again: replaced
  g.AppendTo(&out);
  ScrapeFamily("empty", "Nothing.", MetricType::Counter, {"x"}).AppendTo(&out);  // omitted
  ScrapeFamily("c_total", "C.", MetricType::Counter).Add({}, 7).AppendTo(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].type, MetricType::Gauge);
  ASSERT_EQ(out[0].metric.size(), 2u);
  EXPECT_THAT(out[0].metric[0].label, ElementsAre(prometheus::ClientMetric::Label{"namespace", "ns"},
                                                  prometheus::ClientMetric::Label{"job", "a"}));
  EXPECT_EQ(out[0].metric[1].gauge.value, 3);
  EXPECT_EQ(out[1].metric[0].counter.value, 7);
}

TEST(MetricsScrapeFamilyTest, HistogramFromCumulativeCounts) {
  Registry r;
  r.AddCollector([] {
    std::vector<prometheus::MetricFamily> out;
    ScrapeFamily("req_seconds", "Latency.", MetricType::Histogram, {"verb"})
        .AddHistogram({"GET"}, {0.1, 1}, {2, 3, 5}, 7.5, 5)
        .AppendTo(&out);
    return out;
  });
  const std::string text = r.Serialize();
  const auto e = ParseExposition(text);
  EXPECT_THAT(e.problems, IsEmpty()) << text;
  EXPECT_EQ(e.type.at("req_seconds"), "histogram");
  EXPECT_EQ(e.Value("req_seconds_bucket", {{"verb", "GET"}, {"le", "0.1"}}), 2);
  EXPECT_EQ(e.Value("req_seconds_bucket", {{"verb", "GET"}, {"le", "1"}}), 3);
  EXPECT_EQ(e.Value("req_seconds_bucket", {{"verb", "GET"}, {"le", "+Inf"}}), 5);
  EXPECT_EQ(e.Value("req_seconds_sum", {{"verb", "GET"}}), 7.5);
  EXPECT_EQ(e.Value("req_seconds_count", {{"verb", "GET"}}), 5);
}

TEST(MetricsRegistryTest, CollectorsRunAtEveryScrapeAndCanBeRemoved) {
  Registry r;
  r.AddCounter("event_total", "Events.").Add({}).Increment();
  int calls = 0;
  const int id = r.AddCollector([&] {
    std::vector<prometheus::MetricFamily> out;
    ScrapeFamily("scrapes", "Scrapes.", MetricType::Gauge).Add({}, ++calls).AppendTo(&out);
    return out;
  });
  EXPECT_EQ(Sample(r.Serialize(), "scrapes"), 1);
  const std::string text = r.Serialize();
  EXPECT_EQ(Sample(text, "scrapes"), 2);
  EXPECT_EQ(Sample(text, "event_total"), 1);  // registry and collectors side by side
  r.RemoveCollector(id);
  EXPECT_EQ(Sample(r.Serialize(), "scrapes"), std::nullopt);
  EXPECT_EQ(calls, 2);
}

TEST(MetricsRegistryTest, Buckets) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
}

TEST(MetricsRegistryTest, ShareKeepsTheFamiliesAlive) {
  std::shared_ptr<prometheus::Histogram> h;
  {
    Registry r;
    h = r.Share(r.AddHistogram("h", "H.").Add({}, std::vector<double>{1}));
  }
  h->Observe(1);  // the registry is gone, the family is not (ASan would tell)
  EXPECT_EQ(h->Collect().histogram.sample_count, 1u);
}

TEST(MetricsRegistryTest, MisuseThrows) {
  Registry r;
  EXPECT_THROW(r.AddGauge("bad-name", "x"), std::invalid_argument);
  r.AddGauge("dup", "x");
  EXPECT_THROW(r.AddCounter("dup", "y"), std::invalid_argument);
  EXPECT_THROW(r.AddGauge("dup", "x"), std::invalid_argument);
  EXPECT_THROW(r.AddGauge("g", "x").Add({{"__reserved", "1"}}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h", "x").Add({}, std::vector<double>{2, 1}), std::invalid_argument);
}

TEST(MetricsDeathTest, ScrapeFamilyMisuseStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH({ ScrapeFamily("bad-name", "x", MetricType::Gauge); }, "invalid metric name");
  EXPECT_DEATH({ ScrapeFamily("g", "x", MetricType::Gauge, {"a:b"}); }, "invalid label name");
  EXPECT_DEATH({ ScrapeFamily("h", "x", MetricType::Histogram, {"le"}); }, "may not use the label 'le'");
  EXPECT_DEATH({ ScrapeFamily("g", "x", MetricType::Gauge, {"a"}).Add({}, 1); },
               "wrong number of label values");
  EXPECT_DEATH(
      {
        ScrapeFamily("h", "x", MetricType::Histogram).AddHistogram({}, {1, 2}, {1, 2}, 0, 2);
      },
      "one count per bucket");
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAndScrapes) {
  Registry r;
  auto& c = r.AddCounter("c_total", "c");
  auto& h = r.AddHistogram("h", "h").Add({}, ExponentialBuckets(1, 2, 8));
  auto& g = r.AddGauge("g", "g");
  std::atomic<int> collects{0};
  r.AddCollector([&] {
    ++collects;
    std::vector<prometheus::MetricFamily> out;
    ScrapeFamily("s", "s", MetricType::Gauge).Add({}, 1).AppendTo(&out);
    return out;
  });
  constexpr int kThreads = 4, kIters = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& mine = c.Add({{"worker", std::to_string(t)}});
      for (int i = 0; i < kIters; ++i) {
        mine.Increment();
        h.Observe(i % 300);
        // Each thread creates and removes only its own gauge series (a removed series'
        // reference dangles, so nothing else may hold it).
        auto& q = g.Add({{"queue", "t" + std::to_string(t) + "q" + std::to_string(i % 5)}});
        q.Set(i);
        if (i % 7 == 0) g.Remove(&q);
      }
    });
  }
  std::vector<std::thread> scrapers;
  for (int s = 0; s < 2; ++s) {
    scrapers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) EXPECT_THAT(ParseExposition(r.Serialize()).problems, IsEmpty());
    });
  }
  for (auto& th : threads) th.join();
  for (auto& th : scrapers) th.join();
  EXPECT_EQ(collects.load(), 50);
  const std::string text = r.Serialize();
  double total = 0;
  for (int t = 0; t < kThreads; ++t)
    total += Sample(text, "c_total{worker=\"" + std::to_string(t) + "\"}").value_or(0);
  EXPECT_EQ(total, kThreads * kIters);
  EXPECT_EQ(Sample(text, "h_count"), kThreads * kIters);
  EXPECT_EQ(Sample(text, "h_bucket{le=\"+Inf\"}"), kThreads * kIters);
  EXPECT_THAT(ParseExposition(text).problems, IsEmpty());
}

}  // namespace
}  // namespace volcache::metrics
