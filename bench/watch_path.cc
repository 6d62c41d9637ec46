#include "bench/watch_path.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <thread>

#include "bench/loopback_api_server.h"
#include "cache/runtime.h"
#include "kube/connector.h"
#include "sim/workload.h"
#include "workers/clock.h"

namespace volcache::bench {

namespace {

using json = nlohmann::json;
using Clk = std::chrono::steady_clock;
using Lines = std::vector<std::string>;

constexpr int kGang = 8;
constexpr int kPodsPerNode = 100;

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Templates {
  json added;     // the object of the first ADDED event
  json modified;  // the object of the last MODIFIED event (status with containerStatuses)
  json node;
};

Result<Templates> LoadTemplates() {
  const std::string dir = sim::DataDir() + "/k8s";
  auto watch = ReadFile(dir + "/watch/pod-watch-events-kind-2023.jsonl");
  if (!watch.ok()) return watch.status();
  auto node = ReadFile(dir + "/core/node-minikube-2020-01.json");
  if (!node.ok()) return node.status();
  Templates t;
  std::istringstream in(*watch);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json ev = json::parse(line, nullptr, false);
    if (ev.is_discarded()) return Status::InvalidArgument("watch data: a line is not JSON");
    if (ev["type"] == "ADDED" && t.added.is_null()) t.added = ev["object"];
    if (ev["type"] == "MODIFIED") t.modified = ev["object"];
  }
  t.node = json::parse(*node, nullptr, false);
  if (t.added.is_null() || t.modified.is_null() || t.node.is_discarded()) {
    return Status::InvalidArgument("k8s data: no ADDED/MODIFIED pod or no node");
  }
  return t;
}

// Pod i of the benchmark: the template with its identity varied, ours, in gang i / kGang,
// bound on node i / kPodsPerNode.
std::string RenderPod(const json& tmpl, size_t i, uint64_t rv) {
  json p = tmpl;
  auto& m = p["metadata"];
  m["name"] = fmt::format("train-{}", i);
  m["namespace"] = "bench";
  m["uid"] = fmt::format("7b0c{:08x}-4a47-4d7f-818d-6634df001f15", i);
  m["resourceVersion"] = std::to_string(rv);
  m["annotations"]["scheduling.k8s.io/group-name"] = fmt::format("pg-{}", i / kGang);
  p["spec"]["schedulerName"] = "volcano";
  p["spec"]["nodeName"] = fmt::format("node-{}", i / kPodsPerNode);
  return p.dump();
}

struct Fixture {
  std::shared_ptr<const Lines> nodes, pod_groups, queues;
};

Fixture RenderFixture(const Templates& t, size_t pods) {
  auto nodes = std::make_shared<Lines>();
  for (size_t i = 0; i < (pods + kPodsPerNode - 1) / kPodsPerNode; ++i) {
    json n = t.node;
    n["metadata"]["name"] = fmt::format("node-{}", i);
    n["metadata"]["uid"] = fmt::format("node-uid-{}", i);
    n["metadata"]["labels"]["kubernetes.io/hostname"] = fmt::format("node-{}", i);
    n["status"]["capacity"]["pods"] = "1000";
    n["status"]["allocatable"]["pods"] = "1000";
    nodes->push_back(n.dump());
  }
  auto pgs = std::make_shared<Lines>();
  for (size_t g = 0; g < (pods + kGang - 1) / kGang; ++g) {
    pgs->push_back(fmt::format(
        R"({{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup","metadata":{{"name":"pg-{}","namespace":"bench","uid":"pg-uid-{}","resourceVersion":"5","creationTimestamp":"2023-03-09T06:59:09Z"}},"spec":{{"minMember":{},"queue":"default"}},"status":{{"phase":"Running","running":{}}}}})",
        g, g, kGang, kGang));
  }
  auto queues = std::make_shared<Lines>(Lines{
      R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"default","uid":"q-default","resourceVersion":"3"},"spec":{"weight":1,"reclaimable":true},"status":{"state":"Open"}})",
      R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"root","uid":"q-root","resourceVersion":"2"},"spec":{"weight":1},"status":{"state":"Open"}})"});
  return {nodes, pgs, queues};
}

// One connector + runtime against `server`, as KubeDaemon wires them.
struct Rig {
  std::unique_ptr<kube::Connector> conn;
  std::unique_ptr<CacheRuntime> rt;
  ~Rig() {
    if (rt) rt->Stop();
    if (conn) conn->Stop();
  }
};

// After a run: the cache holds every pod as a task, and nothing was refused or undecodable.
bool CacheHoldsAll(const Rig& rig, size_t want, const char* mode, std::ostream& err) {
  const size_t tasks = rig.rt->cache().num_tasks();
  const auto cs = rig.conn->stats();
  if (tasks == want && cs.cache_errors == 0 && cs.decode_errors == 0) return true;
  err << fmt::format("{}: the cache holds {} tasks of {} ({} cache errors, {} decode errors)\n", mode, tasks,
                     want, cs.cache_errors, cs.decode_errors);
  return false;
}

Result<std::unique_ptr<Rig>> MakeRig(const LoopbackApiServer& server, bool fast_decode) {
  kube::KubeConfig config;
  config.server = server.url();
  auto client = kube::RestClient::Create(config);
  if (!client.ok()) return client.status();
  kube::ConnectorOptions copts;
  copts.create_default_queues = false;  // the server serves them
  copts.reflector.fast_decode = fast_decode;
  auto rig = std::make_unique<Rig>();
  rig->conn = std::make_unique<kube::Connector>(std::move(client).value(), copts);
  kube::Connector& c = *rig->conn;
  rig->rt = std::make_unique<CacheRuntime>(RuntimeOptions{}, RealClock::Instance(), c.source(), c.binder(),
                                           c.evictor(), c.status_updater(), c.event_recorder());
  rig->rt->Run();
  return rig;
}

// CPU seconds this process used so far (all threads: the reflectors, the cache's workers and
// the loopback server). On a machine shared with other work the wall clock mostly measures
// the neighbours; CPU time does not.
double ProcessCpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// CPU seconds each thread of this process has run so far, by thread id
// (/proc/self/task/<tid>/schedstat: nanoseconds on a CPU, first field).
std::map<int, double> ThreadCpuSeconds() {
  std::map<int, double> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(e.path() / "schedstat");
    uint64_t ns = 0;
    if (in >> ns) out[std::atoi(e.path().filename().c_str())] = static_cast<double>(ns) / 1e9;
  }
  return out;
}

// The CPU seconds of the busiest thread between two ThreadCpuSeconds() snapshots (a thread
// started in between counts from zero). For the watch that is the thread reading and
// decoding the stream: the serial part of the path, whose CPU per event bounds the events/s
// on an idle core whatever the neighbours do to the wall clock.
double BusiestThreadSeconds(const std::map<int, double>& before, const std::map<int, double>& after) {
  double best = 0;
  for (const auto& [tid, secs] : after) {
    auto it = before.find(tid);
    best = std::max(best, secs - (it == before.end() ? 0.0 : it->second));
  }
  return best;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void ServeFixture(LoopbackApiServer& server, const Fixture& f) {
  server.SetList("/api/v1/nodes", "NodeList", f.nodes);
  server.SetList("/apis/scheduling.volcano.sh/v1beta1/podgroups", "PodGroupList", f.pod_groups);
  server.SetList("/apis/scheduling.volcano.sh/v1beta1/queues", "QueueList", f.queues);
}

int Events(const BenchOptions& o, const Templates& t, std::ostream& out, std::ostream& err) {
  const size_t n = o.pods > 0 ? static_cast<size_t>(o.pods) : 100000;
  const size_t half = n / 2;
  const Fixture f = RenderFixture(t, half);
  auto lines = std::make_shared<Lines>();
  lines->reserve(2 * half);
  size_t bytes = 0;
  for (size_t i = 0; i < half; ++i)
    lines->push_back(R"({"type":"ADDED","object":)" + RenderPod(t.added, i, 2000 + i) + "}");
  for (size_t i = 0; i < half; ++i) {
    lines->push_back(R"({"type":"MODIFIED","object":)" + RenderPod(t.modified, i, 2000 + half + i) + "}");
  }
  for (const auto& l : *lines) bytes += l.size() + 1;
  std::vector<double> per_s, per_cpu_s, per_thread_cpu_s;
  uint64_t fast_decoded = 0;
  for (int r = 0; r < std::max(1, o.runs); ++r) {
    LoopbackApiServer server;
    ServeFixture(server, f);
    server.SetWatch("/api/v1/pods", lines);
    if (Status s = server.Start(); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    auto rig = MakeRig(server, o.decoder != "dom");
    if (!rig.ok()) {
      err << rig.status().ToString() << "\n";
      return 1;
    }
    (*rig)->conn->Start((*rig)->rt.get());
    if (Status s = (*rig)->rt->WaitForCacheSync(std::chrono::seconds(120)); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    kube::Reflector& pods = (*rig)->conn->reflector(kube::ResourceKind::kPods);
    const uint64_t before = pods.stats().events;
    const double cpu0 = ProcessCpuSeconds();
    const auto threads0 = ThreadCpuSeconds();
    const auto t0 = Clk::now();
    server.ReleaseWatch();
    while (pods.stats().events < before + lines->size()) {
      if (Clk::now() - t0 > std::chrono::seconds(300)) {
        err << "watch: " << pods.stats().events - before << " of " << lines->size()
            << " events after 300 s\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    const double s = std::chrono::duration<double>(Clk::now() - t0).count();
    per_s.push_back(static_cast<double>(lines->size()) / s);
    per_cpu_s.push_back(static_cast<double>(lines->size()) / (ProcessCpuSeconds() - cpu0));
    per_thread_cpu_s.push_back(static_cast<double>(lines->size()) /
                               std::max(1e-9, BusiestThreadSeconds(threads0, ThreadCpuSeconds())));
    fast_decoded = pods.stats().fast_decoded;
    if (!CacheHoldsAll(**rig, half, "watch", err)) return 1;
  }
  nlohmann::ordered_json j;
  j["bench"] = "watch";
  j["mode"] = "events";
  j["decoder"] = o.decoder;
  j["events"] = lines->size();
  j["bytes_per_event"] = bytes / std::max<size_t>(1, lines->size());
  j["fast_decoded"] = fast_decoded;  // of the last run's events, by the streaming decoder
  j["runs"] = per_s.size();
  j["per_s_median"] = Median(per_s);
  j["per_s"] = per_s;
  j["per_cpu_s_median"] = Median(per_cpu_s);  // events per CPU-second of the whole process
  // Events per CPU-second of the busiest thread (the stream's reader and decoder): the
  // events/s that thread could carry on an idle core.
  j["per_busiest_thread_cpu_s_median"] = Median(per_thread_cpu_s);
  out << j.dump() << std::endl;
  return 0;
}

int List(const BenchOptions& o, const Templates& t, std::ostream& out, std::ostream& err) {
  const size_t n = o.pods > 0 ? static_cast<size_t>(o.pods) : 100000;
  const Fixture f = RenderFixture(t, n);
  auto items = std::make_shared<Lines>();
  items->reserve(n);
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    items->push_back(RenderPod(t.added, i, 2000 + i));
    bytes += items->back().size();
  }
  std::vector<double> secs, cpu_secs;
  uint64_t pages = 0, fast_decoded = 0;
  for (int r = 0; r < std::max(1, o.runs); ++r) {
    LoopbackApiServer server;
    ServeFixture(server, f);
    server.SetList("/api/v1/pods", "PodList", items);
    if (Status s = server.Start(); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    auto rig = MakeRig(server, o.decoder != "dom");
    if (!rig.ok()) {
      err << rig.status().ToString() << "\n";
      return 1;
    }
    const double cpu0 = ProcessCpuSeconds();
    const auto t0 = Clk::now();
    (*rig)->conn->Start((*rig)->rt.get());
    if (Status s = (*rig)->conn->WaitForInitialLists(std::chrono::seconds(300)); !s.ok()) {
      err << s.ToString() << "\n";
      return 1;
    }
    secs.push_back(std::chrono::duration<double>(Clk::now() - t0).count());
    cpu_secs.push_back(ProcessCpuSeconds() - cpu0);
    pages = (*rig)->conn->reflector(kube::ResourceKind::kPods).stats().list_pages;
    fast_decoded = (*rig)->conn->reflector(kube::ResourceKind::kPods).stats().fast_decoded;
    if (!CacheHoldsAll(**rig, n, "list", err)) return 1;
  }
  nlohmann::ordered_json j;
  j["bench"] = "watch";
  j["mode"] = "list";
  j["decoder"] = o.decoder;
  j["pods"] = n;
  j["pages"] = pages;
  j["fast_decoded"] = fast_decoded;
  j["bytes_per_pod"] = bytes / std::max<size_t>(1, n);
  j["runs"] = secs.size();
  j["s_median"] = Median(secs);
  j["s"] = secs;
  j["cpu_s_median"] = Median(cpu_secs);  // CPU seconds of the whole process (server included)
  out << j.dump() << std::endl;
  return 0;
}

}  // namespace

int WatchPath(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  auto t = LoadTemplates();
  if (!t.ok()) {
    err << t.status().ToString() << "\n";
    return 1;
  }
  if (o.decoder != "fast" && o.decoder != "dom") {
    err << "--decoder: fast or dom\n";
    return 2;
  }
  // The per-event logs of a failing run would swamp the measurement; errors still show.
  spdlog::set_level(spdlog::level::warn);
  if (o.mode.empty() || o.mode == "events") {
    if (int rc = Events(o, *t, out, err); rc != 0) return rc;
  }
  if (o.mode.empty() || o.mode == "list") {
    if (int rc = List(o, *t, out, err); rc != 0) return rc;
  }
  if (!o.mode.empty() && o.mode != "events" && o.mode != "list") {
    err << "--mode for watch: events | list\n";
    return 2;
  }
  return 0;
}

}  // namespace volcache::bench
