#include "kube/kubeconfig.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace volcache::kube {

namespace {

int B64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read {}", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Looks up `name` in a kubeconfig list of {name, <inner>} entries.
std::optional<YAML::Node> FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return std::nullopt;
  for (const auto& entry : list) {
    if (!entry.IsMap()) continue;
    auto n = entry["name"];
    if (n && n.IsScalar() && n.Scalar() == name) {
      auto in = entry[inner];
      return in ? in : YAML::Node(YAML::NodeType::Map);
    }
  }
  return std::nullopt;
}

struct Reader {
  const std::string& origin;
  std::string section;  // e.g. users[admin].user
  const YAML::Node& node;

  Status Err(std::string_view field, std::string_view problem) const {
    return Status::InvalidArgument(fmt::format("kubeconfig {}: {}.{}: {}", origin, section, field, problem));
  }
  Result<std::string> Str(const char* field) const {
    auto v = node[field];
    if (!v || v.IsNull()) return std::string();
    if (!v.IsScalar()) return Err(field, "expected a string");
    return v.Scalar();
  }
  Result<bool> Bool(const char* field) const {
    auto v = node[field];
    if (!v || v.IsNull()) return false;
    bool b = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b)) return Err(field, "expected a boolean");
    return b;
  }
  Result<std::string> Data(const char* field) const {
    auto s = Str(field);
    if (!s.ok() || s->empty()) return s;
    auto d = Base64Decode(*s);
    if (!d.ok()) return Err(field, d.status().message());
    return d;
  }
  Result<std::string> Path(const char* field, const std::string& base_dir) const {
    auto s = Str(field);
    if (!s.ok() || s->empty()) return s;
    std::filesystem::path p(*s);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    return p.lexically_normal().string();
  }
};

#define VC_ASSIGN(lhs, expr)                \
  do {                                      \
    auto vc_r_ = (expr);                    \
    if (!vc_r_.ok()) return vc_r_.status(); \
    lhs = std::move(vc_r_).value();         \
  } while (0)

}  // namespace

Result<std::string> Base64Decode(std::string_view in) {
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0)
      return Status::InvalidArgument(fmt::format("invalid base64: data after padding at offset {}", i));
    int v = B64Value(c);
    if (v < 0)
      return Status::InvalidArgument(fmt::format("invalid base64: character {:?} at offset {}", c, i));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (pad > 2 || bits >= 6) return Status::InvalidArgument("invalid base64: truncated input");
  return out;
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<KubeConfig> ParseKubeConfig(std::string_view yaml, const std::string& base_dir,
                                   const std::string& context, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("kubeconfig {}: not valid YAML: {}", origin, e.what()));
  }
  if (!root.IsMap()) return Status::InvalidArgument(fmt::format("kubeconfig {}: expected a mapping", origin));
  try {
    KubeConfig cfg;
    std::string ctx_name = context;
    if (ctx_name.empty()) {
      auto cur = root["current-context"];
      if (cur && cur.IsScalar()) ctx_name = cur.Scalar();
    }
    if (ctx_name.empty()) {
      return Status::InvalidArgument(
          fmt::format("kubeconfig {}: current-context: not set and no context given", origin));
    }
    auto ctx_found = FindNamed(root["contexts"], ctx_name, "context");
    if (!ctx_found)
      return Status::InvalidArgument(
          fmt::format("kubeconfig {}: contexts: no context named \"{}\"", origin, ctx_name));
    const YAML::Node ctx = *ctx_found;
    cfg.context = ctx_name;
    Reader cr{origin, fmt::format("contexts[{}].context", ctx_name), ctx};
    std::string cluster_name, user_name;
    VC_ASSIGN(cluster_name, cr.Str("cluster"));
    VC_ASSIGN(user_name, cr.Str("user"));
    VC_ASSIGN(cfg.namespace_, cr.Str("namespace"));
    if (cfg.namespace_.empty()) cfg.namespace_ = "default";
    if (cluster_name.empty()) return cr.Err("cluster", "missing required field");

    auto cluster_found = FindNamed(root["clusters"], cluster_name, "cluster");
    if (!cluster_found) {
      return Status::InvalidArgument(fmt::format(
          "kubeconfig {}: clusters: no cluster named \"{}\" (context {})", origin, cluster_name, ctx_name));
    }
    const YAML::Node cluster = *cluster_found;
    Reader cl{origin, fmt::format("clusters[{}].cluster", cluster_name), cluster};
    VC_ASSIGN(cfg.server, cl.Str("server"));
    if (cfg.server.empty()) return cl.Err("server", "missing required field");
    if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
      return cl.Err("server", fmt::format("\"{}\" is not an http(s) URL", cfg.server));
    }
    VC_ASSIGN(cfg.ca_pem, cl.Data("certificate-authority-data"));
    VC_ASSIGN(cfg.ca_file, cl.Path("certificate-authority", base_dir));
    VC_ASSIGN(cfg.insecure_skip_tls_verify, cl.Bool("insecure-skip-tls-verify"));
    VC_ASSIGN(cfg.tls_server_name, cl.Str("tls-server-name"));

    if (!user_name.empty()) {
      auto user_found = FindNamed(root["users"], user_name, "user");
      if (!user_found) {
        return Status::InvalidArgument(fmt::format("kubeconfig {}: users: no user named \"{}\" (context {})",
                                                   origin, user_name, ctx_name));
      }
      const YAML::Node user = *user_found;
      Reader ur{origin, fmt::format("users[{}].user", user_name), user};
      VC_ASSIGN(cfg.client_cert_pem, ur.Data("client-certificate-data"));
      VC_ASSIGN(cfg.client_cert_file, ur.Path("client-certificate", base_dir));
      VC_ASSIGN(cfg.client_key_pem, ur.Data("client-key-data"));
      VC_ASSIGN(cfg.client_key_file, ur.Path("client-key", base_dir));
      VC_ASSIGN(cfg.token, ur.Str("token"));
      VC_ASSIGN(cfg.token_file, ur.Path("tokenFile", base_dir));
      VC_ASSIGN(cfg.username, ur.Str("username"));
      VC_ASSIGN(cfg.password, ur.Str("password"));
      const bool has_cert = !cfg.client_cert_pem.empty() || !cfg.client_cert_file.empty();
      const bool has_key = !cfg.client_key_pem.empty() || !cfg.client_key_file.empty();
      if (has_cert != has_key) {
        return ur.Err(has_cert ? "client-key" : "client-certificate",
                      "a client certificate needs both a certificate and a key");
      }
      const bool has_auth =
          has_cert || !cfg.token.empty() || !cfg.token_file.empty() || !cfg.username.empty();
      if (!has_auth && (user["exec"] || user["auth-provider"])) {
        return ur.Err(user["exec"] ? "exec" : "auth-provider",
                      "credential plugins are not supported; use a token or a client certificate");
      }
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("kubeconfig {}: {}", origin, e.what()));
  }
}

Result<KubeConfig> LoadKubeConfig(const std::string& path, const std::string& context) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Status::NotFound(fmt::format("kubeconfig {}: cannot read the file", path));
  std::string dir = std::filesystem::absolute(std::filesystem::path(path)).parent_path().string();
  return ParseKubeConfig(*text, dir, context, path);
}

Result<KubeConfig> InClusterConfig(const InClusterPaths& paths) {
  auto env = [&](const char* name) -> std::string {
    const char* v = paths.getenv ? paths.getenv(name) : std::getenv(name);
    return v ? v : "";
  };
  const std::string host = env("KUBERNETES_SERVICE_HOST");
  const std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return Status::FailedPrecondition(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not running in "
        "a pod?)");
  }
  KubeConfig cfg;
  // IPv6 service addresses need brackets.
  cfg.server = host.find(':') != std::string::npos ? fmt::format("https://[{}]:{}", host, port)
                                                   : fmt::format("https://{}:{}", host, port);
  auto token = ReadWholeFile(paths.token_file);
  if (!token.ok()) {
    return Status::FailedPrecondition(
        fmt::format("in-cluster config: service-account token {}: cannot read the file", paths.token_file));
  }
  if (!std::filesystem::exists(paths.ca_file)) {
    return Status::FailedPrecondition(
        fmt::format("in-cluster config: service-account CA {}: cannot read the file", paths.ca_file));
  }
  cfg.token_file = paths.token_file;
  cfg.ca_file = paths.ca_file;
  auto ns = ReadWholeFile(paths.namespace_file);
  cfg.namespace_ = ns.ok() && !ns->empty() ? *ns : "default";
  while (!cfg.namespace_.empty() && (cfg.namespace_.back() == '\n' || cfg.namespace_.back() == ' ')) {
    cfg.namespace_.pop_back();
  }
  return cfg;
}

}  // namespace volcache::kube
