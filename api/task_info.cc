#include "api/task_info.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

#include "api/k8s/compact.h"
#include "api/resource_list.h"

namespace volcache {

std::string PodKey(std::string_view ns, std::string_view name) {
  // Sized once and filled with two copies: three appends were 260 instructions a pod.
  std::string key(ns.size() + 1 + name.size(), '/');
  std::memcpy(key.data(), ns.data(), ns.size());
  std::memcpy(key.data() + ns.size() + 1, name.data(), name.size());
  return key;
}

namespace {

bool IsSidecar(const k8s::Container& c) { return c.restart_policy == "Always"; }

// Names a container's requests in error messages; the text is only built on error.
struct RequestsRef {
  std::string_view list;  // "containers" or "initContainers"
  size_t index;
  std::string Path() const { return fmt::format("spec.{}[{}].resources.requests", list, index); }
};

// Kubernetes' PodRequests rule, generic over the per-container request type so the exact
// Resource and the non-zero cpu/memory pair follow one implementation. `Acc` needs Add and
// SetMax.
template <typename Acc, typename RequestOf>
Status CombinePodRequests(const k8s::Pod& pod, RequestOf&& request_of, Acc* out) {
  Acc regular{};
  for (size_t i = 0; i < pod.spec.containers.size(); ++i) {
    Acc r{};
    VC_RETURN_IF_ERROR(request_of(pod.spec.containers[i], RequestsRef{"containers", i}, &r));
    regular.Add(r);
  }
  // Sidecars keep running for the pod's whole life: each one adds to everything that
  // starts after it (later init containers and the regular containers).
  Acc sidecars{};
  Acc init_peak{};
  for (size_t i = 0; i < pod.spec.init_containers.size(); ++i) {
    const k8s::Container& c = pod.spec.init_containers[i];
    Acc r{};
    VC_RETURN_IF_ERROR(request_of(c, RequestsRef{"initContainers", i}, &r));
    if (IsSidecar(c)) {
      regular.Add(r);
      sidecars.Add(r);
      init_peak.SetMax(sidecars);
    } else {
      r.Add(sidecars);
      init_peak.SetMax(r);
    }
  }
  regular.SetMax(init_peak);
  *out = std::move(regular);
  return Status::Ok();
}

// cpu/memory pair with Add/SetMax for CombinePodRequests.
struct NonZeroAcc {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  void Add(const NonZeroAcc& o) {
    milli_cpu += o.milli_cpu;
    memory += o.memory;
  }
  void SetMax(const NonZeroAcc& o) {
    milli_cpu = std::max(milli_cpu, o.milli_cpu);
    memory = std::max(memory, o.memory);
  }
};

// Sums the cpu (milli) and memory (bytes) entries of a ResourceList; `found_*` tell whether
// the names were present at all (an explicit 0 is not "missing").
void CpuMemory(const k8s::ResourceList& list, NonZeroAcc* out, bool* found_cpu, bool* found_memory) {
  for (const auto& [name, q] : list) {
    if (name == "cpu") {
      out->milli_cpu += q.MilliValue();
      *found_cpu = true;
    } else if (name == "memory") {
      out->memory += q.Value();
      *found_memory = true;
    }
  }
}

// strconv.ParseBool.
std::optional<bool> ParseBool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") return false;
  return std::nullopt;
}

// Volcano GetPodPreemptable: annotation first, then label; an unparsable value means false
// (and `*clean` is cleared).
bool PodPreemptable(const k8s::Pod& pod, bool* clean) {
  for (const k8s::StringMap* m : {&pod.metadata.annotations, &pod.metadata.labels}) {
    auto it = m->find(kPreemptableKey);
    if (it == m->end()) continue;
    if (auto b = ParseBool(it->second)) return *b;
    *clean = false;
    spdlog::warn("pod {}/{}: invalid {}=\"{}\", treating as not preemptable", pod.metadata.namespace_,
                 pod.metadata.name, kPreemptableKey, it->second);
    return false;
  }
  return true;
}

// Volcano: the annotation overrides spec.priority when it parses as an int32; otherwise it
// is ignored (and `*clean` is cleared). Returns the override, if any.
std::optional<int32_t> PriorityAnnotation(const k8s::Pod& pod, bool* clean) {
  std::optional<int32_t> priority;
  auto it = pod.metadata.annotations.find(kTaskPriorityAnnotation);
  if (it != pod.metadata.annotations.end()) {
    const std::string& s = it->second;
    int32_t v = 0;
    const char* begin = s.data();
    if (!s.empty() && s[0] == '+') ++begin;
    auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size() && begin != ptr) {
      priority = v;
    } else {
      *clean = false;
      spdlog::warn("pod {}/{}: ignoring invalid {}=\"{}\"", pod.metadata.namespace_, pod.metadata.name,
                   kTaskPriorityAnnotation, s);
    }
  }
  return priority;
}

std::string_view Lookup(const k8s::StringMap& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? std::string_view() : std::string_view(it->second);
}

bool IsBestEffort(const Resource& r) {
  if (r.milli_cpu() != 0 || r.memory() != 0) return false;
  for (auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->id != ResourceNames::kPods && s->value != 0) return false;
  }
  return true;
}

}  // namespace

void AppendHostPorts(const std::vector<k8s::Container>& containers, std::vector<HostPort>* out) {
  for (const k8s::Container& c : containers) {
    for (const k8s::ContainerPort& p : c.ports) {
      if (p.host_port <= 0) continue;
      HostPort hp;
      hp.ip = p.host_ip == "0.0.0.0" ? std::string() : p.host_ip;
      hp.protocol = p.protocol.empty() ? std::string("TCP") : p.protocol;
      hp.port = p.host_port;
      out->push_back(std::move(hp));
    }
  }
}

Result<Resource> PodRequest(const k8s::Pod& pod) {
  Resource total;
  VC_RETURN_IF_ERROR(CombinePodRequests(
      pod,
      [](const k8s::Container& c, const RequestsRef& ref, Resource* r) -> Status {
        Result<Resource> res = ResourceFromList(c.requests, {});
        if (!res.ok()) return ResourceFromList(c.requests, ref.Path()).status();  // names the field
        *r = std::move(res).value();
        return Status::Ok();
      },
      &total));
  if (!pod.spec.overhead().empty()) {
    Result<Resource> overhead = ResourceFromList(pod.spec.overhead(), "spec.overhead");
    if (!overhead.ok()) return overhead.status();
    total.Add(*overhead);
  }
  // Requests never carry a pod budget; the scalar pods counts this one pod.
  total.set_max_task_num(0);
  total.SetScalar(ResourceNames::kPods, 1);
  return total;
}

NonZeroRequest PodNonZeroRequest(const k8s::Pod& pod) {
  NonZeroAcc total;
  Status st = CombinePodRequests(
      pod,
      [](const k8s::Container& c, const RequestsRef&, NonZeroAcc* r) -> Status {
        bool cpu = false, memory = false;
        CpuMemory(c.requests, r, &cpu, &memory);
        if (!cpu) r->milli_cpu = kDefaultMilliCpuRequest;
        if (!memory) r->memory = kDefaultMemoryRequest;
        return Status::Ok();
      },
      &total);
  (void)st;  // the non-zero lambda never fails
  bool cpu = false, memory = false;
  CpuMemory(pod.spec.overhead(), &total, &cpu, &memory);
  return NonZeroRequest{total.milli_cpu, total.memory};
}

std::string_view TaskMeta::role() const {
  const k8s::ObjectMeta& m = pod->metadata;
  if (auto it = m.annotations.find(kTaskSpecKey); it != m.annotations.end()) return it->second;
  if (auto it = m.labels.find(kTaskSpecKey); it != m.labels.end()) return it->second;
  return {};
}

const std::vector<HostPort>& TaskMeta::host_ports() const {
  static const std::vector<HostPort> kNone;
  return node_facts != nullptr ? node_facts->host_ports : kNone;
}

const std::vector<std::string>& TaskMeta::pvcs() const {
  static const std::vector<std::string> kNone;
  return node_facts != nullptr ? node_facts->pvcs : kNone;
}

namespace {

// What FromPod reads from a pod's annotations and labels. A job's pods share those maps
// (k8s::Compact), so each thread remembers the facts of the maps it last read, holding and
// comparing their blocks as RequestMemo (below) does its lists; not when a value was
// invalid, whose warning names each pod. `group` views the maps.
struct LabelFacts {
  std::string_view group;
  std::optional<int32_t> priority;  // the task-priority annotation, when valid
  bool preemptable = true;
};
struct LabelMemo {
  k8s::StringMap annotations, labels;
  LabelFacts facts;
  bool valid = false;
};

LabelFacts LabelFactsOf(const k8s::Pod& p) {
  thread_local LabelMemo memo;
  const k8s::ObjectMeta& m = p.metadata;
  if (memo.valid && memo.annotations.SameBlock(m.annotations) && memo.labels.SameBlock(m.labels)) {
    return memo.facts;
  }
  LabelFacts f;
  f.group = Lookup(m.annotations, kGroupNameAnnotation);
  bool clean = true;
  f.priority = PriorityAnnotation(p, &clean);
  f.preemptable = PodPreemptable(p, &clean);
  if (clean) {
    memo.annotations = m.annotations;
    memo.labels = m.labels;
    memo.facts = f;
    memo.valid = true;
  }
  return f;
}

// A job's pods share their container lists (k8s::Compact makes equal lists one block), so
// their requests are equal: each thread remembers the lists it last computed requests for,
// and the next pod that holds the same blocks takes the result (the request rule was a
// third of adding a pod to the cache, most of it quantity scaling). The memo holds the
// blocks: a held block is never written again (a write copies it first) and cannot be
// freed, so its address cannot come back as another list. Pods with an overhead are not
// remembered.
struct RequestMemo {
  k8s::Shared<std::vector<k8s::Container>> containers, init_containers;
  Resource request;
  NonZeroRequest non_zero;
  bool valid = false;
};

Status RequestsOf(const k8s::Pod& p, Resource* request, NonZeroRequest* non_zero) {
  thread_local RequestMemo memo;
  const bool memoable = p.spec.overhead().empty();
  if (memoable && memo.valid && memo.containers.SameBlock(p.spec.containers) &&
      memo.init_containers.SameBlock(p.spec.init_containers)) {
    *request = memo.request;
    *non_zero = memo.non_zero;
    return Status::Ok();
  }
  Result<Resource> r = PodRequest(p);
  if (!r.ok()) return r.status();
  *request = std::move(r).value();
  *non_zero = PodNonZeroRequest(p);
  if (memoable) {
    memo.containers = p.spec.containers;
    memo.init_containers = p.spec.init_containers;
    memo.request = *request;
    memo.non_zero = *non_zero;
    memo.valid = true;
  }
  return Status::Ok();
}

}  // namespace

Result<TaskInfo> TaskInfo::FromPod(k8s::PodPtr pod) {
  if (pod == nullptr) return Status::InvalidArgument("TaskInfo::FromPod: null pod");
  const k8s::Pod& p = *pod;
  boost::intrusive_ptr<TaskMeta> meta(new TaskMeta());
  NonZeroRequest non_zero;
  if (Status s = RequestsOf(p, &meta->resreq, &non_zero); !s.ok()) {
    return s.WithPrefix(fmt::format("Pod {}/{}", p.metadata.namespace_, p.metadata.name));
  }
  const LabelFacts facts = LabelFactsOf(p);
  if (!facts.group.empty()) meta->job = k8s::InternSharedKey(p.metadata.namespace_, facts.group);
  TaskMeta::NodeFacts extra;
  AppendHostPorts(p.spec.init_containers, &extra.host_ports);
  AppendHostPorts(p.spec.containers, &extra.host_ports);
  extra.pvcs.reserve(p.spec.pvc_names().size());
  for (const std::string& claim : p.spec.pvc_names())
    extra.pvcs.push_back(PodKey(p.metadata.namespace_, claim));
  extra.has_affinity = p.spec.has_pod_affinity || p.spec.has_pod_anti_affinity;
  // Required anti-affinity as kube-scheduler's PodsWithRequiredAntiAffinity counts it; a pod
  // whose anti-affinity is known only by its presence counts too (the conservative answer).
  const k8s::PodAffinity& anti = p.spec.pod_anti_affinity();
  extra.has_required_anti_affinity =
      p.spec.has_pod_anti_affinity && (!anti.required.empty() || anti.preferred.empty());
  if (non_zero.milli_cpu != meta->resreq.milli_cpu() || non_zero.memory != meta->resreq.memory()) {
    extra.non_zero = non_zero;
  }
  if (!extra.host_ports.empty() || !extra.pvcs.empty() || extra.has_affinity || extra.non_zero) {
    meta->node_facts = std::make_unique<const TaskMeta::NodeFacts>(std::move(extra));
  }
  meta->pod = std::move(pod);

  TaskInfo t;
  t.best_effort = IsBestEffort(meta->resreq);
  t.node_name = p.spec.node_name;
  t.status = TaskStatusFromPod(p);
  t.priority = facts.priority.value_or(p.spec.priority.value_or(0));
  t.preemptable = facts.preemptable;
  t.scheduling_gated = !p.spec.scheduling_gates().empty();
  t.meta = std::move(meta);
  return t;
}

}  // namespace volcache
