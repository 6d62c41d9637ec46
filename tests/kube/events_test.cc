// Events as client-go's tools/record writes them (issue 11, defect 5): an event that repeats
// every session is one Event object whose count grows; many similar messages are combined;
// a token bucket per object drops the rest; memory is bounded. The correlator runs on a
// FakeClock; the recorder writes to a recording sink, and RestEventSink to the loopback API
// server (create, then PATCH of count / lastTimestamp; a vanished event is created again).
#include "kube/events.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "kube/rest_client.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiServer;

const EventRef kPg{"PodGroup", "ns", "gang", "uid-1"};
constexpr char kSource[] = "volcano";

struct Write {
  bool patch;
  KubeEvent event;
};

// Records every write; answers NotFound to patches of names in `gone`.
class RecordingSink final : public EventSink {
 public:
  Status Create(const KubeEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    writes.push_back({false, e});
    gone.erase(e.name);
    return Status::Ok();
  }
  Status Patch(const KubeEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    if (gone.count(e.name)) return Status::NotFound("gone");
    writes.push_back({true, e});
    return Status::Ok();
  }
  std::vector<Write> Writes() {
    std::lock_guard<std::mutex> lock(mu);
    return writes;
  }
  std::mutex mu;
  std::vector<Write> writes;
  std::set<std::string> gone;
};

TEST(EventCorrelatorTest, IdenticalEventsAreOneObjectWhoseCountGrows) {
  auto clock = std::make_shared<FakeClock>();
  EventCorrelator c(clock);
  std::set<std::string> names;
  for (int i = 1; i <= 60; ++i) {
    auto r = c.Correlate(kPg, kSource, "Warning", "Unschedulable", "0/1 nodes are available", 1000 * i);
    ASSERT_FALSE(r.skip) << i;
    EXPECT_EQ(r.patch, i > 1) << i;
    EXPECT_EQ(r.event.count, i);
    EXPECT_EQ(r.event.first_ms, 1000);
    EXPECT_EQ(r.event.last_ms, 1000 * i);
    EXPECT_EQ(r.event.message, "0/1 nodes are available");
    EXPECT_EQ(r.event.namespace_, "ns");
    names.insert(r.event.name);
    clock->Advance(5min);  // one spam token per event: none is dropped
  }
  EXPECT_EQ(names.size(), 1u);
  EXPECT_EQ(names.begin()->rfind("gang.", 0), 0u) << *names.begin();
}

TEST(EventCorrelatorTest, OneSessionPerSecondIsThrottledAfterTheBurstAndCountsTheDropped) {
  auto clock = std::make_shared<FakeClock>();
  EventCorrelator c(clock);
  int sent = 0, skipped = 0, last_count = 0;
  for (int i = 1; i <= 60; ++i) {
    auto r = c.Correlate(kPg, kSource, "Warning", "Unschedulable", "same", i);
    if (r.skip) {
      ++skipped;
    } else {
      ++sent;
      last_count = r.event.count;
    }
    clock->Advance(1s);
  }
  EXPECT_EQ(sent, 25);
  EXPECT_EQ(skipped, 35);
  EXPECT_EQ(last_count, 25);
  clock->Advance(5min);  // one token: the next one carries every occurrence so far
  auto r = c.Correlate(kPg, kSource, "Warning", "Unschedulable", "same", 61);
  EXPECT_FALSE(r.skip);
  EXPECT_TRUE(r.patch);
  EXPECT_EQ(r.event.count, 61);
}

TEST(EventCorrelatorTest, SimilarEventsWithDifferentMessagesAreCombined) {
  auto clock = std::make_shared<FakeClock>();
  EventCorrelator c(clock);
  std::set<std::string> names;
  std::vector<EventCorrelator::Result> rs;
  for (int i = 0; i < 12; ++i) {
    rs.push_back(c.Correlate(kPg, kSource, "Warning", "Unschedulable", "msg " + std::to_string(i), i));
    names.insert(rs.back().event.name);
    clock->Advance(10s);
  }
  // client-go: the 10th distinct message (maxEvents) is the first combined one.
  for (int i = 0; i < 9; ++i) {
    EXPECT_FALSE(rs[i].patch);
    EXPECT_EQ(rs[i].event.message, "msg " + std::to_string(i));
  }
  EXPECT_FALSE(rs[9].patch);
  EXPECT_EQ(rs[9].event.message, "(combined from similar events): msg 9");
  for (int i = 10; i < 12; ++i) {
    EXPECT_TRUE(rs[i].patch);
    EXPECT_EQ(rs[i].event.name, rs[9].event.name);
    EXPECT_EQ(rs[i].event.count, i - 8);
    EXPECT_EQ(rs[i].event.message, "(combined from similar events): msg " + std::to_string(i));
  }
  EXPECT_EQ(names.size(), 10u);
  // Another reason on the same object is not similar.
  auto other = c.Correlate(kPg, kSource, "Normal", "Scheduled", "ready", 20);
  EXPECT_EQ(other.event.message, "ready");
  // Ten minutes without a similar event: the window starts again.
  clock->Advance(11min);
  auto fresh = c.Correlate(kPg, kSource, "Warning", "Unschedulable", "msg 99", 30);
  EXPECT_FALSE(fresh.patch);
  EXPECT_EQ(fresh.event.message, "msg 99");
}

TEST(EventCorrelatorTest, SpamFilterIsPerSourceAndObject) {
  auto clock = std::make_shared<FakeClock>();
  EventCorrelator c(clock);
  for (int i = 0; i < 25; ++i) {
    EXPECT_FALSE(c.Correlate(kPg, kSource, "Normal", "R" + std::to_string(i), "m", i).skip) << i;
  }
  EXPECT_TRUE(c.Correlate(kPg, kSource, "Normal", "R25", "m", 25).skip);
  EXPECT_FALSE(c.Correlate({"Pod", "ns", "p0", "u"}, kSource, "Normal", "R25", "m", 25).skip);
  EXPECT_FALSE(c.Correlate(kPg, "other-scheduler", "Normal", "R25", "m", 25).skip);
  clock->Advance(4min);
  EXPECT_TRUE(c.Correlate(kPg, kSource, "Normal", "R26", "m", 26).skip);
  clock->Advance(1min);
  EXPECT_FALSE(c.Correlate(kPg, kSource, "Normal", "R27", "m", 27).skip);
  EXPECT_TRUE(c.Correlate(kPg, kSource, "Normal", "R28", "m", 28).skip);
}

TEST(EventCorrelatorTest, CachesAreBoundedLeastRecentlyUsedFirst) {
  auto clock = std::make_shared<FakeClock>();
  EventCorrelator c(clock);  // client-go's 4096
  auto obj = [](int i) { return EventRef{"Pod", "ns", "p" + std::to_string(i), ""}; };
  ASSERT_FALSE(c.Correlate(obj(0), kSource, "Warning", "FailedScheduling", "m", 0).patch);
  for (int i = 1; i < 5000; ++i) {
    c.Correlate(obj(i), kSource, "Warning", "FailedScheduling", "m", i);
    if (i % 1000 == 0) c.Correlate(obj(1), kSource, "Warning", "FailedScheduling", "m", i);  // kept recent
  }
  EXPECT_EQ(c.observed_entries(), 4096u);
  EXPECT_EQ(c.aggregate_entries(), 4096u);
  EXPECT_EQ(c.spam_entries(), 4096u);
  EXPECT_FALSE(c.Correlate(obj(0), kSource, "Warning", "FailedScheduling", "m", 0).patch);  // evicted
  EXPECT_TRUE(c.Correlate(obj(1), kSource, "Warning", "FailedScheduling", "m", 0).patch);
  EXPECT_TRUE(c.Correlate(obj(4999), kSource, "Warning", "FailedScheduling", "m", 0).patch);
}

TEST(RestEventRecorderTest, SixtyIdenticalEventsAreOneCreateAndPatchesUpToSixty) {
  RecordingSink sink;
  RestEventRecorderOptions o;
  o.correlator.spam_burst = 100;
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock, o);
  for (int i = 0; i < 60; ++i) rec.Event(kPg, "Warning", "Unschedulable", "0/1 nodes are available");
  rec.Stop();
  auto w = sink.Writes();
  ASSERT_FALSE(w.empty());
  EXPECT_FALSE(w.front().patch);
  int last = 0;
  for (size_t i = 1; i < w.size(); ++i) {
    EXPECT_TRUE(w[i].patch) << i;
    EXPECT_EQ(w[i].event.name, w[0].event.name);
    EXPECT_GT(w[i].event.count, last);
    last = w[i].event.count;
  }
  EXPECT_EQ(w.back().event.count, 60);
  auto st = rec.stats();
  EXPECT_EQ(st.created, 1u);
  EXPECT_EQ(st.created + st.patched + st.coalesced, 60u);
  EXPECT_EQ(st.failed, 0u);
}

TEST(RestEventRecorderTest, PatchOfAVanishedEventCreatesItAgain) {
  RecordingSink sink;
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock);
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  ASSERT_TRUE(testing::Eventually([&] { return rec.stats().created == 1; }));
  {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.gone.insert(sink.writes.front().event.name);
  }
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  rec.Stop();
  auto w = sink.Writes();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_FALSE(w[1].patch);
  EXPECT_EQ(w[1].event.name, w[0].event.name);
  EXPECT_EQ(w[1].event.count, 2);
  EXPECT_EQ(rec.stats().failed, 0u);
}

TEST(RestEventRecorderTest, SpamDropsAreCounted) {
  RecordingSink sink;
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock);
  for (int i = 0; i < 30; ++i) rec.Event(kPg, "Warning", "Unschedulable", "m");
  rec.Stop();
  auto st = rec.stats();
  EXPECT_EQ(st.spam_dropped, 5u);
  EXPECT_EQ(st.created + st.patched + st.coalesced, 25u);
}

RestEventRecorderOptions Seeded() {
  RestEventRecorderOptions o;
  o.seed = 7;
  return o;
}

// Fails the first `failures` writes with `code`, then records like RecordingSink.
class FlakySink final : public EventSink {
 public:
  FlakySink(int failures, StatusCode code) : failures_(failures), code_(code) {}
  Status Create(const KubeEvent& e) override { return Answer(false, e); }
  Status Patch(const KubeEvent& e) override { return Answer(true, e); }
  int attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return attempts_;
  }
  std::vector<Write> Writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }

 private:
  Status Answer(bool patch, const KubeEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempts_++ < failures_) return Status(code_, "POST events: connection refused");
    writes_.push_back({patch, e});
    return Status::Ok();
  }
  std::mutex mu_;
  const int failures_;
  const StatusCode code_;
  int attempts_ = 0;
  std::vector<Write> writes_;
};

// Waits until the poster made `n` attempts and sleeps on the clock, then lets the sleep end.
void AdvanceAfterAttempt(FlakySink& sink, FakeClock& clock, int n) {
  ASSERT_TRUE(testing::Eventually([&] { return sink.attempts() == n && clock.PendingTimers() == 1; }))
      << "attempt " << n;
  clock.Advance(10s);  // the first sleep is a random part of 10 s, the later ones 10 s
}

TEST(RestEventRecorderTest, WriteThatNeverReachedTheServerIsRetriedAfterTheClientGoSleep) {
  FlakySink sink(3, StatusCode::kUnavailable);
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock, Seeded());
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  for (int n = 1; n <= 3; ++n) AdvanceAfterAttempt(sink, *clock, n);
  ASSERT_TRUE(testing::Eventually([&] { return rec.stats().created == 1; }));
  rec.Stop();
  EXPECT_EQ(sink.attempts(), 4);
  auto st = rec.stats();
  EXPECT_EQ(st.retried, 3u);
  EXPECT_EQ(st.failed, 0u);
  ASSERT_EQ(sink.Writes().size(), 1u);
  EXPECT_FALSE(sink.Writes()[0].patch);
}

TEST(RestEventRecorderTest, RetriesStopAfterTwelveAttemptsLikeClientGo) {
  FlakySink sink(1000, StatusCode::kUnavailable);
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock, Seeded());
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  for (int n = 1; n <= 11; ++n) AdvanceAfterAttempt(sink, *clock, n);
  ASSERT_TRUE(testing::Eventually([&] { return rec.stats().failed == 1; }));
  EXPECT_EQ(sink.attempts(), 12);
  EXPECT_EQ(rec.stats().retried, 11u);
  EXPECT_EQ(clock->PendingTimers(), 0u);  // no thirteenth sleep
  rec.Stop();
  EXPECT_EQ(sink.attempts(), 12);
}

TEST(RestEventRecorderTest, ServerRefusalIsFinal) {
  FlakySink sink(1, StatusCode::kFailedPrecondition);  // 403
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock);
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  ASSERT_TRUE(testing::Eventually([&] { return rec.stats().failed == 1; }));
  rec.Event(kPg, "Warning", "Other", "n");  // the queue moves on at once
  ASSERT_TRUE(testing::Eventually([&] { return rec.stats().created == 1; }));
  rec.Stop();
  EXPECT_EQ(rec.stats().retried, 0u);
  EXPECT_EQ(sink.attempts(), 2);
}

TEST(RestEventRecorderTest, StopEndsTheSleepAndTriesOnceMore) {
  FlakySink sink(1000, StatusCode::kUnavailable);
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorder rec(&sink, clock, Seeded());
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  ASSERT_TRUE(testing::Eventually([&] { return sink.attempts() == 1 && clock->PendingTimers() == 1; }));
  rec.Stop();  // the fake clock never advances: only Stop can end the sleep
  EXPECT_EQ(sink.attempts(), 2);
  EXPECT_EQ(rec.stats().failed, 1u);
  EXPECT_EQ(clock->PendingTimers(), 0u);
}

TEST(RestEventRecorderTest, CreateThatFailedIsSentAsCreateWithTheNewerCount) {
  FlakySink sink(1, StatusCode::kUnavailable);
  auto clock = std::make_shared<FakeClock>();
  RestEventRecorderOptions o;
  o.seed = 7;
  RestEventRecorder rec(&sink, clock, o);
  rec.Event(kPg, "Warning", "Unschedulable", "m");
  ASSERT_TRUE(testing::Eventually([&] { return sink.attempts() == 1 && clock->PendingTimers() == 1; }));
  rec.Event(kPg, "Warning", "Unschedulable", "m");  // the correlator now takes it for a patch
  clock->Advance(10s);
  ASSERT_TRUE(testing::Eventually([&] { return sink.Writes().size() == 1; }));
  rec.Stop();
  auto w = sink.Writes();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_FALSE(w[0].patch);
  EXPECT_EQ(w[0].event.count, 2);
  EXPECT_EQ(rec.stats().created, 1u);
}

TEST(RestEventSinkTest, CreateThenPatchOnTheApiServerAndNotFoundWhenGone) {
  FakeApiServer server;
  auto client = std::move(RestClient::Create(server.Config()).value());
  RestEventSink sink(client.get());
  KubeEvent e;
  e.name = "gang.abc";
  e.namespace_ = "ns";
  e.object = kPg;
  e.type = "Warning";
  e.reason = "Unschedulable";
  e.message = "first";
  e.component = "volcano";
  e.first_ms = e.last_ms = 1700000000000;
  ASSERT_TRUE(sink.Create(e).ok());
  EXPECT_EQ(sink.Create(e).code(), StatusCode::kAlreadyExists);
  e.count = 7;
  e.last_ms = 1700000060000;
  e.message = "(combined from similar events): second";
  ASSERT_TRUE(sink.Patch(e).ok()) << sink.Patch(e);
  auto got = server.Get("events", "ns", "gang.abc");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)["count"], 7);
  EXPECT_EQ((*got)["lastTimestamp"], "2023-11-14T22:14:20Z");
  EXPECT_EQ((*got)["firstTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ((*got)["message"], "(combined from similar events): second");
  EXPECT_EQ((*got)["involvedObject"]["name"], "gang");
  ASSERT_TRUE(server.Delete("events", "ns", "gang.abc"));
  EXPECT_EQ(sink.Patch(e).code(), StatusCode::kNotFound);
}

// The issue's symptom, end to end: a gang unschedulable session after session used to be a
// new Event object each time. Now it is one object; its count is the last one the spam
// bucket let through (25 of 60 in a burst), sent as PATCHes of that object.
TEST(RestEventRecorderTest, RepeatedEventIsOneObjectOnTheApiServer) {
  FakeApiServer server;
  auto client = std::move(RestClient::Create(server.Config()).value());
  RestEventSink sink(client.get());
  RestEventRecorder rec(&sink, std::make_shared<FakeClock>());
  for (int i = 0; i < 60; ++i) rec.Event(kPg, "Warning", "Unschedulable", "0/1 nodes are available");
  rec.Stop(std::chrono::seconds(30));
  auto events = server.List("events");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 25);
  EXPECT_EQ(events[0]["reason"], "Unschedulable");
  EXPECT_EQ(events[0]["source"]["component"], "volcano");
  EXPECT_EQ(server.counters().events, 1u);  // one create
  auto st = rec.stats();
  EXPECT_EQ(st.created, 1u);
  EXPECT_EQ(st.spam_dropped, 35u);
  EXPECT_EQ(st.failed, 0u);
}

}  // namespace
}  // namespace volcache::kube
