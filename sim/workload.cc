#include "sim/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "api/duration.h"
#include "api/k8s/compact.h"
#include "api/k8s/decode.h"
#include "api/quantity.h"

namespace volcache::sim {

namespace {

constexpr const char* kNamespace = "sim";
constexpr const char* kGroupAnnotation = "scheduling.k8s.io/group-name";
constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGiB = 1024 * kMiB;

Quantity Int(int64_t v) { return Quantity::FromMilli(v * 1000); }

k8s::NodePtr MakeNode(const std::string& name, int64_t cpu_milli, int64_t memory_bytes, int64_t gpus,
                      const std::string& model) {
  auto n = std::make_shared<k8s::Node>();
  n->metadata.name = name;
  n->metadata.uid = "sim-node-" + name;
  n->metadata.resource_version = "1";
  n->metadata.labels["kubernetes.io/hostname"] = name;
  if (!model.empty()) n->metadata.labels["nvidia.com/gpu.product"] = model;
  k8s::ResourceList r{
      {"cpu", Quantity::FromMilli(cpu_milli)}, {"memory", Int(memory_bytes)}, {"pods", Int(110)}};
  if (gpus > 0) r.emplace_back("nvidia.com/gpu", Int(gpus));
  n->status.capacity = r;
  n->status.allocatable = r;
  n->status.conditions.push_back({"Ready", "True", "KubeletReady", "kubelet is posting ready status"});
  k8s::Compact(n.get());  // as the decoders do: alike nodes share their lists
  return n;
}

std::shared_ptr<const k8s::Queue> MakeQueue(const std::string& name, int32_t weight,
                                            k8s::ResourceList capability) {
  auto q = std::make_shared<k8s::Queue>();
  q->metadata.name = name;
  q->metadata.uid = "sim-queue-" + name;
  q->metadata.resource_version = "1";
  q->spec.weight = weight;
  q->spec.capability = std::move(capability);
  q->status.state = "Open";
  return q;
}

// One gang: a PodGroup and `tasks` pods splitting the request evenly.
SimJob MakeJob(const std::string& name, const std::string& queue, int tasks, int64_t cpu_milli_each,
               int64_t memory_each, int64_t gpu_milli_each, const TraceOptions& o) {
  SimJob job;
  auto pg = std::make_shared<k8s::PodGroup>();
  pg->metadata.name = name;
  pg->metadata.namespace_ = kNamespace;
  pg->metadata.uid = "sim-pg-" + name;
  pg->metadata.resource_version = "1";
  pg->spec.min_member = tasks;
  pg->spec.queue = queue;
  pg->status.phase = "Pending";
  job.pod_group = pg;
  for (int i = 0; i < tasks; ++i) {
    auto p = std::make_shared<k8s::Pod>();
    p->metadata.name = tasks == 1 ? name : fmt::format("{}-{}", name, i);
    p->metadata.namespace_ = kNamespace;
    p->metadata.uid = "sim-pod-" + p->metadata.name;
    p->metadata.resource_version = "1";
    p->metadata.annotations[kGroupAnnotation] = name;
    p->spec.scheduler_name = o.scheduler_name;
    k8s::Container c;
    c.name = "main";
    c.image = "sim";
    c.requests = {{"cpu", Quantity::FromMilli(cpu_milli_each)}, {"memory", Int(memory_each)}};
    if (gpu_milli_each > 0) c.requests.emplace_back("nvidia.com/gpu", Quantity::FromMilli(gpu_milli_each));
    c.limits = c.requests;
    p->spec.containers.push_back(std::move(c));
    p->status.phase = "Pending";
    k8s::Compact(p.get());  // as the decoders do: the job's pods share their containers
    job.pods.push_back(std::move(p));
  }
  job.gpus_milli = gpu_milli_each * tasks;
  return job;
}

Duration Scaled(double seconds, double scale) {
  double s = scale > 0 ? seconds / scale : seconds;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::max(0.0, s)));
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Reads a CSV with a header; calls row(line_number, cells) for every non-empty line.
Status ReadCsv(const std::string& path, size_t columns,
               const std::function<Status(size_t, const std::vector<std::string>&)>& row) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot open " + path);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1 || line.empty()) continue;
    auto cells = SplitCsv(line);
    if (cells.size() < columns) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: {} columns, want {}", path, n, cells.size(), columns));
    }
    VC_RETURN_IF_ERROR(row(n, cells));
  }
  return Status::Ok();
}

Result<double> Number(const std::string& path, size_t line, const char* column, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    return Status::InvalidArgument(
        fmt::format("{}:{}: column {}: \"{}\" is not a number", path, line, column, text));
  }
  return v;
}

void SortAndSlice(SimWorkload& w, const TraceOptions& o) {
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.submit < b.submit; });
  w.total_jobs = w.jobs.size();
  size_t first = std::min(o.skip, w.jobs.size());
  size_t last = std::min(w.jobs.size(), first + o.max_jobs);
  std::vector<SimJob> slice(std::make_move_iterator(w.jobs.begin() + static_cast<std::ptrdiff_t>(first)),
                            std::make_move_iterator(w.jobs.begin() + static_cast<std::ptrdiff_t>(last)));
  // The slice starts at time 0.
  if (!slice.empty()) {
    Duration t0 = slice.front().submit;
    for (auto& j : slice) j.submit -= t0;
  }
  w.jobs = std::move(slice);
}

// The API server's validation refuses negative quantities in requests, limits, overhead,
// capacity and allocatable; a manifest for the simulator gets the same answer, naming the
// object and field.
Status CheckNotNegative(const k8s::ResourceList& list, const std::string& where) {
  for (const auto& [name, q] : list) {
    if (q.negative()) {
      return Status::InvalidArgument(
          fmt::format("{}[{}]: negative quantity {} (must be >= 0)", where, name, q.ToDecimalString()));
    }
  }
  return Status::Ok();
}

Status CheckQuantities(const k8s::Object& obj, const std::string& path) {
  std::vector<std::pair<const k8s::ResourceList*, std::string>> fields;
  if (const auto* p = std::get_if<k8s::Pod>(&obj)) {
    const std::string who = fmt::format("{}: Pod {}: spec.", path, k8s::ObjectKey(p->metadata));
    for (const char* kind : {"containers", "initContainers"}) {
      const auto& list =
          std::string_view(kind) == "containers" ? p->spec.containers : p->spec.init_containers;
      for (size_t i = 0; i < list.size(); ++i) {
        fields.emplace_back(&list[i].requests, fmt::format("{}{}[{}].resources.requests", who, kind, i));
        fields.emplace_back(&list[i].limits, fmt::format("{}{}[{}].resources.limits", who, kind, i));
      }
    }
    fields.emplace_back(&p->spec.overhead(), who + "overhead");
  } else if (const auto* n = std::get_if<k8s::Node>(&obj)) {
    const std::string who = fmt::format("{}: Node {}: status.", path, k8s::ObjectKey(n->metadata));
    fields.emplace_back(&n->status.capacity.get(), who + "capacity");
    fields.emplace_back(&n->status.allocatable.get(), who + "allocatable");
  } else if (const auto* q = std::get_if<k8s::Queue>(&obj)) {
    const std::string who = fmt::format("{}: Queue {}: spec.", path, k8s::ObjectKey(q->metadata));
    fields.emplace_back(&q->spec.capability, who + "capability");
    fields.emplace_back(&q->spec.deserved, who + "deserved");
    fields.emplace_back(&q->spec.guarantee, who + "guarantee.resource");
  } else if (const auto* pg = std::get_if<k8s::PodGroup>(&obj)) {
    fields.emplace_back(&pg->spec.min_resources(), fmt::format("{}: PodGroup {}: spec.minResources", path,
                                                               k8s::ObjectKey(pg->metadata)));
  }
  for (const auto& [list, where] : fields) {
    if (Status s = CheckNotNegative(*list, where); !s.ok()) return s;
  }
  return Status::Ok();
}

// What the API server would have set on a manifest's object: a uid and a resourceVersion.
void DefaultMeta(k8s::ObjectMeta* meta, const std::string& uid_prefix) {
  if (meta->uid.empty()) meta->uid = uid_prefix + meta->name;
  if (meta->resource_version.empty()) meta->resource_version = "1";
}

}  // namespace

std::string DataDir() {
  if (const char* env = std::getenv("VOLCACHE_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return VOLCACHE_DEFAULT_DATA_DIR;
}

Result<SimWorkload> LoadPhillyTrace(const std::string& dir, const TraceOptions& o) {
  SimWorkload w;
  w.name = "philly";
  const std::string vc_path = dir + "/philly-pollux-derived/philly_vc_nodes.csv";
  std::map<std::string, int> vc_nodes;
  VC_RETURN_IF_ERROR(ReadCsv(vc_path, 2, [&](size_t line, const std::vector<std::string>& c) -> Status {
    auto n = Number(vc_path, line, "node num", c[1]);
    if (!n.ok()) return n.status();
    vc_nodes[c[0]] = static_cast<int>(*n);
    return Status::Ok();
  }));
  int node_index = 0;
  for (auto& [vc, count] : vc_nodes) {
    count = std::max(1, static_cast<int>(std::ceil(count * std::max(0.0, o.cluster_scale))));
  }
  for (const auto& [vc, nodes] : vc_nodes) {
    for (int i = 0; i < nodes; ++i) {
      w.nodes.push_back(MakeNode(fmt::format("philly-{:04d}", node_index++), 96000, 768 * kGiB, 8, "philly"));
    }
    // Shared pool: the weight stays the VC's size, the capability goes (only fairness limits it).
    k8s::ResourceList capability;
    if (!o.shared_pool) capability = {{"nvidia.com/gpu", Int(int64_t{nodes} * 8)}};
    w.queues.push_back(MakeQueue("vc-" + vc, nodes, std::move(capability)));
  }
  const std::string jobs_path = dir + "/philly-pollux-derived/philly_jobs.csv";
  int64_t t_min = INT64_MAX;
  std::vector<std::pair<int64_t, SimJob>> jobs;
  size_t index = 0;
  VC_RETURN_IF_ERROR(ReadCsv(jobs_path, 5, [&](size_t line, const std::vector<std::string>& c) -> Status {
    std::string ts = c[0];
    std::replace(ts.begin(), ts.end(), ' ', 'T');
    auto t = k8s::ParseTimestamp(ts + "Z");
    if (!t.ok())
      return Status::InvalidArgument(
          fmt::format("{}:{}: column timestamp: {}", jobs_path, line, t.status().message()));
    auto duration = Number(jobs_path, line, "duration", c[1]);
    if (!duration.ok()) return duration.status();
    auto gpus = Number(jobs_path, line, "num_gpus", c[2]);
    if (!gpus.ok()) return gpus.status();
    if (*gpus < 1)
      return Status::InvalidArgument(fmt::format("{}:{}: column num_gpus: {} < 1", jobs_path, line, c[2]));
    const int64_t total_gpu = static_cast<int64_t>(*gpus);
    const int tasks = static_cast<int>((total_gpu + 7) / 8);
    const int64_t gpu_milli_each = total_gpu * 1000 / tasks;
    const std::string queue = vc_nodes.count(c[4]) ? "vc-" + c[4] : "default";
    SimJob job = MakeJob(fmt::format("philly-{:05d}", index++), queue, tasks, gpu_milli_each * 4,
                         16 * kGiB * gpu_milli_each / 1000, gpu_milli_each, o);
    job.run_time = Scaled(*duration, o.time_scale);
    t_min = std::min(t_min, *t);
    jobs.emplace_back(*t, std::move(job));
    return Status::Ok();
  }));
  for (auto& [t, job] : jobs) {
    job.submit =
        Scaled(static_cast<double>(t - t_min) / 1000.0, o.time_scale * std::max(1e-9, o.arrival_scale));
    w.jobs.push_back(std::move(job));
  }
  SortAndSlice(w, o);
  return w;
}

Result<SimWorkload> LoadAlibabaTrace(const std::string& dir, const TraceOptions& o) {
  SimWorkload w;
  w.name = "alibaba";
  const std::string nodes_path = dir + "/alibaba-openb-gpu-v2023/openb_node_list_all_node.csv";
  VC_RETURN_IF_ERROR(ReadCsv(nodes_path, 4, [&](size_t line, const std::vector<std::string>& c) -> Status {
    auto cpu = Number(nodes_path, line, "cpu_milli", c[1]);
    if (!cpu.ok()) return cpu.status();
    auto mem = Number(nodes_path, line, "memory_mib", c[2]);
    if (!mem.ok()) return mem.status();
    auto gpu = Number(nodes_path, line, "gpu", c[3]);
    if (!gpu.ok()) return gpu.status();
    w.nodes.push_back(MakeNode(c[0], static_cast<int64_t>(*cpu), static_cast<int64_t>(*mem) * kMiB,
                               static_cast<int64_t>(*gpu), c.size() > 4 ? c[4] : ""));
    return Status::Ok();
  }));
  const std::string pods_path = dir + "/alibaba-openb-gpu-v2023/openb_pod_list_default.csv";
  VC_RETURN_IF_ERROR(ReadCsv(pods_path, 10, [&](size_t line, const std::vector<std::string>& c) -> Status {
    double v[6];
    const char* names[] = {"cpu_milli", "memory_mib",    "num_gpu",
                           "gpu_milli", "creation_time", "deletion_time"};
    const size_t cols[] = {1, 2, 3, 4, 8, 9};
    for (int i = 0; i < 6; ++i) {
      auto x = Number(pods_path, line, names[i], c[cols[i]]);
      if (!x.ok()) return x.status();
      v[i] = *x;
    }
    double start = v[4];
    if (c.size() > 10 && !c[10].empty()) {
      auto s = Number(pods_path, line, "scheduled_time", c[10]);
      if (!s.ok()) return s.status();
      start = *s;
    }
    const int64_t gpu_milli =
        v[2] <= 0 ? 0 : (v[2] == 1 ? static_cast<int64_t>(v[3]) : static_cast<int64_t>(v[2]) * 1000);
    SimJob job = MakeJob(c[0], "default", 1, static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]) * kMiB,
                         gpu_milli, o);
    job.submit = Scaled(v[4], o.time_scale * std::max(1e-9, o.arrival_scale));
    job.run_time = Scaled(std::max(1.0, v[5] - start), o.time_scale);
    w.jobs.push_back(std::move(job));
    return Status::Ok();
  }));
  w.queues.push_back(MakeQueue("default", 1, {}));
  SortAndSlice(w, o);
  return w;
}

Result<SimWorkload> LoadManifests(const std::string& path, const TraceOptions& o) {
  auto objects = k8s::DecodeFile(path);
  if (!objects.ok()) return objects.status().WithPrefix(path);
  SimWorkload w;
  w.name = path;
  std::map<std::string, SimJob> jobs;  // ns/name of the PodGroup
  std::vector<k8s::Pod> pods;
  for (auto& obj : *objects) {
    if (Status s = CheckQuantities(obj, path); !s.ok()) return s;
    if (auto* n = std::get_if<k8s::Node>(&obj)) {
      w.nodes.push_back(std::make_shared<const k8s::Node>(std::move(*n)));
    } else if (auto* q = std::get_if<k8s::Queue>(&obj)) {
      w.queues.push_back(std::make_shared<const k8s::Queue>(std::move(*q)));
    } else if (auto* pc = std::get_if<k8s::PriorityClass>(&obj)) {
      w.priority_classes.push_back(std::make_shared<const k8s::PriorityClass>(std::move(*pc)));
    } else if (auto* pg = std::get_if<k8s::PodGroup>(&obj)) {
      SimJob job;
      const std::string key = pg->metadata.namespace_ + "/" + pg->metadata.name;
      auto annotation = [&](const char* name, const char* fallback) -> Result<Duration> {
        auto it = pg->metadata.annotations.find(name);
        auto d = ParseDuration(it == pg->metadata.annotations.end() ? fallback : it->second);
        if (!d.ok())
          return d.status().WithPrefix(
              fmt::format("{}: PodGroup {} metadata.annotations[{}]", path, key, name));
        return d;
      };
      auto submit = annotation("volcache.io/sim-submit", "0s");
      if (!submit.ok()) return submit.status();
      auto run = annotation("volcache.io/sim-duration", "60s");
      if (!run.ok()) return run.status();
      job.submit = *submit;
      job.run_time = *run;
      if (pg->metadata.uid.empty()) pg->metadata.uid = "sim-pg-" + pg->metadata.name;
      if (pg->metadata.resource_version.empty()) pg->metadata.resource_version = "1";
      job.pod_group = std::make_shared<const k8s::PodGroup>(std::move(*pg));
      jobs[key] = std::move(job);
    } else if (auto* hn = std::get_if<k8s::HyperNode>(&obj)) {
      if (hn->metadata.uid.empty()) hn->metadata.uid = "sim-hypernode-" + hn->metadata.name;
      if (hn->metadata.resource_version.empty()) hn->metadata.resource_version = "1";
      w.hypernodes.push_back(std::make_shared<const k8s::HyperNode>(std::move(*hn)));
    } else if (auto* sc = std::get_if<k8s::StorageClass>(&obj)) {
      DefaultMeta(&sc->metadata, "sim-storageclass-");
      w.storage_classes.push_back(std::make_shared<const k8s::StorageClass>(std::move(*sc)));
    } else if (auto* pv = std::get_if<k8s::PersistentVolume>(&obj)) {
      DefaultMeta(&pv->metadata, "sim-pv-");
      w.persistent_volumes.push_back(std::make_shared<const k8s::PersistentVolume>(std::move(*pv)));
    } else if (auto* pvc = std::get_if<k8s::PersistentVolumeClaim>(&obj)) {
      if (pvc->metadata.namespace_.empty()) pvc->metadata.namespace_ = "default";
      DefaultMeta(&pvc->metadata, "sim-pvc-" + pvc->metadata.namespace_ + "-");
      w.persistent_volume_claims.push_back(
          std::make_shared<const k8s::PersistentVolumeClaim>(std::move(*pvc)));
    } else if (auto* p = std::get_if<k8s::Pod>(&obj)) {
      pods.push_back(std::move(*p));
    } else {
      return Status::InvalidArgument(
          fmt::format("{}: {} is not something the simulator runs", path, k8s::KindOf(obj)));
    }
  }
  for (auto& p : pods) {
    if (p.metadata.namespace_.empty()) p.metadata.namespace_ = "default";
    if (p.metadata.uid.empty()) p.metadata.uid = "sim-pod-" + p.metadata.namespace_ + "-" + p.metadata.name;
    if (p.metadata.resource_version.empty()) p.metadata.resource_version = "1";
    // The decoder already defaults an unset schedulerName to "default-scheduler", as the API
    // server does; such a pod would wait forever in the simulated cluster, so say so.
    if (p.spec.node_name.empty() && p.spec.scheduler_name != o.scheduler_name) {
      return Status::InvalidArgument(fmt::format(
          "{}: Pod {}/{}: spec.schedulerName is \"{}\"{}, but the simulated cluster runs only scheduler "
          "\"{}\": "
          "set spec.schedulerName: {} (or bind the pod with spec.nodeName)",
          path, p.metadata.namespace_, p.metadata.name, p.spec.scheduler_name,
          p.spec.scheduler_name == "default-scheduler" ? " (the API server's default when it is not set)"
                                                       : "",
          o.scheduler_name, o.scheduler_name));
    }
    if (p.status.phase.empty()) p.status.phase = "Pending";
    auto g = p.metadata.annotations.find(kGroupAnnotation);
    if (g == p.metadata.annotations.end()) {
      // A bare pod: its own gang of one, arriving at 0 and running the default 60 s.
      auto pg = std::make_shared<k8s::PodGroup>();
      pg->metadata.name = p.metadata.name;
      pg->metadata.namespace_ = p.metadata.namespace_;
      pg->metadata.uid = "sim-pg-" + p.metadata.namespace_ + "-" + p.metadata.name;
      pg->metadata.resource_version = "1";
      pg->spec.min_member = 1;
      SimJob job;
      job.pod_group = pg;
      job.run_time = std::chrono::seconds(60);
      p.metadata.annotations[kGroupAnnotation] = p.metadata.name;
      jobs[p.metadata.namespace_ + "/" + p.metadata.name] = std::move(job);
      g = p.metadata.annotations.find(kGroupAnnotation);
    }
    const std::string key = p.metadata.namespace_ + "/" + g->second;
    auto it = jobs.find(key);
    if (it == jobs.end()) {
      return Status::InvalidArgument(
          fmt::format("{}: Pod {}/{}: metadata.annotations[{}]: no PodGroup {} in the file", path,
                      p.metadata.namespace_, p.metadata.name, kGroupAnnotation, key));
    }
    k8s::Compact(&p);
    it->second.pods.push_back(std::make_shared<const k8s::Pod>(std::move(p)));
  }
  for (auto& [key, job] : jobs) w.jobs.push_back(std::move(job));
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.submit < b.submit; });
  return w;
}

Result<TopologyOptions> ParseTopology(const std::string& spec) {
  TopologyOptions t;
  bool racks = false, spines = false;
  std::stringstream in(spec);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto colon = part.find(':');
    const std::string key = part.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : part.substr(colon + 1);
    bool* seen = key == "racks" ? &racks : key == "spines" ? &spines : nullptr;
    if (seen == nullptr || *seen) {
      return Status::InvalidArgument(
          fmt::format("topology \"{}\": \"{}\" is not racks:N or spines:M (each at most once)", spec, part));
    }
    *seen = true;
    char* end = nullptr;
    const long n = value.empty() ? 0 : std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 1 || n > 1000000) {
      return Status::InvalidArgument(
          fmt::format("topology \"{}\": {}: \"{}\" is not a whole number >= 1", spec, key, value));
    }
    (key == "racks" ? t.rack_nodes : t.spine_racks) = static_cast<int>(n);
  }
  if (!racks) return Status::InvalidArgument(fmt::format("topology \"{}\": racks:N is required", spec));
  return t;
}

Status AddTopology(const TopologyOptions& t, SimWorkload* w) {
  if (t.rack_nodes < 1) return Status::Ok();
  if (!w->hypernodes.empty()) {
    return Status::InvalidArgument(
        fmt::format("topology: workload {} already has {} HyperNodes; use either them or racks:N", w->name,
                    w->hypernodes.size()));
  }
  if (t.mode != "hard" && t.mode != "soft" && t.mode != "none") {
    return Status::InvalidArgument(fmt::format("topology mode \"{}\": want hard, soft or none", t.mode));
  }
  if (t.highest_tier < 1) {
    return Status::InvalidArgument(fmt::format("topology highest tier {}: want >= 1", t.highest_tier));
  }
  std::vector<std::string> names;
  names.reserve(w->nodes.size());
  for (const auto& n : w->nodes) names.push_back(n->metadata.name);
  std::sort(names.begin(), names.end());
  auto make = [](std::string name, int32_t tier, std::string tier_name, k8s::HyperNodeMember::Type type,
                 const std::vector<std::string>& members) {
    auto hn = std::make_shared<k8s::HyperNode>();
    hn->metadata.name = std::move(name);
    hn->metadata.uid = "sim-hypernode-" + hn->metadata.name;
    hn->metadata.resource_version = "1";
    hn->spec.tier = tier;
    hn->spec.tier_name = std::move(tier_name);
    for (const auto& m : members) {
      k8s::HyperNodeMember member;
      member.type = type;
      member.selector = k8s::HyperNodeMember::Selector::kExact;
      member.name_or_pattern = m;
      hn->spec.members.push_back(std::move(member));
    }
    return k8s::HyperNodePtr(std::move(hn));
  };
  std::vector<std::string> racks;
  for (size_t i = 0; i < names.size(); i += static_cast<size_t>(t.rack_nodes)) {
    const auto last = std::min(names.size(), i + static_cast<size_t>(t.rack_nodes));
    racks.push_back(fmt::format("rack-{}", racks.size()));
    w->hypernodes.push_back(make(
        racks.back(), 1, "rack", k8s::HyperNodeMember::Type::kNode,
        {names.begin() + static_cast<std::ptrdiff_t>(i), names.begin() + static_cast<std::ptrdiff_t>(last)}));
  }
  if (t.spine_racks > 0) {
    for (size_t i = 0, k = 0; i < racks.size(); i += static_cast<size_t>(t.spine_racks), ++k) {
      const auto last = std::min(racks.size(), i + static_cast<size_t>(t.spine_racks));
      w->hypernodes.push_back(make(fmt::format("spine-{}", k), 2, "spine",
                                   k8s::HyperNodeMember::Type::kHyperNode,
                                   {racks.begin() + static_cast<std::ptrdiff_t>(i),
                                    racks.begin() + static_cast<std::ptrdiff_t>(last)}));
    }
  }
  if (t.mode == "none") return Status::Ok();
  for (SimJob& job : w->jobs) {
    if (job.pod_group->spec.min_member <= 1 || job.pod_group->spec.network_topology()) continue;
    auto pg = std::make_shared<k8s::PodGroup>(*job.pod_group);
    k8s::NetworkTopologySpec nt;
    nt.mode = t.mode;
    nt.highest_tier_allowed = t.highest_tier;
    pg->spec.mutable_rare().network_topology = nt;
    job.pod_group = std::move(pg);
  }
  return Status::Ok();
}

std::optional<TraceSlice> DefaultTraceSlice(std::string_view workload) {
  if (workload == "trace:philly") return TraceSlice{20000, 1000};
  if (workload == "trace:alibaba") return TraceSlice{4000, 1000};
  return std::nullopt;
}

Result<SimWorkload> LoadWorkload(const std::string& spec, const TraceOptions& o) {
  Result<SimWorkload> w = SimWorkload{};
  if (spec == "trace:philly") {
    w = LoadPhillyTrace(DataDir() + "/traces", o);
  } else if (spec == "trace:alibaba") {
    w = LoadAlibabaTrace(DataDir() + "/traces", o);
  } else if (spec.rfind("trace:", 0) == 0) {
    return Status::InvalidArgument("workload \"" + spec +
                                   "\": known traces are trace:philly and trace:alibaba");
  } else {
    w = LoadManifests(spec, o);
  }
  if (!w.ok()) return w;
  if (w->jobs.empty()) {
    if (spec.rfind("trace:", 0) == 0) {
      return Status::InvalidArgument(
          fmt::format("workload {}: --skip {} --jobs {} selects no jobs: the trace has {} jobs; lower --skip",
                      spec, o.skip, o.max_jobs, w->total_jobs));
    }
    return Status::InvalidArgument(fmt::format("workload {}: no PodGroups or Pods to run", spec));
  }
  return w;
}

}  // namespace volcache::sim
