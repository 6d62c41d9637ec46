// The integration suite's harness: a real kube-apiserver (../shared/tools/kube-apiserver) per
// test binary, an HTTPS client as admin (or any bearer token), the real `volcache serve` as a
// child process, and the API server's audit log as the ground truth for Bindings and writes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace volcache::integration {

using Json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

struct HttpAnswer {
  int status = 0;  // 0: no answer (transport error)
  std::string body;
  std::string error;
  Json json() const;
};

// HTTPS to the API server with a bearer token, CA-verified. Not thread-safe: one per thread.
class KubeClient {
 public:
  KubeClient(std::string server, std::string ca_file, std::string token);
  ~KubeClient();
  KubeClient(KubeClient&&) noexcept;
  KubeClient& operator=(KubeClient&&) noexcept;
  HttpAnswer Do(const std::string& method, const std::string& path, const std::string& body = "",
                const std::string& content_type = "application/json");
  HttpAnswer Get(const std::string& path) { return Do("GET", path); }
  HttpAnswer Post(const std::string& path, const Json& body) { return Do("POST", path, body.dump()); }
  HttpAnswer MergePatch(const std::string& path, const Json& body) {
    return Do("PATCH", path, body.dump(), "application/merge-patch+json");
  }
  HttpAnswer Delete(const std::string& path) { return Do("DELETE", path); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What the tests create, as JSON (exactly the fields that matter).
Json NodeJson(const std::string& name, const std::map<std::string, std::string>& labels);
Json NodeStatusJson(const std::string& cpu, const std::string& memory, bool ready, int pods = 110);
Json PodJson(const std::string& ns, const std::string& name, const std::string& group, const std::string& cpu,
             const std::string& memory, const std::map<std::string, std::string>& node_selector,
             const std::string& scheduler = "volcano", const std::string& node_name = "",
             const std::string& priority_class = "");
Json PodGroupJson(const std::string& ns, const std::string& name, int min_member, const std::string& queue);
Json QueueJson(const std::string& name, int weight);
Json PriorityClassJson(const std::string& name, int value);

// One real API server (+ etcd), `up` in a fresh folder under /dev/shm, with an audit log of
// pods/binding creates, PodGroup writes and Event writes.
class KubeApiServer {
 public:
  // Starts a server, or sets *skip ("SKIP: ...") when the tool or etcd is missing, or *error.
  static std::unique_ptr<KubeApiServer> Up(const std::string& extra_args, std::string* skip,
                                           std::string* error);
  ~KubeApiServer();  // down

  const std::string& dir() const { return dir_; }  // the tool's DIR
  const std::string& server() const { return server_; }
  const std::string& ca() const { return ca_; }
  const std::string& token() const { return token_; }
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::string audit_log() const { return base_ + "/audit.log"; }
  std::string base() const { return base_; }
  int port() const;
  KubeClient Admin() const { return KubeClient(server_, ca_, token_); }

  // Stops the kube-apiserver process only (etcd stays) and starts it again with the same
  // command line (same port, same etcd); Start waits until /readyz answers 200.
  bool StopApiserver(std::string* error);
  bool StartApiserver(std::string* error);

  // Writes a kubeconfig for `token` against this server.
  std::string WriteKubeconfig(const std::string& name, const std::string& token) const;

  std::string script;  // kube-apiserver.sh

 private:
  std::string base_, dir_, server_, ca_, token_;
  std::vector<std::string> kas_argv_;
  pid_t kas_pid_ = 0;
};

// The tools folder and the skip rule: "" when the suite can run; else the skip line. In CI
// (CI=true) with the tools folder present a skip is an error: *must_fail is set.
std::string ToolsDir();
std::string CheckTools(bool* must_fail);

// The real `volcache serve` as a child process.
class ServeProcess {
 public:
  // args after `serve`; --listen 127.0.0.1:<free port> is added, and
  // --leader-elect-resource-name volcache-<name> unless an --leader-elect* flag is given.
  // Output to <log_dir>/<name>.log.
  ServeProcess(const std::string& name, const std::string& log_dir, std::vector<std::string> args);
  ~ServeProcess();  // SIGKILL if still running
  pid_t pid() const { return pid_; }
  int admin_port() const { return admin_port_; }
  std::string log_path() const { return log_; }
  std::string Log() const;
  // Number of log lines containing `needle`.
  int CountLog(const std::string& needle) const;
  void Signal(int sig);
  // The exit status (WEXITSTATUS, or 128+signal) within `timeout`, else nullopt.
  std::optional<int> WaitExit(Seconds timeout);
  bool Running();
  std::chrono::steady_clock::time_point started() const { return started_; }
  // GET on the admin server (plain HTTP); status 0 when nothing answers.
  HttpAnswer AdminGet(const std::string& path, Seconds timeout = Seconds(2)) const;

 private:
  pid_t pid_ = -1;
  int admin_port_ = 0;
  std::string log_;
  std::optional<int> exit_;
  std::chrono::steady_clock::time_point started_;
};

int FreePort();
std::string VolcacheBinary();

// Polls `cond` every 50 ms until it holds or `deadline` passes; returns the last value.
bool Eventually(const std::function<bool()>& cond, Seconds deadline);

// The audit log as parsed events (stage ResponseComplete only).
struct AuditEvent {
  std::string verb, resource, subresource, ns, name, user;
  std::string user_agent;  // serve's includes its leader-election identity
  int code = 0;
  double received = 0;   // requestReceivedTimestamp, seconds since the epoch
  double completed = 0;  // stageTimestamp
};
// An RFC 3339 timestamp with fraction ("2026-01-01T00:00:00.123456Z") as seconds since the epoch.
double ParseTimestamp(const std::string& ts);
// Runs fn(client, i) for i in [0, n) on `threads` threads, each with its own admin connection;
// returns the first error text fn returned ("" when all succeeded).
std::string ParallelFor(const KubeApiServer& s, int threads, int n,
                        const std::function<std::string(KubeClient&, int)>& fn);
std::vector<AuditEvent> ReadAudit(const std::string& path);
// Successful (201) pods/binding creates per "ns/name", optionally only in one namespace.
std::map<std::string, int> BindingsPerPod(const std::vector<AuditEvent>& events, const std::string& ns = "");

// A YAML document as the JSON the API server takes: plain scalars that read as integers,
// decimals, true/false or null become those; quoted scalars and everything else stay strings.
Json YamlToJson(const std::string& yaml_text, std::string* error);
// Every document of every deploy/*.yaml manifest, in file-name order (the order of
// `kubectl apply -f deploy/`); "file" is added to each as "_file" for messages.
std::vector<Json> DeployManifests(std::string* error);
// The REST collection path of a manifest: /api/v1[/namespaces/NS]/<kind>s or /apis/<group/version>/...
std::string CollectionPath(const Json& manifest);

// A token for service account `sa` of `ns` through the TokenRequest API (an hour); "" and
// *error set when the server refuses.
std::string RequestToken(KubeClient& c, const std::string& ns, const std::string& sa, std::string* error);

// Pods of a namespace: name -> nodeName ("" when unbound).
std::map<std::string, std::string> PodNodes(KubeClient& c, const std::string& ns);
int CountBound(KubeClient& c, const std::string& ns);
// The value of an unlabelled metric in a Prometheus text exposition; -1 when absent.
double MetricValue(const std::string& metrics, const std::string& name);

// Creates namespace `ns` (ok when it exists).
void CreateNamespace(KubeClient& c, const std::string& ns);
// Creates a Ready node with labels and allocatable; returns "" or an error text.
std::string CreateReadyNode(KubeClient& c, const std::string& name,
                            const std::map<std::string, std::string>& labels, const std::string& cpu,
                            const std::string& memory, int pods = 110);

}  // namespace volcache::integration
