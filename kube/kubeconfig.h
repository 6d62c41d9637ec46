#pragma once
// Where and how to reach a Kubernetes API server: kubeconfig files (the current context, or
// a named one) and the in-cluster service-account configuration.
//
// Credentials are resolved at load time: `*-data` fields are base64-decoded into memory;
// `*-file` paths relative to the kubeconfig's directory are made absolute (and read later by
// the REST client). Nothing here talks to the network.
//
// Errors: InvalidArgument naming the file, the context/cluster/user and the field
// (e.g. `kubeconfig /x/config: users[admin].user.client-key-data: invalid base64`).
// Thread-safety: stateless functions.

#include <string>
#include <string_view>

#include "api/status.h"

namespace volcache::kube {

struct KubeConfig {
  std::string server;      // https://host:port (or http:// for loopback tests)
  std::string context;     // the context used ("" for in-cluster)
  std::string namespace_;  // the context's namespace ("default" when unset)
  // TLS: PEM bytes (decoded *-data) or absolute file paths.
  std::string ca_pem;
  std::string ca_file;
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  // Auth: a bearer token, or a file holding one (re-read by the client when it changes,
  // as projected service-account tokens rotate).
  std::string token;
  std::string token_file;
  std::string username;  // basic auth (rare; kept for completeness)
  std::string password;
};

// Parses kubeconfig YAML. `base_dir` resolves relative file paths; `context` picks a context
// ("" = current-context). `origin` names the file in errors.
Result<KubeConfig> ParseKubeConfig(std::string_view yaml, const std::string& base_dir,
                                   const std::string& context = "", const std::string& origin = "kubeconfig");
// Reads and parses a kubeconfig file.
Result<KubeConfig> LoadKubeConfig(const std::string& path, const std::string& context = "");

// In-cluster configuration. The defaults are the standard locations; tests override them.
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
  // Environment lookups (getenv when null).
  const char* (*getenv)(const char*) = nullptr;
};
// From KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and the service-account files.
// FailedPrecondition when not running in a cluster (variables unset).
Result<KubeConfig> InClusterConfig(const InClusterPaths& paths = {});

// Standard base64 (RFC 4648, padding optional, whitespace ignored).
Result<std::string> Base64Decode(std::string_view in);
std::string Base64Encode(std::string_view in);

}  // namespace volcache::kube
