#pragma once
// The session's inter-pod and per-node constraint state: kube-scheduler v1.24's NodePorts,
// InterPodAffinity and PodTopologySpread filters (and the scores that need the same counts),
// over one snapshot, with the allocator's tentative placements counted as they are made, so
// that a gang is placed all-or-nothing against its own constraints too (docs/SESSION.md
// "Placement constraints").
//
// How it stays cheap: nothing is computed for a task that carries no such constraint and that
// no existing pod's required anti-affinity selects. Counts are kept per distinct term (its
// namespaces, selector and topology key) and built on first use, from a label index of the
// snapshot's pods, then updated by every placement (Place) and reverted by Rollback; each
// topology key's values are numbered once per session, so a node's check is an array read.
//
//   * NodePorts: the node's used host ports (NodeInfo::used_ports) and this session's.
//   * InterPodAffinity: the task's required affinity (every term satisfied in the node's
//     domain by pods that match all the terms; the first pod of a group that matches its own
//     terms may go anywhere the topology labels exist while no pod matches), its required
//     anti-affinity (no matching pod in the node's domain), and existing pods' required
//     anti-affinity against it (symmetry).
//   * PodTopologySpread (DoNotSchedule): per constraint, the pods matching its selector in the
//     task's namespace (not terminating), counted over the nodes that pass the task's node
//     affinity (nodeAffinityPolicy Honor, the default) and, with nodeTaintsPolicy Honor, its
//     tolerations, and that carry every constraint's topology key; skew = count in the node's
//     domain + 1 (when the task matches) − the minimum over domains (0 when there are fewer
//     domains than minDomains) must be <= maxSkew.
//   * VolumeBinding and VolumeZone (api/placement.h): the task's claims are resolved once per
//     task against the snapshot's volumes; a claim that cannot be used fails every node
//     (PodReason, kube-scheduler's PreFilter), a bound claim's volume checks each node.
//
// Thread-safety: one session's state, single-threaded.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/node_info.h"
#include "api/task_info.h"
#include "api/volume_info.h"

namespace volcache {

// Appends a canonical text of the spec's nodeSelector and required node affinity: two specs
// with the same text pass the same nodes.
void AppendNodeAffinityKey(const k8s::PodSpec& spec, std::string* out);

class Constraints {
 public:
  // `nodes`: the session's nodes, indexed as the caller indexes them; `volumes`: the
  // snapshot's (null: none), outliving this object.
  explicit Constraints(std::vector<const NodeInfo*> nodes, const VolumeInfo* volumes = nullptr);
  ~Constraints();
  Constraints(const Constraints&) = delete;
  Constraints& operator=(const Constraints&) = delete;

  // Prepares the checks and scores of `task` for the node search that follows. False when
  // there is nothing to check (Check would always answer ""), so a plain task costs nothing.
  bool Prepare(const TaskInfo& task);
  // The first of the prepared task's constraints that `node` fails, in kube-scheduler's
  // wording; "" when it passes. CheckPorts is NodePorts (it runs before the resource check),
  // CheckPods the inter-pod filters (after it), as kube-scheduler orders its filters.
  std::string_view CheckPorts(uint32_t node) const;
  std::string_view CheckPods(uint32_t node) const;
  // Why the prepared task fits no node whatever the node (its volume claims); "" when none.
  // kube-scheduler's PreFilter: checked before any other predicate.
  std::string_view PodReason() const { return pod_reason_; }

  // Scores of the prepared task that kube-scheduler normalizes over the feasible nodes
  // (0 when not applicable): preferred pod affinity minus anti-affinity, weighted by the
  // terms' weights and the matching pods in the node's domain; and the ScheduleAnyway spread
  // (matching pods in the node's domains, weighted by log(domains + 2)). `has_*` say whether
  // the prepared task has any.
  bool HasInterPodScore() const { return !preferred_.empty(); }
  bool HasSpreadScore() const { return !soft_spread_.empty(); }
  int64_t InterPodScore(uint32_t node) const;
  // -1 when the node lacks a constraint's topology key (kube-scheduler gives it 0 after
  // normalizing).
  double SpreadScore(uint32_t node) const;

  // Whether `task` may be constrained by more than its request and the node's static
  // predicates: its own ports or inter-pod constraints, or some pod's required anti-affinity.
  bool MayConstrain(const TaskInfo& task);

  // Counts `task` as placed on `node` (a tentative or committed placement of the session).
  void Place(const TaskInfo& task, uint32_t node);
  // The number of placements counted so far; Rollback(mark) reverts every later one.
  size_t Mark() const { return log_.size(); }
  void Rollback(size_t mark);

 private:
  struct Topo;
  struct Counter;
  struct Holder;
  struct Spread;

  Topo& TopoFor(const std::string& key);
  Counter& CounterFor(std::vector<const k8s::PodAffinityTerm*> terms, std::string_view owner_ns, bool all);
  Spread& SpreadFor(const k8s::TopologySpreadConstraint& c, const TaskInfo& task,
                    const std::vector<const k8s::TopologySpreadConstraint*>& all);
  void BuildPodIndex();
  void BuildHolders();
  void AddHolders(const k8s::Pod& pod, uint32_t node, int delta);
  void Count(const k8s::Pod& pod, uint32_t node, int delta);
  template <class Fn>
  void ForCandidates(const std::optional<k8s::LabelSelector>& selector, Fn&& fn);

  std::vector<const NodeInfo*> nodes_;
  std::map<std::string, std::unique_ptr<Topo>, std::less<>> topos_;
  std::unordered_map<std::string, std::unique_ptr<Counter>> counters_;
  std::vector<Counter*> counter_list_;
  std::unordered_map<std::string, std::unique_ptr<Holder>> holders_;
  std::vector<Holder*> holder_list_;
  bool holders_built_ = false;
  std::unordered_map<std::string, std::unique_ptr<Spread>> spreads_;
  std::vector<Spread*> spread_list_;
  // The snapshot's pods on nodes (not Pipelined), and an index "key=value" → their positions.
  struct PodAt {
    const k8s::Pod* pod;
    uint32_t node;
  };
  std::vector<PodAt> pods_;
  std::unordered_map<std::string, std::vector<uint32_t>> label_index_;
  bool pods_built_ = false;
  // This session's host ports per node (sized on first use).
  std::vector<std::vector<HostPort>> session_ports_;
  std::vector<std::pair<const TaskInfo*, uint32_t>> log_;

  const VolumeInfo* volumes_;

  // The prepared task's checks.
  std::string pod_reason_;
  std::vector<const k8s::PersistentVolume*> bound_volumes_;
  std::vector<HostPort> ports_;
  Counter* affinity_ = nullptr;  // all required affinity terms
  bool affinity_first_ok_ = false;
  std::vector<Counter*> anti_;       // one per required anti-affinity term
  std::vector<Holder*> holders_on_;  // existing anti-affinity terms that select the task
  struct HardSpread {
    Spread* s;
    int32_t max_skew;
    int64_t min;
    int32_t self;
  };
  std::vector<HardSpread> hard_spread_;
  struct Preferred {
    Counter* c;
    int64_t weight;  // negative for anti-affinity
  };
  std::vector<Preferred> preferred_;
  struct SoftSpread {
    Spread* s;
    double weight;
  };
  std::vector<SoftSpread> soft_spread_;
};

}  // namespace volcache
