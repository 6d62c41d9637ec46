// Reflector behaviour against the loopback API server: initial sync (paginated), event
// ordering, bookmarks, relist after 410 with tombstones, resume after a dropped / truncated /
// corrupt stream without relisting, invalid objects skipped with a clear error.
#include "kube/reflector.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "api/fmt.h"
#include "tests/fakes/log_capture.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"
#include "workers/clock.h"

namespace volcache::kube {
namespace {

using testing::Eventually;
using testing::FakeApiServer;
using testing::PodJson;
using volcache::FakeClock;

class RecordingHandler : public ReflectorHandler {
 public:
  void OnAdd(const ObjectPtr& obj) override { Log("ADD " + Key(obj)); }
  void OnUpdate(const ObjectPtr&, const ObjectPtr& obj) override { Log("UPDATE " + Key(obj)); }
  void OnDelete(const ObjectPtr& obj, bool tombstone) override {
    Log(std::string(tombstone ? "TOMBSTONE " : "DELETE ") + Key(obj));
  }
  void OnDecodeError(const Status& error) override {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back(error.message());
    if (log_errors_) log_.push_back("ERROR");
  }
  // Decode errors also go into log() (to check their order among the events).
  void LogErrors() { log_errors_ = true; }
  std::vector<std::string> log() const {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  std::vector<std::string> errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  size_t Count(const std::string& entry) const {
    auto l = log();
    return static_cast<size_t>(std::count(l.begin(), l.end(), entry));
  }
  bool Has(const std::string& entry) const { return Count(entry) > 0; }

 private:
  static std::string Key(const ObjectPtr& obj) { return k8s::ObjectKey(k8s::MetaOf(*obj)); }
  void Log(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<std::string> log_;
  std::vector<std::string> errors_;
  bool log_errors_ = false;
};

ReflectorOptions FastOptions() {
  ReflectorOptions o;
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(200);
  o.watch_timeout_seconds = 2;  // exercise the normal end of a watch too
  o.read_timeout_margin = std::chrono::seconds(10);
  return o;
}

class ReflectorTest : public ::testing::Test {
 protected:
  void SetUp() override { client_ = std::move(RestClient::Create(server_.Config()).value()); }
  std::unique_ptr<Reflector> Make(ResourceKind kind, ReflectorOptions o = FastOptions()) {
    auto r = std::make_unique<Reflector>(kind, client_.get(), &handler_, o);
    r->Start();
    return r;
  }

  FakeApiServer server_;
  std::unique_ptr<RestClient> client_;
  RecordingHandler handler_;
};

TEST_F(ReflectorTest, InitialSyncFromSeededDataIsPaginated) {
  server_.SeedFromSharedData();
  for (int i = 0; i < 25; ++i) server_.Upsert(PodJson("ns", "p" + std::to_string(i), "100m", "64Mi"));
  server_.SetListPageLimit(7);
  ReflectorOptions paged = FastOptions();
  paged.initial_list_from_cache = false;  // from etcd, in pages
  auto pods = Make(ResourceKind::kPods, paged);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  const size_t want = server_.List("pods").size();
  EXPECT_GE(want, 28u);  // 25 + the real pods (k9s fixtures and the API server PodList)
  EXPECT_EQ(pods->size(), want);
  EXPECT_EQ(handler_.log().size(), want);
  EXPECT_GE(pods->stats().list_pages, (want + 6) / 7);
  EXPECT_EQ(pods->stats().lists, 1u);
  // The real objects decoded: e.g. the PodList's pod and the GKE pod with requests.
  EXPECT_TRUE(handler_.errors().empty()) << handler_.errors().front();

  auto nodes = Make(ResourceKind::kNodes);
  auto pgs = Make(ResourceKind::kPodGroups);
  auto queues = Make(ResourceKind::kQueues);
  auto pcs = Make(ResourceKind::kPriorityClasses);
  for (Reflector* r : {nodes.get(), pgs.get(), queues.get(), pcs.get()}) {
    ASSERT_TRUE(r->WaitForSync(std::chrono::seconds(60)).ok());
  }
  EXPECT_EQ(nodes->size(), server_.List("nodes").size());
  EXPECT_EQ(pgs->size(), 3u);  // ray-test-cluster-0, -1 (its latest version), the artifacts example
  EXPECT_EQ(queues->size(), server_.List("queues").size());
  EXPECT_GE(queues->size(), 5u);
  EXPECT_EQ(pcs->size(), 1u);  // both upstream files name the class high-pri
  EXPECT_TRUE(handler_.errors().empty()) << handler_.errors().front();
}

TEST_F(ReflectorTest, EventsArriveInOrder) {
  auto pods = Make(ResourceKind::kPods);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  for (int i = 0; i < 20; ++i) {
    std::string name = "p" + std::to_string(i);
    server_.Upsert(PodJson("ns", name, "100m", "64Mi"));
    server_.Upsert(PodJson("ns", name, "100m", "64Mi", "", "volcano", "n1"));
    if (i % 2 == 0) server_.Delete("pods", "ns", name);
  }
  ASSERT_TRUE(Eventually(
      [&] { return pods->stats().resource_version == std::to_string(server_.resource_version()); }));
  std::vector<std::string> want;
  for (int i = 0; i < 20; ++i) {
    std::string key = "ns/p" + std::to_string(i);
    want.push_back("ADD " + key);
    want.push_back("UPDATE " + key);
    if (i % 2 == 0) want.push_back("DELETE " + key);
  }
  EXPECT_EQ(handler_.log(), want);
  EXPECT_EQ(pods->size(), 10u);
  auto p1 = pods->Get("ns/p1");
  ASSERT_TRUE(p1);
  EXPECT_EQ(std::get<k8s::Pod>(*p1).spec.node_name, "n1");
}

// The watch decodes on the stream's thread and applies on another (ReflectorOptions::
// watch_pipeline); an event the streaming decoder leaves to the DOM path (here an invalid
// one) is handled only after everything before it was applied, so the order is the
// stream's, with the pipeline and without.
TEST_F(ReflectorTest, PipelinedWatchKeepsTheStreamOrderAroundEventsTheDomPathHandles) {
  for (size_t pipeline : {size_t{0}, size_t{1024}}) {
    SCOPED_TRACE("watch_pipeline " + std::to_string(pipeline));
    const std::string ns = "ns" + std::to_string(pipeline);
    RecordingHandler handler;
    handler.LogErrors();
    ReflectorOptions o = FastOptions();
    o.watch_pipeline = pipeline;
    Reflector pods(ResourceKind::kPods, client_.get(), &handler, o);
    pods.Start();
    ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(60)).ok());
    const size_t listed = handler.log().size();  // the first iteration's pods, when second
    const ReflectorStats base = pods.stats();
    std::vector<std::string> want;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 200; ++i) {
        const std::string name = "p" + std::to_string(round) + "-" + std::to_string(i);
        server_.Upsert(PodJson(ns, name, "100m", "64Mi"));
        want.push_back("ADD " + ns + "/" + name);
      }
      server_.Upsert(PodJson(ns, "p" + std::to_string(round) + "-0", "1x", "64Mi"));  // invalid
      want.push_back("ERROR");
    }
    ASSERT_TRUE(Eventually([&] { return handler.log().size() >= listed + want.size(); }));
    const auto log = handler.log();
    EXPECT_EQ(std::vector<std::string>(log.begin() + static_cast<std::ptrdiff_t>(listed), log.end()), want);
    // The stats follow the handler: wait for the last decode error to be counted too.
    ASSERT_TRUE(Eventually([&] { return pods.stats().decode_errors - base.decode_errors >= 3u; }));
    const ReflectorStats st = pods.stats();
    EXPECT_EQ(st.events - base.events, 600u);
    EXPECT_EQ(st.fast_decoded - base.fast_decoded, 600u);
    EXPECT_EQ(st.decode_errors - base.decode_errors, 3u);
    pods.Stop();
  }
}

TEST_F(ReflectorTest, BookmarkAdvancesTheResourceVersionOnly) {
  auto pods = Make(ResourceKind::kPods);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));
  server_.Upsert(testing::NodeJson("n1", "4", "8Gi"));  // another resource moves the global rv
  server_.SendBookmarks();
  ASSERT_TRUE(Eventually([&] { return pods->stats().bookmarks >= 1; }));
  EXPECT_EQ(pods->stats().resource_version, std::to_string(server_.resource_version()));
  EXPECT_TRUE(handler_.log().empty());
}

// As client-go's reflector: the first LIST asks for resourceVersion=0, which the API server
// answers from its watch cache in one response; a relist after 410 reads from etcd, in pages.
TEST_F(ReflectorTest, FirstListAsksTheWatchCacheRelistsReadPages) {
  for (int i = 0; i < 10; ++i) server_.Upsert(PodJson("ns", "p" + std::to_string(i), "100m", "64Mi"));
  server_.SetListPageLimit(3);
  auto pods = Make(ResourceKind::kPods);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  EXPECT_EQ(pods->size(), 10u);
  EXPECT_EQ(server_.counters().cache_lists, 1u);
  EXPECT_EQ(pods->stats().list_pages, 1u);
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));
  server_.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), -1});
  server_.DropWatches();
  ASSERT_TRUE(Eventually([&] { return pods->stats().stream_errors >= 1; }));
  server_.Upsert(PodJson("ns", "p10", "100m", "64Mi"));
  server_.Compact();
  server_.ClearFaults();
  ASSERT_TRUE(Eventually([&] { return pods->stats().relists >= 1 && pods->size() == 11; }));
  EXPECT_EQ(server_.counters().cache_lists, 1u);  // the relist did not ask the cache
  EXPECT_EQ(pods->stats().list_pages, 1u + 4u);   // 11 pods, 3 a page
}

TEST_F(ReflectorTest, RelistAfterGoneDeliversTombstones) {
  server_.Upsert(PodJson("ns", "stays", "100m", "64Mi"));
  server_.Upsert(PodJson("ns", "goes", "100m", "64Mi"));
  auto pods = Make(ResourceKind::kPods);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));
  // The watch goes down and stays down while the cluster changes and compacts.
  server_.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), -1});
  server_.DropWatches();
  ASSERT_TRUE(Eventually([&] { return pods->stats().stream_errors >= 1; }));
  server_.Delete("pods", "ns", "goes");
  server_.Upsert(PodJson("ns", "new", "100m", "64Mi"));
  server_.Upsert(PodJson("ns", "stays", "200m", "64Mi"));
  server_.Compact();
  server_.ClearFaults();
  // The store changes under the reflector's lock; the handler hears of it just after.
  ASSERT_TRUE(Eventually([&] {
    return pods->stats().relists >= 1 && pods->size() == 2 && pods->Get("ns/new") &&
           handler_.Has("TOMBSTONE ns/goes");
  }));
  EXPECT_TRUE(handler_.Has("ADD ns/new"));
  EXPECT_TRUE(handler_.Has("UPDATE ns/stays"));
  EXPECT_EQ(pods->stats().tombstones, 1u);
  EXPECT_FALSE(pods->Get("ns/goes"));
}

TEST_F(ReflectorTest, ResumesAfterDroppedTruncatedAndCorruptStreamsWithoutRelisting) {
  auto pods = Make(ResourceKind::kPods);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  auto wait_watch = [&] { ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; })); };

  wait_watch();
  server_.DropWatches();
  server_.Upsert(PodJson("ns", "a", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/a") != nullptr; }));

  wait_watch();
  server_.TruncateNextWatchEvents(1);
  server_.Upsert(PodJson("ns", "b", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/b") != nullptr; }));

  wait_watch();
  server_.MalformNextWatchEvents(1);
  server_.Upsert(PodJson("ns", "c", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/c") != nullptr; }));

  // Each event exactly once, in order, and no relist (the resourceVersion was kept).
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"ADD ns/a", "ADD ns/b", "ADD ns/c"}));
  EXPECT_EQ(pods->stats().relists, 0u);
  EXPECT_EQ(pods->stats().lists, 1u);
  EXPECT_GE(pods->stats().stream_errors, 2u);  // truncated + corrupt (a drop may end cleanly)
}

TEST_F(ReflectorTest, ListRetriesServerErrorsAndExpiredContinueTokens) {
  for (int i = 0; i < 10; ++i) server_.Upsert(PodJson("ns", "p" + std::to_string(i), "100m", "64Mi"));
  server_.SetListPageLimit(3);
  server_.AddFault({"GET", "/pods", 500, "InternalError", -1, std::chrono::milliseconds(0), 2});
  server_.AddFault({"GET", "continue=", 410, "Expired", -1, std::chrono::milliseconds(0), 1});
  server_.AddFault({"GET", "/pods", 429, "TooManyRequests", 0, std::chrono::milliseconds(0), 1});
  ReflectorOptions paged = FastOptions();
  paged.initial_list_from_cache = false;  // pages, so there is a continue token to expire
  auto pods = Make(ResourceKind::kPods, paged);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  EXPECT_EQ(pods->size(), 10u);
  EXPECT_EQ(handler_.log().size(), 10u);  // each ADD once although the list restarted
  EXPECT_GE(server_.counters().faults, 4u);
}

TEST_F(ReflectorTest, InvalidObjectsAreSkippedWithAnErrorNamingThem) {
  server_.Upsert(PodJson("ns", "good", "100m", "64Mi"));
  server_.Upsert(PodJson("ns", "bad-in-list", "1x", "64Mi"));
  auto pods = Make(ResourceKind::kPods);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  EXPECT_EQ(pods->size(), 1u);
  ASSERT_EQ(handler_.errors().size(), 1u);
  EXPECT_NE(handler_.errors()[0].find("Pod ns/bad-in-list"), std::string::npos) << handler_.errors()[0];
  EXPECT_NE(handler_.errors()[0].find("requests.cpu"), std::string::npos) << handler_.errors()[0];

  // A bad update keeps the previous version; the stream carries on.
  server_.Upsert(PodJson("ns", "good", "2y", "64Mi"));
  server_.Upsert(PodJson("ns", "after", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/after") != nullptr; }));
  ASSERT_EQ(handler_.errors().size(), 2u);
  EXPECT_NE(handler_.errors()[1].find("Pod ns/good"), std::string::npos) << handler_.errors()[1];
  auto good = pods->Get("ns/good");
  ASSERT_TRUE(good);
  EXPECT_EQ(std::get<k8s::Pod>(*good).spec.containers[0].requests[0].second.MilliValue(), 100);
  EXPECT_EQ(pods->stats().relists, 0u);
}

TEST_F(ReflectorTest, StopIsPromptWhileWatching) {
  auto pods = Make(ResourceKind::kPods, [] {
    auto o = FastOptions();
    o.watch_timeout_seconds = 3600;
    return o;
  }());
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));
  const auto start = std::chrono::steady_clock::now();
  pods->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// Options on a FakeClock with client-go's backoff steps and no jitter (exact waits).
ReflectorOptions ClockOptions(const std::shared_ptr<FakeClock>& clock) {
  ReflectorOptions o = FastOptions();
  o.clock = clock;
  o.initial_backoff = std::chrono::milliseconds(800);
  o.max_backoff = std::chrono::seconds(30);
  o.backoff_jitter = 0;
  return o;
}

// Waits (real time, for the reflector's thread) until it is backing off after `failures`
// consecutive failures; returns the wait it chose.
Duration BackingOff(const Reflector& r, uint64_t failures) {
  EXPECT_TRUE(Eventually([&] {
    auto s = r.stats();
    return s.backing_off && s.consecutive_failures == failures;
  })) << "never backing off after "
      << failures << " failures";
  return r.stats().backoff;
}

TEST_F(ReflectorTest, ListBackoffDoublesToTheCapWithJitterOnTheInjectedClock) {
  auto clock = std::make_shared<FakeClock>();
  server_.AddFault({"GET", "/pods", 500, "InternalError", -1, std::chrono::milliseconds(0), 8});
  ReflectorOptions o = ClockOptions(clock);
  o.backoff_jitter = 0.1;
  o.backoff_seed = 42;
  auto pods = Make(ResourceKind::kPods, o);
  for (uint64_t k = 1; k <= 8; ++k) {
    const Duration base =
        std::min<Duration>(std::chrono::milliseconds(800) * (1 << (k - 1)), std::chrono::seconds(30));
    const Duration wait = BackingOff(*pods, k);
    EXPECT_GE(wait, base) << "failure " << k;
    EXPECT_LT(wait, base + base / 10) << "failure " << k;
    EXPECT_EQ(server_.counters().faults, k);
    // The wait is on the injected clock: just short of it, the reflector is still waiting.
    clock->Advance(wait - std::chrono::milliseconds(1));
    EXPECT_TRUE(pods->stats().backing_off);
    EXPECT_EQ(server_.counters().faults, k);
    clock->Advance(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  const ReflectorStats s = pods->stats();
  EXPECT_EQ(s.list_failures, 8u);
  EXPECT_EQ(s.consecutive_failures, 0u);
  EXPECT_EQ(s.backoff, Duration::zero());
  EXPECT_EQ(s.last_list, clock->Now());
}

TEST_F(ReflectorTest, WatchFailuresBackOffResetAfterANormalWatchAndTheReconnectIsLogged) {
  LogCapture logs;
  auto clock = std::make_shared<FakeClock>();
  auto pods = Make(ResourceKind::kPods, ClockOptions(clock));
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));
  // The open watch ends normally (as at its timeoutSeconds); the next three watch requests fail.
  server_.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), 3});
  server_.EndWatches();
  EXPECT_EQ(BackingOff(*pods, 1), std::chrono::milliseconds(800));
  clock->Advance(std::chrono::milliseconds(800));
  EXPECT_EQ(BackingOff(*pods, 2), std::chrono::milliseconds(1600));
  clock->Advance(std::chrono::milliseconds(1600));
  EXPECT_EQ(BackingOff(*pods, 3), std::chrono::milliseconds(3200));
  clock->Advance(std::chrono::milliseconds(3200));
  // The watch is back; its first event marks the reconnect.
  server_.Upsert(PodJson("ns", "a", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/a") != nullptr; }));
  EXPECT_EQ(pods->stats().consecutive_failures, 0u);
  EXPECT_EQ(logs.Count("watch pods: reconnected after 3 failures (5.6 s)"), 1u);
  // Identical failures are logged once (the repeats are counted, not printed).
  EXPECT_EQ(logs.Count("watch failed"), 1u);
  EXPECT_EQ(pods->stats().stream_errors, 3u);

  // A watch that ran normally (ended by the server) resets the backoff to its first step.
  server_.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), 1});
  server_.EndWatches();
  EXPECT_EQ(BackingOff(*pods, 1), std::chrono::milliseconds(800));
  clock->Advance(std::chrono::milliseconds(800));
  server_.Upsert(PodJson("ns", "b", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/b") != nullptr; }));
  EXPECT_EQ(logs.Count("watch pods: reconnected after 1 failure (0.8 s)"), 1u);
}

// The server ends each watch at its timeoutSeconds (here 1 s, on the server's own clock): the
// reflector watches again from where it was, with no relist and no failure, and the next
// event arrives on the new watch.
TEST_F(ReflectorTest, AWatchEndedAtItsTimeoutSecondsResumesWithoutRelisting) {
  ReflectorOptions o = FastOptions();
  o.watch_timeout_seconds = 1;
  auto pods = Make(ResourceKind::kPods, o);
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Eventually([&] { return server_.counters().watches >= 2; }, std::chrono::seconds(30)));
  server_.Upsert(PodJson("ns", "a", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/a") != nullptr; }));
  const ReflectorStats s = pods->stats();
  EXPECT_EQ(s.lists, 1u);
  EXPECT_EQ(s.relists, 0u);
  EXPECT_EQ(s.stream_errors, 0u);
  EXPECT_EQ(s.consecutive_failures, 0u);
  EXPECT_GE(s.watches, 2u);
}

TEST_F(ReflectorTest, ForbiddenNamesTheMissingPermissionOnce) {
  LogCapture logs;
  auto clock = std::make_shared<FakeClock>();
  server_.AddFault({"GET", "/podgroups", 403, "Forbidden", -1, std::chrono::milliseconds(0), 5});
  auto pgs = Make(ResourceKind::kPodGroups, ClockOptions(clock));
  for (uint64_t k = 1; k <= 5; ++k) clock->Advance(BackingOff(*pgs, k));
  ASSERT_TRUE(pgs->WaitForSync(std::chrono::seconds(60)).ok());
  EXPECT_EQ(logs.Count(R"(verb "list" on resource "podgroups" in API group "scheduling.volcano.sh")"), 1u);
  EXPECT_EQ(logs.Count("list failed"), 0u);  // the 4 repeats: named once, then only counted
  EXPECT_EQ(logs.Count("list podgroups: reconnected after 5 failures"), 1u);

  // The core group is named as such, for a watch too.
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));
  auto pods = Make(ResourceKind::kPods, ClockOptions(clock));
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  server_.AddFault({"WATCH", "/pods", 403, "Forbidden", -1, std::chrono::milliseconds(0), 2});
  clock->Advance(BackingOff(*pods, 1));
  clock->Advance(BackingOff(*pods, 2));
  server_.Upsert(PodJson("ns", "a", "100m", "64Mi"));
  ASSERT_TRUE(Eventually([&] { return pods->Get("ns/a") != nullptr; }));
  EXPECT_EQ(logs.Count(R"(verb "watch" on resource "pods" in API group "" (the core group))"), 1u);
}

TEST_F(ReflectorTest, AnOptionalResourceNotServedIsSyncedEmptyLoggedOnceAndRecheckedWithBackoff) {
  LogCapture logs;
  auto clock = std::make_shared<FakeClock>();
  server_.Upsert(testing::HyperNodeJson("s0", 1, "Node", {"n0"}));
  server_.SetServed("hypernodes", false);
  auto hns = Make(ResourceKind::kHyperNodes, ClockOptions(clock));
  // The 404 counts as an empty LIST: synced, nothing stored, no failure.
  ASSERT_TRUE(hns->WaitForSync(std::chrono::seconds(60)).ok());
  EXPECT_EQ(hns->size(), 0u);
  EXPECT_TRUE(handler_.log().empty());
  // Checked again on the injected clock with the backoff's steps (800 ms doubling, no jitter).
  for (uint64_t k = 1; k <= 3; ++k) {
    ASSERT_TRUE(Eventually([&] { return clock->PendingTimers() == 1; })) << k;
    EXPECT_EQ(server_.counters().not_served, k);
    const Duration step = std::chrono::milliseconds(800) * (1 << (k - 1));
    clock->Advance(step - std::chrono::milliseconds(1));
    EXPECT_EQ(server_.counters().not_served, k);
    clock->Advance(std::chrono::milliseconds(1));
    ASSERT_TRUE(Eventually([&] { return server_.counters().not_served == k + 1; })) << k;
  }
  // The server counts a request before the reflector has read the answer: wait for the
  // fourth list to be counted on the reflector's side too.
  ASSERT_TRUE(Eventually([&] { return hns->stats().lists == 4u; }));
  ReflectorStats st = hns->stats();
  EXPECT_TRUE(st.not_served);
  EXPECT_EQ(st.lists, 4u);
  EXPECT_EQ(st.relists, 0u);
  EXPECT_EQ(st.list_failures, 0u);
  EXPECT_EQ(st.consecutive_failures, 0u);
  EXPECT_EQ(st.watches, 0u);
  EXPECT_FALSE(st.backing_off);  // a re-check, not a retry
  EXPECT_EQ(logs.Count("reflector hypernodes: the server does not serve topology.volcano.sh/v1alpha1 "
                       "hypernodes (HTTP 404: the CRD is not installed)"),
            1u);
  EXPECT_EQ(logs.Count("failed"), 0u);

  // Installed: the next check lists it, then it is watched.
  server_.SetServed("hypernodes", true);
  ASSERT_TRUE(Eventually([&] { return clock->PendingTimers() == 1; }));
  clock->Advance(std::chrono::milliseconds(6400));
  ASSERT_TRUE(Eventually([&] { return hns->Get("s0") != nullptr; }));
  ASSERT_TRUE(Eventually([&] { return hns->stats().watches == 1; }));
  EXPECT_FALSE(hns->stats().not_served);
  EXPECT_EQ(handler_.log(), std::vector<std::string>{"ADD s0"});
  EXPECT_EQ(logs.Count("hypernodes is served now"), 1u);

  // Removed again: the watch's 404 relists, the store empties (a tombstone), logged once more.
  server_.SetServed("hypernodes", false);
  server_.DropWatches();
  // The dropped stream ends either with an error (a backoff on the clock) or cleanly (an
  // immediate re-watch): either way a retry gets the 404. The clock moves until it did.
  ASSERT_TRUE(Eventually([&] {
    if (hns->size() == 0u && hns->stats().not_served) return true;
    clock->Advance(std::chrono::milliseconds(800));
    return false;
  }));
  // The reflector sets its stats and empties its store inside the LIST, then hands the
  // tombstone to the handler and logs: wait for those too (a loaded sanitizer run read the
  // log between the two).
  ASSERT_TRUE(Eventually(
      [&] { return handler_.log().size() == 2u && logs.Count("the server does not serve") >= 2u; }));
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"ADD s0", "TOMBSTONE s0"}));
  EXPECT_EQ(logs.Count("the server does not serve"), 2u);
}

// A 404 on a resource that is not optional stays a failure (retried, logged).
TEST_F(ReflectorTest, NotFoundOnARequiredResourceIsAFailure) {
  auto clock = std::make_shared<FakeClock>();
  server_.SetServed("queues", false);
  auto queues = Make(ResourceKind::kQueues, ClockOptions(clock));
  EXPECT_EQ(BackingOff(*queues, 1), std::chrono::milliseconds(800));
  EXPECT_FALSE(queues->HasSynced());
  EXPECT_FALSE(queues->stats().not_served);
  EXPECT_EQ(queues->stats().list_failures, 1u);
  server_.SetServed("queues", true);
  clock->Advance(std::chrono::milliseconds(800));
  ASSERT_TRUE(queues->WaitForSync(std::chrono::seconds(60)).ok());
}

TEST_F(ReflectorTest, StatsCountListsWatchesRelistsEventsByTypeAndTheirTimes) {
  auto clock = std::make_shared<FakeClock>(TimePoint(std::chrono::seconds(1000)));
  server_.Upsert(PodJson("ns", "a", "100m", "64Mi"));
  auto pods = Make(ResourceKind::kPods, ClockOptions(clock));
  ASSERT_TRUE(pods->WaitForSync(std::chrono::seconds(60)).ok());
  ReflectorStats s = pods->stats();
  EXPECT_EQ(s.lists, 1u);
  EXPECT_EQ(s.last_list, clock->Now());
  EXPECT_EQ(s.fast_decoded, 1u);  // the pod came through the streaming decoder
  EXPECT_EQ(s.last_event, TimePoint{});
  ASSERT_TRUE(Eventually([&] { return server_.counters().open_watches >= 1; }));

  clock->Advance(std::chrono::seconds(5));
  server_.Upsert(PodJson("ns", "b", "100m", "64Mi"));                       // ADDED
  server_.Upsert(PodJson("ns", "a", "100m", "64Mi", "", "volcano", "n1"));  // MODIFIED
  server_.Delete("pods", "ns", "b");                                        // DELETED
  server_.Upsert(PodJson("ns", "bad", "1x", "64Mi"));                       // decode error
  ASSERT_TRUE(Eventually([&] { return pods->stats().events == 3 && pods->stats().decode_errors == 1; }));
  server_.SendBookmarks();
  ASSERT_TRUE(Eventually([&] { return pods->stats().bookmarks >= 1; }));
  s = pods->stats();
  EXPECT_EQ(s.added, 1u);
  EXPECT_EQ(s.modified, 1u);
  EXPECT_EQ(s.deleted, 1u);
  EXPECT_EQ(s.fast_decoded, 1u + 3u);  // the bad pod went to the DOM decoder for its error
  EXPECT_EQ(s.last_event, clock->Now());
  // Set when the server answered the watch (headers), which may be before the first event.
  EXPECT_GT(s.last_watch_start, TimePoint{});
  EXPECT_LE(s.last_watch_start, clock->Now());
  EXPECT_GE(s.watches, 1u);
  EXPECT_EQ(s.relists, 0u);
  EXPECT_EQ(s.error_events, 0u);

  // The watch goes down, history is compacted: the next watch gets ERROR 410 → relist.
  server_.AddFault({"WATCH", "", 503, "ServiceUnavailable", -1, std::chrono::milliseconds(0), 1});
  server_.EndWatches();
  const Duration wait = BackingOff(*pods, 1);  // the open watch ends normally, the next fails
  server_.Upsert(PodJson("ns", "c", "100m", "64Mi"));
  server_.Compact();
  clock->Advance(wait);
  ASSERT_TRUE(Eventually([&] { return pods->stats().relists == 1 && pods->Get("ns/c") != nullptr; }));
  s = pods->stats();
  EXPECT_EQ(s.lists, 2u);
  EXPECT_EQ(s.error_events, 1u);
  EXPECT_EQ(s.last_list, clock->Now());
  EXPECT_EQ(s.stream_errors, 1u);
}

}  // namespace
}  // namespace volcache::kube
