// RestBinder against the loopback API server: a batch's bindings go out concurrently, at
// most max_in_flight at once over every batch, and the results come back in batch order;
// the Binding body is valid JSON for arbitrary annotation values; a context's pod_patch is a
// merge PATCH of the pod before the Binding, undone when the Binding is refused.
#include "kube/rest_writers.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using testing::FakeApiServer;
using testing::FaultRule;
using testing::PodJson;

TaskInfo Task(const std::string& ns, const std::string& name, k8s::StringMap annotations = {}) {
  auto pod = std::make_shared<k8s::Pod>();
  pod->metadata.namespace_ = ns;
  pod->metadata.name = name;
  pod->metadata.uid = ns + "-" + name + "-uid";
  pod->metadata.annotations = std::move(annotations);
  return TaskInfo::FromPod(std::move(pod)).value();
}

// Owns the contexts of a batch; `batch` points into them, in order.
struct Batch {
  std::vector<std::unique_ptr<BindContext>> contexts;
  std::vector<BindContext*> batch;
  void Add(const std::string& ns, const std::string& name, const std::string& node) {
    auto ctx = std::make_unique<BindContext>();
    ctx->task = Task(ns, name);
    ctx->node_name = node;
    batch.push_back(ctx.get());
    contexts.push_back(std::move(ctx));
  }
};

std::unique_ptr<RestClient> Client(const FakeApiServer& server) {
  return std::move(RestClient::Create(server.Config()).value());
}

std::string NodeOf(const FakeApiServer& s, const std::string& ns, const std::string& name) {
  auto pod = s.Get("pods", ns, name);
  return pod ? (*pod)["spec"].value("nodeName", "") : "";
}

TEST(RestBinderTest, ConcurrentBatchReturnsEachTasksResultInBatchOrder) {
  FakeApiServer server;
  for (int i = 0; i < 10; ++i) server.Upsert(PodJson("ns", "p" + std::to_string(i), "1", "1Gi"));
  server.Upsert(PodJson("ns", "taken", "1", "1Gi", "", "volcano", "other-node"));  // → 409
  // p3's binding fails with a 500 before it is applied; p0's answer is held back, so later
  // bindings of the batch are answered before the first one.
  server.AddFault(FaultRule{"POST", "/pods/p3/binding", 500, "InternalError"});
  server.AddFault(FaultRule{"POST", "/pods/p0/binding", 0, "", -1, std::chrono::milliseconds(200)});

  // Batch order: p0 ok, p1 ok, taken 409, p2 ok, p3 500, ghost 404 (no such pod), p4..p9 ok.
  Batch b;
  b.Add("ns", "p0", "n0");
  b.Add("ns", "p1", "n1");
  b.Add("ns", "taken", "n2");
  b.Add("ns", "p2", "n2");
  b.Add("ns", "p3", "n3");
  b.Add("ns", "ghost", "n4");
  for (int i = 4; i < 10; ++i) b.Add("ns", "p" + std::to_string(i), "n" + std::to_string(i));

  auto client = Client(server);
  RestBinder binder(client.get(), RestBinderOptions{4});
  std::vector<Status> results = binder.Bind(b.batch);

  ASSERT_EQ(results.size(), b.batch.size());
  const std::vector<StatusCode> want = {StatusCode::kOk, StatusCode::kOk,          StatusCode::kConflict,
                                        StatusCode::kOk, StatusCode::kUnavailable, StatusCode::kNotFound,
                                        StatusCode::kOk, StatusCode::kOk,          StatusCode::kOk,
                                        StatusCode::kOk, StatusCode::kOk,          StatusCode::kOk};
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& name = b.batch[i]->task.name();
    EXPECT_EQ(results[i].code(), want[i]) << i << " " << name << ": " << results[i];
    if (!results[i].ok()) {
      // The error names the task and its node.
      EXPECT_NE(results[i].message().find("ns/" + name), std::string::npos) << results[i];
      EXPECT_NE(results[i].message().find(b.batch[i]->node_name), std::string::npos) << results[i];
    }
  }
  EXPECT_NE(results[2].message().find("already assigned"), std::string::npos) << results[2];
  EXPECT_NE(results[4].message().find("HTTP 500"), std::string::npos) << results[4];

  // What the server holds agrees with the results.
  EXPECT_EQ(NodeOf(server, "ns", "taken"), "other-node");
  EXPECT_EQ(NodeOf(server, "ns", "p3"), "");
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == StatusCode::kOk) {
      EXPECT_EQ(NodeOf(server, "ns", b.batch[i]->task.name()), b.batch[i]->node_name);
    }
  }
  auto c = server.counters();
  EXPECT_EQ(c.binds, 9u);
  EXPECT_EQ(c.bind_conflicts, 1u);
  for (const auto& [pod, n] : c.binds_per_pod) EXPECT_EQ(n, 1) << pod;
  EXPECT_LE(c.max_in_flight, 4u);
}

// The server lets the bindings through only in groups of `limit` in flight at once: the
// binder must reach `limit` concurrent bindings (else a group never forms and the barrier
// times out), and must never exceed it — across two batches bound at the same time.
TEST(RestBinderTest, BindingsInFlightReachButNeverExceedTheBound) {
  for (size_t limit : {size_t{1}, size_t{3}}) {
    SCOPED_TRACE(limit);
    FakeApiServer server;
    constexpr int kPods = 24;
    for (int i = 0; i < kPods; ++i) server.Upsert(PodJson("ns", "p" + std::to_string(i), "1", "1Gi"));
    server.HoldRequests("/binding", static_cast<int>(limit));

    Batch first, second;
    for (int i = 0; i < kPods; ++i)
      (i % 2 ? second : first).Add("ns", "p" + std::to_string(i), "n" + std::to_string(i));
    auto client = Client(server);
    RestBinder binder(client.get(), RestBinderOptions{limit});
    std::vector<Status> second_results;
    std::thread other([&] { second_results = binder.Bind(second.batch); });
    std::vector<Status> first_results = binder.Bind(first.batch);
    other.join();

    ASSERT_EQ(first_results.size(), first.batch.size());
    ASSERT_EQ(second_results.size(), second.batch.size());
    for (const Status& s : first_results) EXPECT_TRUE(s.ok()) << s;
    for (const Status& s : second_results) EXPECT_TRUE(s.ok()) << s;
    auto c = server.counters();
    EXPECT_EQ(c.binds, static_cast<uint64_t>(kPods));
    EXPECT_EQ(c.hold_timeouts, 0u);  // every group of `limit` formed
    EXPECT_EQ(c.max_in_flight, limit);
    EXPECT_EQ(client->stats().requests, static_cast<uint64_t>(kPods));
  }
}

TEST(RestBinderTest, EmptyBatchAndOneAtATime) {
  FakeApiServer server;
  server.Upsert(PodJson("ns", "p", "1", "1Gi"));
  auto client = Client(server);
  RestBinder binder(client.get(), RestBinderOptions{1});
  EXPECT_TRUE(binder.Bind({}).empty());
  Batch b;
  b.Add("ns", "p", "n1");
  b.Add("ns", "p", "n2");  // the second binding of the same pod conflicts
  auto results = binder.Bind(b.batch);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok()) << results[0];
  EXPECT_EQ(results[1].code(), StatusCode::kConflict) << results[1];
  EXPECT_EQ(NodeOf(server, "ns", "p"), "n1");
}

TEST(BindingBodyTest, IsAV1BindingWithEveryAnnotationValueEscaped) {
  const k8s::StringMap annotations = {
      {"plain", "value"},
      {"quotes", R"(say "hi")"},
      {"backslash", R"(C:\path\to)"},
      {"controls", std::string("tab\there\nnewline\r\b\f\x01\x1f end")},
      {"nul", std::string("a\0b", 3)},
      {"json", R"({"k":["v",1]})"},
      {"utf8", "grüße 日本 🚀"},
      {"del", "\x7f"},
      {"example.com/weird key\"\\", "k"},
  };
  TaskInfo task = Task("ns-1", "pod-1", annotations);
  const std::string body = BindingBody(task, "node-\"7\"");
  auto j = nlohmann::json::parse(body);  // throws (fails the test) if not JSON
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["kind"], "Binding");
  EXPECT_EQ(j["metadata"]["name"], "pod-1");
  EXPECT_EQ(j["metadata"]["namespace"], "ns-1");
  EXPECT_EQ(j["metadata"]["uid"], "ns-1-pod-1-uid");
  EXPECT_EQ(j["target"], (nlohmann::json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node-\"7\""}}));
  ASSERT_EQ(j["metadata"]["annotations"].size(), annotations.size());
  for (const auto& [k, v] : annotations) EXPECT_EQ(j["metadata"]["annotations"][k], v.str()) << k;
  // The same document nlohmann would have built.
  nlohmann::json ann(annotations);
  EXPECT_EQ(j["metadata"]["annotations"], ann);
}

TEST(BindingBodyTest, AnnotationsAgreeWithThePodPatch) {
  // The server copies the Binding's annotations onto the pod: they must not undo the patch.
  TaskInfo task = Task("ns", "p", {{"keep", "1"}, {"old", "1"}, {"drop", "1"}});
  PodPatch patch;
  patch.annotations = {{"old", "2"}, {"drop", std::nullopt}, {"new", "3"}};
  auto j = nlohmann::json::parse(BindingBody(task, "n", &patch));
  EXPECT_EQ(j["metadata"]["annotations"], (nlohmann::json{{"keep", "1"}, {"old", "2"}, {"new", "3"}}));
}

TEST(BindingBodyTest, InvalidUtf8BecomesReplacementCharacters) {
  const std::string bad[] = {
      "\xff",              // never valid
      "\xc0\xaf",          // overlong '/'
      "\xe0\x80\xaf",      // overlong
      "\xed\xa0\x80",      // surrogate U+D800
      "\xf4\x90\x80\x80",  // above U+10FFFF
      "ok\xc3",            // truncated at the end
      "\xe6\x97x",         // truncated before ASCII
  };
  const std::string want[] = {
      "\uFFFD",   "\uFFFD\uFFFD",  "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD\uFFFD",
      "ok\uFFFD", "\uFFFD\uFFFDx",
  };
  for (size_t i = 0; i < std::size(bad); ++i) {
    TaskInfo task = Task("ns", "p", {{"a", bad[i]}});
    auto j = nlohmann::json::parse(BindingBody(task, "n"));
    EXPECT_EQ(j["metadata"]["annotations"]["a"], want[i]) << i;
  }
  // Valid multi-byte sequences at the edges of their ranges pass through unchanged.
  const std::string edges =
      "\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf";
  auto j = nlohmann::json::parse(BindingBody(Task("ns", "p", {{"a", edges}}), "n"));
  EXPECT_EQ(j["metadata"]["annotations"]["a"], edges);
}

// ---------------------------------------------------------------- pod patches

// A pod on the server (and the task the cache knew for it) with annotations keep/old/drop
// and label app=x; the context asks to change old, remove drop, add gpu and a label.
struct PatchedBind {
  FakeApiServer server;
  std::unique_ptr<RestClient> client;
  std::unique_ptr<BindContext> ctx = std::make_unique<BindContext>();

  explicit PatchedBind(const std::string& bound_to = "") {
    nlohmann::json pod = PodJson("ns", "p", "1", "1Gi", "", "volcano", bound_to);
    pod["metadata"]["annotations"] = {{"keep", "1"}, {"old", "1"}, {"drop", "1"}};
    pod["metadata"]["labels"] = {{"app", "x"}};
    server.Upsert(pod);
    client = Client(server);
    ctx->task = Task("ns", "p", {{"keep", "1"}, {"old", "1"}, {"drop", "1"}});
    auto cached = std::make_shared<k8s::Pod>(ctx->task.pod());
    cached->metadata.labels = {{"app", "x"}};
    ctx->task = TaskInfo::FromPod(std::move(cached)).value();
    ctx->node_name = "n1";
    ctx->pod_patch.annotations = {{"volcano.sh/gpu-index", "0,1"}, {"old", "2"}, {"drop", std::nullopt}};
    ctx->pod_patch.labels = {{"volcano.sh/gpu", "true"}};
  }
  nlohmann::json Meta(const char* field) const {
    auto pod = server.Get("pods", "ns", "p");
    return pod ? (*pod)["metadata"].value(field, nlohmann::json::object()) : nlohmann::json();
  }
};

TEST(RestBinderPodPatchTest, ThePodCarriesThePatchedKeysAfterTheBind) {
  PatchedBind t;
  RestBinder binder(t.client.get());
  auto results = binder.Bind({t.ctx.get()});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok()) << results[0];
  EXPECT_EQ(NodeOf(t.server, "ns", "p"), "n1");
  EXPECT_EQ(t.Meta("annotations"),
            (nlohmann::json{{"keep", "1"}, {"old", "2"}, {"volcano.sh/gpu-index", "0,1"}}));
  EXPECT_EQ(t.Meta("labels"), (nlohmann::json{{"app", "x"}, {"volcano.sh/gpu", "true"}}));
  auto c = t.server.counters();
  EXPECT_EQ(c.object_patches, 1u);
  EXPECT_EQ(c.binds, 1u);
}

TEST(RestBinderPodPatchTest, NoPatchWithoutPodChanges) {
  PatchedBind t;
  t.ctx->pod_patch.clear();
  RestBinder binder(t.client.get());
  ASSERT_TRUE(binder.BindOne(*t.ctx).ok());
  EXPECT_EQ(t.server.counters().object_patches, 0u);
  EXPECT_EQ(NodeOf(t.server, "ns", "p"), "n1");
}

TEST(RestBinderPodPatchTest, RefusedBindingUndoesThePatch) {
  PatchedBind t;
  t.server.AddFault(FaultRule{"POST", "/pods/p/binding", 500, "InternalError"});
  RestBinder binder(t.client.get());
  Status s = binder.BindOne(*t.ctx);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_EQ(NodeOf(t.server, "ns", "p"), "");  // unbound
  EXPECT_EQ(t.Meta("annotations"), (nlohmann::json{{"keep", "1"}, {"old", "1"}, {"drop", "1"}}));
  EXPECT_EQ(t.Meta("labels"), (nlohmann::json{{"app", "x"}}));
  EXPECT_EQ(t.server.counters().object_patches, 2u);  // the patch and its undo
}

TEST(RestBinderPodPatchTest, BindingOfAPodBoundElsewhereIsRefusedAndThePatchUndone) {
  PatchedBind t("other-node");  // the server answers the Binding with 409
  RestBinder binder(t.client.get());
  Status s = binder.BindOne(*t.ctx);
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s;
  EXPECT_EQ(NodeOf(t.server, "ns", "p"), "other-node");
  EXPECT_EQ(t.Meta("annotations"), (nlohmann::json{{"keep", "1"}, {"old", "1"}, {"drop", "1"}}));
  EXPECT_EQ(t.Meta("labels"), (nlohmann::json{{"app", "x"}}));
}

TEST(RestBinderPodPatchTest, RefusedPatchSendsNoBinding) {
  PatchedBind t;
  t.server.AddFault(FaultRule{"PATCH", "/pods/p", 500, "InternalError"});
  RestBinder binder(t.client.get());
  auto results = binder.Bind({t.ctx.get()});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].code(), StatusCode::kUnavailable) << results[0];
  EXPECT_NE(results[0].message().find("patch the pod"), std::string::npos) << results[0];
  auto c = t.server.counters();
  EXPECT_EQ(c.binds, 0u);
  EXPECT_TRUE(c.binds_per_pod.empty());
  EXPECT_EQ(NodeOf(t.server, "ns", "p"), "");
  EXPECT_EQ(t.Meta("annotations"), (nlohmann::json{{"keep", "1"}, {"old", "1"}, {"drop", "1"}}));
}

TEST(RestBinderPodPatchTest, PatchOfAnotherPodUnderTheNameIsRefused) {
  PatchedBind t;
  auto cached = std::make_shared<k8s::Pod>(t.ctx->task.pod());
  cached->metadata.uid = "an-older-pod";
  t.ctx->task = TaskInfo::FromPod(std::move(cached)).value();
  RestBinder binder(t.client.get());
  Status s = binder.BindOne(*t.ctx);
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s;
  EXPECT_EQ(t.server.counters().binds, 0u);
  EXPECT_EQ(t.Meta("annotations"), (nlohmann::json{{"keep", "1"}, {"old", "1"}, {"drop", "1"}}));
}

TEST(RestBinderPodPatchTest, UndoAfterAConcurrentWriteRestoresOnlyTheKeysStillOurs) {
  PatchedBind t;
  // The Binding is held back (until a second request for its path arrives), then refused;
  // meanwhile another client changes one of our keys.
  t.server.AddFault(FaultRule{"POST", "/pods/p/binding", 500, "InternalError"});
  t.server.HoldRequests("/pods/p/binding", 2);
  RestBinder binder(t.client.get());
  Status s;
  std::thread bind([&] { s = binder.BindOne(*t.ctx); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // Once the forward patch is in, the undo cannot come before the Binding is let go.
  while (t.server.counters().object_patches < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  auto pod = t.server.Get("pods", "ns", "p");
  ASSERT_TRUE(pod.has_value());
  (*pod)["metadata"]["annotations"]["volcano.sh/gpu-index"] = "7";  // someone else's later value
  t.server.Upsert(*pod);
  (void)t.client->Do("GET", "/api/v1/namespaces/ns/pods/p/binding");  // lets the Binding go
  bind.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_EQ(t.Meta("annotations"),
            (nlohmann::json{{"keep", "1"}, {"old", "1"}, {"drop", "1"}, {"volcano.sh/gpu-index", "7"}}));
  EXPECT_EQ(t.Meta("labels"), (nlohmann::json{{"app", "x"}}));
  EXPECT_EQ(t.server.counters().object_patches, 2u);  // the patch and the undo after a re-read (409 first)
}

// ---------------------------------------------------------------- status writes

k8s::PodGroup CachedPodGroup(const FakeApiServer& server, const std::string& ns, const std::string& name) {
  auto obj = server.Get("podgroups", ns, name);
  EXPECT_TRUE(obj.has_value());
  k8s::PodGroup pg;
  pg.metadata.namespace_ = ns;
  pg.metadata.name = name;
  pg.metadata.resource_version = (*obj)["metadata"].value("resourceVersion", "");
  pg.status.phase = "Running";
  pg.status.running = 2;
  pg.status.conditions.push_back({"Scheduled", "True", "", 1700000000000, "", "tasks in gang are ready"});
  return pg;
}

// Defect: PATCH podgroups/NAME/status is 404 (the CRD has no status subresource), which the
// updater counted as "gone": no PodGroup status was ever written.
TEST(RestStatusUpdaterTest, PodGroupStatusIsWrittenOnTheObjectAndReadableWithGet) {
  FakeApiServer server;
  server.Upsert(testing::PodGroupJson("ns", "pg", 2));
  auto client = Client(server);
  RestStatusUpdater updater(client.get());
  Status s = updater.UpdatePodGroup(CachedPodGroup(server, "ns", "pg"));
  ASSERT_TRUE(s.ok()) << s;
  auto obj = server.Get("podgroups", "ns", "pg");
  ASSERT_TRUE(obj.has_value());
  EXPECT_EQ((*obj)["status"]["phase"], "Running");
  EXPECT_EQ((*obj)["status"]["running"], 2);
  EXPECT_EQ((*obj)["status"]["conditions"][0]["type"], "Scheduled");
  EXPECT_EQ((*obj)["spec"]["minMember"], 2);  // the rest of the object is untouched
}

// Someone else changed the PodGroup after our cache saw it: 409, re-read, retry on the
// fresh resourceVersion.
TEST(RestStatusUpdaterTest, PodGroupStatusConflictRereadsAndRetries) {
  FakeApiServer server;
  server.Upsert(testing::PodGroupJson("ns", "pg", 2));
  k8s::PodGroup stale = CachedPodGroup(server, "ns", "pg");
  auto newer = testing::PodGroupJson("ns", "pg", 3);
  server.Upsert(newer);  // a new resourceVersion
  auto client = Client(server);
  RestStatusUpdater updater(client.get());
  Status s = updater.UpdatePodGroup(stale);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(updater.stats().conflicts, 1u);
  auto obj = server.Get("podgroups", "ns", "pg");
  EXPECT_EQ((*obj)["status"]["phase"], "Running");
  EXPECT_EQ((*obj)["spec"]["minMember"], 3);
}

// Conflicts forever (a writer racing us): bounded, then an error naming the PodGroup.
TEST(RestStatusUpdaterTest, PodGroupStatusConflictRetriesAreBounded) {
  FakeApiServer server;
  server.Upsert(testing::PodGroupJson("ns", "pg", 2));
  server.AddFault(FaultRule{"PATCH", "/podgroups/pg", 409, "Conflict", -1, {}, -1});
  auto client = Client(server);
  RestStatusUpdater updater(client.get());
  Status s = updater.UpdatePodGroup(CachedPodGroup(server, "ns", "pg"));
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s;
  EXPECT_NE(s.message().find("PodGroup ns/pg"), std::string::npos) << s;
  EXPECT_EQ(updater.stats().conflicts, static_cast<uint64_t>(RestStatusUpdater::kPodGroupStatusAttempts - 1));
}

// The same status for the same object version is not sent twice (665 requests in 10 s for
// 67 PodGroups before); a new object version gets it again.
TEST(RestStatusUpdaterTest, IdenticalPodGroupStatusIsNotResent) {
  FakeApiServer server;
  server.Upsert(testing::PodGroupJson("ns", "pg", 2));
  auto client = Client(server);
  RestStatusUpdater updater(client.get());
  k8s::PodGroup pg = CachedPodGroup(server, "ns", "pg");
  ASSERT_TRUE(updater.UpdatePodGroup(pg).ok());
  ASSERT_TRUE(updater.UpdatePodGroup(pg).ok());  // the cache has not seen our write yet
  ASSERT_TRUE(updater.UpdatePodGroup(CachedPodGroup(server, "ns", "pg")).ok());  // it has
  EXPECT_EQ(server.counters().object_patches, 1u);
  EXPECT_EQ(updater.stats().skipped_identical, 2u);
  k8s::PodGroup changed = CachedPodGroup(server, "ns", "pg");
  changed.status.phase = "Inqueue";
  ASSERT_TRUE(updater.UpdatePodGroup(changed).ok());
  EXPECT_EQ(server.counters().object_patches, 2u);
  EXPECT_EQ((*server.Get("podgroups", "ns", "pg"))["status"]["phase"], "Inqueue");
}

// 404 is "gone" only when a GET confirms it.
TEST(RestStatusUpdaterTest, NotFoundIsGoneOnlyWhenAGetConfirmsIt) {
  FakeApiServer server;
  server.Upsert(testing::PodGroupJson("ns", "pg", 2));
  server.Upsert(testing::QueueJson("q"));
  auto client = Client(server);
  RestStatusUpdater updater(client.get());
  k8s::PodGroup missing;
  missing.metadata.namespace_ = "ns";
  missing.metadata.name = "nope";
  missing.status.phase = "Running";
  EXPECT_TRUE(updater.UpdatePodGroup(missing).ok());
  k8s::Queue q;
  q.metadata.name = "q";
  EXPECT_TRUE(updater.UpdateQueueStatus(q).ok());
  EXPECT_EQ(server.counters().status_patches, 1u);  // Queue status: the status subresource
  // A 404 for an object that exists (a wrong route, a missing subresource) is an error.
  server.AddFault(FaultRule{"PATCH", "/queues/q/status", 404, "NotFound"});
  Status s = updater.UpdateQueueStatus(q);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("Queue q"), std::string::npos) << s;
  server.AddFault(FaultRule{"PATCH", "/podgroups/pg", 404, "NotFound"});
  s = updater.UpdatePodGroup(CachedPodGroup(server, "ns", "pg"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
}

// A binding answered 409 because our earlier attempt already bound the pod to this node is
// success; a pod on another node is still a conflict.
TEST(RestBinderTest, ConflictForThePodAlreadyOnTheSameNodeIsSuccess) {
  FakeApiServer server;
  for (auto [name, node] : {std::pair{"mine", "n1"}, std::pair{"theirs", "n2"}}) {
    auto pod = PodJson("ns", name, "1", "1Gi", "", "volcano", node);
    pod["metadata"]["uid"] = std::string("ns-") + name + "-uid";  // the uid Task() gives
    server.Upsert(pod);
  }
  auto client = Client(server);
  RestBinder binder(client.get());
  Status ok = binder.BindOne(Task("ns", "mine"), "n1");
  EXPECT_TRUE(ok.ok()) << ok;
  Status conflict = binder.BindOne(Task("ns", "theirs"), "n1");
  EXPECT_EQ(conflict.code(), StatusCode::kConflict) << conflict;
}

TEST(ForbiddenTest, NamesTheMissingPermissionOncePerVerbAndResource) {
  EXPECT_EQ(
      ForbiddenMessage("create", "queues", "scheduling.volcano.sh"),
      "forbidden: this client's user or service account needs RBAC permission verb \"create\" on resource "
      "\"queues\" in API group \"scheduling.volcano.sh\" (see deploy/02-clusterrole.yaml)");
  EXPECT_TRUE(LogForbiddenOnce("list", "widgets-test", "example.com"));
  EXPECT_FALSE(LogForbiddenOnce("list", "widgets-test", "example.com"));
  EXPECT_TRUE(LogForbiddenOnce("watch", "widgets-test", "example.com"));
}

}  // namespace
}  // namespace volcache::kube
