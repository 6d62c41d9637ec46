#pragma once
// What the simulated cluster runs: nodes, queues, priority classes and jobs (gangs of pods
// with an arrival time and a run time), loaded from Kubernetes manifests or from a real trace.
//
// Traces (../shared/data/traces, see its README):
//  - philly: Microsoft Philly jobs. 352 nodes of 8 GPUs / 96 CPUs / 768 GiB; one Queue per
//    virtual cluster with weight = its node count and capability = node count × 8 GPUs; each
//    job is a gang of ceil(gpus / 8) tasks (minMember = all of them), GPUs spread evenly over
//    the tasks, 4 CPUs and 16 GiB per GPU.
//  - alibaba: the Alibaba 2023 "openb" GPU cluster: its 1,523 real nodes and pods; every pod
//    is its own gang of one in the default queue. Fractional GPUs (gpu_milli < 1000) use an
//    aggregate GPU-share model: `nvidia.com/gpu` is accounted in milli-GPUs per node, not per
//    physical card.
// Time: arrivals and run times are divided by `time_scale` (60: a trace minute is a simulated
// second); arrivals additionally by `arrival_scale`. A slice starts at the `skip`-th job in arrival order and
// holds `max_jobs` jobs. Thread-safety: plain values.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"
#include "workers/clock.h"

namespace volcache::sim {

struct SimJob {
  std::shared_ptr<const k8s::PodGroup> pod_group;
  std::vector<k8s::PodPtr> pods;  // pending: no nodeName
  Duration submit{};              // arrival, from the start of the simulation
  Duration run_time{};            // each pod runs this long once started; 0 = until the end
  int64_t gpus_milli = 0;         // the gang's total GPU request (for reports)
};

struct SimWorkload {
  std::string name;
  std::vector<k8s::NodePtr> nodes;
  std::vector<std::shared_ptr<const k8s::Queue>> queues;
  std::vector<std::shared_ptr<const k8s::PriorityClass>> priority_classes;
  std::vector<k8s::HyperNodePtr> hypernodes;  // a manifest's, or AddTopology's
  // A manifest's storage objects, for the session's VolumeBinding and VolumeZone filters
  // (the simulated cluster neither provisions nor binds volumes: they stay as written).
  std::vector<std::shared_ptr<const k8s::StorageClass>> storage_classes;
  std::vector<std::shared_ptr<const k8s::PersistentVolume>> persistent_volumes;
  std::vector<std::shared_ptr<const k8s::PersistentVolumeClaim>> persistent_volume_claims;
  std::vector<SimJob> jobs;  // in arrival order
  size_t total_jobs = 0;     // traces: jobs in the whole trace, before the slice
};

struct TraceOptions {
  size_t max_jobs = 1000;
  size_t skip = 0;
  double time_scale = 60;
  // Arrivals are compressed this much more than run times (1 = the trace's own load; 10 =
  // ten times the arrival rate, for a contended cluster).
  double arrival_scale = 1;
  // Philly: each virtual cluster keeps ceil(nodes × cluster_scale) nodes (at least 1), and its
  // queue's capability and weight follow.
  double cluster_scale = 1;
  // Philly: every virtual cluster's queue shares the whole pool of nodes (no capability; the
  // weight, its node count, is all that divides the GPUs).
  bool shared_pool = false;
  std::string scheduler_name = "volcano";
};

// The slice `volcache run` takes of a trace when neither --skip nor --jobs says otherwise:
// 1,000 jobs from the busy middle of each trace. Philly (82,248 jobs): from job 20,000;
// Alibaba (8,152 jobs): from job 4,000. nullopt for anything that is not a known trace (a
// manifest runs all of its jobs).
struct TraceSlice {
  size_t skip = 0;
  size_t max_jobs = 0;
};
std::optional<TraceSlice> DefaultTraceSlice(std::string_view workload);

// `spec`: "trace:philly", "trace:alibaba", or a manifest file (.yaml/.yml/.json) holding Nodes,
// Queues, PriorityClasses, PodGroups and Pods. Manifest pods join the PodGroup named by their
// `scheduling.k8s.io/group-name` annotation (a pod without one gets its own gang of one);
// annotations on the PodGroup set the simulation: `volcache.io/sim-submit` (arrival, e.g.
// "30s") and `volcache.io/sim-duration` (run time, default "60s"); times are not scaled.
// Errors name the file, line or object and field.
Result<SimWorkload> LoadWorkload(const std::string& spec, const TraceOptions& options);
Result<SimWorkload> LoadPhillyTrace(const std::string& dir, const TraceOptions& options);
Result<SimWorkload> LoadAlibabaTrace(const std::string& dir, const TraceOptions& options);
Result<SimWorkload> LoadManifests(const std::string& path, const TraceOptions& options);

// The simulated network topology (`volcache run --topology racks:N,spines:M`, SPEC §12).
// HyperNodes over the workload's nodes in node-name order: tier 1 "rack-<i>" (tierName "rack")
// each selecting N consecutive nodes by exactMatch (the last rack may hold fewer), and, when
// M > 0, tier 2 "spine-<i>" (tierName "spine") each selecting M consecutive racks by
// exactMatch. Every gang job (minMember > 1) that sets no networkTopology of its own then asks
// for `mode` with highestTierAllowed `highest_tier` (mode "none": gangs ask for nothing).
struct TopologyOptions {
  int rack_nodes = 0;         // N; 0 = no topology
  int spine_racks = 0;        // M; 0 = racks only
  std::string mode = "soft";  // hard | soft | none
  int32_t highest_tier = 2;
};

// "racks:N" or "racks:N,spines:M" (N >= 1, M >= 1, each key once). The error quotes the spec and
// names the part that is wrong.
Result<TopologyOptions> ParseTopology(const std::string& spec);
// Adds the HyperNodes and the gangs' networkTopology. InvalidArgument when the workload already
// has HyperNodes (a manifest's) or `mode`/`highest_tier` are not valid.
Status AddTopology(const TopologyOptions& topology, SimWorkload* workload);

// ../shared/data (or $VOLCACHE_DATA_DIR).
std::string DataDir();

}  // namespace volcache::sim
