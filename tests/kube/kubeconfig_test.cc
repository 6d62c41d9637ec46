// Kubeconfig and in-cluster parsing: real kubeconfig shapes (kind/minikube style with inline
// data, file references relative to the file, tokens), errors naming the field.
#include "kube/kubeconfig.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "kube/rest_client.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("volcache-kube-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// The shape `kind get kubeconfig` writes: inline CA and client certificate/key.
constexpr char kKindConfig[] = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0Q2c9PQ==
    server: https://127.0.0.1:40427
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
- context:
    cluster: kind-kind
    namespace: batch
    user: robot
  name: robot
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: robot
  user:
    token: abc.def.ghi
)";

TEST(KubeConfigTest, KindShapeWithInlineData) {
  auto cfg = ParseKubeConfig(kKindConfig, "/home/u/.kube");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:40427");
  EXPECT_EQ(cfg->context, "kind-kind");
  EXPECT_EQ(cfg->namespace_, "default");
  EXPECT_EQ(cfg->ca_pem, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==");  // base64 of base64: decoded once
  EXPECT_EQ(cfg->client_cert_pem, "cert");
  EXPECT_EQ(cfg->client_key_pem, "key");
  EXPECT_TRUE(cfg->token.empty());
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
}

TEST(KubeConfigTest, NamedContextWithTokenAndNamespace) {
  auto cfg = ParseKubeConfig(kKindConfig, "", "robot");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->context, "robot");
  EXPECT_EQ(cfg->namespace_, "batch");
  EXPECT_EQ(cfg->token, "abc.def.ghi");
  EXPECT_TRUE(cfg->client_cert_pem.empty());
}

// The shape minikube writes: file references (relative ones resolve against the file's
// directory), insecure-skip-tls-verify on a second cluster.
TEST(KubeConfigTest, MinikubeShapeWithFilesRelativeToTheConfig) {
  fs::path dir = TempDir("minikube");
  Write(dir / "config", R"(apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: ca.crt
    server: https://192.168.49.2:8443
    insecure-skip-tls-verify: true
  name: minikube
contexts:
- context:
    cluster: minikube
    user: minikube
    namespace: default
  name: minikube
current-context: minikube
users:
- name: minikube
  user:
    client-certificate: /abs/profiles/minikube/client.crt
    client-key: profiles/minikube/client.key
)");
  auto cfg = LoadKubeConfig((dir / "config").string());
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://192.168.49.2:8443");
  EXPECT_EQ(cfg->ca_file, (dir / "ca.crt").string());
  EXPECT_EQ(cfg->client_cert_file, "/abs/profiles/minikube/client.crt");
  EXPECT_EQ(cfg->client_key_file, (dir / "profiles/minikube/client.key").string());
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
  fs::remove_all(dir);
}

TEST(KubeConfigTest, ErrorsNameTheField) {
  struct Case {
    std::string yaml;
    std::string context;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"{", "", "not valid YAML"},
      {"- a\n- b\n", "", "expected a mapping"},
      {"kind: Config\n", "", "current-context: not set"},
      {std::string(kKindConfig), "nope", "no context named \"nope\""},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x, user: u}}]
clusters: [{name: y, cluster: {server: https://a}}]
)",
       "", "no cluster named \"x\""},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x}}]
clusters: [{name: x, cluster: {}}]
)",
       "", "clusters[x].cluster.server: missing required field"},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x}}]
clusters: [{name: x, cluster: {server: "ftp://a"}}]
)",
       "", "is not an http(s) URL"},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x, user: u}}]
clusters: [{name: x, cluster: {server: https://a}}]
users: [{name: u, user: {client-key-data: "!!notbase64"}}]
)",
       "", "users[u].user.client-key-data: invalid base64"},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x, user: u}}]
clusters: [{name: x, cluster: {server: https://a}}]
users: [{name: u, user: {client-certificate-data: Y2VydA==}}]
)",
       "", "needs both a certificate and a key"},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x, user: u}}]
clusters: [{name: x, cluster: {server: https://a}}]
users: [{name: u, user: {exec: {command: aws}}}]
)",
       "", "users[u].user.exec: credential plugins are not supported"},
      {R"(current-context: c
contexts: [{name: c, context: {cluster: x}}]
clusters: [{name: x, cluster: {server: https://a, insecure-skip-tls-verify: maybe}}]
)",
       "", "insecure-skip-tls-verify: expected a boolean"},
  };
  for (const auto& c : cases) {
    auto cfg = ParseKubeConfig(c.yaml, "", c.context, "/tmp/cfg");
    ASSERT_FALSE(cfg.ok()) << c.yaml;
    EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(cfg.status().message().find(c.expect), std::string::npos)
        << cfg.status() << "\nwanted: " << c.expect;
    EXPECT_NE(cfg.status().message().find("/tmp/cfg"), std::string::npos) << cfg.status();
  }
  auto missing = LoadKubeConfig("/nonexistent/kubeconfig");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

TEST(KubeConfigTest, InClusterConfig) {
  fs::path dir = TempDir("incluster");
  Write(dir / "token", "sa-token\n");
  Write(dir / "ca.crt", "-----BEGIN CERTIFICATE-----\n");
  Write(dir / "namespace", "volcano-system");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  g_env = &env;
  InClusterPaths paths;
  paths.token_file = (dir / "token").string();
  paths.ca_file = (dir / "ca.crt").string();
  paths.namespace_file = (dir / "namespace").string();
  paths.getenv = FakeEnv;
  auto cfg = InClusterConfig(paths);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->token_file, paths.token_file);
  EXPECT_EQ(cfg->ca_file, paths.ca_file);
  EXPECT_EQ(cfg->namespace_, "volcano-system");

  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  cfg = InClusterConfig(paths);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->server, "https://[fd00::1]:443");

  paths.token_file = (dir / "missing").string();
  cfg = InClusterConfig(paths);
  EXPECT_EQ(cfg.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cfg.status().message().find("token"), std::string::npos);

  env.clear();
  cfg = InClusterConfig(paths);
  EXPECT_EQ(cfg.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cfg.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  g_env = nullptr;
  fs::remove_all(dir);
}

TEST(KubeConfigTest, Base64RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "hello, world\n\x01\xff"}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(*Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_FALSE(Base64Decode("a").ok());
  EXPECT_FALSE(Base64Decode("ab=c").ok());
}

TEST(KubeConfigTest, RestClientRefusesBadServerAndTlsMaterial) {
  KubeConfig cfg;
  cfg.server = "https://";
  EXPECT_EQ(RestClient::Create(cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.server = "https://host:99999";
  EXPECT_EQ(RestClient::Create(cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.server = "https://host:6443";
  cfg.ca_pem = "not a certificate";
  auto c = RestClient::Create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("certificate authority"), std::string::npos) << c.status();
  cfg.ca_pem.clear();
  cfg.client_cert_file = "/nonexistent/client.crt";
  cfg.client_key_file = "/nonexistent/client.key";
  c = RestClient::Create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/client.crt"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace volcache::kube
