// LeaderElector against the loopback API server, on a FakeClock: the Lease is created when
// absent, left alone while another holder's record keeps changing or is unexpired in our
// view, taken over once it expired or was released; a lost race (409) leaves a standby; a
// leader that cannot renew for the renew deadline closes the gate (no bind, eviction or
// status write is sent after that) and stays lost; Stop(true) releases the lease.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/rest_writers.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using testing::FakeApiServer;
using testing::FaultRule;
using json = nlohmann::json;
using std::chrono::seconds;

constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

std::unique_ptr<RestClient> Client(const FakeApiServer& server, std::function<Status()> gate = nullptr) {
  RestClientOptions o;
  o.write_gate = std::move(gate);
  auto c = RestClient::Create(server.Config(), o);
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(c).value();
}

LeaderElectionOptions Options(const std::string& identity) {
  LeaderElectionOptions o;
  o.identity = identity;
  o.jitter = 0;  // attempts exactly every retry period: the clock steps below hit each one
  return o;      // 15 s / 10 s / 2 s
}

json LeaseJson(const std::string& holder, int64_t duration, const std::string& renew) {
  return json{{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", {{"name", "volcache"}, {"namespace", "kube-system"}}},
              {"spec",
               {{"holderIdentity", holder},
                {"leaseDurationSeconds", duration},
                {"acquireTime", "2024-01-01T00:00:00.000000Z"},
                {"renewTime", renew},
                {"leaseTransitions", 3}}}};
}

std::string Holder(const FakeApiServer& server) {
  auto lease = server.Get("leases", "kube-system", "volcache");
  return lease ? (*lease)["spec"].value("holderIdentity", "<none>") : "<absent>";
}

// Advances the clock one retry period (2 s) at a time, `n` times: every attempt due runs.
void Periods(FakeClock& clock, int n) {
  for (int i = 0; i < n; ++i) clock.Advance(seconds(2));
}

TEST(LeaderElectionTest, AcquiresAnAbsentLeaseByCreatingIt) {
  FakeApiServer server;
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector e(client.get(), clock, Options("a"));
  EXPECT_FALSE(e.IsLeader());
  e.Start();
  clock->Advance(Duration::zero());  // the first attempt
  EXPECT_TRUE(e.IsLeader());
  EXPECT_EQ(e.state(), LeaderState::kLeading);
  EXPECT_EQ(e.transitions(), 1u);
  auto lease = server.Get("leases", "kube-system", "volcache");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 0);
  const std::string renew = (*lease)["spec"]["renewTime"];
  EXPECT_EQ(renew.size(), std::string("2024-01-01T00:00:00.000000Z").size()) << renew;
  // Renewals: a PUT every retry period, acquireTime kept.
  const uint64_t puts = server.counters().updates;
  Periods(*clock, 3);
  EXPECT_EQ(server.counters().updates, puts + 3);
  EXPECT_TRUE(e.IsLeader());
  EXPECT_EQ((*server.Get("leases", "kube-system", "volcache"))["spec"]["acquireTime"],
            (*lease)["spec"]["acquireTime"]);
}

TEST(LeaderElectionTest, TwoCandidatesOneLeader) {
  FakeApiServer server;
  auto ca = Client(server), cb = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector a(ca.get(), clock, Options("a")), b(cb.get(), clock, Options("b"));
  a.Start();
  b.Start();
  Periods(*clock, 10);  // 20 s: a renews all along, so b never sees it expire
  EXPECT_NE(a.IsLeader(), b.IsLeader());
  EXPECT_EQ(Holder(server), a.IsLeader() ? "a" : "b");
}

TEST(LeaderElectionTest, HeldUnexpiredLeaseIsNotTakenThenTakenAfterExpiry) {
  FakeApiServer server;
  server.Upsert(LeaseJson("other", 15, "2024-01-01T00:00:00.000000Z"));
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector e(client.get(), clock, Options("a"));
  e.Start();
  clock->Advance(Duration::zero());  // t=0: the record is observed now
  EXPECT_FALSE(e.IsLeader());
  // The holder renews at t=2, 4 and 6 (after our attempts): the expiry counts from the
  // attempt that saw the last change, t=8.
  for (int i = 0; i < 3; ++i) {
    Periods(*clock, 1);
    server.Upsert(LeaseJson("other", 15, "2024-01-01T00:00:0" + std::to_string(i + 1) + ".000000Z"));
  }
  Periods(*clock, 8);  // t=22: 14 s since the change observed at t=8
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(Holder(server), "other");
  Periods(*clock, 1);  // t=24: 16 s > 15 s: expired in our view
  EXPECT_TRUE(e.IsLeader());
  auto lease = *server.Get("leases", "kube-system", "volcache");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "a");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 4);
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
}

TEST(LeaderElectionTest, ReleasedLeaseIsTakenAtOnce) {
  FakeApiServer server;
  server.Upsert(LeaseJson("", 1, "2024-01-01T00:00:00.000000Z"));
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector e(client.get(), clock, Options("a"));
  e.Start();
  clock->Advance(Duration::zero());
  EXPECT_TRUE(e.IsLeader());
  EXPECT_EQ(Holder(server), "a");
}

TEST(LeaderElectionTest, LostRaceOn409StaysStandby) {
  FakeApiServer server;
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  // Another candidate creates the lease between our GET (404) and our POST.
  server.AddFault(
      FaultRule{.method = "POST", .path_contains = "leases", .status = 409, .reason = "AlreadyExists"});
  LeaderElector e(client.get(), clock, Options("a"));
  e.Start();
  clock->Advance(Duration::zero());
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(e.state(), LeaderState::kStandby);
  // The next attempt finds the lease the winner created and holds: standby.
  server.Upsert(LeaseJson("other", 15, "2024-01-01T00:00:00.000000Z"));
  Periods(*clock, 2);
  EXPECT_FALSE(e.IsLeader());
  // The optimistic concurrency the elector relies on: a PUT with a stale resourceVersion
  // (someone updated the lease after our GET) is refused with 409.
  auto lease = *server.Get("leases", "kube-system", "volcache");
  std::string stale = lease["metadata"]["resourceVersion"];
  server.Upsert(LeaseJson("thief", 15, "2024-01-01T00:00:09.000000Z"));
  lease["spec"]["holderIdentity"] = "late";
  auto put = client->Do("PUT", std::string(kLeases) + "/volcache", lease.dump());
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->status, 409);
  EXPECT_GE(server.counters().update_conflicts, 1u);
}

TEST(LeaderElectionTest, RaceBetweenGetAndPutEndsAsStandby) {
  FakeApiServer server;
  server.Upsert(LeaseJson("", 1, "2024-01-01T00:00:00.000000Z"));  // released: anyone may take it
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  server.AddFault(FaultRule{.method = "PUT", .path_contains = "leases", .status = 409, .reason = "Conflict"});
  LeaderElector e(client.get(), clock, Options("a"));
  e.Start();
  clock->Advance(Duration::zero());
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(e.transitions(), 0u);
}

TEST(LeaderElectionTest, RenewFailurePastTheDeadlineClosesTheGateAndNothingIsWritten) {
  FakeApiServer server;
  server.Upsert(testing::PodJson("ns", "p1", "1", "1Gi"));
  server.Upsert(testing::PodJson("ns", "p2", "1", "1Gi"));
  auto le_client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector e(le_client.get(), clock, Options("a"));
  // The writers' client, gated like `serve`'s.
  auto client = Client(server, [&e] { return e.WriteGate(); });
  RestStatusUpdater status(client.get());
  RestEvictor evictor(client.get(), /*use_eviction_api=*/false);
  auto bind = [&](const std::string& pod) {
    return client->Do("POST", "/api/v1/namespaces/ns/pods/" + pod + "/binding",
                      R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")" + pod +
                          R"("},"target":{"apiVersion":"v1","kind":"Node","name":"n1"}})");
  };
  auto before = bind("p1");
  ASSERT_FALSE(before.ok()) << "a standby must not bind";
  EXPECT_EQ(before.status().code(), StatusCode::kFailedPrecondition) << before.status();
  e.Start();
  clock->Advance(Duration::zero());
  ASSERT_TRUE(e.IsLeader());
  auto ok = bind("p1");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->status, 201);

  // Renewals fail from now on (t=0 was the last success): the gate stays open until t=10.
  server.AddFault(FaultRule{.method = "PUT", .path_contains = "leases", .status = 500, .times = -1});
  Periods(*clock, 4);  // t=8
  EXPECT_TRUE(e.IsLeader());
  EXPECT_TRUE(e.Healthy());
  clock->Advance(seconds(1));  // t=9
  EXPECT_TRUE(e.IsLeader());
  clock->Advance(seconds(1));  // t=10: renew deadline
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(e.state(), LeaderState::kLost);
  EXPECT_FALSE(e.Healthy());
  EXPECT_EQ(e.transitions(), 2u);

  const auto counters = server.counters();
  auto refused = bind("p2");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status();
  k8s::Pod pod;
  pod.metadata.namespace_ = "ns";
  pod.metadata.name = "p2";
  pod.metadata.uid = "uid-p2";
  EXPECT_FALSE(evictor.Evict(pod, "preempted").ok());
  k8s::PodCondition cond;
  cond.type = "PodScheduled";
  cond.status = "False";
  EXPECT_FALSE(status.UpdatePodCondition(pod, cond).ok());
  const auto after = server.counters();
  EXPECT_EQ(after.binds, counters.binds);
  EXPECT_EQ(after.deletes, counters.deletes);
  EXPECT_EQ(after.status_patches, counters.status_patches);
  EXPECT_EQ((*server.Get("pods", "ns", "p2"))["spec"].value("nodeName", ""), "");

  // Lost is final: renewals working again do not make it a leader again.
  server.ClearFaults();
  Periods(*clock, 10);
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(e.state(), LeaderState::kLost);
}

TEST(LeaderElectionTest, GateClosesAtTheDeadlineEvenWithoutAnAttempt) {
  FakeApiServer server;
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector e(client.get(), clock, Options("a"));
  e.Start();
  clock->Advance(Duration::zero());
  ASSERT_TRUE(e.IsLeader());
  // The process was paused (SIGSTOP) for longer than the renew deadline: when it resumes
  // the overdue attempt finds the deadline passed and does not renew — lost, gate closed,
  // although the API server would have accepted the renewal.
  const uint64_t puts = server.counters().updates;
  clock->Advance(seconds(11));
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(e.state(), LeaderState::kLost);
  EXPECT_EQ(server.counters().updates, puts);
}

TEST(LeaderElectionTest, StopReleasesTheLeaseAndAStandbyTakesItAtOnce) {
  FakeApiServer server;
  auto ca = Client(server), cb = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector a(ca.get(), clock, Options("a"));
  a.Start();
  clock->Advance(Duration::zero());
  ASSERT_TRUE(a.IsLeader());
  LeaderElector b(cb.get(), clock, Options("b"));
  b.Start();
  clock->Advance(Duration::zero());
  EXPECT_FALSE(b.IsLeader());

  a.Stop(/*release=*/true);
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(a.state(), LeaderState::kStopped);
  auto lease = *server.Get("leases", "kube-system", "volcache");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  Periods(*clock, 1);  // b's next attempt: released → taken without waiting for expiry
  EXPECT_TRUE(b.IsLeader());
  lease = *server.Get("leases", "kube-system", "volcache");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
}

TEST(LeaderElectionTest, StandbyStopDoesNotTouchTheLease) {
  FakeApiServer server;
  server.Upsert(LeaseJson("other", 15, "2024-01-01T00:00:00.000000Z"));
  auto client = Client(server);
  auto clock = std::make_shared<FakeClock>();
  LeaderElector e(client.get(), clock, Options("a"));
  e.Start();
  clock->Advance(Duration::zero());
  const uint64_t puts = server.counters().updates;
  e.Stop(/*release=*/true);
  EXPECT_EQ(server.counters().updates, puts);
  EXPECT_EQ(Holder(server), "other");
}

TEST(LeaderElectionTest, ValidatesTimingsAsClientGo) {
  LeaderElectionOptions o;
  EXPECT_TRUE(ValidateLeaderElection(o).ok());
  o.renew_deadline = seconds(15);
  EXPECT_FALSE(ValidateLeaderElection(o).ok());
  o = {};
  o.retry_period = seconds(9);
  EXPECT_FALSE(ValidateLeaderElection(o).ok());
  o = {};
  o.lease_duration = seconds(4);
  o.renew_deadline = seconds(3);
  o.retry_period = seconds(1);
  EXPECT_TRUE(ValidateLeaderElection(o).ok());
  const std::string id = DefaultIdentity();
  EXPECT_NE(id.find('_'), std::string::npos) << id;
  EXPECT_NE(id, DefaultIdentity());
  EXPECT_EQ(FormatMicroTime(1'700'000'000'123'456), "2023-11-14T22:13:20.123456Z");
}

}  // namespace
}  // namespace volcache::kube
