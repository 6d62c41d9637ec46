#include "bench/workload.h"

#include <malloc.h>
#include <unistd.h>

#if defined(VOLCACHE_MALLOC_TCMALLOC)
#include <gperftools/malloc_extension_c.h>
#elif defined(VOLCACHE_MALLOC_JEMALLOC)
#include <jemalloc/jemalloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "api/k8s/compact.h"
#include "cache/cluster_source.h"
#include "cache/scheduler_cache.h"

namespace volcache::bench {

namespace {

k8s::ResourceList List(std::initializer_list<std::pair<const char*, const char*>> items) {
  k8s::ResourceList out;
  for (auto [name, text] : items) out.emplace_back(name, *Quantity::Parse(text));
  return out;
}

std::string Fmt(const char* pattern, int a, int b = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, pattern, a, b);
  return buf;
}

}  // namespace

Result<Shape> ShapeByName(const std::string& name) {
  if (name == "S") return Shape{"S", 100, 50};
  if (name == "M") return Shape{"M", 1000, 1000};
  if (name == "L") return Shape{"L", 5000, 10000};
  if (name == "XL") return Shape{"XL", 10000, 20000};
  if (name == "XXL") return Shape{"XXL", 10000, 100000};
  return Status::NotFound("unknown shape " + name + " (S, M, L, XL, XXL)");
}

Workload BuildWorkload(const Shape& shape, uint64_t seed) {
  Workload w;
  w.shape = shape;
  std::vector<int> gpu_nodes;
  for (int i = 0; i < shape.nodes; ++i) {
    auto n = std::make_shared<k8s::Node>();
    n->metadata.name = Fmt("node-%05d", i);
    n->metadata.uid = "uid-" + n->metadata.name;
    n->metadata.resource_version = "1";
    n->metadata.labels["kubernetes.io/hostname"] = n->metadata.name;
    n->status.allocatable = List({{"cpu", "64"}, {"memory", "256Gi"}, {"pods", "110"}});
    if (i % 4 == 0) {
      n->status.allocatable.emplace_back("nvidia.com/gpu", *Quantity::Parse("8"));
      gpu_nodes.push_back(i);
    }
    n->status.capacity = n->status.allocatable;
    n->status.conditions.push_back({"Ready", "True", "KubeletReady", ""});
    k8s::Compact(n.get());  // as the decoders do
    w.nodes.push_back(std::move(n));
  }
  for (int q = 0; q <= 10; ++q) {
    auto queue = std::make_shared<k8s::Queue>();
    queue->metadata.name = q == 0 ? "default" : Fmt("q%d", q);
    queue->metadata.uid = "uid-queue-" + queue->metadata.name;
    queue->spec.weight = q == 0 ? 1 : q;
    queue->status.state = "Open";
    w.queues.push_back(std::move(queue));
  }

  // Which jobs run: GPU jobs first (capped by GPU capacity), then CPU-only, seeded shuffles.
  std::vector<int> gpu_jobs, cpu_jobs;
  for (int j = 0; j < shape.jobs; ++j) (j % 4 == 0 ? gpu_jobs : cpu_jobs).push_back(j);
  std::mt19937_64 rng(seed);
  std::shuffle(gpu_jobs.begin(), gpu_jobs.end(), rng);
  std::shuffle(cpu_jobs.begin(), cpu_jobs.end(), rng);
  const int total_running = static_cast<int>(std::lround(0.7 * shape.jobs));
  const int gpu_capacity_jobs = static_cast<int>(gpu_nodes.size()) * 8 / shape.tasks_per_job;
  const int gpu_running =
      std::min<int>(static_cast<int>(std::lround(0.7 * gpu_jobs.size())), gpu_capacity_jobs);
  const int cpu_running = std::min<int>(total_running - gpu_running, static_cast<int>(cpu_jobs.size()));
  std::vector<char> running(shape.jobs, 0);
  for (int i = 0; i < gpu_running; ++i) running[gpu_jobs[i]] = 1;
  for (int i = 0; i < cpu_running; ++i) running[cpu_jobs[i]] = 1;
  w.running_jobs = gpu_running + cpu_running;

  const k8s::ResourceList cpu_req = List({{"cpu", "1"}, {"memory", "2Gi"}});
  const k8s::ResourceList gpu_req = List({{"cpu", "1"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "1"}});
  size_t next_cpu_node = 0, next_gpu_node = 0;
  for (int j = 0; j < shape.jobs; ++j) {
    auto pg = std::make_shared<k8s::PodGroup>();
    pg->metadata.name = Fmt("job-%06d", j);
    pg->metadata.namespace_ = "default";
    pg->metadata.uid = "uid-pg-" + pg->metadata.name;
    pg->metadata.resource_version = "1";
    pg->metadata.creation_timestamp = 1700000000000 + j;
    pg->spec.min_member = shape.tasks_per_job;
    pg->spec.queue = Fmt("q%d", (j % 10) + 1);
    pg->status.phase = running[j] ? "Running" : "Pending";
    const bool gpu = j % 4 == 0;
    for (int t = 0; t < shape.tasks_per_job; ++t) {
      auto p = std::make_shared<k8s::Pod>();
      p->metadata.name = Fmt("job-%06d-%d", j, t);
      p->metadata.namespace_ = "default";
      p->metadata.uid = "uid-" + p->metadata.name;
      p->metadata.resource_version = "1";
      p->metadata.creation_timestamp = pg->metadata.creation_timestamp;
      p->metadata.annotations["scheduling.k8s.io/group-name"] = pg->metadata.name;
      p->spec.scheduler_name = "volcano";
      k8s::Container c;
      c.name = "main";
      c.image = "registry.example/train:1.0";
      c.requests = gpu ? gpu_req : cpu_req;
      c.limits = c.requests;
      p->spec.containers.push_back(std::move(c));
      if (running[j]) {
        int node = gpu ? gpu_nodes[next_gpu_node++ % gpu_nodes.size()]
                       : static_cast<int>(next_cpu_node++ % shape.nodes);
        p->spec.node_name = w.nodes[node]->metadata.name.view();
        p->status.phase = "Running";
      } else {
        p->status.phase = "Pending";
      }
      k8s::Compact(p.get());  // as the decoders do
      w.pods.push_back(std::move(p));
    }
    w.pod_groups.push_back(std::move(pg));
  }
  return w;
}

Status LoadWorkload(const Workload& w, ObjectStoreSource* source, SchedulerCache* cache) {
  for (const auto& q : w.queues) VC_RETURN_IF_ERROR(cache->AddQueue(q));
  for (const auto& n : w.nodes) {
    source->PutNode(n);
    cache->AddNode(*n);
  }
  cache->DrainQueuesOnce();
  for (const auto& pg : w.pod_groups) VC_RETURN_IF_ERROR(cache->AddPodGroup(pg));
  for (const auto& p : w.pods) {
    source->PutPod(p);
    VC_RETURN_IF_ERROR(cache->AddPod(p));
  }
  return Status::Ok();
}

std::string PodJson(const k8s::Pod& pod) {
  // Field layout and sizes of a real API-server pod (managedFields, status conditions,
  // container statuses), so decoding cost is realistic.
  const auto& c = pod.spec.containers.at(0);
  std::string requests;
  for (const auto& [name, q] : c.requests) {
    if (!requests.empty()) requests += ",";
    requests += "\"" + name + "\":\"" + q.ToDecimalString() + "\"";
  }
  const std::string& name = pod.metadata.name;
  std::string node = pod.spec.node_name.empty() ? "" : ",\"nodeName\":\"" + pod.spec.node_name + "\"";
  return std::string(
             R"({"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"scheduling.k8s.io/group-name":")") +
         pod.metadata.annotations.at("scheduling.k8s.io/group-name") +
         R"("},"creationTimestamp":"2023-03-09T08:23:11Z","labels":{"app":"train","pod-template-hash":"7fb78fb6d8"},"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:scheduling.k8s.io/group-name":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{},"f:requests":{}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}},"manager":"kube-controller-manager","operation":"Update","time":"2023-03-09T08:23:11Z"}],"name":")" +
         name + R"(","namespace":")" + pod.metadata.namespace_ + R"(","resourceVersion":"744176","uid":")" +
         pod.metadata.uid +
         R"("},"spec":{"containers":[{"image":"registry.example/train:1.0","imagePullPolicy":"IfNotPresent","name":"main","resources":{"limits":{)" +
         requests + R"(},"requests":{)" + requests +
         R"(}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","volumeMounts":[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-x8v2q","readOnly":true}]}],"dnsPolicy":"ClusterFirst","enableServiceLinks":true)" +
         node +
         R"(,"preemptionPolicy":"PreemptLowerPriority","priority":0,"restartPolicy":"Always","schedulerName":")" +
         pod.spec.scheduler_name +
         R"(","securityContext":{},"serviceAccount":"default","serviceAccountName":"default","terminationGracePeriodSeconds":30,"tolerations":[{"effect":"NoExecute","key":"node.kubernetes.io/not-ready","operator":"Exists","tolerationSeconds":300},{"effect":"NoExecute","key":"node.kubernetes.io/unreachable","operator":"Exists","tolerationSeconds":300}],"volumes":[{"name":"kube-api-access-x8v2q","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}]}}]},"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2023-03-09T08:23:11Z","status":"True","type":"PodScheduled"}],"phase":")" +
         pod.status.phase + R"(","qosClass":"Guaranteed"}})";
}

// The allocator linked in (cmake/Malloc.cmake) answers: the bytes the program holds, as that
// allocator counts them (tcmalloc and jemalloc: the size classes handed out, no headers; glibc:
// the chunks in use, each with its 8-byte header, and the mmapped blocks).
int64_t HeapInUseBytes() {
#if defined(VOLCACHE_MALLOC_TCMALLOC)
  size_t bytes = 0;
  MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &bytes);
  return static_cast<int64_t>(bytes);
#elif defined(VOLCACHE_MALLOC_JEMALLOC)
  // The statistics are a snapshot refreshed by writing "epoch".
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  mallctl("epoch", &epoch, &len, &epoch, len);
  size_t allocated = 0;
  len = sizeof(allocated);
  if (mallctl("stats.allocated", &allocated, &len, nullptr, 0) != 0) return 0;
  return static_cast<int64_t>(allocated);
#else
  struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
#endif
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace volcache::bench
