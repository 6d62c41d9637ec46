// The metrics library: exact exposition text for small registries, escaping, histogram
// buckets, series lifecycle, collectors, and concurrent updates while scraping.
#include "server/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace volcache::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsFormatTest, Values) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(1e-05), "1e-05");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(1e20), "1e+20");
}

TEST(MetricsFormatTest, LabelEscaping) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeLabelValue("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(EscapeLabelValue("two\nlines"), "two\\nlines");
}

TEST(MetricsFormatTest, Names) {
  EXPECT_TRUE(IsValidMetricName("volcache_pods_bound_total"));
  EXPECT_TRUE(IsValidMetricName("a:b_c1"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("queue"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("9"));
}

TEST(MetricsRegistryTest, ExactTextForCounterAndGauge) {
  Registry r;
  auto& binds = r.AddCounter("volcache_test_binds_total", "Binds done.");
  auto& depth = r.AddGauge("volcache_test_depth", "Queue depth.", {"queue"});
  binds.WithLabels({})->Inc();
  binds.WithLabels({})->Inc(2);
  depth.WithLabels({"node"})->Set(3);
  depth.WithLabels({"errTasks"})->Set(0.5);
  EXPECT_EQ(r.Serialize(),
            "# HELP volcache_test_binds_total Binds done.\n"
            "# TYPE volcache_test_binds_total counter\n"
            "volcache_test_binds_total 3\n"
            "# HELP volcache_test_depth Queue depth.\n"
            "# TYPE volcache_test_depth gauge\n"
            "volcache_test_depth{queue=\"errTasks\"} 0.5\n"
            "volcache_test_depth{queue=\"node\"} 3\n");
}

TEST(MetricsRegistryTest, HelpAndLabelValuesAreEscaped) {
  Registry r;
  auto& g = r.AddGauge("g", "back\\slash and\nnewline", {"a", "b"});
  g.WithLabels({"q\"uote", "x\\y\nz"})->Set(1);
  EXPECT_EQ(r.Serialize(),
            "# HELP g back\\\\slash and\\nnewline\n"
            "# TYPE g gauge\n"
            "g{a=\"q\\\"uote\",b=\"x\\\\y\\nz\"} 1\n");
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithInf) {
  Registry r;
  auto& h = r.AddHistogram("lat_seconds", "Latency.", {"op"}, {0.1, 1, 10});
  auto s = h.WithLabels({"bind"});
  s->Observe(0.05);
  s->Observe(0.1);  // le is inclusive
  s->Observe(0.5);
  s->Observe(100);
  EXPECT_EQ(r.Serialize(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{op=\"bind\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{op=\"bind\",le=\"1\"} 3\n"
            "lat_seconds_bucket{op=\"bind\",le=\"10\"} 3\n"
            "lat_seconds_bucket{op=\"bind\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{op=\"bind\"} 100.65\n"
            "lat_seconds_count{op=\"bind\"} 4\n");
}

TEST(MetricsRegistryTest, UnlabelledHistogram) {
  Registry r;
  auto& h = r.AddHistogram("batch", "Batch size.", {}, {1, 2});
  h.WithLabels({})->Observe(2);
  EXPECT_EQ(r.Serialize(),
            "# HELP batch Batch size.\n"
            "# TYPE batch histogram\n"
            "batch_bucket{le=\"1\"} 0\n"
            "batch_bucket{le=\"2\"} 1\n"
            "batch_bucket{le=\"+Inf\"} 1\n"
            "batch_sum 2\n"
            "batch_count 1\n");
}

TEST(MetricsRegistryTest, EmptyFamilyIsOmittedAndRemovedSeriesDisappear) {
  Registry r;
  auto& g = r.AddGauge("queue_allocated", "Allocated.", {"queue"});
  EXPECT_EQ(r.Serialize(), "");
  auto a = g.WithLabels({"a"});
  a->Set(1);
  g.WithLabels({"b"})->Set(2);
  EXPECT_TRUE(g.Remove({"a"}));
  EXPECT_FALSE(g.Remove({"a"}));
  a->Set(7);  // a stale handle is harmless
  EXPECT_EQ(r.Serialize(),
            "# HELP queue_allocated Allocated.\n"
            "# TYPE queue_allocated gauge\n"
            "queue_allocated{queue=\"b\"} 2\n");
  EXPECT_EQ(g.RemoveIf([](const auto& v) { return v[0] == "b"; }), 1u);
  EXPECT_EQ(r.Serialize(), "");
  // Re-created series start from zero.
  EXPECT_EQ(g.WithLabels({"a"})->Value(), 0);
}

TEST(MetricsRegistryTest, FamiliesInRegistrationOrder) {
  Registry r;
  r.AddGauge("zz", "z").WithLabels({})->Set(1);
  r.AddGauge("aa", "a").WithLabels({})->Set(2);
  std::string text = r.Serialize();
  EXPECT_LT(text.find("zz 1"), text.find("aa 2"));
}

TEST(MetricsRegistryTest, CollectorsRunBeforeEveryScrapeAndCanBeRemoved) {
  Registry r;
  auto& g = r.AddGauge("scrapes", "Scrapes.");
  int calls = 0;
  int id = r.AddCollector([&] { g.WithLabels({})->Set(++calls); });
  EXPECT_THAT(r.Serialize(), HasSubstr("scrapes 1\n"));
  EXPECT_THAT(r.Serialize(), HasSubstr("scrapes 2\n"));
  r.RemoveCollector(id);
  EXPECT_THAT(r.Serialize(), HasSubstr("scrapes 2\n"));
  EXPECT_EQ(calls, 2);
}

TEST(MetricsRegistryTest, Buckets) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(LinearBuckets(0, 5, 3), (std::vector<double>{0, 5, 10}));
}

TEST(MetricsDeathTest, MisuseStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddGauge("bad-name", "x");
      },
      "invalid metric name");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddGauge("dup", "x");
        r.AddCounter("dup", "y");
      },
      "registered twice");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddGauge("g", "x", {"a"}).WithLabels({});
      },
      "wrong number of label values");
  EXPECT_DEATH({ Counter().Inc(-1); }, "only goes up");
  EXPECT_DEATH({ Histogram({2, 1}); }, "strictly increasing");
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAndScrapes) {
  Registry r;
  auto& c = r.AddCounter("c_total", "c", {"worker"});
  auto& h = r.AddHistogram("h", "h", {}, ExponentialBuckets(1, 2, 8));
  auto& g = r.AddGauge("g", "g", {"queue"});
  constexpr int kThreads = 4, kIters = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        c.WithLabels({std::to_string(t)})->Inc();
        h.WithLabels({})->Observe(i % 300);
        auto q = g.WithLabels({"q" + std::to_string(i % 5)});
        q->Set(i);
        if (i % 7 == 0) g.Remove({"q" + std::to_string(i % 5)});
      }
    });
  }
  for (int i = 0; i < 50; ++i) EXPECT_THAT(r.Serialize(), Not(HasSubstr("nan")));
  for (auto& th : threads) th.join();
  double total = 0;
  for (int t = 0; t < kThreads; ++t) total += c.WithLabels({std::to_string(t)})->Value();
  EXPECT_EQ(total, kThreads * kIters);
  EXPECT_THAT(r.Serialize(), HasSubstr("h_count 8000\n"));
  EXPECT_THAT(r.Serialize(), HasSubstr("h_bucket{le=\"+Inf\"} 8000\n"));
}

}  // namespace
}  // namespace volcache::metrics
