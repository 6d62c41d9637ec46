// `volcache serve` as a process against the loopback API server: it syncs (creating the
// default queues on the server), binds nothing on its own, and exits 0 on SIGTERM.
// Skipped when the volcache executable has not been built next to the tests.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/kube/fake_apiserver.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

namespace fs = std::filesystem;

fs::path VolcacheBinary() {
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "cmd" / "volcache";
}

TEST(ServeTest, SyncsAgainstTheApiServerAndExitsCleanlyOnSigterm) {
  const fs::path bin = VolcacheBinary();
  if (!fs::exists(bin)) GTEST_SKIP() << bin << " not built";
  testing::FakeApiServer server;
  server.SeedFromSharedData();
  const fs::path cfg = fs::temp_directory_path() / ("volcache-serve-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(cfg) << "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                        "clusters: [{name: fake, cluster: {server: \""
                     << server.url()
                     << "\"}}]\n"
                        "contexts: [{name: fake, context: {cluster: fake, user: u}}]\n"
                        "users: [{name: u, user: {token: test-token}}]\n";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(bin.c_str(), bin.c_str(), "serve", "--kubeconfig", cfg.c_str(), "--kube-api-qps", "500", "--listen",
          "127.0.0.1:0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const bool created = testing::Eventually([&] {
    return server.Get("queues", "", "root").has_value() && server.Get("queues", "", "default").has_value();
  });
  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  fs::remove(cfg);
  EXPECT_TRUE(created);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GE(server.counters().lists, 6u);  // one LIST per kind
}

TEST(ServeTest, BadKubeconfigExitsWithAnError) {
  const fs::path bin = VolcacheBinary();
  if (!fs::exists(bin)) GTEST_SKIP() << bin << " not built";
  const std::string cmd = bin.string() + " serve --kubeconfig /nonexistent/kubeconfig 2>/dev/null";
  int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

}  // namespace
}  // namespace volcache::kube
