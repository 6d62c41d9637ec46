#include "workers/bind_flow.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "binder/binder.h"
#include "workers/clock.h"
#include "workers/executor.h"

namespace volcache {
namespace {

using std::chrono::milliseconds;

constexpr auto kTimeout = std::chrono::seconds(30);  // only reached when the code under test is broken
constexpr Duration kTick = milliseconds(20);

std::unique_ptr<BindContext> MakeContext(const std::string& name, const std::string& node = "node-1") {
  auto pod = std::make_shared<k8s::Pod>();
  pod->metadata.name = name;
  pod->metadata.namespace_ = "ns";
  pod->metadata.uid = "uid-" + name;
  boost::intrusive_ptr<TaskMeta> meta(new TaskMeta());
  meta->pod = std::move(pod);
  auto ctx = std::make_unique<BindContext>();
  ctx->task.meta = std::move(meta);
  ctx->node_name = node;
  return ctx;
}

// Everything the fakes do, in call order (pre-binds, rollbacks, binds, outcomes).
class CallLog {
 public:
  void Add(std::string entry) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> entries_;
};

// Binder with per-task scripted results (default OK), an optional wrong result count and an
// optional gate every Bind waits at.
class ScriptedBinder final : public Binder {
 public:
  explicit ScriptedBinder(CallLog* log = nullptr) : log_(log) {}

  std::vector<Status> Bind(const std::vector<BindContext*>& batch) override {
    std::vector<std::string> names;
    for (BindContext* ctx : batch) names.push_back(ctx->task.name());
    std::function<void()> during;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (BindContext* ctx : batch) patches_[ctx->task.name()] = ctx->pod_patch;
      batches_.push_back(names);
      ++entered_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !gated_; });
      during = during_bind_;
    }
    if (log_ != nullptr) {
      std::string entry = "bind:";
      for (const auto& n : names) entry += " " + n;
      log_->Add(entry);
    }
    if (during) during();
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Status> results;
    for (const auto& n : names) {
      auto it = script_.find(n);
      results.push_back(it == script_.end() ? Status::Ok() : it->second);
    }
    if (result_count_) results.resize(*result_count_);
    return results;
  }

  void Fail(const std::string& task, Status error) {
    std::lock_guard<std::mutex> lock(mu_);
    script_[task] = std::move(error);
  }
  void ReturnResultCount(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    result_count_ = n;
  }
  void SetGated(bool gated) {
    std::lock_guard<std::mutex> lock(mu_);
    gated_ = gated;
    cv_.notify_all();
  }
  void AwaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kTimeout, [&] { return entered_ >= n; }));
  }
  void DuringBind(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    during_bind_ = std::move(fn);
  }
  std::vector<std::vector<std::string>> batches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  // The pod patch each task carried when it reached Bind (by task name).
  std::map<std::string, PodPatch> patches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return patches_;
  }
  std::vector<size_t> batch_sizes() const {
    std::vector<size_t> sizes;
    for (const auto& b : batches()) sizes.push_back(b.size());
    return sizes;
  }

 private:
  CallLog* const log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Status> script_;
  std::optional<size_t> result_count_;
  bool gated_ = false;
  int entered_ = 0;
  std::function<void()> during_bind_;
  std::vector<std::vector<std::string>> batches_;
  std::map<std::string, PodPatch> patches_;
};

// A device-plugin-like pre-binder: reserves one unit per task at PreBind and asks for an
// annotation (and a label) naming it; PreBindRollBack releases the unit.
class ReservingPreBinder final : public PreBinder {
 public:
  ReservingPreBinder(std::string name, CallLog* log) : name_(std::move(name)), log_(log) {}
  std::string_view Name() const override { return name_; }
  Status PreBind(BindContext& ctx) override {
    log_->Add(name_ + ":prebind:" + ctx.task.name());
    {
      std::lock_guard<std::mutex> lock(mu_);
      reserved_.insert(ctx.task.name());
    }
    ctx.pod_patch.annotations["example.io/" + name_] = "unit-of-" + ctx.task.name();
    ctx.pod_patch.labels["example.io/reserved"] = "true";
    ctx.pod_patch.annotations["example.io/stale"] = std::nullopt;
    return Status::Ok();
  }
  void PreBindRollBack(BindContext& ctx) override {
    log_->Add(name_ + ":rollback:" + ctx.task.name());
    std::lock_guard<std::mutex> lock(mu_);
    reserved_.erase(ctx.task.name());
  }
  std::set<std::string> reserved() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reserved_;
  }

 private:
  const std::string name_;
  CallLog* const log_;
  mutable std::mutex mu_;
  std::set<std::string> reserved_;
};

class RecordingPreBinder final : public PreBinder {
 public:
  RecordingPreBinder(std::string name, CallLog* log) : name_(std::move(name)), log_(log) {}
  std::string_view Name() const override { return name_; }
  Status PreBind(BindContext& ctx) override {
    log_->Add(name_ + ":prebind:" + ctx.task.name());
    std::lock_guard<std::mutex> lock(mu_);
    return fail_.count(ctx.task.name()) ? Status::FailedPrecondition("volume not ready") : Status::Ok();
  }
  void PreBindRollBack(BindContext& ctx) override { log_->Add(name_ + ":rollback:" + ctx.task.name()); }
  void FailFor(const std::string& task) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_.insert(task);
  }

 private:
  const std::string name_;
  CallLog* const log_;
  std::mutex mu_;
  std::set<std::string> fail_;
};

// Outcomes by task name; safe for concurrent use; lets a test wait for a number of outcomes.
class RecordingHandler final : public BindOutcomeHandler {
 public:
  explicit RecordingHandler(CallLog* log = nullptr) : log_(log) {}

  void OnBindSucceeded(BindContext& ctx) override { Record(ctx, Status::Ok()); }
  void OnBindFailed(BindContext& ctx, const Status& error) override {
    EXPECT_FALSE(error.ok());
    Record(ctx, error);
  }

  std::map<std::string, Status> outcomes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return outcomes_;
  }
  std::vector<std::string> order() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return total_;
  }
  int duplicates() const {
    std::lock_guard<std::mutex> lock(mu_);
    return duplicates_;
  }
  void AwaitCount(size_t n) const {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kTimeout, [&] { return total_ >= n; }));
  }
  void OnOutcome(std::function<void(const std::string&, const Status&)> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    on_outcome_ = std::move(fn);
  }

 private:
  void Record(BindContext& ctx, const Status& result) {
    const std::string& name = ctx.task.name();
    if (log_ != nullptr) log_->Add((result.ok() ? "succeeded:" : "failed:") + name);
    std::function<void(const std::string&, const Status&)> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!outcomes_.emplace(name, result).second) ++duplicates_;
      order_.push_back(name);
      ++total_;
      cv_.notify_all();
      hook = on_outcome_;
    }
    if (hook) hook(name, result);
  }

  CallLog* const log_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, Status> outcomes_;
  std::vector<std::string> order_;
  size_t total_ = 0;
  int duplicates_ = 0;
  std::function<void(const std::string&, const Status&)> on_outcome_;
};

// Queues posted work until the test runs it.
class ManualExecutor final : public Executor {
 public:
  void Post(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(fn));
  }
  size_t RunAll() {
    size_t n = 0;
    for (;;) {
      std::function<void()> fn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (pending_.empty()) return n;
        fn = std::move(pending_.front());
        pending_.pop_front();
      }
      fn();
      ++n;
    }
  }
  // Runs the oldest posted item (what it posts is queued behind the rest).
  void RunOne() {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.empty()) return;
      fn = std::move(pending_.front());
      pending_.pop_front();
    }
    fn();
  }
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<std::function<void()>> pending_;
};

// Runs work on a pool and counts the work items that have finished (a batch has left the
// in-flight count once its work item has finished).
class CountingExecutor final : public Executor {
 public:
  explicit CountingExecutor(Executor* inner) : inner_(inner) {}
  void Post(std::function<void()> fn) override {
    inner_->Post([this, fn = std::move(fn)] {
      fn();
      std::lock_guard<std::mutex> lock(mu_);
      ++finished_;
      cv_.notify_all();
    });
  }
  void AwaitFinished(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kTimeout, [&] { return finished_ >= n; }));
  }

 private:
  Executor* const inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int finished_ = 0;
};

class BindFlowTest : public ::testing::Test {
 protected:
  std::unique_ptr<BindFlow> MakeFlow(BindFlowOptions options, Executor* dispatch = nullptr) {
    return std::make_unique<BindFlow>(options, clock_, &binder_, &registry_, &handler_,
                                      dispatch != nullptr ? dispatch : &inline_);
  }
  void PushAll(BindFlow& flow, int n, const std::string& prefix = "t") {
    for (int i = 1; i <= n; ++i) ASSERT_TRUE(flow.Push(MakeContext(prefix + std::to_string(i))).ok());
  }
  std::shared_ptr<RecordingPreBinder> AddPreBinder(const std::string& name) {
    auto pb = std::make_shared<RecordingPreBinder>(name, &log_);
    EXPECT_TRUE(registry_.Register(pb).ok());
    return pb;
  }
  static void ExpectConsistent(const BindFlow::Stats& s) {
    EXPECT_EQ(s.pushed, s.succeeded + s.failed + s.queued + s.in_flight);
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  CallLog log_;
  ScriptedBinder binder_{&log_};
  PreBinderRegistry registry_;
  RecordingHandler handler_{&log_};
  InlineExecutor inline_;
};

TEST_F(BindFlowTest, NothingIsDispatchedBeforeTheTickAndEverythingQueuedAtIt) {
  auto flow = MakeFlow({});
  flow->Start();
  PushAll(*flow, 5);
  clock_->Advance(milliseconds(19));
  EXPECT_TRUE(binder_.batches().empty());
  EXPECT_EQ(flow->stats().queued, 5u);
  clock_->Advance(milliseconds(1));
  EXPECT_EQ(binder_.batch_sizes(), (std::vector<size_t>{1, 1, 1, 1, 1}));  // default batch 1
  EXPECT_EQ(handler_.order(), (std::vector<std::string>{"t1", "t2", "t3", "t4", "t5"}));
  BindFlow::Stats s = flow->stats();
  EXPECT_EQ(s.pushed, 5u);
  EXPECT_EQ(s.dispatched, 5u);
  EXPECT_EQ(s.succeeded, 5u);
  EXPECT_EQ(s.batches, 5u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.in_flight, 0u);

  // The tick repeats every 20 ms.
  ASSERT_TRUE(flow->Push(MakeContext("t6")).ok());
  clock_->Advance(milliseconds(19));
  EXPECT_EQ(handler_.count(), 5u);
  clock_->Advance(milliseconds(1));
  EXPECT_EQ(handler_.count(), 6u);
  flow->Start();  // a second Start schedules no second tick
  EXPECT_EQ(clock_->PendingTimers(), 1u);
}

TEST_F(BindFlowTest, BatchesOfBatchSizeInPushOrder) {
  auto flow = MakeFlow({.batch_size = 3});
  PushAll(*flow, 7);
  EXPECT_EQ(flow->FlushOnce(), 7u);
  EXPECT_EQ(binder_.batches(),
            (std::vector<std::vector<std::string>>{{"t1", "t2", "t3"}, {"t4", "t5", "t6"}, {"t7"}}));
  EXPECT_EQ(flow->stats().batches, 3u);
  EXPECT_EQ(flow->FlushOnce(), 0u);  // nothing left
}

TEST_F(BindFlowTest, PerTaskResultsInAMixedBatch) {
  binder_.Fail("t2", Status::Conflict("pod ns/t2 already bound"));
  binder_.Fail("t4", Status::Unavailable("connection reset"));
  auto flow = MakeFlow({.batch_size = 4});
  PushAll(*flow, 4);
  flow->FlushOnce();
  ASSERT_EQ(binder_.batch_sizes(), (std::vector<size_t>{4}));
  auto out = handler_.outcomes();
  EXPECT_TRUE(out["t1"].ok());
  EXPECT_EQ(out["t2"].code(), StatusCode::kConflict);
  EXPECT_TRUE(out["t3"].ok());
  EXPECT_EQ(out["t4"].code(), StatusCode::kUnavailable);
  BindFlow::Stats s = flow->stats();
  EXPECT_EQ(s.succeeded, 2u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.cancelled, 0u);
  ExpectConsistent(s);
}

TEST_F(BindFlowTest, FullChannelIsBackpressureNeverADrop) {
  auto flow = MakeFlow({.channel_capacity = 2});
  flow->Start();
  auto a = MakeContext("a");
  auto b = MakeContext("b");
  auto c = MakeContext("c");
  ASSERT_TRUE(flow->TryPush(a));
  ASSERT_TRUE(flow->TryPush(b));
  EXPECT_EQ(a, nullptr);
  EXPECT_FALSE(flow->TryPush(c));
  ASSERT_NE(c, nullptr);  // untouched
  EXPECT_EQ(c->task.name(), "c");

  std::atomic<bool> pushed{false};
  Status push_result = Status::Internal("not returned");
  std::thread pusher([&] {
    push_result = flow->Push(std::move(c));  // blocks: the channel is full until a tick
    pushed = true;
  });
  EXPECT_FALSE(pushed.load());  // cannot have got in: nothing drains without a tick
  EXPECT_EQ(flow->stats().pushed, 2u);
  clock_->Advance(kTick);  // drains a and b, making room
  pusher.join();
  EXPECT_TRUE(push_result.ok());
  EXPECT_EQ(flow->stats().queued, 1u);
  clock_->Advance(kTick);
  EXPECT_EQ(handler_.order(), (std::vector<std::string>{"a", "b", "c"}));
  std::unique_ptr<BindContext> null_ctx;
  EXPECT_FALSE(flow->TryPush(null_ctx));
  EXPECT_EQ(flow->Push(nullptr).code(), StatusCode::kInvalidArgument);
}

TEST_F(BindFlowTest, BindsInFlightAreBounded) {
  ThreadPoolExecutor pool(2);
  CountingExecutor dispatch(&pool);
  binder_.SetGated(true);
  auto flow = MakeFlow({.max_concurrent_binds = 2}, &dispatch);
  flow->Start();
  PushAll(*flow, 3);
  clock_->Advance(kTick);
  binder_.AwaitEntered(2);  // two binds are running and held
  BindFlow::Stats s = flow->stats();
  EXPECT_EQ(s.dispatched, 2u);
  EXPECT_EQ(s.in_flight, 2u);
  EXPECT_EQ(s.queued, 1u);
  ExpectConsistent(s);
  clock_->Advance(kTick);  // still two in flight: t3 waits
  EXPECT_EQ(flow->stats().dispatched, 2u);
  EXPECT_EQ(flow->FlushOnce(), 0u);

  // A completed bind frees a slot: t3, queued at a tick that found the bound full, goes out
  // at once — no further tick needed.
  binder_.SetGated(false);
  dispatch.AwaitFinished(3);
  flow->Stop(/*drain=*/true);
  pool.Stop();
  s = flow->stats();
  EXPECT_EQ(s.succeeded, 3u);
  EXPECT_EQ(s.dispatched, 3u);
  EXPECT_EQ(binder_.batches().back(), (std::vector<std::string>{"t3"}));
}

TEST_F(BindFlowTest, BoundCutsABatchShortAndTheBacklogFollowsAsSlotsFree) {
  ManualExecutor dispatch;
  auto flow = MakeFlow({.batch_size = 3, .max_concurrent_binds = 4}, &dispatch);
  PushAll(*flow, 7);
  EXPECT_EQ(flow->FlushOnce(), 4u);  // batches 3 + 1
  EXPECT_EQ(dispatch.pending(), 2u);
  EXPECT_EQ(flow->stats().in_flight, 4u);
  EXPECT_EQ(flow->FlushOnce(), 0u);
  ASSERT_TRUE(flow->Push(MakeContext("late")).ok());  // after the tick: waits for the next one
  dispatch.RunOne();  // the batch of 3 completes: 3 slots free → 3 of the backlog
  EXPECT_EQ(dispatch.pending(), 2u);
  EXPECT_EQ(flow->stats().in_flight, 4u);
  dispatch.RunAll();
  EXPECT_EQ(flow->stats().in_flight, 0u);
  EXPECT_EQ(flow->stats().queued, 1u);  // "late" was not queued at the tick
  EXPECT_EQ(flow->FlushOnce(), 1u);
  dispatch.RunAll();
  EXPECT_EQ(binder_.batch_sizes(), (std::vector<size_t>{3, 1, 3, 1}));
}

TEST_F(BindFlowTest, PreBindFailureFailsThatTaskAloneAndRollsBackInReverse) {
  AddPreBinder("pb1");
  auto pb2 = AddPreBinder("pb2");
  AddPreBinder("pb3");
  pb2->FailFor("t2");
  auto flow = MakeFlow({.batch_size = 3});
  PushAll(*flow, 3);
  flow->FlushOnce();
  EXPECT_EQ(log_.entries(),
            (std::vector<std::string>{"pb1:prebind:t1", "pb2:prebind:t1", "pb3:prebind:t1", "pb1:prebind:t2",
                                      "pb2:prebind:t2", "pb1:rollback:t2", "pb1:prebind:t3", "pb2:prebind:t3",
                                      "pb3:prebind:t3", "bind: t1 t3", "succeeded:t1", "failed:t2",
                                      "succeeded:t3"}));
  auto out = handler_.outcomes();
  EXPECT_EQ(out["t2"].code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(out["t2"].message().find("pb2"), std::string::npos) << out["t2"].ToString();
  EXPECT_NE(out["t2"].message().find("ns/t2"), std::string::npos) << out["t2"].ToString();
}

TEST_F(BindFlowTest, BinderFailureRollsBackEveryPreBinderInReverseThenFails) {
  AddPreBinder("pb1");
  AddPreBinder("pb2");
  binder_.Fail("t1", Status::Unavailable("api server down"));
  auto flow = MakeFlow({.batch_size = 2});
  PushAll(*flow, 2);
  flow->FlushOnce();
  EXPECT_EQ(log_.entries(), (std::vector<std::string>{"pb1:prebind:t1", "pb2:prebind:t1", "pb1:prebind:t2",
                                                      "pb2:prebind:t2", "bind: t1 t2", "pb2:rollback:t1",
                                                      "pb1:rollback:t1", "failed:t1", "succeeded:t2"}));
  EXPECT_EQ(handler_.outcomes()["t1"].code(), StatusCode::kUnavailable);
}

TEST_F(BindFlowTest, PodPatchRequestedAtPreBindReachesTheBinder) {
  auto gpu = std::make_shared<ReservingPreBinder>("gpu", &log_);
  ASSERT_TRUE(registry_.Register(gpu).ok());
  auto flow = MakeFlow({.batch_size = 2});
  PushAll(*flow, 2);
  flow->FlushOnce();
  auto patches = binder_.patches();
  ASSERT_EQ(patches.size(), 2u);
  const PodPatch& p1 = patches["t1"];
  EXPECT_EQ(p1.annotations.at("example.io/gpu"), std::optional<std::string>("unit-of-t1"));
  EXPECT_EQ(p1.annotations.at("example.io/stale"), std::nullopt);  // a removal request
  EXPECT_EQ(p1.labels.at("example.io/reserved"), std::optional<std::string>("true"));
  EXPECT_EQ(patches["t2"].annotations.at("example.io/gpu"), std::optional<std::string>("unit-of-t2"));
  EXPECT_EQ(gpu->reserved(), (std::set<std::string>{"t1", "t2"}));  // bound: kept
  EXPECT_TRUE(handler_.outcomes()["t1"].ok());
}

TEST_F(BindFlowTest, RefusedBindRollsBackThePatchingPreBinderAndReleasesItsReservation) {
  auto gpu = std::make_shared<ReservingPreBinder>("gpu", &log_);
  ASSERT_TRUE(registry_.Register(gpu).ok());
  AddPreBinder("volume");
  binder_.Fail("t1", Status::Conflict("pod ns/t1 is already assigned to node other"));
  auto flow = MakeFlow({.batch_size = 2});
  PushAll(*flow, 2);
  flow->FlushOnce();
  // The binder saw the patch; after its refusal the pre-binders roll back in reverse order,
  // before the outcome call, and only t1's reservation is released.
  EXPECT_EQ(binder_.patches()["t1"].annotations.at("example.io/gpu"),
            std::optional<std::string>("unit-of-t1"));
  EXPECT_EQ(log_.entries(),
            (std::vector<std::string>{"gpu:prebind:t1", "volume:prebind:t1", "gpu:prebind:t2",
                                      "volume:prebind:t2", "bind: t1 t2", "volume:rollback:t1",
                                      "gpu:rollback:t1", "failed:t1", "succeeded:t2"}));
  EXPECT_EQ(gpu->reserved(), (std::set<std::string>{"t2"}));
  EXPECT_EQ(handler_.outcomes()["t1"].code(), StatusCode::kConflict);
}

TEST_F(BindFlowTest, FailedPreBindDropsThePodPatchSoTheBinderNeverSeesIt) {
  auto gpu = std::make_shared<ReservingPreBinder>("gpu", &log_);
  ASSERT_TRUE(registry_.Register(gpu).ok());
  AddPreBinder("volume")->FailFor("t1");
  auto flow = MakeFlow({.batch_size = 2});
  PushAll(*flow, 2);
  flow->FlushOnce();
  EXPECT_EQ(binder_.patches().count("t1"), 0u);  // not bound at all
  EXPECT_EQ(gpu->reserved(), (std::set<std::string>{"t2"}));
  EXPECT_EQ(handler_.outcomes()["t1"].code(), StatusCode::kFailedPrecondition);
}

TEST(PreBinderRegistryTest, FailedRunClearsThePodPatch) {
  CallLog log;
  PreBinderRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_shared<ReservingPreBinder>("gpu", &log)).ok());
  auto failing = std::make_shared<RecordingPreBinder>("volume", &log);
  failing->FailFor("t1");
  ASSERT_TRUE(registry.Register(failing).ok());
  auto ctx = MakeContext("t1");
  EXPECT_FALSE(registry.RunPreBind(*ctx).ok());
  EXPECT_TRUE(ctx->pod_patch.empty());
}

TEST(ApplyPodPatchTest, SetsAndRemovesOnlyTheNamedKeys) {
  k8s::ObjectMeta meta;
  meta.annotations = {{"keep", "1"}, {"old", "1"}, {"drop", "1"}};
  meta.labels = {{"app", "x"}};
  PodPatch patch;
  patch.annotations = {{"old", "2"}, {"drop", std::nullopt}, {"new", "3"}, {"absent", std::nullopt}};
  patch.labels = {{"tier", "gpu"}};
  ApplyPodPatch(patch, meta);
  EXPECT_EQ(meta.annotations, (k8s::StringMap{{"keep", "1"}, {"old", "2"}, {"new", "3"}}));
  EXPECT_EQ(meta.labels, (k8s::StringMap{{"app", "x"}, {"tier", "gpu"}}));
}

TEST_F(BindFlowTest, WrongResultCountFailsTheWholeBatchWithInternal) {
  auto pb = AddPreBinder("pb");
  pb->FailFor("t3");  // keeps its own pre-bind error
  binder_.ReturnResultCount(1);
  auto flow = MakeFlow({.batch_size = 3});
  PushAll(*flow, 3);
  flow->FlushOnce();
  auto out = handler_.outcomes();
  EXPECT_EQ(out["t1"].code(), StatusCode::kInternal);
  EXPECT_EQ(out["t2"].code(), StatusCode::kInternal);
  EXPECT_NE(out["t1"].message().find("1 results for a batch of 2"), std::string::npos)
      << out["t1"].ToString();
  EXPECT_EQ(out["t3"].code(), StatusCode::kFailedPrecondition);
  std::vector<std::string> entries = log_.entries();
  auto count = [&](const std::string& e) { return std::count(entries.begin(), entries.end(), e); };
  EXPECT_EQ(count("pb:rollback:t1"), 1);
  EXPECT_EQ(count("pb:rollback:t2"), 1);
  EXPECT_EQ(count("pb:rollback:t3"), 0);  // its pre-bind never succeeded: nothing to roll back
  EXPECT_EQ(flow->stats().failed, 3u);
}

TEST_F(BindFlowTest, TooManyResultsIsAlsoABrokenContract) {
  binder_.ReturnResultCount(5);
  auto flow = MakeFlow({.batch_size = 2});
  PushAll(*flow, 2);
  flow->FlushOnce();
  EXPECT_EQ(handler_.outcomes()["t1"].code(), StatusCode::kInternal);
  EXPECT_EQ(handler_.outcomes()["t2"].code(), StatusCode::kInternal);
}

TEST_F(BindFlowTest, StopWithoutDrainHandsBackQueuedContextsAsCancelled) {
  auto flow = MakeFlow({});
  flow->Start();
  PushAll(*flow, 3);
  flow->Stop(/*drain=*/false);
  EXPECT_TRUE(binder_.batches().empty());
  auto out = handler_.outcomes();
  ASSERT_EQ(out.size(), 3u);
  for (const auto& [name, status] : out) EXPECT_EQ(status.code(), StatusCode::kCancelled) << name;
  EXPECT_EQ(clock_->PendingTimers(), 0u);  // the tick is gone
  EXPECT_TRUE(flow->stopping());

  EXPECT_EQ(flow->Push(MakeContext("late")).code(), StatusCode::kCancelled);
  auto late = MakeContext("late2");
  EXPECT_FALSE(flow->TryPush(late));
  EXPECT_NE(late, nullptr);
  flow->Start();  // no-op after Stop
  clock_->Advance(kTick * 3);
  EXPECT_EQ(handler_.count(), 3u);
  flow->Stop(/*drain=*/true);  // idempotent
  BindFlow::Stats s = flow->stats();
  EXPECT_EQ(s.pushed, 3u);
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.cancelled, 3u);
  ExpectConsistent(s);
}

TEST_F(BindFlowTest, StopWithDrainBindsEverythingQueuedWithoutWaitingForTheClock) {
  auto flow = MakeFlow({.batch_size = 2, .max_concurrent_binds = 3});
  flow->Start();
  PushAll(*flow, 7);
  flow->Stop(/*drain=*/true);
  EXPECT_EQ(handler_.count(), 7u);
  for (const auto& [name, status] : handler_.outcomes()) EXPECT_TRUE(status.ok()) << name;
  EXPECT_EQ(binder_.batch_sizes(), (std::vector<size_t>{2, 1, 2, 1, 1}));  // 3 at a time
  EXPECT_EQ(clock_->PendingTimers(), 0u);
}

TEST_F(BindFlowTest, StopWithDrainWaitsForBindsInFlightOnAPool) {
  ThreadPoolExecutor pool(2);
  binder_.SetGated(true);
  auto flow = MakeFlow({.batch_size = 1}, &pool);
  PushAll(*flow, 4);
  flow->FlushOnce();
  binder_.AwaitEntered(2);
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    flow->Stop(/*drain=*/true);
    stopped = true;
  });
  EXPECT_FALSE(stopped.load());  // two binds are held at the gate
  binder_.SetGated(false);
  stopper.join();
  EXPECT_EQ(handler_.count(), 4u);
  EXPECT_EQ(flow->stats().in_flight, 0u);
  pool.Stop();
}

TEST_F(BindFlowTest, StopWithoutDrainHandsBackBatchesPostedButNotStarted) {
  ManualExecutor dispatch;
  auto flow = MakeFlow({.max_concurrent_binds = 2}, &dispatch);
  PushAll(*flow, 3);
  EXPECT_EQ(flow->FlushOnce(), 2u);  // t1, t2 posted; t3 still queued
  std::mutex mu;
  std::condition_variable cv;
  bool queued_handed_back = false;
  handler_.OnOutcome([&](const std::string& name, const Status&) {
    if (name != "t3") return;
    std::lock_guard<std::mutex> lock(mu);
    queued_handed_back = true;
    cv.notify_all();
  });
  std::thread stopper([&] { flow->Stop(/*drain=*/false); });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kTimeout, [&] { return queued_handed_back; }));
  }
  EXPECT_EQ(dispatch.RunAll(), 2u);  // the posted batches see the stop and hand back
  stopper.join();
  EXPECT_TRUE(binder_.batches().empty());
  auto out = handler_.outcomes();
  ASSERT_EQ(out.size(), 3u);
  for (const auto& [name, status] : out) EXPECT_EQ(status.code(), StatusCode::kCancelled) << name;
  EXPECT_EQ(flow->stats().cancelled, 3u);
}

TEST_F(BindFlowTest, StopWakesABlockedPushWithCancelled) {
  auto flow = MakeFlow({.channel_capacity = 1});
  ASSERT_TRUE(flow->Push(MakeContext("a")).ok());
  Status blocked_result;
  std::thread pusher([&] { blocked_result = flow->Push(MakeContext("b")); });
  flow->Stop(/*drain=*/false);
  pusher.join();
  EXPECT_EQ(blocked_result.code(), StatusCode::kCancelled);
  EXPECT_NE(blocked_result.message().find("ns/b"), std::string::npos) << blocked_result.ToString();
  EXPECT_EQ(handler_.outcomes().size(), 1u);  // "a" handed back; "b" was never queued
  EXPECT_EQ(handler_.outcomes()["a"].code(), StatusCode::kCancelled);
}

TEST_F(BindFlowTest, ADispatchExecutorThatDropsWorkStillYieldsAnOutcome) {
  ThreadPoolExecutor pool(1);
  pool.Stop();
  auto flow = MakeFlow({.batch_size = 2}, &pool);
  PushAll(*flow, 3);
  EXPECT_EQ(flow->FlushOnce(), 3u);
  auto out = handler_.outcomes();
  ASSERT_EQ(out.size(), 3u);
  for (const auto& [name, status] : out) EXPECT_EQ(status.code(), StatusCode::kCancelled) << name;
  BindFlow::Stats s = flow->stats();
  EXPECT_EQ(s.in_flight, 0u);
  ExpectConsistent(s);
}

TEST_F(BindFlowTest, DestroyingWithoutStopHandsBackQueuedContexts) {
  {
    auto flow = MakeFlow({});
    flow->Start();
    PushAll(*flow, 2);
  }
  EXPECT_EQ(handler_.count(), 2u);
  EXPECT_EQ(handler_.outcomes()["t1"].code(), StatusCode::kCancelled);
  EXPECT_EQ(clock_->PendingTimers(), 0u);
  clock_->Advance(kTick);  // nothing fires into a destroyed flow
}

TEST_F(BindFlowTest, ObserverSeesBatchSizesAndLatencyOnTheInjectedClock) {
  std::vector<std::pair<size_t, Duration>> seen;
  auto flow = MakeFlow({.batch_size = 3});
  flow->SetObserver([&](size_t size, Duration latency) { seen.emplace_back(size, latency); });
  binder_.DuringBind([&] { clock_->Advance(milliseconds(7)); });
  PushAll(*flow, 7);
  flow->FlushOnce();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(size_t{3}, Duration(milliseconds(7))));
  EXPECT_EQ(seen[1].first, 3u);
  EXPECT_EQ(seen[2].first, 1u);
  flow->SetObserver(nullptr);
  PushAll(*flow, 1, "u");
  flow->FlushOnce();
  EXPECT_EQ(seen.size(), 3u);
}

TEST_F(BindFlowTest, HandlerMayPushFromItsCallback) {
  auto flow = MakeFlow({});
  flow->Start();
  // A failed bind is retried once by pushing a fresh context from the handler.
  binder_.Fail("t1", Status::Unavailable("flaky"));
  handler_.OnOutcome([&](const std::string& name, const Status& s) {
    if (name == "t1" && !s.ok()) {
      EXPECT_TRUE(flow->Push(MakeContext("t1-retry")).ok());
    }
  });
  PushAll(*flow, 1);
  clock_->Advance(kTick);
  EXPECT_EQ(flow->stats().queued, 1u);
  clock_->Advance(kTick);
  EXPECT_TRUE(handler_.outcomes()["t1-retry"].ok());
  handler_.OnOutcome(nullptr);
}

TEST_F(BindFlowTest, OptionsAreValidated) {
  EXPECT_TRUE(ValidateBindFlowOptions({}).ok());
  EXPECT_EQ(ValidateBindFlowOptions({.channel_capacity = 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateBindFlowOptions({.batch_size = 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateBindFlowOptions({.tick = Duration::zero()}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateBindFlowOptions({.max_concurrent_binds = 0}).code(), StatusCode::kInvalidArgument);
  BindFlowOptions defaults;
  EXPECT_EQ(defaults.channel_capacity, 5000u);
  EXPECT_EQ(defaults.batch_size, 1u);
  EXPECT_EQ(defaults.tick, Duration(milliseconds(20)));
  EXPECT_EQ(defaults.max_concurrent_binds, 256u);
}

TEST_F(BindFlowTest, DeathOnStopFromTheHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto flow = MakeFlow({});
        handler_.OnOutcome([&](const std::string&, const Status&) { flow->Stop(true); });
        PushAll(*flow, 1);
        flow->FlushOnce();
      },
      "called from its own handler");
}

// Many contexts, two pushers, a tick driver, a thread pool, a binder failing ~30% of the
// tasks and a pre-binder failing a few more: every context gets exactly one outcome, the one
// the fakes decided, and the counters add up.
struct StressResult {
  size_t cancelled_pushes = 0;
};

class BindFlowStressTest : public ::testing::TestWithParam<bool> {};  // param: stop mid-run

TEST_P(BindFlowStressTest, EveryContextGetsExactlyOneOutcome) {
  const bool stop_mid_run = GetParam();
  constexpr int kPushers = 2;
  constexpr int kPerPusher = 5000;
  auto clock = std::make_shared<FakeClock>();
  // Deterministic pseudo-random verdicts per task (splitmix64 of the index).
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  auto index_of = [](const std::string& name) { return std::stoull(name.substr(1)); };
  auto binder_fails = [&](uint64_t i) { return mix(i) % 100 < 30; };
  auto pre_bind_fails = [&](uint64_t i) { return mix(i ^ 0xabcdef) % 100 < 3; };

  class StressBinder final : public Binder {
   public:
    explicit StressBinder(std::function<bool(const std::string&)> fails) : fails_(std::move(fails)) {}
    std::vector<Status> Bind(const std::vector<BindContext*>& batch) override {
      std::vector<Status> out;
      for (BindContext* ctx : batch) {
        out.push_back(fails_(ctx->task.name()) ? Status::Unavailable("scripted") : Status::Ok());
      }
      return out;
    }

   private:
    std::function<bool(const std::string&)> fails_;
  };
  class StressPreBinder final : public PreBinder {
   public:
    explicit StressPreBinder(std::function<bool(const std::string&)> fails) : fails_(std::move(fails)) {}
    std::string_view Name() const override { return "stress"; }
    Status PreBind(BindContext& ctx) override {
      return fails_(ctx.task.name()) ? Status::FailedPrecondition("scripted") : Status::Ok();
    }
    void PreBindRollBack(BindContext& ctx) override { rollbacks.fetch_add(1, std::memory_order_relaxed); }
    std::atomic<uint64_t> rollbacks{0};

   private:
    std::function<bool(const std::string&)> fails_;
  };

  StressBinder binder([&](const std::string& n) { return binder_fails(index_of(n)); });
  auto pre_binder =
      std::make_shared<StressPreBinder>([&](const std::string& n) { return pre_bind_fails(index_of(n)); });
  PreBinderRegistry registry;
  ASSERT_TRUE(registry.Register(pre_binder).ok());
  RecordingHandler handler;
  ThreadPoolExecutor pool(3);
  BindFlow flow({.channel_capacity = 64, .batch_size = 7, .max_concurrent_binds = 40}, clock, &binder,
                &registry, &handler, &pool);
  std::atomic<uint64_t> batch_total{0};
  flow.SetObserver([&](size_t size, Duration) { batch_total.fetch_add(size, std::memory_order_relaxed); });
  flow.Start();

  std::vector<StressResult> results(kPushers);
  std::vector<std::vector<std::string>> accepted(kPushers);
  std::atomic<int> pushers_done{0};
  std::atomic<uint64_t> pushes{0};
  std::vector<std::thread> pushers;
  for (int p = 0; p < kPushers; ++p) {
    pushers.emplace_back([&, p] {
      for (int i = 0; i < kPerPusher; ++i) {
        std::string name = "t" + std::to_string(p * kPerPusher + i);
        Status s = flow.Push(MakeContext(name));
        pushes.fetch_add(1);
        if (s.ok()) {
          accepted[p].push_back(name);
        } else {
          EXPECT_EQ(s.code(), StatusCode::kCancelled);
          ++results[p].cancelled_pushes;
        }
      }
      pushers_done.fetch_add(1);
    });
  }
  // The tick driver: the fake clock only moves when told to.
  std::thread ticker([&] {
    while (pushers_done.load() < kPushers) {
      clock->Advance(kTick);
      if (stop_mid_run && pushes.load() >= kPushers * kPerPusher / 2) break;
      std::this_thread::yield();
    }
  });
  if (stop_mid_run) {
    ticker.join();
    flow.Stop(/*drain=*/false);  // pushers still running: they get Cancelled from here on
    for (auto& t : pushers) t.join();
  } else {
    for (auto& t : pushers) t.join();
    ticker.join();
    flow.Stop(/*drain=*/true);
  }
  pool.Stop();

  size_t total_accepted = 0;
  size_t total_cancelled_pushes = 0;
  for (int p = 0; p < kPushers; ++p) {
    total_accepted += accepted[p].size();
    total_cancelled_pushes += results[p].cancelled_pushes;
  }
  EXPECT_EQ(total_accepted + total_cancelled_pushes, static_cast<size_t>(kPushers * kPerPusher));
  if (!stop_mid_run) {
    EXPECT_EQ(total_cancelled_pushes, 0u);
  }

  EXPECT_EQ(handler.duplicates(), 0);
  EXPECT_EQ(handler.count(), total_accepted);
  auto outcomes = handler.outcomes();
  ASSERT_EQ(outcomes.size(), total_accepted);
  uint64_t want_ok = 0, want_bind_failures = 0, cancelled = 0;
  for (int p = 0; p < kPushers; ++p) {
    for (const std::string& name : accepted[p]) {
      auto it = outcomes.find(name);
      ASSERT_NE(it, outcomes.end()) << name << " has no outcome";
      const uint64_t i = index_of(name);
      const Status& got = it->second;
      if (got.code() == StatusCode::kCancelled) {
        ++cancelled;
        continue;
      }
      if (pre_bind_fails(i)) {
        EXPECT_EQ(got.code(), StatusCode::kFailedPrecondition) << name;
      } else if (binder_fails(i)) {
        EXPECT_EQ(got.code(), StatusCode::kUnavailable) << name;
        ++want_bind_failures;
      } else {
        EXPECT_TRUE(got.ok()) << name << ": " << got.ToString();
        ++want_ok;
      }
    }
  }
  if (!stop_mid_run) {
    EXPECT_EQ(cancelled, 0u);
  }
  BindFlow::Stats s = flow.stats();
  EXPECT_EQ(s.pushed, total_accepted);
  EXPECT_EQ(s.succeeded, want_ok);
  EXPECT_EQ(s.failed, total_accepted - want_ok);
  EXPECT_EQ(s.cancelled, cancelled);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.in_flight, 0u);
  // Every accepted context either reached a batch that ran (the observer saw it) or was
  // handed back as Cancelled (from the channel, or from a batch that had not started).
  EXPECT_EQ(batch_total.load() + cancelled, total_accepted);
  EXPECT_GE(s.dispatched, batch_total.load());
  EXPECT_LE(s.dispatched, total_accepted);
  EXPECT_EQ(pre_binder->rollbacks.load(), want_bind_failures);  // only after a failed bind
  EXPECT_EQ(s.pushed, s.succeeded + s.failed + s.queued + s.in_flight);
}

INSTANTIATE_TEST_SUITE_P(Modes, BindFlowStressTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "StopMidRun" : "DrainAtEnd"; });

}  // namespace
}  // namespace volcache
