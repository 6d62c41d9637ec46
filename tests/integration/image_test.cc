// The container image as it ships (scripts/image.sh): built from Debian's archive around this
// build's volcache, unpacked from its OCI layout with umoci, and its own /usr/bin/volcache run
// from the image's root file system as the image's user (chroot --userspec, which is what this
// machine allows: no podman) against the real kube-apiserver, with a token of the deploy
// manifests' ServiceAccount bound by their ClusterRole: it syncs and binds a gang. Also: the
// image config (user 65532, entrypoint, default command, port, labels) and `volcache
// --version` inside the image naming the commit the binary was built from.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/fixture.h"

namespace volcache::integration {
namespace {

namespace fs = std::filesystem;

int Shell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class ImageTest : public RealServerTest {
 protected:
  static void SetUpTestSuite() { UpServer(""); }
  static void TearDownTestSuite() { DownServer(); }
};

TEST_F(ImageTest, TheImagesOwnServeBindsAGangAsTheImagesUser) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: building and entering the image needs root (mmdebstrap, chroot)";
  const std::string base = server().base() + "/image";
  const std::string src = VOLCACHE_SOURCE_DIR;
  std::string out;
  ASSERT_EQ(Shell(Quote(src + "/scripts/image.sh") + " --binary " + Quote(VolcacheBinary()) + " --out " +
                      Quote(base),
                  &out),
            0)
      << out;
  std::smatch size;
  ASSERT_TRUE(std::regex_search(out, size, std::regex(R"((volcache:[0-9.]+): ([0-9]+) MB compressed)")))
      << out;
  const std::string image = size[1];
  const std::string version = image.substr(image.find(':') + 1);
  EXPECT_LE(std::stoi(size[2]), 60) << "the image is over 60 MB compressed: " << out;
  EXPECT_TRUE(fs::exists(base + "/volcache-" + version + ".tar")) << "no docker-archive";

  // Unpack what ships (the OCI layout) and read its runtime config.
  out.clear();
  ASSERT_EQ(
      Shell("umoci unpack --image " + Quote(base + "/oci:" + version) + " " + Quote(base + "/bundle"), &out),
      0)
      << out;
  const std::string rootfs = base + "/bundle/rootfs";
  std::ifstream cfg_in(base + "/bundle/config.json");
  Json cfg = Json::parse(cfg_in, nullptr, false);
  ASSERT_TRUE(cfg.is_object()) << "bundle/config.json";
  EXPECT_EQ(cfg["process"]["user"]["uid"], 65532);
  EXPECT_EQ(cfg["process"]["user"]["gid"], 65532);
  EXPECT_EQ(cfg["process"]["args"], Json::array({"/usr/bin/volcache", "serve"}));
  out.clear();
  ASSERT_EQ(Shell("skopeo inspect --config " + Quote("oci:" + base + "/oci:" + version), &out), 0) << out;
  Json image_cfg = Json::parse(out, nullptr, false);
  ASSERT_TRUE(image_cfg.is_object()) << out;
  EXPECT_TRUE(image_cfg["config"]["ExposedPorts"].contains("8080/tcp")) << out;
  EXPECT_EQ(image_cfg["config"]["Labels"]["org.opencontainers.image.version"], version);
  // Nothing to build with in the image: no compiler, no headers, no shell.
  EXPECT_FALSE(fs::exists(rootfs + "/usr/bin/gcc"));
  EXPECT_FALSE(fs::exists(rootfs + "/usr/include"));
  EXPECT_FALSE(fs::exists(rootfs + "/bin/sh"));

  // --version inside the image: the commit this build was made from.
  std::string host_version, image_version;
  ASSERT_EQ(Shell(Quote(VolcacheBinary()) + " --version", &host_version), 0);
  ASSERT_EQ(Shell("chroot --userspec=65532:65532 " + Quote(rootfs) + " /usr/bin/volcache --version",
                  &image_version),
            0)
      << image_version;
  EXPECT_EQ(Trim(image_version), Trim(host_version));
  EXPECT_TRUE(std::regex_search(image_version, std::regex(R"(\(commit [0-9a-f]{40}(-dirty)?\))")))
      << image_version;
  EXPECT_EQ(image_cfg["config"]["Labels"]["org.opencontainers.image.revision"],
            std::regex_replace(Trim(image_version), std::regex(R"(.*\(commit ([^)]*)\).*)"), "$1"));

  // The deploy manifests' account: Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding.
  KubeClient c = Admin();
  std::string err;
  std::vector<Json> manifests = DeployManifests(&err);
  ASSERT_TRUE(err.empty()) << err;
  std::string ns, sa;
  for (Json m : manifests) {
    const std::string kind = m["kind"];
    if (kind != "Namespace" && kind != "ServiceAccount" && kind != "ClusterRole" &&
        kind != "ClusterRoleBinding")
      continue;
    if (kind == "ServiceAccount") {
      ns = m["metadata"]["namespace"];
      sa = m["metadata"]["name"];
    }
    m.erase("_file");
    auto a = c.Post(CollectionPath(m), m);
    ASSERT_TRUE(a.status == 201 || a.status == 409) << kind << ": " << a.status << " " << a.body;
  }
  ASSERT_FALSE(sa.empty()) << "no ServiceAccount in deploy/";
  const std::string token = RequestToken(c, ns, sa, &err);
  ASSERT_FALSE(token.empty()) << err;
  // The kubeconfig inside the image's file system (the process sees nothing else), readable by
  // its user.
  fs::create_directories(rootfs + "/home/nonroot/.kube");
  fs::copy_file(server().WriteKubeconfig("image", token), rootfs + "/home/nonroot/.kube/config",
                fs::copy_options::overwrite_existing);
  fs::permissions(rootfs + "/home/nonroot/.kube/config",
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);

  ASSERT_EQ(CreateReadyNode(c, "image-node", {{"kubernetes.io/hostname", "image-node"}}, "8", "16Gi"), "");
  const std::string gang_ns = "image";
  CreateNamespace(c, gang_ns);
  ASSERT_EQ(CreateGang(c, gang_ns, "g", 3, "1", "1Gi", {}), "");

  // serve, through a launcher that enters the image as its user.
  const std::string launcher = base + "/volcache-in-image";
  std::ofstream(launcher) << "#!/bin/sh\nexec chroot --userspec=65532:65532 " << Quote(rootfs)
                          << " /usr/bin/volcache \"$@\"\n";
  fs::permissions(launcher, fs::perms::owner_all);
  ASSERT_EQ(setenv("VOLCACHE_BINARY", launcher.c_str(), 1), 0);
  auto serve = StartServe("image", {"--schedule-period", "500ms", "--leader-elect-resource-namespace", ns},
                          "/home/nonroot/.kube/config");
  unsetenv("VOLCACHE_BINARY");
  ASSERT_TRUE(WaitReady(*serve));
  EXPECT_TRUE(Eventually([&] { return CountBound(c, gang_ns) == 3; }, Seconds(30)))
      << "bound " << CountBound(c, gang_ns) << "/3; log:\n"
      << Tail(serve->Log());
  // It ran as the image's user: the process's uid.
  std::ifstream status("/proc/" + std::to_string(serve->pid()) + "/status");
  std::string line, uid;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) uid = line;
  }
  EXPECT_TRUE(std::regex_search(uid, std::regex(R"(^Uid:\s+65532\s)"))) << uid;
}

}  // namespace
}  // namespace volcache::integration
