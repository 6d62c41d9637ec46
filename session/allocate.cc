#include "session/allocate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <queue>
#include <span>
#include <string_view>
#include <unordered_map>

#include "api/k8s/objects.h"
#include "api/node_info.h"
#include "api/placement.h"
#include "api/queue_info.h"
#include "api/task_info.h"
#include "api/task_status.h"
#include "session/constraints.h"
#include "session/topology.h"

namespace volcache {

std::string_view ScoreStrategyName(ScoreStrategy s) {
  return s == ScoreStrategy::kBinpack ? "binpack" : "least-allocated";
}

namespace {

constexpr uint32_t kPodsId = ResourceNames::kPods;

Resource WithoutPods(const Resource& r) {
  Resource c = r;
  c.RemoveScalar(kPodsId);
  return c;
}

// ---------------------------------------------------------------- dimensions

// A resource dimension: cpu, memory or a scalar id.
struct Dim {
  enum Kind : uint8_t { kCpu, kMemory, kScalar } kind;
  uint32_t id = 0;
};

int64_t GetDim(const Resource& r, Dim d) {
  switch (d.kind) {
    case Dim::kCpu:
      return r.milli_cpu();
    case Dim::kMemory:
      return r.memory();
    case Dim::kScalar:
      break;
  }
  return r.Get(d.id);
}

void SetDim(Resource& r, Dim d, int64_t v) {
  switch (d.kind) {
    case Dim::kCpu:
      r.set_milli_cpu(v);
      return;
    case Dim::kMemory:
      r.set_memory(v);
      return;
    case Dim::kScalar:
      r.SetScalar(d.id, v);
      return;
  }
}

// cpu, memory, then the scalars of `r` but pods.
std::vector<Dim> DimsOf(const Resource& r) {
  std::vector<Dim> dims{{Dim::kCpu, 0}, {Dim::kMemory, 0}};
  for (const auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->id != kPodsId) dims.push_back({Dim::kScalar, s->id});
  }
  return dims;
}

// Volcano's share of one dimension: l / r, and 1 when something is allocated of a
// dimension the queue deserves none of.
double DimShare(int64_t allocated, int64_t deserved) {
  if (deserved <= 0) return allocated > 0 ? 1.0 : 0.0;
  return static_cast<double>(allocated) / static_cast<double>(deserved);
}

double Share(const Resource& allocated, const Resource& deserved) {
  double s = std::max(DimShare(allocated.milli_cpu(), deserved.milli_cpu()),
                      DimShare(allocated.memory(), deserved.memory()));
  for (const auto* x = allocated.scalars_begin(); x != allocated.scalars_end(); ++x) {
    if (x->id != kPodsId) s = std::max(s, DimShare(x->value, deserved.Get(x->id)));
  }
  for (const auto* x = deserved.scalars_begin(); x != deserved.scalars_end(); ++x) {
    if (x->id != kPodsId) s = std::max(s, DimShare(allocated.Get(x->id), x->value));
  }
  return s;
}

// ---------------------------------------------------------------- predicates

struct NodeSlot {
  const NodeInfo* info = nullptr;
  Resource allocatable;  // without pods
  Resource avail;        // idle minus this session's placements, without pods
  Resource future;       // future idle minus this session's placements (pipelined too)
  bool limit_pods = false;
  int64_t pods_free = 0;
};

// Appends to `reasons` why `task` cannot go to `node` (kube-scheduler wording); empty when
// it fits. Checks stop at the first failing predicate, in kube-scheduler's filter order:
// the prefilters (the task's volume claims), NodeUnschedulable, TaintToleration, NodeAffinity,
// NodePorts, NodeResourcesFit (max pods, then resources), VolumeBinding, VolumeZone,
// PodTopologySpread, InterPodAffinity. `cons` (prepared for `task`, or null) checks the
// volumes, ports and inter-pod constraints of node `index`.
void CheckNode(const TaskInfo& task, const Resource& req, const NodeSlot& n, const Resource& avail,
               const Constraints* cons, uint32_t index, std::vector<std::string>* reasons) {
  if (cons != nullptr && !cons->PodReason().empty()) {
    reasons->emplace_back(cons->PodReason());
    return;
  }
  const k8s::Node* node = n.info->node().get();
  const k8s::PodSpec& spec = task.pod().spec;
  if (node != nullptr) {
    if (node->spec.unschedulable &&
        !placement::ToleratedBy(spec.tolerations, placement::kUnschedulableTaintKey, "", "NoSchedule")) {
      reasons->emplace_back(placement::kReasonUnschedulable);
      return;
    }
    if (!node->spec.taints.empty()) {
      if (const k8s::Taint* taint = placement::FirstUntoleratedTaint(spec.tolerations, *node)) {
        reasons->push_back(fmt::format("node(s) had untolerated taint {{{}: {}}}", taint->key, taint->value));
        return;
      }
    }
    if ((!spec.node_selector.empty() || placement::HasRequiredNodeAffinity(spec)) &&
        !placement::MatchesNodeAffinity(spec, *node)) {
      reasons->emplace_back(placement::kReasonNodeAffinity);
      return;
    }
  }
  if (cons != nullptr) {
    if (std::string_view why = cons->CheckPorts(index); !why.empty()) {
      reasons->emplace_back(why);
      return;
    }
  }
  if (n.limit_pods && n.pods_free < 1) {
    reasons->emplace_back(placement::kReasonTooManyPods);
    return;
  }
  if (!req.LessEqual(avail, DimensionDefault::kZero)) {
    const std::string dims = req.InsufficientDimensions(avail);
    if (dims.empty()) {
      reasons->emplace_back("Insufficient resources");
      return;
    }
    size_t pos = 0;
    while (pos <= dims.size()) {
      size_t end = dims.find(", ", pos);
      if (end == std::string::npos) end = dims.size();
      reasons->push_back("Insufficient " + dims.substr(pos, end - pos));
      pos = end + 2;
    }
    return;
  }
  if (cons != nullptr) {
    if (std::string_view why = cons->CheckPods(index); !why.empty()) reasons->emplace_back(why);
  }
}

// Higher is better; an integer so that equal scores compare equal and ties go to names.
int64_t ScoreNode(const NodeSlot& n, const Resource& req, const SessionOptions& o,
                  const std::vector<std::pair<uint32_t, int64_t>>& scalar_weights) {
  const bool binpack = o.score == ScoreStrategy::kBinpack;
  double sum = 0;
  int64_t weights = 0;
  // Binpack counts the dimensions the task requests (as Volcano's binpack); least-allocated
  // always counts cpu and memory (as kube-scheduler's LeastAllocated).
  auto dim = [&](int64_t w, int64_t alloc, int64_t avail, int64_t r, bool always) {
    if (w <= 0 || alloc <= 0 || (!always && r <= 0)) return;
    const double v = binpack ? static_cast<double>(alloc - avail + r) / static_cast<double>(alloc)
                             : static_cast<double>(avail - r) / static_cast<double>(alloc);
    sum += static_cast<double>(w) * v;
    weights += w;
  };
  dim(o.cpu_weight, n.allocatable.milli_cpu(), n.avail.milli_cpu(), req.milli_cpu(), !binpack);
  dim(o.memory_weight, n.allocatable.memory(), n.avail.memory(), req.memory(), !binpack);
  for (const auto& [id, w] : scalar_weights)
    dim(w, n.allocatable.Get(id), n.avail.Get(id), req.Get(id), false);
  if (weights == 0) return 0;
  return std::llround(sum / static_cast<double>(weights) * 1e6);
}

// kube-scheduler's ImageLocality: the summed sizes of the task's container images on the node,
// each scaled by the share of nodes that have it, mapped from [23 MiB, 1000 MiB × containers]
// onto 0..100. `nodes_with` counts the nodes holding each image name.
int64_t ImageLocalityScore(const k8s::PodSpec& spec, const NodeInfo& node,
                           const std::unordered_map<std::string, int32_t>& nodes_with, size_t total_nodes) {
  constexpr int64_t kMiB = 1024 * 1024;
  constexpr int64_t kMin = 23 * kMiB, kPerContainer = 1000 * kMiB;
  const auto& images = node.images();
  if (images.empty() || spec.containers.empty() || total_nodes == 0) return 0;
  int64_t sum = 0;
  std::string name;
  for (const k8s::Container& c : spec.containers) {
    name = c.image;
    if (name.rfind(':') == std::string::npos ||
        (name.rfind('/') != std::string::npos && name.rfind(':') < name.rfind('/')))
      name += ":latest";
    auto it = images.find(name);
    if (it == images.end()) continue;
    auto n = nodes_with.find(name);
    const double spread =
        n == nodes_with.end() ? 0.0 : static_cast<double>(n->second) / static_cast<double>(total_nodes);
    sum += static_cast<int64_t>(static_cast<double>(it->second.size_bytes) * spread);
  }
  const int64_t max = kPerContainer * static_cast<int64_t>(spec.containers.size());
  sum = std::clamp(sum, kMin, max);
  return 100 * (sum - kMin) / (max - kMin);
}

// kube-scheduler's BalancedAllocation, LeastAllocated and MostAllocated over cpu and memory,
// each 0..100, with the task placed on the node.
struct ResourceScores {
  int64_t balanced = 0, least = 0, most = 0;
};
ResourceScores ResourceScoresOf(const NodeSlot& n, const Resource& req) {
  ResourceScores out;
  double fractions[2] = {0, 0};
  int64_t least = 0, most = 0;
  int dims = 0;
  auto dim = [&](int64_t alloc, int64_t avail, int64_t r) {
    if (alloc <= 0) return;
    const int64_t requested = std::min(alloc, alloc - avail + r);
    fractions[dims++] = static_cast<double>(requested) / static_cast<double>(alloc);
    least += (alloc - requested) * 100 / alloc;
    most += requested * 100 / alloc;
  };
  dim(n.allocatable.milli_cpu(), n.avail.milli_cpu(), req.milli_cpu());
  dim(n.allocatable.memory(), n.avail.memory(), req.memory());
  if (dims == 0) return out;
  const double std_dev = dims == 2 ? std::abs(fractions[0] - fractions[1]) / 2 : 0;
  out.balanced = static_cast<int64_t>((1 - std_dev) * 100);
  out.least = least / dims;
  out.most = most / dims;
  return out;
}

// ---------------------------------------------------------------- queues and jobs

struct QueueSlot;

// A task that fit no node in a visit: why (a view of Allocator::texts_ or a literal). The
// fit errors of one job are a list through `next` (index into Allocator::fits_; -1 ends it).
struct TaskFit {
  const TaskInfo* task;
  std::string_view text;
  int32_t next;
};

// A job's state for one session. Holds no storage of its own: tasks and requests are views
// of the Allocator's arrays, texts views of its interned texts, so a deep backlog of jobs
// costs no allocation per job.
struct JobSlot {
  const JobInfo* job = nullptr;
  QueueSlot* queue = nullptr;
  std::span<const TaskInfo* const> pending;  // schedulable, in task order
  std::span<const Resource> reqs;            // their requests without pods
  size_t first = 0;                          // where pending/reqs start in the Allocator's arrays
  uint32_t position = 0;                     // the job's index in jobs_by_uid
  // The job's sort keys, copied out of the JobInfo (the job order compares them often).
  int32_t priority = 0;
  int32_t min_available = 0;
  k8s::TimeMs creation_timestamp = 0;
  int32_t pending_count = 0;  // schedulable pending tasks (pending is left empty when gated)
  size_t next = 0;            // first pending task not placed
  int32_t ready_base = 0;     // tasks already counted ready at open
  int32_t committed = 0;
  int32_t pipelined = 0;
  bool gated = false;  // Pending PodGroup under require_inqueue: not tried
  bool tried = false;
  bool closed = false;  // no more visits this session
  std::string_view reason;
  int32_t fits = -1;  // first TaskFit (a few: one per visit at most)

  bool Ready() const { return ready_base + committed >= min_available; }
};

// std::priority_queue puts the "largest" first: returns true when `a` goes after `b`.
// The slots are in job uid order (Allocator::jobs_), so their addresses order them by uid.
struct JobAfter {
  bool operator()(const JobSlot* a, const JobSlot* b) const {
    if (a->priority != b->priority) return a->priority < b->priority;
    const bool ar = a->Ready(), br = b->Ready();
    if (ar != br) return ar;
    if (a->creation_timestamp != b->creation_timestamp) return a->creation_timestamp > b->creation_timestamp;
    return a > b;
  }
};

struct QueueSlot {
  std::string name;
  int32_t weight = 1;
  bool closed = false;
  bool has_capability = false;
  Resource capability;
  Resource request, deserved, allocated;  // without pods
  double share = 0;
  std::priority_queue<JobSlot*, std::vector<JobSlot*>, JobAfter> jobs;
  // Reasons given to its jobs, formatted once (Allocator::QueueText).
  std::string_view closed_text, overused_text, full_text, overshoot_text;
  std::map<std::string, std::string_view, std::less<>> capability_texts;  // by CapabilityExceeded

  bool Overused() const {
    return !deserved.IsEmpty() && deserved.LessEqual(allocated, DimensionDefault::kZero);
  }
  // Empty when `req` fits under the capability; otherwise the dimensions it would exceed.
  // cpu/memory <= 0 and absent scalars in the capability are unlimited (as Volcano).
  std::string CapabilityExceeded(const Resource& req) const {
    if (!has_capability) return "";
    std::string over;
    auto check = [&](std::string_view name, int64_t r, int64_t a, int64_t cap, bool limited) {
      if (r > 0 && limited && a + r > cap) over += (over.empty() ? "" : ", ") + std::string(name);
    };
    check("cpu", req.milli_cpu(), allocated.milli_cpu(), capability.milli_cpu(), capability.milli_cpu() > 0);
    check("memory", req.memory(), allocated.memory(), capability.memory(), capability.memory() > 0);
    for (const auto* s = req.scalars_begin(); s != req.scalars_end(); ++s) {
      if (s->id == kPodsId) continue;
      check(ResourceNames::Name(s->id), s->value, allocated.Get(s->id), capability.Get(s->id),
            capability.Has(s->id));
    }
    return over;
  }
};

struct QueueAfter {
  bool operator()(const QueueSlot* a, const QueueSlot* b) const {
    if (a->share != b->share) return a->share > b->share;
    return a->name > b->name;
  }
};

// kube-scheduler's FitError text: each reason with the number of nodes that gave it, the
// "<count> <reason>" strings sorted as strings (as kube-scheduler sorts them).
std::string FitErrorText(size_t nodes, const std::vector<std::string>& reasons) {
  std::map<std::string, int64_t> hist;
  for (const auto& r : reasons) ++hist[r];
  std::vector<std::string> counted;
  counted.reserve(hist.size());
  for (const auto& [r, n] : hist) counted.push_back(fmt::format("{} {}", n, r));
  std::sort(counted.begin(), counted.end());
  std::string out = fmt::format("0/{} nodes are available", nodes);
  bool first = true;
  for (const auto& c : counted) {
    out.append(first ? ": " : ", ").append(c);
    first = false;
  }
  out += ".";
  return out;
}

class Allocator {
 public:
  // `jobs_by_uid`: the snapshot's jobs sorted by uid. `reuse`: a plan whose storage the
  // new one reuses (its contents do not matter).
  Allocator(const ClusterInfo& snap, const SessionOptions& o, std::span<const JobInfo* const> jobs_by_uid,
            AllocationPlan reuse)
      : snap_(snap), o_(o), jobs_by_uid_(jobs_by_uid), plan_(std::move(reuse)) {
    for (const auto& [name, w] : o.scalar_weights) {
      int64_t id = ResourceNames::Find(name);
      if (id >= 0) scalar_weights_.emplace_back(static_cast<uint32_t>(id), w);
    }
    plan_.placements.clear();
    plan_.queues.clear();
    plan_.discarded = 0;
    plan_.pipelined = 0;
  }

  AllocationPlan Run(std::vector<uint32_t>* positions) {
    OpenNodes();
    OpenJobs();
    ComputeDeserved();
    Loop();
    if (positions != nullptr) {
      positions->clear();
      for (const JobSlot& j : jobs_) positions->push_back(j.position);
    }
    return Close();
  }

 private:
  void OpenNodes() {
    nodes_.reserve(snap_.nodes().size());
    for (const auto& [name, info] : snap_.nodes()) {
      NodeSlot n;
      n.info = info.get();
      n.allocatable = WithoutPods(info->allocatable());
      n.avail = WithoutPods(info->idle());
      n.future = WithoutPods(info->FutureIdle());
      n.limit_pods = info->allocatable().Has(kPodsId);
      n.pods_free = info->idle().Get(kPodsId);
      nodes_.push_back(std::move(n));
    }
    std::sort(nodes_.begin(), nodes_.end(),
              [](const NodeSlot& a, const NodeSlot& b) { return a.info->name() < b.info->name(); });
    std::vector<const NodeInfo*> infos;
    infos.reserve(nodes_.size());
    for (const NodeSlot& n : nodes_) {
      infos.push_back(n.info);
      const k8s::Node* node = n.info->node().get();
      if (node == nullptr) continue;
      for (const auto& t : node->spec.taints) any_prefer_no_schedule_ |= t.effect == "PreferNoSchedule";
      if (!n.info->images().empty()) any_images_ = true;
    }
    constraints_.emplace(std::move(infos), snap_.volumes.get());
    const NodeOrderWeights& w = o_.node_order;
    absolute_scores_ = (w.image_locality != 0 && any_images_) || w.balanced_resource != 0 ||
                       w.least_requested != 0 || w.most_requested != 0;
  }

  uint32_t IndexOf(const NodeSlot& n) const { return static_cast<uint32_t>(&n - nodes_.data()); }

  // The scores a search adds to the strategy's that need no normalization (image locality and
  // the resource scores of NodeOrderWeights), in the strategy score's units.
  int64_t AbsoluteScore(const TaskInfo& task, const NodeSlot& n, const Resource& req) {
    const NodeOrderWeights& w = o_.node_order;
    int64_t points = 0;
    if (w.image_locality != 0 && any_images_) {
      if (image_nodes_.empty()) {
        for (const NodeSlot& x : nodes_) {
          for (const auto& [name, _] : x.info->images()) ++image_nodes_[name];
        }
      }
      points += w.image_locality * ImageLocalityScore(task.pod().spec, *n.info, image_nodes_, nodes_.size());
    }
    if (w.balanced_resource != 0 || w.least_requested != 0 || w.most_requested != 0) {
      const ResourceScores r = ResourceScoresOf(n, req);
      points += w.balanced_resource * r.balanced + w.least_requested * r.least + w.most_requested * r.most;
    }
    return points * kPointUnits;
  }

  // Whether the task's search must score its feasible nodes together (normalized scores).
  bool NeedsNormalizedScores(const TaskInfo& task) const {
    const NodeOrderWeights& w = o_.node_order;
    const k8s::PodSpec& spec = task.pod().spec;
    return (w.node_affinity != 0 && !spec.node_affinity().preferred.empty()) ||
           (w.taint_toleration != 0 && any_prefer_no_schedule_) ||
           (w.pod_affinity != 0 && constraints_->HasInterPodScore()) ||
           (w.pod_topology_spread != 0 && constraints_->HasSpreadScore());
  }

  // The best of the candidates (in search order; the first of equal totals wins) once the
  // normalized scores are added to their base scores.
  NodeSlot* BestNormalized(const TaskInfo& task) {
    const NodeOrderWeights& w = o_.node_order;
    const k8s::PodSpec& spec = task.pod().spec;
    const size_t n = cands_.size();
    std::vector<int64_t> affinity(n, 0), taints(n, 0), interpod(n, 0);
    std::vector<double> spread(n, 0);
    int64_t max_affinity = 0, max_taints = 0, min_interpod = 0, max_interpod = 0;
    double min_spread = 0, max_spread = 0;
    bool spread_seen = false;
    const bool do_affinity = w.node_affinity != 0 && !spec.node_affinity().preferred.empty();
    const bool do_taints = w.taint_toleration != 0 && any_prefer_no_schedule_;
    const bool do_interpod = w.pod_affinity != 0 && constraints_->HasInterPodScore();
    const bool do_spread = w.pod_topology_spread != 0 && constraints_->HasSpreadScore();
    for (size_t i = 0; i < n; ++i) {
      const NodeSlot& slot = *cands_[i].first;
      const k8s::Node* node = slot.info->node().get();
      if (do_affinity && node != nullptr) affinity[i] = placement::PreferredNodeAffinityWeight(spec, *node);
      if (do_taints && node != nullptr)
        taints[i] = placement::IntolerablePreferNoScheduleTaints(spec.tolerations, *node);
      if (do_interpod) interpod[i] = constraints_->InterPodScore(IndexOf(slot));
      if (do_spread) spread[i] = constraints_->SpreadScore(IndexOf(slot));
      max_affinity = std::max(max_affinity, affinity[i]);
      max_taints = std::max(max_taints, taints[i]);
      if (i == 0 || interpod[i] < min_interpod) min_interpod = interpod[i];
      if (i == 0 || interpod[i] > max_interpod) max_interpod = interpod[i];
      if (spread[i] >= 0) {
        if (!spread_seen || spread[i] < min_spread) min_spread = spread[i];
        if (!spread_seen || spread[i] > max_spread) max_spread = spread[i];
        spread_seen = true;
      }
    }
    NodeSlot* best = nullptr;
    int64_t best_total = 0;
    for (size_t i = 0; i < n; ++i) {
      int64_t points = 0;
      if (do_affinity && max_affinity > 0) points += w.node_affinity * (100 * affinity[i] / max_affinity);
      if (do_taints)
        points += w.taint_toleration * (max_taints > 0 ? 100 - 100 * taints[i] / max_taints : 100);
      if (do_interpod && max_interpod > min_interpod)
        points += w.pod_affinity * (100 * (interpod[i] - min_interpod) / (max_interpod - min_interpod));
      if (do_spread && spread[i] >= 0) {
        const double s = max_spread > 0 ? 100 * (max_spread + min_spread - spread[i]) / max_spread : 100;
        points += w.pod_topology_spread * static_cast<int64_t>(s);
      }
      const int64_t total = cands_[i].second + points * kPointUnits;
      if (best == nullptr || total > best_total) {
        best = cands_[i].first;
        best_total = total;
      }
    }
    return best;
  }

  // One search's scoring: the candidate's base score (strategy and absolute scores); with
  // normalized scores the candidates are kept and BestNormalized picks among them.
  [[gnu::always_inline]] void Consider(const TaskInfo& task, NodeSlot& n, const Resource& req,
                                       bool normalized, NodeSlot** best, int64_t* best_score) {
    int64_t s = ScoreNode(n, req, o_, scalar_weights_) * o_.node_order.strategy;
    if (absolute_scores_) s += AbsoluteScore(task, n, req);
    if (normalized) {
      cands_.emplace_back(&n, s);
      return;
    }
    if (*best == nullptr || s > *best_score) {
      *best = &n;
      *best_score = s;
    }
  }

  // Counts a placement of the session on `n` (resources, pods, constraints); Unplace reverts
  // its resources and pods (the constraints revert by Constraints::Rollback).
  void Place(const TaskInfo& task, NodeSlot& n, const Resource& req, bool pipelined) {
    if (!pipelined) n.avail.SubUnchecked(req);
    n.future.SubUnchecked(req);
    --n.pods_free;
    constraints_->Place(task, IndexOf(n));
  }
  static void Unplace(NodeSlot& n, const Resource& req, bool pipelined) {
    if (!pipelined) n.avail.Add(req);
    n.future.Add(req);
    ++n.pods_free;
  }

  QueueSlot& QueueFor(const std::string& name) {
    auto [it, inserted] = queues_.try_emplace(name);
    QueueSlot& q = it->second;
    if (inserted) {
      q.name = name;
      if (auto qi = snap_.queues.find(name); qi != snap_.queues.end()) {
        const QueueInfo& info = qi->second;
        q.weight = std::max<int32_t>(1, info.weight);
        q.closed = info.state == QueueState::kClosed || info.state == QueueState::kClosing;
        q.has_capability = info.has_capability;
        q.capability = WithoutPods(info.capability);
      }
    }
    return q;
  }

  void OpenJobs() {
    jobs_.reserve(jobs_by_uid_.size());
    std::vector<const TaskInfo*> pending;
    for (size_t position = 0; position < jobs_by_uid_.size(); ++position) {
      const JobInfo& job = *jobs_by_uid_[position];
      if (!job.pod_group()) continue;  // the cache only snapshots jobs with one; be safe anyway
      const std::string& qname = snap_.queues.count(job.queue()) ? job.queue() : o_.default_queue;
      QueueSlot& q = QueueFor(qname);
      const Resource allocated = WithoutPods(job.allocated());
      q.allocated.Add(allocated);
      q.request.Add(allocated);

      pending.clear();
      if (job.CountWithStatus(TaskStatus::kPending) > 0) {
        for (const auto& [_, t] : job.tasks()) {
          if (t.status == TaskStatus::kPending && !t.scheduling_gated) pending.push_back(&t);
        }
      }
      if (pending.empty()) continue;
      JobSlot& js = jobs_.emplace_back();
      js.job = &job;
      js.position = static_cast<uint32_t>(position);
      js.queue = &q;
      js.priority = job.priority();
      js.min_available = job.min_available();
      js.creation_timestamp = job.creation_timestamp();
      js.ready_base = job.ReadyTaskNum();
      js.pending_count = static_cast<int32_t>(pending.size());
      js.gated = o_.require_inqueue && job.IsPending();
      if (js.gated) {
        // Not enqueued: never visited, so only its count and its demand (for deserved) count.
        for (const TaskInfo* t : pending) q.request.Add(WithoutPods(t->resreq()));
        continue;
      }
      std::sort(pending.begin(), pending.end(), [](const TaskInfo* a, const TaskInfo* b) {
        if (a->priority != b->priority) return a->priority > b->priority;
        if (a->meta->creation_timestamp() != b->meta->creation_timestamp()) {
          return a->meta->creation_timestamp() < b->meta->creation_timestamp();
        }
        return a->uid() < b->uid();
      });
      js.first = tasks_.size();
      for (const TaskInfo* t : pending) {
        tasks_.push_back(t);
        reqs_.push_back(WithoutPods(t->resreq()));
        q.request.Add(reqs_.back());
      }
    }
    // The arrays are complete: the views may point into them now.
    for (JobSlot& js : jobs_) {
      if (js.gated) continue;
      const size_t n = static_cast<size_t>(js.pending_count);
      js.pending = std::span<const TaskInfo* const>(tasks_.data() + js.first, n);
      js.reqs = std::span<const Resource>(reqs_.data() + js.first, n);
    }
  }

  void ComputeDeserved() {
    std::vector<QueueSlot*> qs;
    std::vector<int32_t> weights;
    std::vector<Resource> caps;
    for (auto& [name, q] : queues_) {
      Resource cap = q.request;
      if (q.has_capability) {
        if (q.capability.milli_cpu() > 0)
          cap.set_milli_cpu(std::min(cap.milli_cpu(), q.capability.milli_cpu()));
        if (q.capability.memory() > 0) cap.set_memory(std::min(cap.memory(), q.capability.memory()));
        for (const auto* s = q.request.scalars_begin(); s != q.request.scalars_end(); ++s) {
          if (q.capability.Has(s->id)) cap.SetScalar(s->id, std::min(s->value, q.capability.Get(s->id)));
        }
      }
      qs.push_back(&q);
      weights.push_back(q.weight);
      caps.push_back(std::move(cap));
    }
    std::vector<Resource> deserved = WaterFill(WithoutPods(snap_.total_allocatable()), weights, caps);
    for (size_t i = 0; i < qs.size(); ++i) {
      qs[i]->deserved = std::move(deserved[i]);
      qs[i]->share = Share(qs[i]->allocated, qs[i]->deserved);
    }
  }

  NodeSlot* PickNode(const TaskInfo& task, const Resource& req, std::string_view* failure) {
    // Node availability only shrinks during a session except when a visit is discarded, so
    // a plain task (no selector, affinity, tolerations or inter-pod constraint) that fit
    // nowhere fits nowhere until the next discard: remember the answer by request (Visit
    // clears it on a discard).
    if (use_domain_) return PickNodeInDomain(task, req, failure);
    const k8s::PodSpec& spec = task.pod().spec;
    const bool cons = constraints_->Prepare(task);
    const bool plain = spec.node_selector.empty() && spec.tolerations.empty() &&
                       !placement::HasRequiredNodeAffinity(spec) && !cons;
    if (plain) {
      ShapeKey(req, &shape_);
      if (auto it = unplaceable_.find(shape_); it != unplaceable_.end()) {
        *failure = it->second;
        return nullptr;
      }
    }
    const bool normalized = NeedsNormalizedScores(task);
    cands_.clear();
    NodeSlot* best = nullptr;
    int64_t best_score = 0;
    std::vector<std::string> reasons;
    const size_t total = nodes_.size();
    const size_t want = FeasibleNodesToFind();
    // Whole scans start at the first name (ties keep the smaller name); sampled ones where
    // the previous search stopped, so that placements spread over the cluster.
    const size_t start = want >= total ? 0 : next_start_;
    auto check = [&](size_t i) {
      NodeSlot& n = nodes_[i];
      const size_t before = reasons.size();
      CheckNode(task, req, n, pipeline_pass_ ? n.future : n.avail, cons ? &*constraints_ : nullptr,
                static_cast<uint32_t>(i), &reasons);
      if (reasons.size() != before) return false;
      Consider(task, n, req, normalized, &best, &best_score);
      return true;
    };
    size_t feasible = 0;
    if (const std::vector<uint32_t>* only = NodesMatchingAffinity(task)) {
      // Only the nodes that pass the task's node affinity, in the order the whole scan would
      // visit them (it would stop at the same node, or, scanning everything, where it began).
      const size_t m = only->size(), first = static_cast<size_t>(
                                         std::lower_bound(only->begin(), only->end(), start) - only->begin());
      size_t c = 0, last = start;
      for (; c < m && feasible < want; ++c) {
        last = (*only)[(first + c) % m];
        if (check(last)) ++feasible;
      }
      if (normalized && !cands_.empty()) best = BestNormalized(task);
      if (total > 0) next_start_ = c == m && feasible < want ? start : (last + 1) % total;
      if (best != nullptr) return best;
      // No fit: the whole scan below gives every node's reason.
      reasons.clear();
      cands_.clear();
      feasible = 0;
    }
    size_t scanned = 0;
    for (; scanned < total && feasible < want; ++scanned) {
      if (check((start + scanned) % total)) ++feasible;
    }
    if (normalized && !cands_.empty()) best = BestNormalized(task);
    if (total > 0) next_start_ = (start + scanned) % total;
    if (best == nullptr) {
      *failure = Keep(FitErrorText(nodes_.size(), reasons));
      if (plain && unplaceable_.emplace(shape_, *failure).second) unplaceable_this_visit_.push_back(shape_);
    }
    return best;
  }

  // The nodes (indices into nodes_, ascending) that pass the task's nodeSelector and required
  // node affinity; null when it has neither. Computed once per distinct selector and affinity
  // in a session (a gang's pods share theirs).
  const std::vector<uint32_t>* NodesMatchingAffinity(const TaskInfo& task) {
    const k8s::PodSpec& spec = task.pod().spec;
    if (spec.node_selector.empty() && !placement::HasRequiredNodeAffinity(spec)) return nullptr;
    std::string& key = affinity_key_;
    key.clear();
    AppendNodeAffinityKey(spec, &key);
    auto [it, inserted] = affinity_nodes_.try_emplace(key);
    if (inserted) {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        const k8s::Node* node = nodes_[i].info->node().get();
        if (node == nullptr || placement::MatchesNodeAffinity(spec, *node))
          it->second.push_back(static_cast<uint32_t>(i));
      }
    }
    return &it->second;
  }

  // The request's identity for unplaceable_ (pipeline pass apart): cpu, memory and every
  // scalar with its value, as raw bytes, written into `key` (reused: no allocation per search).
  void ShapeKey(const Resource& req, std::string* key) const {
    key->clear();
    auto put = [key](const auto& v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    key->push_back(pipeline_pass_ ? 'p' : 'a');
    put(req.milli_cpu());
    put(req.memory());
    for (const auto* x = req.scalars_begin(); x != req.scalars_end(); ++x) {
      put(x->id);
      put(x->value);
    }
  }

  // A text that lives as long as the session (fit errors and reasons are views of it).
  std::string_view Keep(std::string text) { return texts_.emplace_back(std::move(text)); }

  void SetFitError(JobSlot& j, const TaskInfo* task, std::string_view text) {
    for (int32_t i = j.fits; i >= 0; i = fits_[static_cast<size_t>(i)].next) {
      if (fits_[static_cast<size_t>(i)].task == task) {
        fits_[static_cast<size_t>(i)].text = text;
        return;
      }
    }
    fits_.push_back({task, text, j.fits});
    j.fits = static_cast<int32_t>(fits_.size() - 1);
  }

  // One turn of `j`: see the header for the gang rule. Returns true when the job goes back
  // into its queue.
  bool Visit(JobSlot& j) {
    QueueSlot& q = *j.queue;
    const JobInfo& job = *j.job;
    if (!j.tried) {
      j.tried = true;
      if (job.ValidTaskNum() < job.min_available()) {
        j.reason = Keep(fmt::format("not enough valid tasks for gang-scheduling, valid: {}, min: {}",
                                    job.ValidTaskNum(), job.min_available()));
        return false;
      }
    }
    // Network topology: this visit's node search stays inside one HyperNode (or waits).
    if (!ChooseTopologyDomain(j)) return false;
    struct Tentative {
      size_t index;
      NodeSlot* node;
      bool pipelined;
    };
    std::vector<Tentative> tentative;
    const size_t mark = constraints_->Mark();
    unplaceable_this_visit_.clear();
    const size_t start = j.next;
    bool requeue = false;
    std::string_view failure;
    while (j.next < j.pending.size()) {
      const TaskInfo& t = *j.pending[j.next];
      const Resource& req = j.reqs[j.next];
      if (std::string over = q.CapabilityExceeded(req); !over.empty()) {
        auto [it, inserted] = q.capability_texts.try_emplace(std::move(over));
        if (inserted) it->second = Keep(fmt::format("queue {} capability reached ({})", q.name, it->first));
        failure = it->second;
        SetFitError(j, &t, failure);
        break;
      }
      NodeSlot* n = PickNode(t, req, &failure);
      bool pipelined = false;
      if (n == nullptr && o_.pipeline) {  // onto resources being released
        std::string_view unused;
        pipeline_pass_ = true;
        n = PickNode(t, req, &unused);
        pipeline_pass_ = false;
        pipelined = n != nullptr;
      }
      if (n == nullptr) {
        SetFitError(j, &t, failure);
        break;
      }
      failure = {};
      Place(t, *n, req, pipelined);
      q.allocated.Add(req);
      tentative.push_back({j.next, n, pipelined});
      ++j.next;
      if (j.ready_base + j.committed + static_cast<int32_t>(tentative.size()) >= j.min_available) {
        int32_t bound = 0;
        for (const Tentative& x : tentative) bound += x.pipelined ? 0 : 1;
        // Ready without the pipelined tasks: bind the rest; otherwise reserve the whole visit.
        const bool ready = j.ready_base + j.committed + bound >= j.min_available;
        for (const Tentative& x : tentative) {
          const TaskInfo& pt = *j.pending[x.index];
          plan_.placements.push_back(
              {job.uid(), pt.uid(), std::string(pt.key()), x.node->info->name(), x.pipelined || !ready});
        }
        const int32_t reserved =
            ready ? static_cast<int32_t>(tentative.size()) - bound : static_cast<int32_t>(tentative.size());
        j.committed += static_cast<int32_t>(tentative.size()) - reserved;
        j.pipelined += reserved;
        plan_.pipelined += reserved;
        tentative.clear();
        requeue = reserved == 0 && j.next < j.pending.size();
        break;
      }
    }
    if (!tentative.empty()) {  // the gang is not satisfied: undo this visit
      for (const Tentative& x : tentative) {
        Unplace(*x.node, j.reqs[x.index], x.pipelined);
        q.allocated.SubUnchecked(j.reqs[x.index]);
      }
      constraints_->Rollback(mark);
      plan_.discarded += static_cast<int64_t>(tentative.size());
      // Resources came back to where they were when the visit began: what fit nowhere before
      // it still fits nowhere (availability only shrank since), what the visit itself found
      // may fit again.
      for (const std::string& shape : unplaceable_this_visit_) unplaceable_.erase(shape);
      j.next = start;
      if (failure.empty()) {
        failure = Keep(fmt::format("only {} schedulable pending tasks, gang needs {}", j.pending.size(),
                                   j.min_available - j.ready_base - j.committed));
      }
    }
    q.share = Share(q.allocated, q.deserved);
    if (!failure.empty()) j.reason = failure;
    use_domain_ = false;
    return requeue;
  }

  // ------------------------------------------------ network topology (session/topology.h)

  // Restricts the node search of `j`'s visit to the HyperNode its gang should go to: the
  // lowest allowed tier where some HyperNode fits the gang, and there the best-scoring one.
  // False (with the job's reason set) when a hard-mode job must wait.
  bool ChooseTopologyDomain(JobSlot& j) {
    use_domain_ = false;
    const TopologyInfo& topo = *snap_.topology;
    const auto& pg = j.job->pod_group();
    if (!pg || !pg->spec.network_topology() || topo.empty()) return true;
    const bool hard = pg->spec.network_topology()->mode != "soft";
    std::string error;
    auto c = JobTopologyConstraint(*j.job, topo, &error);
    if (!c || !topo.ready) {
      if (!hard) return true;
      j.reason = c ? std::string_view("network topology is not ready: a HyperNode update is refused")
                   : Keep(std::move(error));
      return false;
    }
    const std::string allocated = JobAllocatedHyperNode(*j.job, topo);
    // Domains in the same state give the same dry run when the tasks do not look at node
    // labels: answers are shared by domain state (most racks of a quiet cluster look alike).
    bool share = true;
    for (size_t i = j.next; i < j.pending.size() && share; ++i) {
      const TaskInfo& t = *j.pending[i];
      share = t.pod().spec.node_selector.empty() && !placement::HasRequiredNodeAffinity(t.pod().spec) &&
              !constraints_->MayConstrain(t);
    }
    std::map<std::vector<int64_t>, std::optional<int64_t>> answers;
    std::vector<int64_t> key;
    for (const auto& tier : CandidateTiers(topo, *c, allocated)) {
      const HyperNodeInfo* best = nullptr;
      int64_t best_score = 0;
      for (const HyperNodeInfo* h : tier) {
        SetDomain(*h);
        std::optional<int64_t> score;
        if (share && DomainKey(&key)) {
          auto [it, inserted] = answers.try_emplace(key);
          if (inserted) it->second = DryRun(j);
          score = it->second;
        } else {
          score = DryRun(j);
        }
        if (score && (best == nullptr || *score > best_score)) {
          best = h;
          best_score = *score;
        }
      }
      if (best != nullptr) {
        SetDomain(*best);
        return true;
      }
    }
    use_domain_ = false;
    if (!hard) return true;
    j.reason = Keep(
        allocated.empty()
            ? fmt::format("network topology: no HyperNode of tier <= {} fits the gang", c->highest_tier)
            : fmt::format("network topology: no HyperNode of tier <= {} holding HyperNode {} fits the gang",
                          c->highest_tier, allocated));
    return false;
  }

  void SetDomain(const HyperNodeInfo& h) {
    if (node_index_.empty()) {
      for (NodeSlot& n : nodes_) node_index_.emplace(n.info->name(), &n);
    }
    domain_.clear();
    for (const std::string& name : h.nodes) {
      if (auto it = node_index_.find(name); it != node_index_.end()) domain_.push_back(it->second);
    }
    use_domain_ = true;
  }

  // The domain's state as far as CheckNode and ScoreNode see it without labels; false when
  // a node has taints or is unschedulable (its answer is not shared).
  bool DomainKey(std::vector<int64_t>* key) const {
    if (any_images_ && o_.node_order.image_locality != 0) return false;  // scores differ by node
    key->clear();
    auto add = [key](const Resource& r) {
      key->push_back(r.milli_cpu());
      key->push_back(r.memory());
      for (const auto* x = r.scalars_begin(); x != r.scalars_end(); ++x) {
        key->push_back(x->id);
        key->push_back(x->value);
      }
      key->push_back(-1);
    };
    for (const NodeSlot* n : domain_) {
      const k8s::Node* node = n->info->node().get();
      if (node != nullptr && (node->spec.unschedulable || !node->spec.taints.empty())) return false;
      add(n->allocatable);
      add(n->avail);
      key->push_back(n->limit_pods ? n->pods_free : -1);
    }
    return true;
  }

  // The score of placing the visit's next tasks inside the domain until the gang is ready
  // (one task for a job already ready); nullopt when they do not fit. Changes nothing.
  std::optional<int64_t> DryRun(const JobSlot& j) {
    std::vector<std::pair<NodeSlot*, size_t>> placed;
    const size_t mark = constraints_->Mark();
    const int32_t need = std::max(1, j.job->min_available() - j.ready_base - j.committed);
    int64_t score = 0;
    bool fits = false;
    std::string_view failure;
    for (size_t i = j.next; i < j.pending.size(); ++i) {
      NodeSlot* n = PickNodeInDomain(*j.pending[i], j.reqs[i], &failure);
      if (n == nullptr) break;
      score += ScoreNode(*n, j.reqs[i], o_, scalar_weights_);
      Place(*j.pending[i], *n, j.reqs[i], false);
      placed.emplace_back(n, i);
      if (static_cast<int32_t>(placed.size()) >= need) {
        fits = true;
        break;
      }
    }
    for (const auto& [n, i] : placed) Unplace(*n, j.reqs[i], false);
    constraints_->Rollback(mark);
    if (!fits) return std::nullopt;
    return score;
  }

  // PickNode over the domain's nodes only: every node scored, in name order.
  NodeSlot* PickNodeInDomain(const TaskInfo& task, const Resource& req, std::string_view* failure) {
    const bool cons = constraints_->Prepare(task);
    const bool normalized = NeedsNormalizedScores(task);
    cands_.clear();
    NodeSlot* best = nullptr;
    int64_t best_score = 0;
    std::vector<std::string> reasons;
    for (NodeSlot* n : domain_) {
      const size_t before = reasons.size();
      CheckNode(task, req, *n, pipeline_pass_ ? n->future : n->avail, cons ? &*constraints_ : nullptr,
                IndexOf(*n), &reasons);
      if (reasons.size() != before) continue;
      Consider(task, *n, req, normalized, &best, &best_score);
    }
    if (normalized && !cands_.empty()) best = BestNormalized(task);
    if (best == nullptr) *failure = Keep(FitErrorText(domain_.size(), reasons));
    return best;
  }

  void Loop() {
    std::priority_queue<QueueSlot*, std::vector<QueueSlot*>, QueueAfter> order;
    for (JobSlot& j : jobs_) {
      if (j.queue->closed) {
        j.reason = QueueText(j.queue->closed_text, "queue {} is closed", j.queue->name);
        j.closed = true;
        continue;
      }
      if (j.gated) {
        j.reason =
            "pod group is Pending: not enqueued (queue's deserved share and overcommitted idle reached)";
        j.closed = true;
        continue;
      }
      j.queue->jobs.push(&j);
    }
    for (auto& [name, q] : queues_) {
      if (!q.closed && !q.jobs.empty()) order.push(&q);
    }
    while (!order.empty()) {
      QueueSlot* q = order.top();
      order.pop();
      if (q->jobs.empty()) continue;
      const bool overused = q->Overused();
      if (overused || (o_.share_limit && q->share >= 1)) {
        while (!q->jobs.empty()) {
          JobSlot* j = q->jobs.top();
          q->jobs.pop();
          j->reason = overused ? QueueText(q->overused_text,
                                           "queue {} is overused (allocated reached deserved)", q->name)
                               : QueueText(q->full_text, "queue {} reached its deserved share", q->name);
        }
        continue;
      }
      JobSlot* j = q->jobs.top();
      q->jobs.pop();
      if (o_.share_limit && OvershootsByMoreThanHalf(*q, *j)) {
        j->reason = QueueText(
            q->overshoot_text,
            "queue {}: the job would take it past its deserved share by more than half its request", q->name);
        j->closed = true;
        order.push(q);
        continue;
      }
      if (Visit(*j)) {
        q->jobs.push(j);
      } else {
        j->closed = true;
      }
      order.push(q);
    }
  }

  // SessionOptions::share_limit, rounding to the nearest job: the job's next gang (its
  // tasks still needed for minAvailable, or its next task when ready) would take its queue
  // past deserved by more than half of their request in some dimension the queue already
  // holds some of.
  bool OvershootsByMoreThanHalf(const QueueSlot& q, const JobSlot& j) const {
    int32_t want = std::max<int32_t>(1, j.min_available - j.ready_base - j.committed);
    Resource need;
    for (size_t i = j.next; i < j.pending.size() && want > 0; ++i, --want) need.Add(j.reqs[i]);
    auto over = [](int64_t n, int64_t a, int64_t d) { return n > 0 && a > 0 && a + n > d + n / 2; };
    if (over(need.milli_cpu(), q.allocated.milli_cpu(), q.deserved.milli_cpu())) return true;
    if (over(need.memory(), q.allocated.memory(), q.deserved.memory())) return true;
    for (const auto* x = need.scalars_begin(); x != need.scalars_end(); ++x)
      if (x->id != kPodsId && over(x->value, q.allocated.Get(x->id), q.deserved.Get(x->id))) return true;
    return false;
  }

  // A queue's reason for its jobs, formatted once per session.
  std::string_view QueueText(std::string_view& cached, fmt::format_string<const std::string&> text,
                             const std::string& queue) {
    if (cached.empty()) cached = Keep(fmt::format(text, queue));
    return cached;
  }

  AllocationPlan Close() {
    // Written over the reused plan's outcomes (their strings keep their capacity: a job's
    // outcome that repeats the last session's costs no allocation). jobs_ is in uid order.
    std::vector<JobOutcome>& outs = plan_.jobs;
    size_t n = 0;
    std::vector<const TaskFit*> fits;
    for (JobSlot& j : jobs_) {
      if (n == outs.size()) outs.emplace_back();
      JobOutcome& out = outs[n++];
      out.job = j.job->uid();
      out.queue = j.queue->name;
      out.pending = j.pending_count;
      out.placed = j.committed;
      out.pipelined = j.pipelined;
      out.ready = j.Ready();
      out.reason.clear();
      const int32_t left = out.pending - out.placed - out.pipelined;
      if (left > 0) {
        // "<left>/<pending> pending tasks not placed: <why>" or "<left>/<tasks> tasks in gang
        // unschedulable: <why>", appended piece by piece (no format string parsed per job).
        const std::string_view why = j.reason.empty() ? std::string_view("not tried") : j.reason;
        const fmt::format_int l(left);
        const fmt::format_int of(out.ready ? static_cast<size_t>(out.pending) : j.job->tasks().size());
        const std::string_view what =
            out.ready ? " pending tasks not placed: " : " tasks in gang unschedulable: ";
        out.reason.reserve(l.size() + 1 + of.size() + what.size() + why.size());
        out.reason.append(l.data(), l.size())
            .append(1, '/')
            .append(of.data(), of.size())
            .append(what)
            .append(why);
      }
      fits.clear();
      for (int32_t i = j.fits; i >= 0; i = fits_[static_cast<size_t>(i)].next)
        fits.push_back(&fits_[static_cast<size_t>(i)]);
      // By task uid (unique in a job).
      std::sort(fits.begin(), fits.end(),
                [](const TaskFit* a, const TaskFit* b) { return a->task->uid() < b->task->uid(); });
      out.task_fit_errors.resize(fits.size());
      for (size_t i = 0; i < fits.size(); ++i) {
        out.task_fit_errors[i].first = fits[i]->task->uid();
        out.task_fit_errors[i].second = fits[i]->text;
      }
    }
    outs.resize(n);
    for (const auto& [name, q] : queues_) {
      QueueOutcome out;
      out.name = name;
      out.weight = q.weight;
      out.request = q.request;
      out.deserved = q.deserved;
      out.allocated = q.allocated;
      out.share = Share(q.allocated, q.deserved);
      out.overused = q.Overused();
      out.closed = q.closed;
      plan_.queues.push_back(std::move(out));
    }
    return std::move(plan_);
  }

  const ClusterInfo& snap_;
  const SessionOptions& o_;
  std::vector<std::pair<uint32_t, int64_t>> scalar_weights_;
  std::vector<NodeSlot> nodes_;
  std::map<std::string, QueueSlot> queues_;  // by name: deterministic iteration
  std::vector<JobSlot> jobs_;                // reserved up front: QueueSlot heaps hold pointers
  std::span<const JobInfo* const> jobs_by_uid_;
  std::vector<const TaskInfo*> tasks_;  // the job slots' pending tasks, job after job
  std::vector<Resource> reqs_;          // their requests without pods
  std::vector<TaskFit> fits_;           // the job slots' fit errors
  std::deque<std::string> texts_;       // fit errors and reasons (stable addresses: slots view them)
  std::unordered_map<std::string, std::string_view> unplaceable_;  // ShapeKey → fit error
  std::vector<std::string> unplaceable_this_visit_;                // its entries added by the current visit
  std::string shape_;                                              // ShapeKey's buffer
  size_t next_start_ = 0;       // where the next sampled node search begins
  bool pipeline_pass_ = false;  // PickNode checks future idle instead of idle
  // Network topology: while use_domain_, node searches cover only domain_ (name order).
  bool use_domain_ = false;
  std::vector<NodeSlot*> domain_;
  std::unordered_map<std::string_view, NodeSlot*> node_index_;  // built on first use
  // Ports and inter-pod constraints over nodes_ (indexed as nodes_), with the placements.
  std::optional<Constraints> constraints_;
  std::vector<std::pair<NodeSlot*, int64_t>> cands_;      // a normalized search's feasible nodes
  bool any_prefer_no_schedule_ = false;                   // some node has a PreferNoSchedule taint
  bool absolute_scores_ = false;                          // some AbsoluteScore weight applies
  bool any_images_ = false;                               // some node lists images
  std::unordered_map<std::string, int32_t> image_nodes_;  // image name → nodes holding it
  // NodesMatchingAffinity's answers by selector and affinity, and its key's buffer.
  std::unordered_map<std::string, std::vector<uint32_t>> affinity_nodes_;
  std::string affinity_key_;
  // A score point (0..100 per plugin) in the strategy score's units (0..1e6).
  static constexpr int64_t kPointUnits = 10000;

  size_t FeasibleNodesToFind() const {
    const size_t total = nodes_.size();
    if (total <= o_.min_feasible_nodes) return total;
    int64_t pct = o_.percentage_of_nodes_to_find;
    if (pct <= 0) pct = std::max<int64_t>(5, 50 - static_cast<int64_t>(total) / 125);
    pct = std::min<int64_t>(pct, 100);
    const size_t n = static_cast<size_t>(static_cast<int64_t>(total) * pct / 100);
    return std::min(total, std::max(o_.min_feasible_nodes, n));
  }
  AllocationPlan plan_;
};

}  // namespace

std::vector<Resource> WaterFill(const Resource& total, const std::vector<int32_t>& weights,
                                const std::vector<Resource>& caps) {
  const size_t n = weights.size();
  std::vector<Resource> out(n);
  for (const Dim d : DimsOf(total)) {
    int64_t remaining = std::max<int64_t>(0, GetDim(total, d));
    std::vector<size_t> active;
    for (size_t i = 0; i < n; ++i) {
      SetDim(out[i], d, 0);
      if (GetDim(caps[i], d) > 0) active.push_back(i);
    }
    // Each round fixes every queue whose cap is below its share at the current level; the
    // level only rises as capped queues leave, so a fixed queue stays capped.
    while (!active.empty() && remaining > 0) {
      int64_t total_weight = 0;
      for (size_t i : active) total_weight += std::max<int32_t>(1, weights[i]);
      auto share_of = [&](size_t i) {
        return static_cast<int64_t>(static_cast<__int128>(remaining) * std::max<int32_t>(1, weights[i]) /
                                    total_weight);
      };
      std::vector<size_t> still;
      int64_t taken = 0;
      for (size_t i : active) {
        const int64_t cap = GetDim(caps[i], d);
        if (cap <= share_of(i)) {
          SetDim(out[i], d, cap);
          taken += cap;
        } else {
          still.push_back(i);
        }
      }
      if (still.size() == active.size()) {
        for (size_t i : active) SetDim(out[i], d, share_of(i));
        break;
      }
      remaining -= taken;
      active = std::move(still);
    }
  }
  return out;
}

AllocationPlan Allocate(const ClusterInfo& snapshot, const SessionOptions& options) {
  std::vector<const JobInfo*> jobs;
  jobs.reserve(snapshot.jobs().size());
  for (const auto& [id, job] : snapshot.jobs()) jobs.push_back(job.get());
  std::sort(jobs.begin(), jobs.end(), [](const JobInfo* a, const JobInfo* b) { return a->uid() < b->uid(); });
  return Allocate(snapshot, options, jobs, AllocationPlan());
}

AllocationPlan Allocate(const ClusterInfo& snapshot, const SessionOptions& options,
                        std::span<const JobInfo* const> jobs_by_uid, AllocationPlan reuse,
                        std::vector<uint32_t>* positions) {
  return Allocator(snapshot, options, jobs_by_uid, std::move(reuse)).Run(positions);
}

std::string NodePredicateFailure(const TaskInfo& task, const NodeInfo& node, const VolumeInfo* volumes) {
  NodeSlot n;
  n.info = &node;
  std::vector<std::string> reasons;
  CheckNode(task, Resource(), n, n.avail, nullptr, 0, &reasons);
  if (!reasons.empty()) return reasons.front();
  if (volumes == nullptr || task.meta->pvcs().empty()) return "";
  std::vector<const k8s::PersistentVolume*> bound;
  std::string why = placement::ResolveClaims(task.meta->pvcs(), *volumes, &bound);
  if (why.empty() && node.node() != nullptr) why = placement::VolumeNodeConflict(bound, *node.node());
  return why;
}

}  // namespace volcache
