// Reflector behaviour against the loopback API server: initial sync (paginated), event
// ordering, bookmarks, relist after 410 with tombstones, resume after a dropped / truncated /
// corrupt stream without relisting, invalid objects skipped with a clear error.
#include "kube/reflector.h"

#include <gtest/gtest.h>

#include <mutex>

#include "api/fmt.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using testing::Eventually;
using testing::FakeApiServer;
using testing::PodJson;

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
  }
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
  static std::string Key(const ObjectPtr& obj) { return StoreKey(k8s::MetaOf(*obj)); }
  void Log(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<std::string> log_;
  std::vector<std::string> errors_;
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
  void SetUp() override {
    client_ = std::move(RestClient::Create(server_.Config()).value());
  }
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
  auto pods = Make(ResourceKind::kPods);
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
  ASSERT_TRUE(Eventually([&] { return pods->stats().resource_version == std::to_string(server_.resource_version()); }));
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
  ASSERT_TRUE(Eventually([&] { return pods->stats().relists >= 1 && pods->size() == 2 && pods->Get("ns/new"); }));
  EXPECT_TRUE(handler_.Has("TOMBSTONE ns/goes"));
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
  auto pods = Make(ResourceKind::kPods);
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

}  // namespace
}  // namespace volcache::kube
