// Defect 4 on the real server: kube-apiserver closes keep-alive connections idle for 90 s (Go's
// http.Server IdleTimeout, not configurable); binds after that must not fail. Its own binary:
// the test is 95 s of waiting, so it runs beside the unit tests instead of in the serial
// integration queue.
#include <thread>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

class IdleTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }
};

// The pool must not hand a connection the server closed (CLOSE-WAIT) to a bind.
TEST_F(IdleTest, BindsAfterIdleKeepAliveTimeoutDoNotFail) {
  KubeClient c = Admin();
  const std::string ns = "idle";
  CreateNamespace(c, ns);
  ASSERT_EQ(CreateReadyNode(c, "idle-n1", {{"suite", "idle"}}, "16", "32Gi"), "");
  ASSERT_EQ(CreateGang(c, ns, "before", 6, "1", "1Gi", {{"suite", "idle"}}), "");
  auto serve = StartServe("idle", {"--schedule-period", "500ms"});
  ASSERT_TRUE(WaitReady(*serve));
  ASSERT_TRUE(Eventually([&] { return CountBound(c, ns) == 6; }, Seconds(15))) << Tail(serve->Log());
  // Longer than the server's 90 s idle timeout: every pooled bind connection is closed by the server.
  std::this_thread::sleep_for(std::chrono::seconds(95));
  c = Admin();
  ASSERT_EQ(CreateGang(c, ns, "after", 6, "1", "1Gi", {{"suite", "idle"}}), "");
  EXPECT_TRUE(Eventually([&] { return CountBound(c, ns) == 12; }, Seconds(30)))
      << "bound " << CountBound(c, ns) << "/12; log:\n"
      << Tail(serve->Log());
  auto metrics = serve->AdminGet("/metrics").body;
  EXPECT_EQ(MetricValue(metrics, "volcache_binds_failed_total"), 0)
      << "binds failed on connections idle past the server's timeout (defect 4); log:\n"
      << Tail(serve->Log());
  EXPECT_TRUE(BindingsExactlyOnce(ns));
}

}  // namespace
}  // namespace volcache::integration
