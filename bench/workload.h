#pragma once
// The standard workload shapes of BENCHMARKS.md (S, M, L, XL, XXL), built deterministically
// as Kubernetes objects, plus helpers to load them into a SchedulerCache.
//
// Nodes node-00000…: cpu 64, memory 256Gi, pods 110, nvidia.com/gpu 8 on every 4th node,
// label kubernetes.io/hostname, Ready. Queues default (weight 1) and q1..q10 (weights 1..10).
// Job j: PodGroup job-%06d (namespace default, minMember 10, queue q((j%10)+1)) with 10 pods
// job-%06d-%d (scheduler volcano, cpu 1 / memory 2Gi, plus nvidia.com/gpu 1 when j%4==0).
// round(0.7 × jobs) jobs run (GPU jobs first, capped by GPU capacity / 10), chosen by a seeded
// shuffle; running CPU pods go round-robin over all nodes, GPU pods over the GPU nodes.
// Thread-safety: plain functions over values.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache {
class SchedulerCache;
class ObjectStoreSource;
}  // namespace volcache

namespace volcache::bench {

struct Shape {
  std::string name;
  int nodes = 0;
  int jobs = 0;
  int tasks_per_job = 10;
};

// "S", "M", "L", "XL", "XXL"; NotFound for anything else.
Result<Shape> ShapeByName(const std::string& name);

struct Workload {
  Shape shape;
  std::vector<k8s::NodePtr> nodes;
  std::vector<std::shared_ptr<const k8s::Queue>> queues;
  std::vector<std::shared_ptr<const k8s::PodGroup>> pod_groups;
  std::vector<k8s::PodPtr> pods;  // job-major order
  int running_jobs = 0;
};

Workload BuildWorkload(const Shape& shape, uint64_t seed = 42);

// Puts the nodes into `source` and applies everything to `cache` (nodes synced through the
// node queue). Returns the first refusal, if any.
Status LoadWorkload(const Workload& w, ObjectStoreSource* source, SchedulerCache* cache);

// A pod's JSON as an API server returns it (the real GKE pod fixture's layout, with the
// workload pod's name, uid, annotations, requests and node). Used by the JSON ingest bench.
std::string PodJson(const k8s::Pod& pod);

// Heap bytes in use, as the allocator linked in counts them (VOLCACHE_MALLOC: tcmalloc's
// generic.current_allocated_bytes, jemalloc's stats.allocated, glibc's mallinfo2), and resident
// set size.
int64_t HeapInUseBytes();
int64_t ResidentBytes();

}  // namespace volcache::bench
