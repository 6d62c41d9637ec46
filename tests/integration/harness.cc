#include "tests/integration/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

namespace volcache::integration {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command; returns its exit status and its output (stdout+stderr).
int RunShell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string v = line.substr(eq + 1);
    if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) v = v.substr(1, v.size() - 2);
    env[line.substr(0, eq)] = v;
  }
  return env;
}

std::vector<std::string> ProcCmdline(pid_t pid) {
  std::string raw = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> argv;
  std::string cur;
  for (char c : raw) {
    if (c == '\0') {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) argv.push_back(cur);
  return argv;
}

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  // A zombie counts as gone.
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto rp = stat.rfind(')');
  return !(rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 2] == 'Z');
}

constexpr const char* kAuditPolicy = R"(apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods/binding"]
- level: Metadata
  verbs: ["create", "update", "patch"]
  resources:
  - group: "scheduling.volcano.sh"
    resources: ["podgroups", "podgroups/status", "queues", "queues/status"]
  - group: ""
    resources: ["events", "pods/status"]
  - group: "events.k8s.io"
    resources: ["events"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
)";

// A cpp-httplib result as the tests read it: status and body, or the transport error.
HttpAnswer ToAnswer(const httplib::Result& r) {
  HttpAnswer a;
  if (!r) {
    a.error = httplib::to_string(r.error());
    return a;
  }
  a.status = r->status;
  a.body = r->body;
  return a;
}

}  // namespace

Json HttpAnswer::json() const {
  Json j = Json::parse(body, nullptr, false);
  return j;
}

// ---------------------------------------------------------------- KubeClient

struct KubeClient::Impl {
  std::unique_ptr<httplib::SSLClient> cli;
};

KubeClient::KubeClient(std::string server, std::string ca_file, std::string token)
    : impl_(std::make_unique<Impl>()) {
  // server: https://HOST:PORT
  std::string rest = server.substr(server.find("://") + 3);
  auto colon = rest.rfind(':');
  std::string host = rest.substr(0, colon);
  int port = std::stoi(rest.substr(colon + 1));
  impl_->cli = std::make_unique<httplib::SSLClient>(host, port);
  impl_->cli->set_ca_cert_path(ca_file.c_str());
  impl_->cli->enable_server_certificate_verification(true);
  impl_->cli->set_bearer_token_auth(token);
  impl_->cli->set_keep_alive(true);
  // httplib writes a request's headers and body as two TLS records: with Nagle's algorithm the
  // body waits for the ACK of the headers, which the server delays (~40 ms) — one request per
  // 40 ms per connection. kube/rest_client does the same for `serve`.
  impl_->cli->set_tcp_nodelay(true);
  impl_->cli->set_connection_timeout(10, 0);
  impl_->cli->set_read_timeout(60, 0);
  impl_->cli->set_write_timeout(30, 0);
  impl_->cli->set_default_headers(
      {{"User-Agent", "volcache-integration-test"}, {"Accept", "application/json"}});
}

KubeClient::~KubeClient() = default;
KubeClient::KubeClient(KubeClient&&) noexcept = default;
KubeClient& KubeClient::operator=(KubeClient&&) noexcept = default;

HttpAnswer KubeClient::Do(const std::string& method, const std::string& path, const std::string& body,
                          const std::string& content_type) {
  httplib::Result r{nullptr, httplib::Error::Unknown};
  auto& c = *impl_->cli;
  if (method == "GET")
    r = c.Get(path);
  else if (method == "POST")
    r = c.Post(path, body, content_type);
  else if (method == "PUT")
    r = c.Put(path, body, content_type);
  else if (method == "PATCH")
    r = c.Patch(path, body, content_type);
  else if (method == "DELETE")
    r = c.Delete(path);
  return ToAnswer(r);
}

// ---------------------------------------------------------------- JSON builders

Json NodeJson(const std::string& name, const std::map<std::string, std::string>& labels) {
  Json l = Json::object();
  for (auto& [k, v] : labels) l[k] = v;
  l["kubernetes.io/hostname"] = name;
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", l}}}};
}

Json NodeStatusJson(const std::string& cpu, const std::string& memory, bool ready, int pods) {
  Json res = {{"cpu", cpu}, {"memory", memory}, {"pods", std::to_string(pods)}};
  return {{"status",
           {{"capacity", res},
            {"allocatable", res},
            {"conditions", Json::array({{{"type", "Ready"},
                                         {"status", ready ? "True" : "False"},
                                         {"reason", ready ? "KubeletReady" : "KubeletNotReady"},
                                         {"message", "integration test"},
                                         {"lastHeartbeatTime", "2026-01-01T00:00:00Z"},
                                         {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}}}};
}

Json PodJson(const std::string& ns, const std::string& name, const std::string& group, const std::string& cpu,
             const std::string& memory, const std::map<std::string, std::string>& node_selector,
             const std::string& scheduler, const std::string& node_name, const std::string& priority_class) {
  Json meta = {{"name", name}, {"namespace", ns}};
  if (!group.empty()) meta["annotations"] = {{"scheduling.k8s.io/group-name", group}};
  Json spec = {
      {"schedulerName", scheduler},
      {"containers", Json::array({{{"name", "main"},
                                   {"image", "registry.k8s.io/pause:3.7"},
                                   {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}}}}})}};
  if (!node_selector.empty()) {
    Json sel = Json::object();
    for (auto& [k, v] : node_selector) sel[k] = v;
    spec["nodeSelector"] = sel;
  }
  if (!node_name.empty()) spec["nodeName"] = node_name;
  if (!priority_class.empty()) spec["priorityClassName"] = priority_class;
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

Json PodGroupJson(const std::string& ns, const std::string& name, int min_member, const std::string& queue) {
  return {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"minMember", min_member}, {"queue", queue}}}};
}

Json QueueJson(const std::string& name, int weight) {
  return {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}}},
          {"spec", {{"weight", weight}, {"reclaimable", true}}}};
}

Json PriorityClassJson(const std::string& name, int value) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", name}}},
          {"value", value}};
}

// ---------------------------------------------------------------- tools / skip

std::string ToolsDir() {
  if (const char* d = std::getenv("VOLCACHE_TOOLS_DIR"); d != nullptr && *d != '\0') return d;
  return std::string(VOLCACHE_SOURCE_DIR) + "/../shared/tools/kube-apiserver";
}

std::string CheckTools(bool* must_fail) {
  const std::string dir = ToolsDir();
  const char* ci = std::getenv("CI");
  *must_fail = ci != nullptr && std::string(ci) == "true" && std::filesystem::is_directory(dir);
  const std::string script = dir + "/kube-apiserver.sh";
  if (access(script.c_str(), X_OK) != 0) return "SKIP: " + script + " not found";
  std::string out;
  int rc = RunShell(ShellQuote(script) + " check", &out);
  if (rc == 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  auto pos = out.find("SKIP:");
  if (pos != std::string::npos) return out.substr(pos);
  return "SKIP: kube-apiserver.sh check failed (exit " + std::to_string(rc) + "): " + out;
}

// ---------------------------------------------------------------- KubeApiServer

std::unique_ptr<KubeApiServer> KubeApiServer::Up(const std::string& extra_args, std::string* skip,
                                                 std::string* error) {
  bool must_fail = false;
  std::string why = CheckTools(&must_fail);
  if (!why.empty()) {
    // The message must not contain the skip marker, or ctest would count the failure as a skip.
    if (must_fail)
      *error = "CI=true and the tools folder exists, yet the suite cannot run: " + why.substr(5);
    else
      *skip = why;
    return nullptr;
  }
  auto s = std::unique_ptr<KubeApiServer>(new KubeApiServer());
  s->script = ToolsDir() + "/kube-apiserver.sh";
  std::string tmpl =
      std::filesystem::is_directory("/dev/shm") ? "/dev/shm/vcint.XXXXXX" : "/tmp/vcint.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  s->base_ = buf.data();
  s->dir_ = s->base_ + "/kas";
  { std::ofstream(s->base_ + "/audit-policy.yaml") << kAuditPolicy; }
  std::string args = "--audit-policy-file=" + s->base_ +
                     "/audit-policy.yaml --audit-log-path=" + s->audit_log() + " --audit-log-maxsize=0 " +
                     extra_args;
  std::string out;
  int rc = RunShell("KUBE_APISERVER_EXTRA_ARGS=" + ShellQuote(args) + " UP_TIMEOUT=${UP_TIMEOUT:-180} " +
                        ShellQuote(s->script) + " up " + ShellQuote(s->dir_),
                    &out);
  if (rc != 0) {
    *error = "kube-apiserver.sh up failed (exit " + std::to_string(rc) + "):\n" + out;
    return nullptr;  // s's destructor runs `down` and removes the folder
  }
  auto env = ReadEnvFile(s->dir_ + "/env");
  s->server_ = env["SERVER"];
  s->ca_ = env["CA"];
  s->token_ = env["TOKEN"];
  std::istringstream pids(ReadFile(s->dir_ + "/pids"));
  std::string name;
  pid_t pid;
  while (pids >> name >> pid) {
    if (name == "kube-apiserver") s->kas_pid_ = pid;
  }
  s->kas_argv_ = ProcCmdline(s->kas_pid_);
  if (s->server_.empty() || s->kas_argv_.empty()) {
    *error = "cannot read " + s->dir_ + "/env or the kube-apiserver command line";
    return nullptr;
  }
  return s;
}

KubeApiServer::~KubeApiServer() {
  if (base_.empty()) return;
  std::string out;
  if (!dir_.empty() && std::filesystem::exists(dir_))
    RunShell(ShellQuote(script) + " down " + ShellQuote(dir_), &out);
  std::error_code ec;
  if (std::getenv("VOLCACHE_KEEP_INTEGRATION_DIR") == nullptr) std::filesystem::remove_all(base_, ec);
}

int KubeApiServer::port() const { return std::stoi(server_.substr(server_.rfind(':') + 1)); }

bool KubeApiServer::StopApiserver(std::string* error) {
  if (kas_pid_ <= 0 || !Alive(kas_pid_)) {
    *error = "kube-apiserver is not running";
    return false;
  }
  // SIGTERM, then SIGKILL after 3 s: kube-apiserver's graceful shutdown waits up to a minute
  // for its watches, and a crash-like stop is the harder case for the client anyway.
  kill(kas_pid_, SIGTERM);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (Alive(kas_pid_) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (Alive(kas_pid_)) kill(kas_pid_, SIGKILL);
  end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Alive(kas_pid_) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Reap it if it was our child (after a restart).
  waitpid(kas_pid_, nullptr, WNOHANG);
  return true;
}

bool KubeApiServer::StartApiserver(std::string* error) {
  int fds[2];
  if (pipe(fds) != 0) {
    *error = "pipe failed";
    return false;
  }
  const std::string log = dir_ + "/logs/kube-apiserver.log";
  pid_t child = fork();
  if (child == 0) {
    setsid();
    pid_t grand = fork();
    if (grand == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      int nul = open("/dev/null", O_RDONLY);
      dup2(nul, 0);
      std::vector<char*> argv;
      for (auto& a : kas_argv_) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    ssize_t w = write(fds[1], &grand, sizeof grand);
    (void)w;
    _exit(0);
  }
  close(fds[1]);
  pid_t grand = -1;
  ssize_t r = read(fds[0], &grand, sizeof grand);
  close(fds[0]);
  waitpid(child, nullptr, 0);
  if (r != sizeof grand || grand <= 0) {
    *error = "fork failed";
    return false;
  }
  kas_pid_ = grand;
  // Keep DIR/pids right for `down`.
  std::string pids = ReadFile(dir_ + "/pids");
  std::istringstream in(pids);
  std::ostringstream outp;
  std::string name;
  pid_t pid;
  while (in >> name >> pid) outp << name << ' ' << (name == "kube-apiserver" ? grand : pid) << '\n';
  std::ofstream(dir_ + "/pids") << outp.str();
  KubeClient c = Admin();
  bool ready = Eventually([&] { return c.Get("/readyz").status == 200; }, Seconds(180));
  if (!ready) *error = "kube-apiserver did not get ready again within 180 s (log " + log + ")";
  return ready;
}

std::string KubeApiServer::WriteKubeconfig(const std::string& name, const std::string& token) const {
  std::string ca_data;
  {
    std::string out;
    RunShell("base64 -w0 " + ShellQuote(ca_), &out);
    ca_data = out;
  }
  std::string path = base_ + "/kubeconfig-" + name;
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: "
                      << server_ << "\n    certificate-authority-data: " << ca_data
                      << "\nusers:\n- name: " << name << "\n  user:\n    token: " << token
                      << "\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: " << name
                      << "\ncurrent-context: test\n";
  return path;
}

// ---------------------------------------------------------------- ServeProcess

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

std::string VolcacheBinary() {
  if (const char* b = std::getenv("VOLCACHE_BINARY"); b != nullptr && *b != '\0') return b;
  return VOLCACHE_BINARY;
}

ServeProcess::ServeProcess(const std::string& name, const std::string& log_dir,
                           std::vector<std::string> args) {
  admin_port_ = FreePort();
  log_ = log_dir + "/" + name + ".log";
  std::vector<std::string> argv = {VolcacheBinary(), "-v", "2", "serve"};  // info level
  // A lease of its own unless the test is about leader election: a process another test
  // killed must not hold this one up for a lease duration.
  bool leader_flags = false;
  for (auto& a : args) {
    argv.push_back(a);
    leader_flags = leader_flags || a.rfind("--leader-elect", 0) == 0;
  }
  if (!leader_flags) {
    argv.push_back("--leader-elect-resource-name");
    argv.push_back("volcache-" + name);
  }
  argv.push_back("--listen");
  argv.push_back("127.0.0.1:" + std::to_string(admin_port_));
  started_ = std::chrono::steady_clock::now();
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0 && !exit_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string ServeProcess::Log() const { return ReadFile(log_); }

int ServeProcess::CountLog(const std::string& needle) const {
  std::istringstream in(Log());
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

void ServeProcess::Signal(int sig) {
  if (pid_ > 0 && !exit_) kill(pid_, sig);
}

std::optional<int> ServeProcess::WaitExit(Seconds timeout) {
  if (exit_) return exit_;
  auto end = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  do {
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      exit_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return exit_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < end);
  return std::nullopt;
}

bool ServeProcess::Running() { return !WaitExit(Seconds(0)).has_value(); }

HttpAnswer ServeProcess::AdminGet(const std::string& path, Seconds timeout) const {
  httplib::Client c("127.0.0.1", admin_port_);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  c.set_connection_timeout(us / 1000000, us % 1000000);
  c.set_read_timeout(us / 1000000 + 5, 0);
  auto r = c.Get(path);
  return ToAnswer(r);
}

// ---------------------------------------------------------------- misc

bool Eventually(const std::function<bool()>& cond, Seconds deadline) {
  auto end = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline);
  while (true) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<AuditEvent> ReadAudit(const std::string& path) {
  std::vector<AuditEvent> out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("stage", "") != "ResponseComplete") continue;
    AuditEvent e;
    e.verb = j.value("verb", "");
    if (j.contains("objectRef")) {
      const Json& o = j["objectRef"];
      e.resource = o.value("resource", "");
      e.subresource = o.value("subresource", "");
      e.ns = o.value("namespace", "");
      e.name = o.value("name", "");
    }
    if (j.contains("responseStatus")) e.code = j["responseStatus"].value("code", 0);
    if (j.contains("user")) e.user = j["user"].value("username", "");
    e.user_agent = j.value("userAgent", "");
    e.received = ParseTimestamp(j.value("requestReceivedTimestamp", ""));
    e.completed = ParseTimestamp(j.value("stageTimestamp", ""));
    out.push_back(std::move(e));
  }
  return out;
}

double ParseTimestamp(const std::string& ts) {
  if (ts.size() < 20) return 0;
  struct tm tm {};
  tm.tm_year = std::stoi(ts.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(ts.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(ts.substr(8, 2));
  tm.tm_hour = std::stoi(ts.substr(11, 2));
  tm.tm_min = std::stoi(ts.substr(14, 2));
  tm.tm_sec = std::stoi(ts.substr(17, 2));
  double frac = 0;
  if (ts.size() > 19 && ts[19] == '.') {
    size_t end = ts.find_first_not_of("0123456789", 20);
    frac = std::stod("0" + ts.substr(19, end - 19));
  }
  return static_cast<double>(timegm(&tm)) + frac;
}

std::string ParallelFor(const KubeApiServer& s, int threads, int n,
                        const std::function<std::string(KubeClient&, int)>& fn) {
  std::atomic<int> next{0};
  std::mutex mu;
  std::string first_error;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      KubeClient c = s.Admin();
      for (int i = next++; i < n; i = next++) {
        std::string e = fn(c, i);
        if (!e.empty()) {
          std::lock_guard<std::mutex> l(mu);
          if (first_error.empty()) first_error = e;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  return first_error;
}

std::map<std::string, int> BindingsPerPod(const std::vector<AuditEvent>& events, const std::string& ns) {
  std::map<std::string, int> m;
  for (const auto& e : events) {
    if (e.resource != "pods" || e.subresource != "binding" || e.verb != "create" || e.code != 201) continue;
    if (!ns.empty() && e.ns != ns) continue;
    ++m[e.ns + "/" + e.name];
  }
  return m;
}

std::map<std::string, std::string> PodNodes(KubeClient& c, const std::string& ns) {
  std::map<std::string, std::string> m;
  auto a = c.Get("/api/v1/namespaces/" + ns + "/pods");
  if (a.status != 200) return m;
  Json j = a.json();
  for (auto& item : j["items"]) {
    m[item["metadata"]["name"].get<std::string>()] = item["spec"].value("nodeName", "");
  }
  return m;
}

int CountBound(KubeClient& c, const std::string& ns) {
  int n = 0;
  for (auto& [name, node] : PodNodes(c, ns)) n += node.empty() ? 0 : 1;
  return n;
}

double MetricValue(const std::string& metrics, const std::string& name) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

void CreateNamespace(KubeClient& c, const std::string& ns) {
  c.Post("/api/v1/namespaces",
         Json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
}

std::string CreateReadyNode(KubeClient& c, const std::string& name,
                            const std::map<std::string, std::string>& labels, const std::string& cpu,
                            const std::string& memory, int pods) {
  auto a = c.Post("/api/v1/nodes", NodeJson(name, labels));
  if (a.status != 201) return "POST node " + name + ": " + std::to_string(a.status) + " " + a.error + a.body;
  a = c.MergePatch("/api/v1/nodes/" + name + "/status", NodeStatusJson(cpu, memory, true, pods));
  if (a.status != 200) return "PATCH node status " + name + ": " + std::to_string(a.status) + " " + a.body;
  return "";
}

}  // namespace volcache::integration

namespace volcache::integration {
namespace {

Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = ToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& e : n) out.push_back(ToJson(e));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string v = n.Scalar();
      if (n.Tag() == "!") return v;  // quoted
      static const std::regex integer(R"(-?[0-9]+)"), decimal(R"(-?[0-9]+\.[0-9]+)");
      if (std::regex_match(v, integer)) return std::stoll(v);
      if (std::regex_match(v, decimal)) return std::stod(v);
      if (v == "true") return true;
      if (v == "false") return false;
      if (v == "null" || v == "~") return nullptr;
      return v;
    }
    default:
      return nullptr;
  }
}

}  // namespace

Json YamlToJson(const std::string& yaml_text, std::string* error) {
  try {
    return ToJson(YAML::Load(yaml_text));
  } catch (const YAML::Exception& e) {
    *error = e.what();
    return nullptr;
  }
}

std::string RequestToken(KubeClient& c, const std::string& ns, const std::string& sa, std::string* error) {
  auto a = c.Post("/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token",
                  Json{{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenRequest"},
                       {"spec", {{"expirationSeconds", 3600}}}});
  if (a.status != 201) {
    *error = "TokenRequest: " + std::to_string(a.status) + a.body;
    return "";
  }
  return a.json()["status"].value("token", "");
}

std::vector<Json> DeployManifests(std::string* error) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(std::string(VOLCACHE_SOURCE_DIR) + "/deploy")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Json> out;
  for (const auto& f : files) {
    try {
      for (const YAML::Node& doc : YAML::LoadAllFromFile(f.string())) {
        if (doc.IsNull()) continue;
        Json j = ToJson(doc);
        j["_file"] = f.filename().string();
        out.push_back(std::move(j));
      }
    } catch (const YAML::Exception& e) {
      *error = f.string() + ": " + e.what();
      return {};
    }
  }
  return out;
}

std::string CollectionPath(const Json& m) {
  const std::string api = m.value("apiVersion", "");
  std::string kind = m.value("kind", "");
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string path = api == "v1" ? "/api/v1" : "/apis/" + api;
  const std::string ns = m.contains("metadata") ? m["metadata"].value("namespace", "") : "";
  if (!ns.empty()) path += "/namespaces/" + ns;
  return path + "/" + kind + "s";
}

}  // namespace volcache::integration
